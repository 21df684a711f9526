# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of gpushare.cluster.render_addon (documented in plugins/modules/render_addon.py).

Writes every file of one add-on in a single task, in the Ansible process: one task per
file would cost a module run (a Python start-up) each, which dominates rendering on
large plans.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.plugin_utils import addon_settings, controller_files
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import plain

ARGUMENT_SPEC = dict(
    addon=dict(type="str", required=True, choices=list(addon_files.ADDONS)),
    plan=dict(type="dict", default={}),
    dest=dict(type="path", required=True),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        addon, dest = args["addon"], args["dest"]

        files = addon_settings.render(addon, plain(args["plan"]), task_vars, self._templar, self._loader)

        return controller_files.write_result(result, dest, files, self._task)
