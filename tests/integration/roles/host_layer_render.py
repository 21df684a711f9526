"""Render the host layer roles (host_prep, gpu_host_driver, containerd) without a host.

Builds the variables a play would see on a host with the given facts -- the role's
defaults, ``vars/main.yml`` and the OS layers in the order the shared loader loads them
(roles/host_steps/tasks/os_vars.yml, which ``tasks/facts.yml`` includes; the renderer follows such includes) --
and renders the role's own templates and task arguments with Ansible's templating engine.
That is how the RedHat-family files are exercised here, where no Rocky host exists.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible.plugins.loader import init_plugin_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig

REPO_ROOT = Path(__file__).resolve().parents[3]
ROLES = REPO_ROOT / "roles"
# Private roles whose steps the host roles include (tasks_from): the renderer follows them.
PRIVATE_ROLES = ("gpushare.cluster.host_steps", "gpushare.cluster.kubernetes_steps")


def _install_collection_loader() -> None:
    """Let templates call the collection's filters (gpushare.cluster.mirror_url, ...)."""
    paths = [os.environ["GPUSHARE_COLLECTIONS_PATH"]]  # set up by tests/conftest.py
    if AnsibleCollectionConfig.collection_finder is None:
        # Test modules may have imported the collection as a plain namespace package; the
        # collection finder only serves packages it loads itself.
        for name in [n for n in sys.modules if n == "ansible_collections" or n.startswith("ansible_collections.")]:
            del sys.modules[name]
        init_plugin_loader(paths)


def rocky_facts(major: int) -> dict[str, Any]:
    """Facts of a Rocky Linux host as `setup` reports them (the keys the roles read)."""
    minor = {9: "7", 10: "1"}[major]
    return {
        "os_family": "RedHat",
        "distribution": "Rocky",
        "distribution_major_version": str(major),
        "distribution_version": f"{major}.{minor}",
        "distribution_release": "Blue Onyx" if major == 9 else "Red Quartz",
        "architecture": "x86_64",
        "kernel": f"{'5.14.0-611.5.1' if major == 9 else '6.12.0-124.8.1'}.el{major}_{minor}.x86_64",
        "virtualization_type": "kvm",
        "virtualization_role": "host",
        "swaptotal_mb": 8191,
        "pkg_mgr": "dnf",
        "service_mgr": "systemd",
    }


def debian_facts() -> dict[str, Any]:
    """Facts of the Debian 12 test container."""
    return {
        "os_family": "Debian",
        "distribution": "Debian",
        "distribution_major_version": "12",
        "distribution_version": "12.12",
        "distribution_release": "bookworm",
        "architecture": "x86_64",
        "kernel": "6.1.0-40-amd64",
        "virtualization_type": "podman",
        "virtualization_role": "guest",
        "swaptotal_mb": 0,
        "pkg_mgr": "apt",
        "service_mgr": "systemd",
    }


