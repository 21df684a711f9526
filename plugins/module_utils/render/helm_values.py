# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helm values and manifests of the cluster add-ons, built from the plan.

Pure functions: they read the ``gpushare_plan`` dict (shape documented in the
collection's conventions) and the role settings, and return plain dicts. No I/O and no
Ansible imports, so the add-on roles and the tests share one implementation. Errors are
``ValueError`` naming the host and field that is wrong.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional, Sequence

try:
    import yaml
except ImportError:  # ansible-core brings PyYAML; yaml_text says so if it is missing
    yaml = None

from ansible_collections.gpushare.cluster.plugins.module_utils.render import local_path
from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as mirrors_lib
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership, yaml_text
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import PlanContractError
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract, sharing
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DEVICE_PLUGIN_CONFIG_LABEL, DRA_DRIVER, DRA_PLUGIN_LABEL, DRIVER_UPGRADE_PAUSED, GPU_CLIENT_LABEL,
    GPU_DEPLOY_LABEL_PREFIX, GPU_RESOURCE, KUEUE_CONFIG_API,
    MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, MIG_RESOURCE_PREFIX, NVIDIA_RESOURCE_PREFIX, PART_OF_LABEL, RESOURCE_GROUP,
    SHARED_SUFFIX)

# Object kinds of the plan, by the role that applies them.
KINDS_BY_ROLE: Dict[str, tuple] = {
    "tenancy": (
        "Namespace",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ),
    "dra_driver": ("DeviceClass", "ResourceClaimTemplate", "ResourceClaim"),
    "kueue": ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"),
}

# The objects and values the add-on roles render beside the charts carry this label.
PART_OF_LABELS = {PART_OF_LABEL: "gpushare"}

MICROK8S_TOOLKIT_ENV = [
    {"name": "CONTAINERD_CONFIG", "value": "/var/snap/microk8s/current/args/containerd-template.toml"},
    {"name": "CONTAINERD_SOCKET", "value": "/var/snap/microk8s/common/run/containerd.sock"},
    {"name": "RUNTIME_CONFIG_SOURCE", "value": "file=/var/snap/microk8s/current/args/containerd.toml"},
]
MICROK8S_KUBELET_DIR = "/var/snap/microk8s/common/var/lib/kubelet"

# NVIDIA Container Toolkit v1.20.0 (the GPU Operator v26.7.0 default), cmd/nvidia-ctk-installer/
# toolkit/toolkit.go: this variable sets the config option accept-nvidia-visible-devices-envvar-
# when-unprivileged (default true). False: an unprivileged container that sets
# NVIDIA_VISIBLE_DEVICES itself gets no GPU. Allocated GPUs still arrive, through CDI
# (cdi.enabled; the operator's device plugin then uses DEVICE_LIST_STRATEGY
# cdi-annotations,cdi-cri, and the DRA driver always uses CDI); the operator's own pods that
# set the variable are privileged.
TOOLKIT_ENV = [{"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"}]

# dcgm-exporter as GPU Operator v26.7.0 deploys it (4.6.0-4.8.3): DaemonSet service account
# (assets/state-dcgm-exporter/0100_service_account.yaml) and the resource names it maps to pods
# without NVIDIA_RESOURCE_NAMES (internal/pkg/transformation/kubernetes.go: nvidia.com/gpu and
# the prefix nvidia.com/mig-).
DCGM_EXPORTER_SERVICE_ACCOUNT = "nvidia-dcgm-exporter"
DCGM_EXPORTER_DRA_ROLE = "gpushare-dcgm-exporter-dra"
DCGM_EXPORTER_MAPPED = (GPU_RESOURCE,)
DCGM_EXPORTER_MAPPED_PREFIX = MIG_RESOURCE_PREFIX

KUEUE_FRAMEWORKS = [
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "trainer.kubeflow.org/trainjob",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "ray.io/rayjob",
    "ray.io/raycluster",
]


def to_yaml(data: Any) -> str:
    """One YAML document (values files); multi-line strings as literal blocks."""
    return yaml_text.dump(data)


def to_manifests(objects: List[Mapping[str, Any]]) -> str:
    """Objects as one multi-document YAML text ("" for none), in the given order."""
    return yaml_text.dump_documents(objects)


