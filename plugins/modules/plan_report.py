#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan_report
short_description: Write a GPU sharing plan as plan.json, an HTML report, a summary and example workloads
version_added: 0.1.0
description:
  - Writes the C(gpushare_plan) fact to a directory on the machine the module runs on (the
    controller in C(gpushare.cluster.plan)) as C(plan.json), a self-contained C(index.html)
    (inline SVG and CSS, no network access needed to view or print it), a plain-text
    C(summary.txt) and example workloads under C(manifests/examples/).
  - Files other modules or roles rendered into O(staging) (for example C(values/) and
    C(manifests/)) are published together with them.
  - The directory is replaced as a whole, so readers never see a mix of an old and a new
    plan; when nothing differs from what is already there, nothing is written.
  - Supports check mode (reports whether the directory would change, writes nothing).
author:
  - gpushare.cluster maintainers
options:
  plan:
    description:
      - The plan, as returned by M(gpushare.cluster.cluster_plan) (shape documented in C(docs/plan.md)).
    type: dict
    required: true
  dest:
    description:
      - Directory to write. It is created, or replaced as a whole.
    type: path
    required: true
  staging:
    description:
      - Directory holding files rendered for this plan beforehand (C(values/), C(manifests/)).
      - Its content is published in O(dest) and the directory itself is removed.
    type: path
  examples:
    description:
      - Write the example workloads of the plan under C(manifests/examples/).
    type: bool
    default: true
  title:
    description:
      - Title of the HTML report.
    type: str
    default: GPU sharing plan
requirements:
  - PyYAML
"""

EXAMPLES = r"""
- name: Write the plan, the report and the example workloads
  gpushare.cluster.plan_report:
    plan: "{{ gpushare_plan }}"
    dest: "{{ playbook_dir }}/build/plan"
  register: report

- name: Show the summary
  ansible.builtin.debug:
    msg: "{{ report.summary.splitlines() }}"
"""

RETURN = r"""
dest:
  description: The directory written.
  returned: always
  type: str
  sample: /home/me/cluster/build/plan
html:
  description: Path of the HTML report.
  returned: always
  type: str
  sample: /home/me/cluster/build/plan/index.html
files:
  description: Paths of every file in the published directory, relative to it.
  returned: always
  type: list
  elements: str
  sample: [index.html, plan.json, summary.txt, manifests/examples/10-serving.yaml]
summary:
  description: The plan as a plain-text table (also written as C(summary.txt)).
  returned: always
  type: str
"""

import json
import os
import shutil
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    import yaml
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()

from ansible_collections.gpushare.cluster.plugins.module_utils import example_workloads, plan_report


def _generated_files(plan, title, examples):
    """Relative path -> bytes of every file this module writes itself."""
    files = {
        "plan.json": (json.dumps(plan, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "index.html": plan_report.render_html(plan, title=title).encode("utf-8"),
        "summary.txt": plan_report.summary_table(plan).encode("utf-8"),
    }
    if examples:
        objects = example_workloads.build_examples(plan)
        for name, documents in example_workloads.example_file_names(objects).items():
            text = yaml.safe_dump_all(documents, default_flow_style=False, sort_keys=False, explicit_start=True)
            files["manifests/examples/%s" % name] = text.encode("utf-8")
    return files


def _read_tree(root):
    """Relative path -> bytes of every regular file under root (empty when root is absent)."""
    tree = {}
    if not os.path.isdir(root):
        return tree
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                tree[os.path.relpath(path, root)] = handle.read()
    return tree


def _write_tree(root, tree):
    for relative, content in tree.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)


def _publish(dest, tree):
    """Replace dest by a directory holding exactly tree, switching over by rename."""
    parent = os.path.dirname(os.path.abspath(dest)) or "."
    os.makedirs(parent, exist_ok=True)
    fresh = tempfile.mkdtemp(prefix=".%s.new-" % os.path.basename(dest), dir=parent)
    try:
        _write_tree(fresh, tree)
        os.chmod(fresh, 0o755)
        if os.path.exists(dest):
            retired = tempfile.mkdtemp(prefix=".%s.old-" % os.path.basename(dest), dir=parent)
            os.rmdir(retired)
            os.rename(dest, retired)
            os.rename(fresh, dest)
            shutil.rmtree(retired)
        else:
            os.rename(fresh, dest)
    finally:
        if os.path.isdir(fresh):
            shutil.rmtree(fresh)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plan=dict(type="dict", required=True),
            dest=dict(type="path", required=True),
            staging=dict(type="path"),
            examples=dict(type="bool", default=True),
            title=dict(type="str", default="GPU sharing plan"),
        ),
        supports_check_mode=True,
    )
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)

    dest = module.params["dest"]
    staging = module.params["staging"]
    try:
        generated = _generated_files(module.params["plan"], module.params["title"], module.params["examples"])
    except ValueError as error:
        module.fail_json(msg="cannot write the plan report: %s" % error)

    tree = _read_tree(staging) if staging else {}
    clash = sorted(set(tree) & set(generated))
    if clash:
        module.fail_json(msg="files rendered into %s clash with the report's own: %s" % (staging, ", ".join(clash)))
    tree.update(generated)

    changed = _read_tree(dest) != tree
    if changed and not module.check_mode:
        _publish(dest, tree)
    if staging and not module.check_mode and os.path.isdir(staging):
        shutil.rmtree(staging)

    module.exit_json(
        changed=changed,
        dest=dest,
        html=os.path.join(dest, "index.html"),
        files=sorted(tree),
        summary=generated["summary.txt"].decode("utf-8"),
    )


if __name__ == "__main__":
    main()
