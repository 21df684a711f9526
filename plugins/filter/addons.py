# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that build the add-on roles' Helm values and manifests from the plan."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


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
            "node_back_problems": _wrap(helm_values.node_back_problems),
            "cluster_queue_problems": _wrap(helm_values.cluster_queue_problems),
            "not_available": _wrap(helm_values.not_available),
            "chart_source": _wrap(helm_values.chart_source),
            "mirror_repository": _wrap(helm_values.mirror_repository),
            "prometheus_rule": _wrap(helm_values.prometheus_rule),
            "dashboard_configmap": _wrap(helm_values.dashboard_configmap),
            "to_manifests": _wrap(helm_values.to_manifests),
            "to_values_yaml": _wrap(helm_values.to_yaml),
        }