def node_objects(plan: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Partial Node objects carrying the labels of :func:`node_labels` (for server-side apply)."""
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": plan["nodes"][host].get("node_name", host), "labels": labels}}
            for host, labels in node_labels(plan).items()]


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> Dict[str, Any]:
    """Return ``base`` with ``override`` merged in (dicts recursively, the rest replaced)."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# --- plan helpers ---------------------------------------------------------------------

def objects_for(plan: Mapping[str, Any], role: str) -> List[Dict[str, Any]]:
    """The plan's Kubernetes objects that ``role`` applies, in the plan's order.

    The objects are the plan's own (not copies: copying thousands of claims costs more
    than writing them); callers read them and do not change them.
    """
    kinds = KINDS_BY_ROLE.get(role)
    if kinds is None:
        raise ValueError(f"role: {role!r} applies no plan objects (known: {', '.join(sorted(KINDS_BY_ROLE))})")
    result = []
    for position, obj in enumerate(contract.check_plan(plan).get("objects") or []):
        if not isinstance(obj, Mapping) or "kind" not in obj or "metadata" not in obj:
            raise PlanContractError(f"gpushare_plan.objects[{position}]: not a Kubernetes object (kind and metadata needed)")
        if obj["kind"] in kinds:
            result.append(obj)
    return result


def team_namespaces(plan: Mapping[str, Any]) -> List[str]:
    names: List[str] = []
    for team in (contract.check_plan(plan).get("teams") or {}).values():
        for namespace in team.get("namespaces") or []:
            if namespace not in names:
                names.append(namespace)
    return names


def sharing_strategies(plan: Mapping[str, Any]) -> List[str]:
    """GPU sharing strategies (TimeSlicing, MPS) the plan's DRA claims configure."""
    found: List[str] = []
    for obj in objects_for(plan, "dra_driver"):
        spec = obj.get("spec") or {}
        if obj["kind"] == "ResourceClaimTemplate":
            spec = spec.get("spec") or {}
        for config in (spec.get("devices") or {}).get("config") or []:
            parameters = (config.get("opaque") or {}).get("parameters") or {}
            strategy = (parameters.get("sharing") or {}).get("strategy")
            if strategy and strategy not in found:
                found.append(strategy)
    return found


def node_labels(plan: Mapping[str, Any]) -> Dict[str, Dict[str, str]]:
    """Labels each GPU node must carry: the plan's labels plus the backend's selectors."""
    plan = contract.check_plan(plan)
    result: Dict[str, Dict[str, str]] = {}
    for host, node in sorted(plan["nodes"].items()):
        labels = {str(k): str(v) for k, v in (node.get("labels") or {}).items()}
        if node.get("mig_config"):
            labels.setdefault(MIG_CONFIG_LABEL, str(node["mig_config"]))
        if plan["backend"] == "device_plugin" and node.get("device_plugin_config"):
            labels.setdefault(DEVICE_PLUGIN_CONFIG_LABEL, str(node["device_plugin_config"]))
        if plan["backend"] == "dra" and node.get("gpus"):
            # The standalone DRA driver's kubelet plugin runs only where this label is
            # "true"; the operator's driver manager flips it to evict the plugin on upgrades.
            labels.setdefault(DRA_PLUGIN_LABEL, "true")
        result[host] = labels
    return result


def relabel_steps(plan: Mapping[str, Any], current: Mapping[str, Mapping[str, str]],
                  unfinished: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """Nodes whose labels differ from the plan, in a stable order, one entry per node.

    ``current`` maps node name -> its labels now. A node the plan knows but the cluster
    does not is an error (the wrong inventory, or a node that never joined). Each step says
    whether the MIG configuration changes (then MIG Manager must report success before the
    node is uncordoned) and whether the node needs a drain at all (only label changes that
    repartition or re-advertise GPUs disrupt pods).

    ``unfinished`` names the nodes an earlier run relabelled but did not bring back (they carry
    RELABEL_UNFINISHED_ANNOTATION, and stay cordoned). Such a node with its labels already right is
    a step too, to finish (``resume``): when its MIG state is not ``success`` MIG Manager must apply
    the layout again (``restart_mig_manager``), then the node is waited for and uncordoned.
    """
    wanted = {plan["nodes"][host].get("node_name", host): labels for host, labels in node_labels(plan).items()}
    missing = sorted(host for host in wanted if host not in current)
    if missing:
        raise PlanContractError(f"nodes {', '.join(missing)}: in the plan but not in the cluster (field: gpushare_plan.nodes)")
    steps = []
    for host, labels in wanted.items():
        now = {str(k): str(v) for k, v in (current.get(host) or {}).items()}
        changes = {k: v for k, v in labels.items() if now.get(k) != v and not _paused_by_driver_manager(k, v, now.get(k))}
        resume = host in (unfinished or ()) and not changes
        if not changes and not resume:
            continue
        mig_change = MIG_CONFIG_LABEL in changes
        disruptive = mig_change or DEVICE_PLUGIN_CONFIG_LABEL in changes or resume
        steps.append({"node": host, "labels": changes, "mig_change": mig_change, "drain": disruptive,
                      "mig_config": labels.get(MIG_CONFIG_LABEL), "resume": resume,
                      "restart_mig_manager": resume and MIG_CONFIG_LABEL in labels
                      and now.get(MIG_CONFIG_STATE_LABEL) != "success"})
    return steps


def _paused_by_driver_manager(key: str, wanted: str, now: Optional[str]) -> bool:
    """A label the driver manager pauses (the operands' nvidia.com/gpu.deploy.* and the eviction
    label, DRA_PLUGIN_LABEL) holds its pause of the wanted value: a driver reload is under way and
    the driver manager puts the value back afterwards. The operator's own state, not a drift."""
    if now is None or not (key == DRA_PLUGIN_LABEL or key.startswith(GPU_DEPLOY_LABEL_PREFIX)):
        return False
    return now == (DRIVER_UPGRADE_PAUSED if wanted == "true" else wanted + "_" + DRIVER_UPGRADE_PAUSED)


def node_back_problems(plan: Mapping[str, Any], node: str, nodes: Optional[List[Mapping[str, Any]]],
                       slices: Optional[List[Mapping[str, Any]]] = None) -> List[str]:
    """Why a relabelled node is not back in service yet; empty when it is.

    ``nodes``: the k8s_info result of that Node; ``slices``: its ResourceSlices (dra); either None
    leaves its part unchecked (the role waits for the Node first, then for the slices).
    Back means: Ready, and its GPUs advertised again as the plan has them - under ``device_plugin``
    every resource of the node's GPUs in ``status.allocatable`` with the plan's count; under ``dra``
    gpu.nvidia.com ResourceSlices of the node with one ``gpu`` device per GPU with MIG off and one
    ``mig`` device per MIG instance, of the instance's profile (the driver's ``type`` and
    ``profile`` attributes, dra-driver-nvidia-gpu v0.4.1, as docs/rehearsal.md describes what it
    publishes).
    """
    host = next((h for h, entry in (contract.check_plan(plan).get("nodes") or {}).items()
                 if entry.get("node_name", h) == node), None)
    if host is None:
        raise PlanContractError(f"node {node}: not in the plan (field: gpushare_plan.nodes)")
    gpus = plan["nodes"][host].get("gpus") or []
    problems: List[str] = []
    if nodes is not None:
        problems += _node_problems(plan["backend"], node, gpus, nodes)
    if slices is None or plan["backend"] != "dra":
        return problems
    wanted = {"gpu": sum(1 for gpu in gpus if not gpu.get("mig_enabled")),
              "mig": sum(len(gpu.get("instances") or []) for gpu in gpus if gpu.get("mig_enabled"))}
    wanted_profiles = Counter(str(instance.get("profile")) for gpu in gpus if gpu.get("mig_enabled")
                              for instance in gpu.get("instances") or [])
    published = {"gpu": 0, "mig": 0}
    published_profiles: Counter = Counter()
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("nodeName") != node or spec.get("driver") != DRA_DRIVER:
            continue
        for device in spec.get("devices") or []:
            attributes = device.get("attributes") or {}
            kind = (attributes.get("type") or {}).get("string")
            if kind in published:
                published[kind] += 1
            if kind == "mig":
                published_profiles[str((attributes.get("profile") or {}).get("string"))] += 1
    for kind, count in wanted.items():
        if published[kind] != count:
            problems.append(f"node {node} publishes {published[kind]} {kind} device(s) (gpu.nvidia.com "
                            f"ResourceSlices), the plan has {count}")
    # The same number of MIG devices can still be another layout (a previous one, or a config MIG
    # Manager applied from a stale file): the driver publishes each MIG device's GPU-instance
    # profile as attribute `profile` (dra-driver-nvidia-gpu v0.4.1, mig.go CommonAttributesMig).
    if published["mig"] == wanted["mig"] and published_profiles != wanted_profiles:
        problems.append(f"node {node} publishes MIG devices {_profile_counts(published_profiles)} "
                        f"(gpu.nvidia.com ResourceSlices), the plan has {_profile_counts(wanted_profiles)}")
    return problems


def _profile_counts(counts: Counter) -> str:
    return ", ".join(f"{profile} x{count}" for profile, count in sorted(counts.items()))


def _node_problems(backend: str, node: str, gpus: List[Mapping[str, Any]], nodes: List[Mapping[str, Any]]) -> List[str]:
    found = [n for n in nodes if (n.get("metadata") or {}).get("name") == node]
    if not found:
        return [f"node {node} is not in the cluster"]
    status = found[0].get("status") or {}
    problems = []
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if not any(str(c.get("status")) == "True" for c in ready):
        reason = "; ".join(str(c.get("message") or c.get("reason") or c.get("status")) for c in ready)
        problems.append(f"node {node} is not Ready ({reason or 'no Ready condition'})")
    if backend == "device_plugin":
        wanted: Dict[str, int] = {}
        for gpu in gpus:
            for resource, count in (gpu.get("resources") or {}).items():
                wanted[resource] = wanted.get(resource, 0) + int(count)
        allocatable = status.get("allocatable") or {}
        for resource, count in sorted(wanted.items()):
            have = str(allocatable.get(resource, "0"))
            if not have.isdigit() or int(have) != count:
                problems.append(f"node {node} advertises {resource}: {have}, the plan has {count}")
    return problems


def gpu_pods(pods: List[Mapping[str, Any]]) -> List[Dict[str, str]]:
    """Pods (Kubernetes Pod dicts) that hold GPUs and must go before a node's GPUs change.

    A pod holds GPUs when a container requests an ``nvidia.com/*`` resource or the pod
    has DRA resource claims. DaemonSet pods (the operator's own) and finished pods stay.
    """
    found = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if any(owner.get("kind") == "DaemonSet" for owner in metadata.get("ownerReferences") or []):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
        names = set()
        for container in containers:
            resources = container.get("resources") or {}
            for section in ("limits", "requests"):
                names.update((resources.get(section) or {}).keys())
        if spec.get("resourceClaims") or any(str(name).startswith(NVIDIA_RESOURCE_PREFIX) for name in names):
            found.append({"name": str(metadata.get("name")), "namespace": str(metadata.get("namespace", "default"))})
    return found


# --- GPU Operator ---------------------------------------------------------------------

def mig_parted_config(plan: Mapping[str, Any]) -> Dict[str, Any]:
    """The plan's mig-parted config plus ``all-disabled`` (the default for nodes without a layout)."""
    config = copy.deepcopy(dict(contract.check_plan(plan).get("mig_parted") or {"version": "v1", "mig-configs": {}}))
    configs = config.setdefault("mig-configs", {})
    configs.setdefault(sharing.ALL_DISABLED, [{"devices": "all", "mig-enabled": False}])
    config.setdefault("version", "v1")
    return config


def time_sliced_resources(plan: Mapping[str, Any]) -> List[str]:
    """Device-plugin resources of time-sliced GPUs in the plan (``*.shared``), sorted."""
    names = set()
    for host in sorted(plan.get("nodes") or {}):
        for gpu in (plan["nodes"][host] or {}).get("gpus") or []:
            names.update(name for name in (gpu.get("resources") or {}) if str(name).endswith(SHARED_SUFFIX))
    return sorted(names)


def dcgm_exporter_env(plan: Mapping[str, Any], dra_attribution: bool = True) -> List[Dict[str, str]]:
    """Environment the GPU Operator gives dcgm-exporter so every GPU is attributed to its pods.

    dcgm-exporter 4.6.0-4.8.3 (pkg/cmd/app.go, internal/pkg/transformation/kubernetes.go):
    - ``dra``: ``KUBERNETES_ENABLE_DRA`` maps the devices of a pod's ResourceClaims (kubelet
      pod-resources API) to GPUs through the driver's ResourceSlices; without it no DRA device
      is attributed. ``KUBERNETES_VIRTUAL_GPUS`` must stay off there: with it the exporter
      returns before its DRA mapping.
    - ``device_plugin``: the exporter maps only ``nvidia.com/gpu`` and ``nvidia.com/mig-*``
      unless ``NVIDIA_RESOURCE_NAMES`` lists more, so time-sliced ``nvidia.com/gpu.shared`` is
      listed; ``KUBERNETES_VIRTUAL_GPUS`` gives every pod sharing a GPU its own series (without
      it the exporter keeps one pod per device, the last it saw).
    """
    if plan.get("backend") == "dra":
        return [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}] if dra_attribution else []
    shared = time_sliced_resources(plan)
    if not shared:
        return []
    env = []
    unmapped = [name for name in shared
                if name not in DCGM_EXPORTER_MAPPED and not name.startswith(DCGM_EXPORTER_MAPPED_PREFIX)]
    if unmapped:
        env.append({"name": "NVIDIA_RESOURCE_NAMES", "value": ",".join(unmapped)})
    env.append({"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"})
    return env


def dcgm_exporter_rbac(plan: Mapping[str, Any], namespace: str, dra_attribution: bool = True) -> List[Dict[str, Any]]:
    """The read access to ResourceSlices dcgm-exporter needs under ``dra`` (none otherwise).

    The operator's exporter ClusterRole grants pods only (v26.7.0
    assets/state-dcgm-exporter/0210_clusterrole.yaml: "TODO: Add resourceSlices permissions").
    The exporter watches ResourceSlices (internal/pkg/transformation/dra.go, a
    ``resource.k8s.io/v1beta1`` informer) and reads no ResourceClaim: claim names come from the
    kubelet's pod-resources API. So: get/list/watch on resourceslices, nothing else.
    """
    if plan.get("backend") != "dra" or not dra_attribution:
        return []
    labels = {ownership.MANAGED_BY_LABEL: ownership.MANAGED_BY, **PART_OF_LABELS}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": DCGM_EXPORTER_DRA_ROLE, "labels": dict(labels)},
         "rules": [{"apiGroups": [RESOURCE_GROUP], "resources": ["resourceslices"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": DCGM_EXPORTER_DRA_ROLE, "labels": dict(labels)},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": DCGM_EXPORTER_DRA_ROLE},
         "subjects": [{"kind": "ServiceAccount", "name": DCGM_EXPORTER_SERVICE_ACCOUNT, "namespace": namespace}]},
    ]


def gpu_operator_values(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Values for the gpu-operator chart.

    settings: ``driver_enabled`` (bool), ``mirrors``, ``dcgm_metrics_csv`` (text),
    ``mig_config_name``, ``device_plugin_config_name``, ``dcgm_metrics_config_name``,
    ``kubelet_root_dir`` (optional), ``dcgm_dra_attribution`` (bool, default true),
    ``extra_values`` (merged last).
    """
    plan = contract.check_plan(plan)
    mirrors = settings.get("mirrors") or {}
    nvcr = "nvcr.io/nvidia"
    values: Dict[str, Any] = {
        "operator": {"repository": mirrors_lib.mirror_repository(nvcr, mirrors)},
        "validator": {"repository": mirrors_lib.mirror_repository(nvcr, mirrors)},
        "cdi": {"enabled": True},
        "mig": {"strategy": "mixed"},
        "driver": {
            "enabled": bool(settings.get("driver_enabled", True)),
            "repository": mirrors_lib.mirror_repository(nvcr, mirrors),
            "manager": {"repository": mirrors_lib.mirror_repository(f"{nvcr}/cloud-native", mirrors)},
        },
        "toolkit": {"enabled": True, "repository": mirrors_lib.mirror_repository(f"{nvcr}/k8s", mirrors),
                    "env": copy.deepcopy(TOOLKIT_ENV)},
        "devicePlugin": {"repository": mirrors_lib.mirror_repository(nvcr, mirrors)},
        "dcgm": {"repository": mirrors_lib.mirror_repository(f"{nvcr}/cloud-native", mirrors)},
        "dcgmExporter": {
            "enabled": True,
            "repository": mirrors_lib.mirror_repository(f"{nvcr}/k8s", mirrors),
            "serviceMonitor": {"enabled": True, "interval": "15s", "honorLabels": False},
        },
        "gfd": {"repository": mirrors_lib.mirror_repository(nvcr, mirrors)},
        "migManager": {
            "enabled": True,
            "repository": mirrors_lib.mirror_repository(f"{nvcr}/cloud-native", mirrors),
            "config": {
                "create": True,
                "name": settings.get("mig_config_name", "gpushare-mig-parted-config"),
                "default": sharing.ALL_DISABLED,
                "data": {"config.yaml": yaml_text.dump(mig_parted_config(plan))},
            },
        },
        "nodeStatusExporter": {"repository": mirrors_lib.mirror_repository(nvcr, mirrors)},
        "node-feature-discovery": {
            "image": {"repository": mirrors_lib.mirror_repository("registry.k8s.io/nfd/node-feature-discovery", mirrors)},
        },
    }
    _add_dcgm_exporter_values(values["dcgmExporter"], plan, settings)
    if plan["distribution"] == "microk8s":
        values["toolkit"]["env"] += copy.deepcopy(MICROK8S_TOOLKIT_ENV)
    if settings.get("kubelet_root_dir"):
        values["hostPaths"] = {"kubeletRootDir": str(settings["kubelet_root_dir"])}
    _add_backend_values(values, plan, settings)
    return deep_merge(values, settings.get("extra_values") or {})


def _add_dcgm_exporter_values(exporter: Dict[str, Any], plan: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """The exporter's metrics list, its environment and, for DRA attribution, its API access."""
    if settings.get("dcgm_metrics_csv"):
        exporter["config"] = {
            "create": True,
            "name": settings.get("dcgm_metrics_config_name", "gpushare-dcgm-metrics"),
            "data": str(settings["dcgm_metrics_csv"]),
        }
    dra_attribution = bool(settings.get("dcgm_dra_attribution", True))
    exporter_env = dcgm_exporter_env(plan, dra_attribution)
    if exporter_env:
        exporter["env"] = exporter_env
    if plan["backend"] == "dra" and dra_attribution:
        # The exporter's DaemonSet does not mount its service-account token unless pod
        # metadata is on (v26.7.0 controllers/object_controls.go, TransformDCGMExporter), and
        # the DRA mapping reads ResourceSlices through the API. enablePodUID turns the mount on
        # (and adds the pod's uid, one value per pod like the pod label).
        exporter["enablePodUID"] = True


def _add_backend_values(values: Dict[str, Any], plan: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """dra: no device plugin, and the driver manager evicts GPU pods by the DRA plugin label.
    device_plugin: the device plugin with the plan's time-slicing configs."""
    if plan["backend"] == "dra":
        values["devicePlugin"]["enabled"] = False
        values["driver"]["manager"]["env"] = [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": DRA_PLUGIN_LABEL}]
        return
    configs = {sharing.DEVICE_PLUGIN_DEFAULT: {"version": "v1", "flags": {"migStrategy": "mixed"}}}
    configs.update(copy.deepcopy(plan.get("device_plugin_configs") or {}))
    values["devicePlugin"].update({
        "enabled": True,
        "config": {
            "create": True,
            "name": settings.get("device_plugin_config_name", "gpushare-device-plugin-config"),
            "default": sharing.DEVICE_PLUGIN_DEFAULT,
            "data": {name: yaml_text.dump(config) for name, config in configs.items()},
        },
    })


# --- DRA driver -----------------------------------------------------------------------

def dra_driver_values(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Values for the dra-driver-nvidia-gpu chart next to the GPU Operator.

    settings: ``operator_driver`` (bool: the operator installs the driver), ``version``,
    ``feature_gates`` (dict), ``compute_domains`` (bool), ``mirrors``, ``extra_values``.
    """
    plan = contract.check_plan(plan)
    if plan["backend"] != "dra":
        raise PlanContractError("gpushare_plan.backend: the DRA driver is only deployed with the 'dra' backend")
    gates = {str(k): bool(v) for k, v in (settings.get("feature_gates") or {}).items()}
    strategies = sharing_strategies(plan)
    # The driver rejects a claim asking for a sharing strategy whose gate is off.
    gates["TimeSlicingSettings"] = "TimeSlicing" in strategies or gates.get("TimeSlicingSettings", False)
    if "MPS" in strategies:
        gates["MPSSupport"] = True
    values: Dict[str, Any] = {
        "nvidiaDriverRoot": "/run/nvidia/driver" if settings.get("operator_driver", True) else "/",
        "gpuResourcesEnabledOverride": True,
        "image": {
            "repository": mirrors_lib.mirror_repository("registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu",
                                                        settings.get("mirrors")),
            "tag": str(settings.get("version", "v0.4.1")),
        },
        "resources": {"gpus": {"enabled": True},
                      "computeDomains": {"enabled": bool(settings.get("compute_domains", False))}},
        "featureGates": dict(sorted(gates.items())),
        # gpu.deploy.client: the operator (26.7) sets this node label and pauses it while
        # MIG Manager repartitions or the driver is upgraded, which restarts the plugin so
        # it advertises the new MIG devices.
        "kubeletPlugin": {"nodeSelector": {DRA_PLUGIN_LABEL: "true", GPU_CLIENT_LABEL: "true"}},
    }
    if plan["distribution"] == "microk8s":
        values["kubeletPlugin"]["kubeletRegistrarDirectoryPath"] = f"{MICROK8S_KUBELET_DIR}/plugins_registry"
        values["kubeletPlugin"]["kubeletPluginsDirectoryPath"] = f"{MICROK8S_KUBELET_DIR}/plugins"
    return deep_merge(values, settings.get("extra_values") or {})


# --- Kueue ----------------------------------------------------------------------------

def kueue_configuration(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, Any]:
    """The Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2)."""
    plan = contract.check_plan(plan)
    namespaces = team_namespaces(plan)
    if not namespaces:
        raise PlanContractError("gpushare_plan.teams: no team namespaces; Kueue would manage no namespace")
    config: Dict[str, Any] = {
        "apiVersion": KUEUE_CONFIG_API,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}],
        },
        "waitForPodsReady": {"timeout": str(settings.get("wait_for_pods_ready_timeout", "30m")),
                             "blockAdmission": bool(settings.get("wait_for_pods_ready_block_admission", False))},
        "integrations": {"frameworks": list(settings.get("frameworks") or KUEUE_FRAMEWORKS)},
    }
    config = deep_merge(config, plan.get("kueue_configuration") or {})
    return deep_merge(config, settings.get("extra_configuration") or {})


def kueue_values(plan: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Values for the kueue chart: image, metrics and the manager Configuration."""
    values: Dict[str, Any] = {
        "enablePrometheus": bool(settings.get("service_monitor", True)),
        "controllerManager": {
            "manager": {
                "image": {
                    "repository": mirrors_lib.mirror_repository("registry.k8s.io/kueue/kueue", settings.get("mirrors")),
                    "tag": "v" + str(settings.get("version", "0.19.2")).lstrip("v"),
                    "pullPolicy": "IfNotPresent",
                },
            },
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml_text.dump(kueue_configuration(plan, settings))},
        "metrics": {"prometheusNamespace": str(settings.get("prometheus_namespace", "monitoring"))},
    }
    return deep_merge(values, settings.get("extra_values") or {})


def cluster_queue_problems(queues: List[Mapping[str, Any]], expected: List[str]) -> List[str]:
    """Expected ClusterQueues (Kubernetes dicts from k8s_info) that are missing or not Active."""
    by_name = {str((q.get("metadata") or {}).get("name")): q for q in queues}
    problems = []
    for name in expected:
        queue = by_name.get(name)
        if queue is None:
            problems.append(f"{name} (not found)")
            continue
        conditions = [c for c in (queue.get("status") or {}).get("conditions") or [] if c.get("type") == "Active"]
        if not any(c.get("status") == "True" for c in conditions):
            reason = "; ".join(str(c.get("message") or c.get("reason")) for c in conditions) or "no status yet"
            problems.append(f"{name} ({reason})")
    return problems


def not_available(results: List[Mapping[str, Any]]) -> List[str]:
    """What is not Available, from looped k8s_info results (``item.kind`` + ``resources``)."""
    problems = []
    for result in results:
        kind = str((result.get("item") or {}).get("kind", "object"))
        resources = result.get("resources") or []
        if not resources:
            problems.append(f"no {kind} found")
        for obj in resources:
            conditions = (obj.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions):
                name = (obj.get("metadata") or {}).get("name")
                reasons = [str(c.get("message") or c.get("reason")) for c in conditions if c.get("type") == "Available"]
                problems.append(f"{kind} {name} not Available ({'; '.join(reasons) or 'no status yet'})")
    return problems


# --- kube-prometheus-stack ------------------------------------------------------------

def monitoring_values(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Values for kube-prometheus-stack.

    settings: ``retention``, ``retention_size``, ``storage_class``, ``storage_size``,
    ``storage_provisioner``, ``grafana_admin_secret``, ``grafana_persistence_size``,
    ``grafana_ingress_host``, ``grafana_ingress_class``, ``grafana_ingress_tls_secret``, ``mirrors``, ``extra_values``.
    The Grafana password never appears here: Grafana reads it from an existing Secret.
    """
    mirrors = settings.get("mirrors") or {}
    spec: Dict[str, Any] = {
        # Empty selectors with NilUsesHelmValues off pick up every namespace's monitors
        # and rules (DCGM exporter, Kueue, and this collection's own PrometheusRule).
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
        "probeSelectorNilUsesHelmValues": False,
        "serviceMonitorSelector": {},
        "serviceMonitorNamespaceSelector": {},
        "podMonitorSelector": {},
        "podMonitorNamespaceSelector": {},
        "ruleSelector": {},
        "ruleNamespaceSelector": {},
        "retention": str(settings.get("retention", "30d")),
        "retentionSize": str(settings.get("retention_size", "")),
    }
    # The site's StorageClass, else the local-path provisioner's when the role installs it,
    # else the cluster default (local_path.storage_class).
    storage_class = local_path.storage_class(settings)
    if settings.get("storage_size"):
        claim: Dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                                 "resources": {"requests": {"storage": str(settings["storage_size"])}}}
        if storage_class:
            claim["storageClassName"] = storage_class
        spec["storageSpec"] = {"volumeClaimTemplate": {"spec": claim}}
    grafana: Dict[str, Any] = {
        "admin": {"existingSecret": str(settings.get("grafana_admin_secret", "grafana-admin")),
                  "userKey": "admin-user", "passwordKey": "admin-password"},
        "sidecar": {"dashboards": {"enabled": True, "label": "grafana_dashboard", "labelValue": "1",
                                   "searchNamespace": "ALL"}},
    }
    if settings.get("grafana_persistence_size"):
        grafana["persistence"] = {"enabled": True, "type": "sts", "accessModes": ["ReadWriteOnce"],
                                  "size": str(settings["grafana_persistence_size"])}
        if storage_class:
            grafana["persistence"]["storageClassName"] = storage_class
    if settings.get("grafana_ingress_host"):
        # How people reach Grafana without a port-forward, through the site's ingress
        # controller (docs/monitoring.md); kube-prometheus-stack 88.5.3 values, grafana.ingress.
        grafana["ingress"] = {"enabled": True, "hosts": [str(settings["grafana_ingress_host"])], "path": "/"}
        if settings.get("grafana_ingress_class"):
            grafana["ingress"]["ingressClassName"] = str(settings["grafana_ingress_class"])
        if settings.get("grafana_ingress_tls_secret"):
            grafana["ingress"]["tls"] = [{"secretName": str(settings["grafana_ingress_tls_secret"]),
                                          "hosts": [str(settings["grafana_ingress_host"])]}]
    values: Dict[str, Any] = {
        "prometheus": {"prometheusSpec": spec},
        "grafana": grafana,
        "kube-state-metrics": {
            # label_gpushare_io_team on kube_namespace_labels joins namespaces to teams; the MIG
            # state label drives the MIG alert.
            "metricLabelsAllowlist": [
                "namespaces=[gpushare.io/team]",
                "nodes=[nvidia.com/mig.config,nvidia.com/mig.config.state]",
            ],
        },
    }
    if mirrors.get("registry"):
        values["global"] = {"imageRegistry": str(mirrors["registry"]).rstrip("/")}
    return deep_merge(values, settings.get("extra_values") or {})


def prometheus_rule(name: str, namespace: str, rules_yaml: str, *more_rules_yaml: str) -> Dict[str, Any]:
    """Wrap Prometheus rule files (``groups:``) into one PrometheusRule object, groups in order."""
    groups: List[Any] = []
    for number, text in enumerate((rules_yaml, *more_rules_yaml), start=1):
        found = (yaml.safe_load(text) or {}).get("groups")
        if not found:
            raise ValueError(f"PrometheusRule {namespace}/{name}: rule file {number} has no groups")
        groups += found
    names = [group.get("name") for group in groups]
    duplicates = sorted({group for group in names if names.count(group) > 1})
    if duplicates:
        raise ValueError(f"PrometheusRule {namespace}/{name}: rule group names repeat: {', '.join(duplicates)}")
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(PART_OF_LABELS)},
            "spec": {"groups": groups}}


def dashboard_configmap(name: str, namespace: str, filename: str, dashboard_json: str) -> Dict[str, Any]:
    """A ConfigMap the Grafana sidecar loads (label grafana_dashboard=1)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"grafana_dashboard": "1", **PART_OF_LABELS}},
            "data": {filename: dashboard_json}}
