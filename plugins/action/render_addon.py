# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of gpushare.cluster.render_addon (documented in plugins/modules/render_addon.py).

Writes every file of one add-on in a single task, in the Ansible process: one task per
file would cost a module run (a Python start-up) each, which dominates rendering on
large plans.
"""

from __future__ import annotations

import os
import tempfile

from ansible import constants as C
from ansible.plugins.action import ActionBase

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.plugin_utils import addon_settings
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import plain

ARGUMENT_SPEC = dict(
    addon=dict(type="str", required=True, choices=list(addon_files.ADDONS)),
    plan=dict(type="dict", default={}),
    dest=dict(type="path", required=True),
)


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write(path, content):
    """Replace path by content through a rename, so a reader never sees half a file."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(scratch, 0o644)
        os.rename(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def _diff(relative, before, after):
    def shown(content):
        if content is None:
            return ""
        if len(content) > C.MAX_FILE_SIZE_FOR_DIFF:
            return "(%d bytes; larger than the diff limit, MAX_FILE_SIZE_FOR_DIFF)\n" % len(content)
        return content.decode("utf-8")
    return {"before_header": relative, "after_header": relative, "before": shown(before), "after": shown(after)}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        addon, dest = args["addon"], args["dest"]

        files = addon_settings.render(addon, plain(args["plan"]), task_vars, self._templar, self._loader)

        changed_files, diffs = [], []
        for relative, text in files.items():
            path = os.path.join(dest, relative)
            content = text.encode("utf-8")
            before = _read(path)
            if before == content:
                continue
            changed_files.append(relative)
            if self._task.diff:
                diffs.append(_diff(relative, before, content))
            if not self._task.check_mode:
                _write(path, content)

        result.update(changed=bool(changed_files), dest=dest, files=list(files), changed_files=changed_files)
        if diffs:
            result["diff"] = diffs
        return result
