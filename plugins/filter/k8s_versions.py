# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over Kubernetes versions: minors, support, upgrade steps, package repositories
(plugins/module_utils/kubernetes/topology.py); documented in one <name>.yml per filter."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as k8s_topology
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_minor(version):
    return k8s_topology.minor_of(version)


def k8s_supported_minor(version, supported=None):
    return k8s_topology.check_supported_version(version, tuple(supported or k8s_topology.SUPPORTED_MINORS))


def k8s_upgrade_needed(current, target):
    return k8s_topology.check_upgrade_step(current, target)


def k8s_running_version_problems(running, target, target_channel=""):
    return k8s_topology.running_version_problems(running, target, target_channel)


def k8s_package_repo(version, family, mirror=None):
    return k8s_topology.package_repo(version, family, mirror or None)


class FilterModule:
    """gpushare.cluster Kubernetes version filters."""

    def filters(self):
        funcs = (k8s_minor, k8s_supported_minor, k8s_upgrade_needed, k8s_running_version_problems, k8s_package_repo)
        return {func.__name__: _wrap(func) for func in funcs}
