# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files each add-on role renders: Helm values and manifests, from the plan.

One function per add-on turns the plan and the role's settings into file contents
(relative path -> YAML text). The roles' render step (gpushare.cluster.render_addon) and
plan.yml (gpushare.cluster.plan_report with ``addons``) both call :func:`render`, so what
a role applies and what the plan directory shows are the same bytes.

Settings are the role variables without the role prefix (``kueue_frameworks`` is
``frameworks`` here), plus the text of the role files listed in :data:`ROLE_FILES`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import isolation
from ansible_collections.gpushare.cluster.plugins.module_utils.render import local_path
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import POD_SECURITY_ENFORCE_LABEL

ADDONS = ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")

# Role variables each add-on's files are made from, without the "<addon>_" prefix.
SETTINGS: Dict[str, Tuple[str, ...]] = {
    "gpu_operator": ("release", "namespace", "driver_enabled", "kubelet_root_dir", "dcgm_dra_attribution", "mirrors",
                     "extra_values"),
    "dra_driver": ("release", "namespace", "version", "operator_driver", "feature_gates", "compute_domains",
                   "mirrors", "extra_values"),
    "kueue": ("release", "version", "frameworks", "wait_for_pods_ready_timeout",
              "wait_for_pods_ready_block_admission", "service_monitor", "prometheus_namespace", "mirrors",
              "extra_values", "extra_configuration"),
    "tenancy": (),
    "monitoring": ("release", "namespace", "retention", "retention_size", "storage_class", "storage_size",
                   "grafana_persistence_size", "grafana_admin_secret", "storage_provisioner", "local_path_dir",
                   "grafana_ingress_host", "grafana_ingress_class", "grafana_ingress_tls_secret", "mirrors",
                   "extra_values"),
}

# Role files whose text goes into the rendered files: setting -> (path in the role, is a template).
ROLE_FILES: Dict[str, Dict[str, Tuple[str, bool]]] = {
    "gpu_operator": {"dcgm_metrics_csv": ("files/dcgm-metrics.csv", False)},
    "monitoring": {
        "recording_rules": ("files/rules/gpushare.rules.yml", False),
        # Thresholds are role variables, so the alerts are a template.
        "alerts": ("templates/gpushare.alerts.yml.j2", True),
        "dashboard_teams": ("files/dashboards/gpushare-teams.json", False),
        "dashboard_gpus": ("files/dashboards/gpushare-gpus.json", False),
    },
}

# Tenancy manifests in apply order, and the plan object kinds in each (the role's apply
# step walks the same file names, from its vars/main.yml).
TENANCY_FILES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("namespaces.yaml", ("Namespace",)),
    ("rbac.yaml", ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")),
    ("admission.yaml", ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")),
)
# NetworkPolicy, ResourceQuota and LimitRange of the team namespaces, made from the plan's
# teams section (isolation.boundary_objects); applied after the namespaces, before any pod.
TENANCY_BOUNDARIES_FILE = "boundaries.yaml"
TENANCY_APPLY_ORDER = ("namespaces.yaml", TENANCY_BOUNDARIES_FILE, "rbac.yaml", "admission.yaml")
# The local-path provisioner's objects, when monitoring installs it (the role's apply step
# applies this file when it exists).
MONITORING_LOCAL_PATH_FILE = "manifests/monitoring/local-path-storage.yaml"
# Kueue objects in apply order: a ClusterQueue names flavors and its cohort, a LocalQueue its ClusterQueue.
KUEUE_KIND_ORDER = ("WorkloadPriorityClass", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue")


def _privileged_namespace(name: str) -> Dict[str, Any]:
    # The operator's driver/toolkit/MIG Manager pods, the DRA kubelet plugin and
    # node-exporter need host access.
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {POD_SECURITY_ENFORCE_LABEL: "privileged"}}}


def _of_kinds(objects: List[Dict[str, Any]], kinds: Tuple[str, ...]) -> List[Dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] in kinds]


def _gpu_operator(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, str]:
    values = helm_values.gpu_operator_values(plan, {
        "driver_enabled": bool(settings["driver_enabled"]), "mirrors": settings["mirrors"],
        "dcgm_metrics_csv": settings["dcgm_metrics_csv"], "kubelet_root_dir": settings["kubelet_root_dir"],
        "dcgm_dra_attribution": bool(settings["dcgm_dra_attribution"]), "extra_values": settings["extra_values"]})
    files = {
        f"values/{settings['release']}.yaml": helm_values.to_yaml(values),
        "manifests/gpu_operator/namespace.yaml": helm_values.to_manifests([_privileged_namespace(settings["namespace"])]),
        "manifests/gpu_operator/node-labels.yaml": helm_values.to_manifests(helm_values.node_objects(plan)),
    }
    # dra only: the read access dcgm-exporter needs to attribute DRA devices to pods.
    rbac = helm_values.dcgm_exporter_rbac(plan, settings["namespace"], bool(settings["dcgm_dra_attribution"]))
    if rbac:
        files["manifests/gpu_operator/dcgm-exporter-rbac.yaml"] = helm_values.to_manifests(rbac)
    return files


