# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of gpushare.cluster.plan_report (documented in plugins/modules/plan_report.py).

Runs entirely on the controller, in the Ansible process: it reads the GPU inventory of the
hosts from hostvars, plans with the same pure code as gpushare.cluster.cluster_plan (or
takes a plan already made), and writes the plan directory. Keeping the plan inside this
process matters at scale: a plan of thousands of GPUs is megabytes of JSON, and passing it
through module arguments and results costs many times more than planning it.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import tempfile
from collections import ChainMap

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.parsing.vault import AnsibleVaultError
from ansible.plugins.action import ActionBase

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.module_utils.render import examples as example_workloads
from ansible_collections.gpushare.cluster.plugins.module_utils.preflight import layer_checks
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import plan_changes
from ansible_collections.gpushare.cluster.plugins.module_utils.report import plan_report
from ansible_collections.gpushare.cluster.plugins.module_utils._common import yaml_text
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import (
    CONTROLLER_VARIABLES, HOST_VARIABLES, PlanError, plan_inventory)
from ansible_collections.gpushare.cluster.plugins.plugin_utils import addon_settings
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import plain as _plain

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

ARGUMENT_SPEC = dict(
    plan=dict(type="dict"),
    hosts=dict(type="list", elements="str"),
    cohort=dict(type="str", default="gpushare"),
    dest=dict(type="path"),
    addons=dict(type="list", elements="str", default=[], choices=list(addon_files.ADDONS)),
    examples=dict(type="bool", default=True),
    title=dict(type="str", default="GPU sharing plan"),
    return_plan=dict(type="bool", default=False),
    discovery_pending=dict(type="bool", default=False),
    write=dict(type="bool", default=True),
    summary_rows=dict(type="int", default=64),
    compare=dict(type="str"),
    kubeconfig=dict(type="path"),
    layers=dict(type="list", elements="str", default=list(layer_checks.LAYERS), choices=list(layer_checks.LAYERS)),
)
# Roles whose defaults the layer checks read, by variable prefix.
CHECKED_ROLES = ("host_prep", "monitoring", "microk8s")
# Warnings shown as Ansible warnings; a large fleet can have thousands (all are in the files).
TERMINAL_ROWS = 64


