"""Run a role's ``render`` entry point with ansible-playbook on fixture facts.

The role's real defaults, vars and templates are used; only ``setup`` is replaced by the
fixture facts of tests/fixtures/k8s/facts/. Output lands in ``<tmp>/<role>/<host>/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "k8s"


def collections_dir() -> str:
    """The collection tree tests/conftest.py set up."""
    return os.environ["GPUSHARE_COLLECTIONS_PATH"]


FAKE_KUBERNETES = Path(__file__).resolve().parents[2] / "fixtures" / "addons" / "fake_kubernetes"


def run_on_fake_cluster(tmp: Path, playbook: Path, state: Path, args=()) -> tuple[subprocess.CompletedProcess, dict]:
    """ansible-playbook `playbook` with the kubernetes.core stand-ins first on the collections
    path, over the fake cluster in the JSON file `state`; returns the run and the cluster after it."""
    env = dict(os.environ, GPUSHARE_FAKE_CLUSTER=str(state), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=f"{FAKE_KUBERNETES}:{collections_dir()}",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_HOME=str(tmp / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-local"))
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(playbook), *args], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    return result, json.loads(state.read_text())


def render(tmp: Path, role: str, hosts: dict, group_vars: dict, extra_vars: dict | None = None,
           expect_failure: bool = False) -> subprocess.CompletedProcess:
    """hosts: {name: {"group": ... or "groups": [...], "os": "ubuntu-24.04"|"rocky-9", "facts": {...}, "vars": {...}}}."""
    groups: dict = {}
    for name, spec in hosts.items():
        host_vars = dict(spec.get("vars", {}))
        host_vars.update(
            ansible_connection="local",
            ansible_python_interpreter=sys.executable,
            fixture_facts_file=str(FIXTURES / "facts" / f"{spec['os']}.yml"),
            host_facts=spec.get("facts", {}),
        )
        for group in spec.get("groups") or [spec["group"]]:
            groups.setdefault(group, {"hosts": {}})["hosts"][name] = host_vars
    all_vars = {**group_vars, "gpushare_render_dir": str(tmp / "out"), "render_role": f"gpushare.cluster.{role}"}
    inventory = {"all": {"children": groups, "vars": all_vars}}
    inv = tmp / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory))
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=collections_dir(),
        ANSIBLE_HOST_KEY_CHECKING="False",
        ANSIBLE_RETRY_FILES_ENABLED="False",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-local"),
        ANSIBLE_HOME=str(tmp / "ansible-home"),
    )
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv), str(FIXTURES / "render" / "render.yml")]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    if expect_failure:
        assert result.returncode != 0, result.stdout
    else:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def load_docs(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def key_paths(node, prefix: str = "") -> set:
    """Every key path of a YAML tree; list items share the path ``<key>[]``."""
    paths = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            paths.add(path)
            paths |= key_paths(value, path)
    elif isinstance(node, list):
        for item in node:
            paths |= key_paths(item, f"{prefix}[]")
    return paths