def _dra_driver(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, str]:
    if plan.get("backend") != "dra":
        return {}  # the device_plugin backend needs no DRA driver
    values = helm_values.dra_driver_values(plan, {
        "operator_driver": bool(settings["operator_driver"]), "version": settings["version"],
        "feature_gates": settings["feature_gates"], "compute_domains": bool(settings["compute_domains"]),
        "mirrors": settings["mirrors"], "extra_values": settings["extra_values"]})
    objects = helm_values.objects_for(plan, "dra_driver")
    return {
        f"values/{settings['release']}.yaml": helm_values.to_yaml(values),
        "manifests/dra_driver/namespace.yaml": helm_values.to_manifests([_privileged_namespace(settings["namespace"])]),
        "manifests/dra_driver/deviceclasses.yaml": helm_values.to_manifests(_of_kinds(objects, ("DeviceClass",))),
        "manifests/dra_driver/claims.yaml": helm_values.to_manifests(
            [obj for obj in objects if obj["kind"] != "DeviceClass"]),
    }


def _kueue(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, str]:
    values = helm_values.kueue_values(plan, {
        "version": settings["version"], "frameworks": settings["frameworks"],
        "wait_for_pods_ready_timeout": settings["wait_for_pods_ready_timeout"],
        "wait_for_pods_ready_block_admission": bool(settings["wait_for_pods_ready_block_admission"]),
        "service_monitor": bool(settings["service_monitor"]), "prometheus_namespace": settings["prometheus_namespace"],
        "mirrors": settings["mirrors"], "extra_values": settings["extra_values"],
        "extra_configuration": settings["extra_configuration"]})
    objects = helm_values.objects_for(plan, "kueue")
    ordered = [obj for kind in KUEUE_KIND_ORDER for obj in objects if obj["kind"] == kind]
    return {
        f"values/{settings['release']}.yaml": helm_values.to_yaml(values),
        "manifests/kueue/queues.yaml": helm_values.to_manifests(ordered),
    }


def boundary_objects(plan: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The tenancy boundaries of the plan's teams, owned like the plan's objects (same generation),
    so pruning removes those of a namespace the plan no longer holds."""
    return ownership.stamp(isolation.boundary_objects(plan.get("teams") or {}),
                           ownership.generation_of(plan.get("objects") or []))


def _tenancy(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, str]:
    del settings  # tenancy has no settings that change its files
    objects = helm_values.objects_for(plan, "tenancy")
    files = {f"manifests/tenancy/{name}": helm_values.to_manifests(_of_kinds(objects, kinds))
             for name, kinds in TENANCY_FILES}
    files[f"manifests/tenancy/{TENANCY_BOUNDARIES_FILE}"] = helm_values.to_manifests(boundary_objects(plan))
    return files


def _monitoring(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, str]:
    del plan  # monitoring watches whatever runs; nothing in it depends on the plan
    namespace = settings["namespace"]
    values = helm_values.monitoring_values({key: settings[key] for key in SETTINGS["monitoring"]
                                            if key not in ("release", "namespace")})
    # Without a StorageClass of the site's own the volumes come from the local-path
    # provisioner (plugins/module_utils/render/local_path.py), applied before the chart.
    provisioner = local_path.installed(settings)
    rule = helm_values.prometheus_rule("gpushare", namespace, settings["recording_rules"], settings["alerts"])
    dashboards = [
        helm_values.dashboard_configmap("gpushare-dashboard-teams", namespace, "gpushare-teams.json",
                                        settings["dashboard_teams"]),
        helm_values.dashboard_configmap("gpushare-dashboard-gpus", namespace, "gpushare-gpus.json",
                                        settings["dashboard_gpus"]),
    ]
    # The Grafana admin Secret is not rendered: a password has no place in files meant
    # for review or Git. The role applies it directly; GitOps users provide it themselves.
    files = {
        f"values/{settings['release']}.yaml": helm_values.to_yaml(values),
        "manifests/monitoring/namespace.yaml": helm_values.to_manifests([_privileged_namespace(namespace)]),
        "manifests/monitoring/prometheusrule.yaml": helm_values.to_manifests([rule]),
        "manifests/monitoring/dashboards.yaml": helm_values.to_manifests(dashboards),
    }
    if provisioner:
        files[MONITORING_LOCAL_PATH_FILE] = helm_values.to_manifests(local_path.manifests(
            settings["mirrors"], settings["local_path_dir"]))
    return files


_RENDERERS: Dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Dict[str, str]]] = {
    "gpu_operator": _gpu_operator,
    "dra_driver": _dra_driver,
    "kueue": _kueue,
    "tenancy": _tenancy,
    "monitoring": _monitoring,
}


def required_settings(addon: str) -> Tuple[str, ...]:
    """Every setting :func:`render` needs for ``addon``: role variables, then role files."""
    if addon not in _RENDERERS:
        raise ValueError(f"addon: {addon!r} is not an add-on of the collection (known: {', '.join(ADDONS)})")
    return SETTINGS[addon] + tuple(ROLE_FILES.get(addon, {}))


def render(addon: str, plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, str]:
    """Relative path -> YAML text of every file ``addon`` renders for ``plan``.

    Raises ValueError naming the add-on and what is missing or wrong.
    """
    missing = [key for key in required_settings(addon) if key not in settings]
    if missing:
        raise ValueError(f"{addon}: settings missing: {', '.join(missing)}")
    try:
        return _RENDERERS[addon](plan, settings)
    except ValueError as error:
        raise ValueError(f"{addon}: {error}") from error
