# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() in the test process, with its arguments as AnsibleModule reads them."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args


def run_module(module, args, capsys):
    """(exit code, result) of module.main() run with args; the result is the JSON it printed."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            module.main()
    return exited.value.code, json.loads(capsys.readouterr().out)
