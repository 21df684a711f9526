# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that build the control plane components' arguments (plugins/module_utils/kubernetes/topology.py);
documented in one <name>.yml per filter."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as k8s_topology
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_feature_gates(gates):
    return k8s_topology.feature_gates_string(dict(gates or {}))


def k8s_extra_args(args, feature_gates=None):
    return k8s_topology.extra_args_list(dict(args or {}), dict(feature_gates or {}))


def k8s_backend_apiserver_args(args, backend="dra", authentication=None, field="apiserver args"):
    return k8s_topology.backend_apiserver_args(dict(args or {}), str(backend), dict(authentication or {}), str(field))


class FilterModule:
    """gpushare.cluster component argument filters."""

    def filters(self):
        return {func.__name__: _wrap(func) for func in (k8s_feature_gates, k8s_extra_args, k8s_backend_apiserver_args)}