def generated_files(plan, title, examples, stamp=None, changes=None):
    """Relative path -> bytes of every file the report itself consists of."""
    files = {
        "plan.json": (json.dumps(plan, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "index.html": plan_report.render_html(plan, title=title, stamp=stamp, changes=changes).encode("utf-8"),
        "summary.txt": plan_report.summary_table(plan, stamp=stamp).encode("utf-8"),
    }
    if changes is not None:
        files["changes.json"] = (json.dumps(changes, indent=2, sort_keys=True) + "\n").encode("utf-8")
    if examples:
        objects = example_workloads.build_examples(plan)
        for name, documents in example_workloads.example_file_names(objects).items():
            files["manifests/examples/%s" % name] = yaml_text.dump_documents(documents).encode("utf-8")
    return files


def old_plan_state(compare):
    """The state of a previous plan directory (its plan.json)."""
    path = os.path.join(compare, "plan.json")
    try:
        with open(path, encoding="utf-8") as handle:
            old = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError("gpushare_plan_compare: %s is neither `cluster` nor a plan directory written by plan.yml "
                         "(%s: %s)" % (compare, path, error))
    return plan_changes.plan_state(old, "plan directory %s" % compare)


def read_tree(root):
    """Relative path -> bytes of every regular file under root (empty when root is absent)."""
    tree = {}
    if not root or not os.path.isdir(root):
        return tree
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                tree[os.path.relpath(path, root)] = handle.read()
    return tree


def publish(dest, tree):
    """Replace dest by a directory holding exactly tree; the switch is a rename, never a partial write."""
    parent = os.path.dirname(os.path.abspath(dest))
    os.makedirs(parent, exist_ok=True)
    fresh = tempfile.mkdtemp(prefix=".%s.new-" % os.path.basename(dest), dir=parent)
    retired = None
    try:
        for relative, content in tree.items():
            path = os.path.join(fresh, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(content)
        os.chmod(fresh, 0o755)
        if os.path.exists(dest):
            retired = fresh + ".old"
            os.rename(dest, retired)
        os.rename(fresh, dest)
    finally:
        for leftover in (fresh, retired):
            if leftover and os.path.isdir(leftover):
                shutil.rmtree(leftover)


_STAMP_DATE = re.compile(r'data-stamp-date="([^"]*)"')


def collection_version():
    """Version of the gpushare.cluster this plugin belongs to: MANIFEST.json when installed, galaxy.yml in a checkout."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as handle:
            return str(json.load(handle)["collection_info"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as handle:
            return str((yaml.safe_load(handle) or {}).get("version") or "unknown")
    except (OSError, AttributeError, yaml.YAMLError if yaml else ValueError):
        return "unknown"


def inventory_names(sources, cwd):
    """The inventory sources as the user named them: relative to the working directory when inside it."""
    names = []
    for source in sources or []:
        source = str(source)
        if os.path.isabs(source) and cwd and (source == cwd or source.startswith(cwd.rstrip(os.sep) + os.sep)):
            source = os.path.relpath(source, cwd)
        names.append(source)
    return ", ".join(names) or "none"


def previous_date(tree):
    """The date stamped on the report already in the plan directory, or None."""
    match = _STAMP_DATE.search(tree.get("index.html", b"").decode("utf-8", "replace"))
    return match.group(1) if match else None


def now_stamp_date():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def dated_tree(build, existing):
    """The plan directory's files from ``build(date)``, and whether they differ from ``existing``.

    The date says when this plan was made: it is renewed only when something else in the
    directory changes, so a second run on the same inventory changes nothing.
    """
    earlier = previous_date(existing)
    if earlier:
        tree = build(earlier)
        if tree == existing:
            return tree, False
    return build(now_stamp_date()), True


def failure(result, errors):
    """A failed result that lists each problem once.

    Raising AnsibleActionFail would make ansible-core 2.19 print the message three times
    (the error, the same text as its cause, and the result's msg); the default callback
    prints a returned result's msg twice (the [ERROR] line and the result). So the list is
    in ``errors`` only and ``msg`` is one line that points to it.
    """
    result.update(failed=True, changed=False, errors=list(errors),
                  msg="the plan cannot be made: %d problem%s, listed under errors"
                      % (len(errors), "" if len(errors) == 1 else "s"))
    return result


def _vaulted(error):
    """Whether templating failed only because a vaulted value needs the vault password.

    ansible-core 2.18 raises AnsibleVaultError; 2.19 raises a template error caused by its
    UndecryptableVaultError (lib/ansible/_internal/_templating/_jinja_common.py, an internal
    class, hence the name test).
    """
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, AnsibleVaultError) or type(error).__name__ == "UndecryptableVaultError":
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__ or getattr(error, "orig_exc", None)
    return False


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _inventory_plan(self, args, task_vars, errors):
        """Validate and plan the inventory as every host sees it (plugins/module_utils/planner/plan.py, plan_inventory)."""
        hostvars = task_vars["hostvars"]
        groups = {str(name): [str(host) for host in hosts] for name, hosts in task_vars["groups"].items()}
        hosts = [str(host) for host in args["hosts"]] if args["hosts"] is not None else groups.get("all", [])
        per_host = {}
        for host in hosts:
            host_vars = hostvars[host]
            values = per_host[host] = {}
            for name in HOST_VARIABLES:
                if name not in host_vars:
                    continue
                try:
                    values[name] = _plain(host_vars[name])
                except AnsibleError as error:
                    # A node name made from facts is not known before the host is reached: the
                    # plan then uses the name the roles default to.
                    if name != "kubernetes_common_node_name":
                        errors.append("host %s, field %s: cannot be evaluated on the controller: %s"
                                      % (host, name, error.message if hasattr(error, "message") else error))
        controller = {name: _plain(self._templar.template(task_vars[name]))
                      for name in CONTROLLER_VARIABLES if name in task_vars}
        first_control_plane = (groups.get("control_plane") or [None])[0]
        layers = layer_checks.run_layers(args["layers"], task_vars.get("ansible_run_tags") or ["all"],
                                         task_vars.get("ansible_skip_tags") or [])
        errors += layer_checks.check(self._layer_values(hostvars, groups, errors), groups,
                                     per_host.get(first_control_plane, {}).get("gpushare_kubernetes_distribution"),
                                     layers)
        return plan_inventory(controller, per_host, groups, cohort=args["cohort"], errors=errors,
                              discovery_pending=args["discovery_pending"])

    def _read(self, kubeconfig, task_vars, queries):
        """The objects of every query (gpushare.cluster.k8s_list: one module process and one API
        client for all of them); none for a kind the server does not serve."""
        module_args = {"queries": queries}
        if kubeconfig:
            module_args["kubeconfig"] = kubeconfig
        found = self._execute_module(module_name="gpushare.cluster.k8s_list", module_args=module_args,
                                     task_vars=task_vars)
        if found.get("failed"):
            raise ValueError("gpushare_plan_compare=cluster: cannot read %s through %s: %s"
                             % (", ".join(query["kind"] for query in queries), kubeconfig or "the default kubeconfig",
                                found.get("msg")))
        # A CRD not installed yet (Kueue on a new cluster) has no objects (api_found: false).
        return [result.get("resources") or [] for result in found["results"]]

    def _cluster_state(self, kubeconfig, task_vars):
        """The live cluster: every object of the kinds a plan holds, the Nodes, Kueue's Workloads
        and the pods that have not finished (the ones a drain would evict)."""
        kinds = sorted(plan_changes.API_VERSIONS.items())
        listed = self._read(kubeconfig, task_vars, [{"api_version": api_version, "kind": kind}
                                                    for kind, api_version in kinds] + [
            {"api_version": "v1", "kind": "Node"},
            {"api_version": plan_changes.WORKLOAD_API_VERSION, "kind": "Workload"},
            {"api_version": "v1", "kind": "Pod", "field_selectors": ["status.phase!=Succeeded", "status.phase!=Failed"]}])
        objects = [obj for resources in listed[:len(kinds)] for obj in resources]
        nodes, workloads, pods = listed[len(kinds):]
        return plan_changes.cluster_state(objects, nodes, workloads, pods)

    def _layer_values(self, hostvars, groups, errors):
        """The variables layer_checks reads, as each host sees them (role defaults included).

        A secret is evaluated only to learn whether it is set: the value never leaves this
        function, and a vaulted one that needs the vault password counts as set (plan.yml
        runs without it; the role decrypts it when it uses it).
        """
        defaults = {role: addon_settings.role_defaults(role, self._loader) for role in CHECKED_ROLES}
        values = {}
        for host, names in layer_checks.variables_by_host(groups).items():
            raw = hostvars.raw_get(host)
            if not isinstance(raw, dict):
                continue  # a host the inventory does not have: the topology check names it
            seen = values[host] = {}
            for name, secret in names.items():
                role = next(role for role in CHECKED_ROLES if name.startswith(role + "_"))
                if name not in raw and name not in defaults[role]:
                    continue
                templar = self._templar.copy_with_new_env(available_variables=ChainMap(raw, defaults[role]))
                try:
                    value = templar.template(raw[name] if name in raw else defaults[role][name])
                    seen[name] = (layer_checks.SET if str(value) else "") if secret else _plain(value)
                except AnsibleError as error:
                    if not _vaulted(error):
                        errors.append("host %s, field %s: cannot be evaluated on the controller: %s"
                                      % (host, name, error.message if hasattr(error, "message") else error))
                    elif secret:
                        seen[name] = layer_checks.SET
                    else:
                        errors.append("host %s, field %s: vaulted, and no vault password was given" % (host, name))
        return values

    def _rendered_addons(self, addons, plan, task_vars):
        """What the add-on roles would render, with their defaults and this play's variables."""
        files = {}
        for addon in addons:
            rendered = addon_settings.render(addon, plan, task_vars, self._templar, self._loader)
            files.update((relative, text.encode("utf-8")) for relative, text in rendered.items())
        return files

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC,
                                                       required_if=[("write", True, ["dest"])])
        del validation
        if yaml is None:
            raise AnsibleActionFail("PyYAML is needed on the controller to write the example workloads")

        dest = args["dest"]
        errors = []
        if args["write"] and os.path.lexists(dest) and not os.path.isdir(dest):
            errors.append("gpushare_plan_dir: %s exists and is not a directory; the plan directory would replace it "
                          "(move that file away or choose another gpushare_plan_dir)" % dest)
        if args["plan"] is not None:
            if errors:
                return failure(result, errors)
            plan = _plain(args["plan"])
        else:
            try:
                plan = self._inventory_plan(args, task_vars, errors)
            except PlanError as error:
                return failure(result, error.errors)
        if args["discovery_pending"]:
            # Checked before the hosts are asked for their GPUs; the plan comes after discovery.
            result.update(changed=False)
            return result
        warnings = plan.get("warnings") or []
        # Each warning once: as an Ansible warning here (the summary then only counts them).
        for warning in warnings[:TERMINAL_ROWS]:
            self._display.warning(warning)
        changes = None
        if args["compare"]:
            # Read before the directory is replaced: the old plan may be the one in dest.
            try:
                old = (self._cluster_state(args["kubeconfig"], task_vars) if args["compare"] == plan_changes.CLUSTER
                       else old_plan_state(args["compare"]))
                changes = plan_changes.compare(old, plan)
            except ValueError as error:
                return failure(result, [str(error)])
            result.update(changes=changes, changes_summary=plan_changes.summary_lines(changes))
        if not args["write"]:
            # Plan only: validate the inventory and hand the plan to later tasks.
            result.update(changed=False, ansible_facts={"gpushare_plan": plan}, warnings_count=len(warnings))
            return result
        stamp = {"inventory": inventory_names(task_vars.get("ansible_inventory_sources"), os.getcwd()),
                 "version": collection_version()}
        rendered_addons = self._rendered_addons(args["addons"], plan, task_vars)

        def build(date):
            tree = generated_files(plan, args["title"], args["examples"], dict(stamp, date=date), changes)
            tree.update(rendered_addons)
            return tree

        try:
            tree, changed = dated_tree(build, read_tree(dest))
        except ValueError as error:
            return failure(result, ["cannot write the plan report: %s" % error])
        if changed and not self._task.check_mode:
            publish(dest, tree)

        shown = min(len(warnings), TERMINAL_ROWS)
        result.update(changed=changed, dest=dest, html=os.path.join(dest, "index.html"), files=sorted(tree),
                      summary=plan_report.summary_table(plan, max_rows=args["summary_rows"],
                                                        stamp=dict(stamp, date=previous_date(tree)),
                                                        warnings_shown=shown),
                      warnings_count=len(warnings))
        if args["return_plan"]:
            result["plan"] = plan
        return result
