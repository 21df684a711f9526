# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that build the add-on roles' Helm values and manifests from the plan."""

from __future__ import annotations


from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.module_utils import helm_values


def _plain(value):
    """Plain Python types: the pure code dumps YAML with yaml.SafeDumper, which rejects
    the str/dict subclasses Ansible uses to tag template results."""
    if isinstance(value, Mapping):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def _wrap(function):
    def wrapper(*args, **kwargs):
        try:
            return function(*[_plain(arg) for arg in args], **{key: _plain(item) for key, item in kwargs.items()})
        except ValueError as error:
            raise AnsibleFilterError(str(error)) from error
    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper


class FilterModule:
    """gpushare.cluster add-on filters."""

    def filters(self):
        return {
            "gpu_operator_values": _wrap(helm_values.gpu_operator_values),
            "dra_driver_values": _wrap(helm_values.dra_driver_values),
            "kueue_values": _wrap(helm_values.kueue_values),
            "monitoring_values": _wrap(helm_values.monitoring_values),
            "plan_objects": _wrap(helm_values.objects_for),
            "plan_team_namespaces": _wrap(helm_values.team_namespaces),
            "node_labels": _wrap(helm_values.node_labels),
            "node_objects": _wrap(helm_values.node_objects),
            "relabel_steps": _wrap(helm_values.relabel_steps),
            "gpu_pods": _wrap(helm_values.gpu_pods),
            "cluster_queue_problems": _wrap(helm_values.cluster_queue_problems),
            "not_available": _wrap(helm_values.not_available),
            "chart_source": _wrap(helm_values.chart_source),
            "mirror_repository": _wrap(helm_values.mirror_repository),
            "prometheus_rule": _wrap(helm_values.prometheus_rule),
            "dashboard_configmap": _wrap(helm_values.dashboard_configmap),
            "to_manifests": _wrap(helm_values.to_manifests),
            "to_values_yaml": _wrap(helm_values.to_yaml),
        }
