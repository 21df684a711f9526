# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of gpushare.cluster.render_files (documented in plugins/modules/render_files.py).

The render entry points of the kubeadm and microk8s roles write a dozen files per host; as
``template`` and ``copy`` tasks that is two module runs (``stat`` and ``copy``) per file,
about a CPU second each. Here the templates are rendered with ansible.builtin.template's
lookup (the same search path, variables and ``ansible_managed`` as the template action) and
the files written in the Ansible process.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader

from ansible_collections.gpushare.cluster.plugins.plugin_utils import controller_files

ARGUMENT_SPEC = dict(
    dest=dict(type="path", required=True),
    files=dict(
        type="list", elements="dict", required=True,
        options=dict(
            path=dict(type="str", required=True),
            content=dict(type="str"),
            template=dict(type="str"),
            when=dict(type="bool", default=True),
        ),
        mutually_exclusive=[("content", "template")],
        required_one_of=[("content", "template")],
    ),
)


def _relative(path):
    """path, refused when it would leave dest (absolute, or through '..')."""
    normal = os.path.normpath(path)
    if os.path.isabs(path) or normal == ".." or normal.startswith(".." + os.sep) or normal == ".":
        raise AnsibleActionFail("render_files: the file path %r must name a file under dest" % path)
    return normal


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        dest = args["dest"]

        texts = {}
        for entry in args["files"]:
            if not entry["when"]:
                continue
            relative = _relative(entry["path"])
            if relative in texts:
                raise AnsibleActionFail("render_files: the file path %r is listed twice" % entry["path"])
            if entry["template"] is not None:
                texts[relative] = self._template(entry["template"], task_vars)
            else:
                texts[relative] = entry["content"]

        return controller_files.write_result(result, dest, texts, self._task)

    def _template(self, name, task_vars):
        lookup = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        return str(lookup.run([name], variables=task_vars)[0])
