# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over what applying a plan changes (plugins/module_utils/changes/plan_changes.py); documented in
plan_change_refusals.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.changes import plan_changes
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


class FilterModule:
    """gpushare.cluster plan change filters."""

    def filters(self):
        return {
            "plan_change_refusals": _wrap(plan_changes.refusals),
        }
