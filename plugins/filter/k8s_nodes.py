# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_node_restart_problems filter (plugins/module_utils/kubernetes/node_restart.py);
documented in k8s_node_restart_problems.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import node_restart
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_node_restart_problems(now, before, version=""):
    return node_restart.restart_problems(dict(now or {}), dict(before or {}), str(version or ""))


class FilterModule:
    """gpushare.cluster node filters."""

    def filters(self):
        return {"k8s_node_restart_problems": _wrap(k8s_node_restart_problems)}
