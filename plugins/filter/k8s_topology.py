# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the cluster topology: checks and the order hosts init, join, upgrade and reset in
(plugins/module_utils/kubernetes/topology.py); documented in one <name>.yml per filter."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as k8s_topology
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_network_errors(pod_cidr, service_cidr, node_cidrs=None):
    return k8s_topology.check_cidrs(pod_cidr, service_cidr, list(node_cidrs or []))


def k8s_topology_errors(control_planes, workers, distribution="kubeadm", cni=None, control_plane_endpoint=None):
    return k8s_topology.check_topology(list(control_planes or []), list(workers or []), distribution, cni or None,
                                       control_plane_endpoint or None)


def k8s_join_order(control_planes, workers, initialized=None, joined=None):
    return k8s_topology.join_order(list(control_planes or []), list(workers or []), list(initialized or []), list(joined or []))


def k8s_upgrade_order(control_planes, workers, bootstrap=None):
    return k8s_topology.upgrade_order(list(control_planes or []), list(workers or []), bootstrap)


def k8s_reset_order(control_planes, workers, bootstrap=None):
    return k8s_topology.reset_order(list(control_planes or []), list(workers or []), bootstrap)


class FilterModule:
    """gpushare.cluster topology filters."""

    def filters(self):
        funcs = (k8s_network_errors, k8s_topology_errors, k8s_join_order, k8s_upgrade_order, k8s_reset_order)
        return {func.__name__: _wrap(func) for func in funcs}
