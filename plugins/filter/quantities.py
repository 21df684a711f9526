# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The memory_mib filter (plugins/module_utils/_common/quantities.py); documented in memory_mib.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.module_utils._common.quantities import parse_memory_mib


def memory_mib(value):
    """A memory quantity ('10Gi', '40GB', 512) in MiB."""
    try:
        return parse_memory_mib(value)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


class FilterModule:
    """gpushare.cluster quantity filters."""

    def filters(self):
        return {"memory_mib": memory_mib}