def _trusted(node: Any) -> Any:
    """Mark strings of the role's own files as templates, as Ansible does when it loads them."""
    if isinstance(node, str):
        return trust_as_template(node)
    if isinstance(node, dict):
        return {key: _trusted(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_trusted(value) for value in node]
    return node


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def role_vars(role: str, facts: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Variables a task of `role` sees: defaults < inventory `extra` < vars layers."""
    base = ROLES / role
    variables: dict[str, Any] = dict(_trusted(_load(base / "defaults" / "main.yml") or {}))
    variables.update(_trusted(extra or {}))
    variables.update(_trusted(_load(base / "vars" / "main.yml") or {}))
    layers = [
        facts["os_family"],
        f"{facts['os_family']}_{facts['distribution_major_version']}",
        facts["distribution"],
        f"{facts['distribution']}_{facts['distribution_major_version']}",
        f"{facts['distribution']}_{facts.get('distribution_version', '')}",
    ]
    for layer in layers:
        variables.update(_trusted(_load(base / "vars" / f"{layer}.yml") or {}))
    variables.update(
        ansible_facts=facts,
        inventory_hostname="node1",
        inventory_hostname_short="node1",
        group_names=variables.get("group_names", ["workers"]),
        role_path=str(base),
        ansible_managed="Ansible managed",
        ansible_check_mode=False,
        omit="__omit_place_holder__",
    )
    return variables


class Renderer:
    """Ansible's templating engine bound to one role and one host's variables."""

    def __init__(self, role: str, facts: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        _install_collection_loader()
        self.role = role
        self.variables = role_vars(role, facts, extra)
        self._templar = Templar(loader=DataLoader(), variables=self.variables)

    def value(self, expression: str, **local: Any) -> Any:
        """Evaluate one ``{{ expression }}`` (with optional task-level variables)."""
        return self._with(local).template(trust_as_template("{{ " + expression + " }}"))

    def render(self, node: Any, **local: Any) -> Any:
        """Template a task argument (string, list or dict) as the role's own file would be."""
        return plain(self._with(local).template(_trusted(node)))

    def template(self, name: str, **local: Any) -> str:
        """Render templates/<name> of the role, as ansible.builtin.template would."""
        text = (ROLES / self.role / "templates" / name).read_text()
        return str(self._with(local).template(trust_as_template(text)))

    def holds(self, condition: str, **local: Any) -> bool:
        """Evaluate a `when`/`that` condition as Ansible would."""
        return bool(self._with(local).evaluate_conditional(trust_as_template(condition)))

    def failed_asserts(self, task_file: str, registered: dict[str, Any] | None = None) -> list[str]:
        """fail_msg of every assert in tasks/<task_file> that would fail."""
        return [task["args"].get("fail_msg", task["name"]) for task in self.tasks(task_file, registered)
                if task["module"] == "ansible.builtin.assert" and not task["holds"]]

    def tasks(self, task_file: str, registered: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Render every task of tasks/<task_file> whose conditions hold.

        Returns ``{"name", "module", "args", "items"}`` per task that would run; loops give
        one rendered argument set per item. ``registered`` supplies results of earlier tasks.
        """
        data = yaml.safe_load((ROLES / self.role / "tasks" / task_file).read_text()) or []
        rendered: list[dict[str, Any]] = []
        self._registered = dict(registered or {})
        self._walk(data, [], {}, rendered)
        return plain(rendered)

    def _with(self, local: dict[str, Any]) -> Templar:
        registered = getattr(self, "_registered", {})
        if not local and not registered:
            return self._templar
        return self._templar.copy_with_new_env(
            available_variables={**self.variables, **registered, **_trusted(local)})

    def _record(self, task: dict[str, Any], module: str, runs: list[Any]) -> None:
        """What later tasks see: set_fact results, and a stub for unsupplied registers."""
        if module.endswith("set_fact") and runs:
            self._registered.update(runs[-1])
        name = task.get("register")
        if name and name not in self._registered:
            self._registered[name] = {"changed": False, "skipped": not runs, "rc": 0, "stdout": "",
                                      "stdout_lines": []}

    def _holds(self, conditions: list[Any], local: dict[str, Any]) -> bool:
        templar = self._with(local)
        return all(
            c if isinstance(c, bool) else templar.evaluate_conditional(trust_as_template(str(c)))
            for c in conditions
        )

    def _walk(self, tasks: list[dict[str, Any]], inherited: list[Any], local: dict[str, Any],
              out: list[dict[str, Any]]) -> None:
        for task in tasks:
            conditions = inherited + _as_list(task.get("when"))
            task_local = {**local, **dict(task.get("vars") or {})}
            if "block" in task:
                for part in ("block", "rescue", "always"):
                    self._walk(task.get(part) or [], conditions, task_local, out)
                continue
            module = next(k for k in task if "." in k and k.split(".")[0] in {"ansible", "community", "containers", "gpushare"})
            if module.endswith(("import_tasks", "include_tasks", "meta")):
                continue
            if module.endswith("include_role") and task[module]["name"] in PRIVATE_ROLES:
                # A private role's step (tasks_from), with its defaults under the include's vars.
                private = ROLES / task[module]["name"].split(".")[-1]
                private_local = {**dict(_trusted(_load(private / "defaults" / "main.yml") or {})), **task_local,
                                 "ansible_parent_role_paths": [str(ROLES / self.role)]}
                steps = yaml.safe_load((private / "tasks" / f"{task[module]['tasks_from']}.yml").read_text()) or []
                if self._holds(conditions, task_local):
                    self._walk(steps, [], private_local, out)
                continue
            if "loop" in task:
                if not self._holds(inherited, task_local):
                    continue
                items = self._with(task_local).template(_trusted(task["loop"]))
                runs = []
                for item in items:
                    item_local = {**task_local, "item": item}
                    if self._holds(conditions, item_local):
                        runs.append(self._with(item_local).template(_trusted(task[module])))
                if runs:
                    out.append({"name": task["name"], "module": module, "args": runs[0], "items": runs})
                self._record(task, module, runs)
            elif self._holds(conditions, task_local):
                args = self._with(task_local).template(_trusted(task[module]))
                entry = {"name": task["name"], "module": module, "args": args, "items": [args]}
                if module == "ansible.builtin.assert":
                    # Evaluated with the task's own vars, as Ansible does.
                    entry["holds"] = self._holds(_as_list(task[module]["that"]), task_local)
                out.append(entry)
                self._record(task, module, [args])
            else:
                self._record(task, module, [])


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def plain(node: Any) -> Any:
    """Rendered values as plain Python types (Ansible tags its strings)."""
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, str):
        return str(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, dict):
        return {plain(k): plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [plain(v) for v in node]
    return node


def by_name(rendered: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The rendered task called `name` (fails the test clearly when it did not run)."""
    for task in rendered:
        if task["name"] == name:
            return task
    raise AssertionError(f"task {name!r} did not run; ran: {[t['name'] for t in rendered]}")
