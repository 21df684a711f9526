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

import json
import os
import shutil
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpushare.cluster.plugins.module_utils import addon_files, example_workloads, plan_report, yaml_text
from ansible_collections.gpushare.cluster.plugins.module_utils.plan import PlanError, build_plan
from ansible_collections.gpushare.cluster.plugins.plugin_utils import addon_settings
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import plain as _plain

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

ARGUMENT_SPEC = dict(
    plan=dict(type="dict"),
    teams=dict(type="list", elements="dict"),
    hosts=dict(type="list", elements="str"),
    backend=dict(type="str", choices=["dra", "device_plugin"], default="dra"),
    distribution=dict(type="str", choices=["microk8s", "kubeadm"], default="microk8s"),
    kubernetes_version=dict(type="str", default="1.35"),
    cohort=dict(type="str", default="gpushare"),
    dest=dict(type="path", required=True),
    addons=dict(type="list", elements="str", default=[], choices=list(addon_files.ADDONS)),
    examples=dict(type="bool", default=True),
    title=dict(type="str", default="GPU sharing plan"),
    return_plan=dict(type="bool", default=False),
    write=dict(type="bool", default=True),
    summary_rows=dict(type="int", default=64),
)
# Warnings shown as Ansible warnings; a large fleet can have thousands (all are in the files).
TERMINAL_ROWS = 64


def generated_files(plan, title, examples):
    """Relative path -> bytes of every file the report itself consists of."""
    files = {
        "plan.json": (json.dumps(plan, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "index.html": plan_report.render_html(plan, title=title).encode("utf-8"),
        "summary.txt": plan_report.summary_table(plan).encode("utf-8"),
    }
    if examples:
        objects = example_workloads.build_examples(plan)
        for name, documents in example_workloads.example_file_names(objects).items():
            files["manifests/examples/%s" % name] = yaml_text.dump_documents(documents).encode("utf-8")
    return files


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


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _inventory_plan(self, args, task_vars):
        hostvars = task_vars["hostvars"]
        hosts = args["hosts"] if args["hosts"] is not None else task_vars["groups"]["all"]
        nodes, facts = {}, {}
        for host in hosts:
            host_vars = hostvars[host]
            if "gpushare_gpus" in host_vars:
                nodes[host] = host_vars["gpushare_gpus"]
            if "gpushare_gpu_facts" in host_vars:
                facts[host] = host_vars["gpushare_gpu_facts"]
        if args["teams"] is None:
            raise AnsibleActionFail("gpushare_teams is not set: the inventory must list the teams (docs/inventory.md)")
        if not nodes:
            raise AnsibleActionFail("no host of the inventory sets gpushare_gpus (docs/inventory.md)")
        try:
            return build_plan(_plain(args["teams"]), _plain(nodes), gpu_facts=_plain(facts) or None,
                              backend=args["backend"], distribution=args["distribution"],
                              kubernetes_version=str(args["kubernetes_version"]), cohort=args["cohort"])
        except PlanError as error:
            raise AnsibleActionFail(str(error), result={"errors": error.errors})

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        del validation
        if yaml is None:
            raise AnsibleActionFail("PyYAML is needed on the controller to write the example workloads")

        plan = _plain(args["plan"]) if args["plan"] is not None else self._inventory_plan(args, task_vars)
        if not args["write"]:
            # Plan only: validate the inventory and hand the plan to later tasks.
            result.update(changed=False, ansible_facts={"gpushare_plan": plan})
            return result
        try:
            tree = generated_files(plan, args["title"], args["examples"])
        except ValueError as error:
            raise AnsibleActionFail("cannot write the plan report: %s" % error)
        # What the add-on roles would render, with their defaults and this play's variables.
        for addon in args["addons"]:
            rendered = addon_settings.render(addon, plan, task_vars, self._templar, self._loader)
            tree.update((relative, text.encode("utf-8")) for relative, text in rendered.items())

        dest = args["dest"]
        changed = read_tree(dest) != tree
        if changed and not self._task.check_mode:
            publish(dest, tree)

        warnings = plan.get("warnings") or []
        for warning in warnings[:TERMINAL_ROWS]:
            self._display.warning(warning)
        result.update(changed=changed, dest=dest, html=os.path.join(dest, "index.html"), files=sorted(tree),
                      summary=plan_report.summary_table(plan, max_rows=args["summary_rows"]),
                      warnings_count=len(warnings))
        if args["return_plan"]:
            result["plan"] = plan
        return result
