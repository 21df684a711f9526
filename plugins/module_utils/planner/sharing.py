# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node sharing plan for the ``dra`` and ``device_plugin`` backends.

For every node: which resource each GPU becomes (and how many units of it), the MIG
layout (from the MIG planner), the mig-parted and device-plugin configs by node shape,
and the node labels that select those configs. Resource and flavor names are decided
here once; quotas and DRA objects reuse them.

device_plugin facts this relies on (NVIDIA k8s-device-plugin v0.20.0): time-slicing
applies to every device of a resource name on a node (the ``devices`` field is
ignored), so whole and time-sliced full GPUs cannot share a node; with
``renameByDefault`` a time-sliced resource ``X`` becomes ``X.shared``; MIG devices are
``nvidia.com/mig-<profile>`` with the ``mixed`` strategy.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import mig_solver
from ansible_collections.gpushare.cluster.plugins.module_utils._common import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import Gpu
from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DEVICE_PLUGIN_CONFIG_LABEL, GPU_NODE_LABEL_PREFIX, GPU_RESOURCE, GPUSHARE_GROUP, MIG_CONFIG_LABEL,
    MIG_RESOURCE_PREFIX, SHARED_GPU_RESOURCE, SHARED_SUFFIX)

BACKENDS = versions.BACKENDS
ALL_DISABLED = "all-disabled"
DEVICE_PLUGIN_DEFAULT = "gpushare-default"


def model_slug(model_key: str) -> str:
    return model_key.lower()


def profile_slug(profile: str) -> str:
    """Profile in resource and object names: '+' is not allowed there, so it becomes '.'."""
    return profile.replace("+", ".").lower()


def counts_profile(resource: str, profile: str) -> bool:
    """Whether the quota resource ``resource`` counts MIG profile ``profile``, whole or
    time-sliced, under either backend (nvidia.com/mig-1g.10gb, gpushare.io/a100-mig-1g.10gb)."""
    name = "mig-" + profile_slug(profile)
    return resource.endswith(name) or resource.endswith(name + SHARED_SUFFIX)


def model_label(model_key: str) -> str:
    """Node label the plan sets on every node with this GPU model (value "true")."""
    return GPU_NODE_LABEL_PREFIX + model_slug(model_key)


def gfd_product(model_key: str) -> str:
    """The ``nvidia.com/gpu.product`` value GPU Feature Discovery sets: spaces become dashes."""
    return gpu_catalog.lookup(model_key).product_names[0].replace(" ", "-")


def flavor_name(model_key: str, kind: str) -> str:
    """Kueue ResourceFlavor per GPU model and use: whole, mig or shared."""
    return "%s-%s" % (model_slug(model_key), kind)


def resource_name(backend: str, model_key: str, use: str, profile: Optional[str] = None) -> str:
    """The quota resource one unit of this GPU use is counted in."""
    if backend == "device_plugin":
        if use == "whole":
            return GPU_RESOURCE
        if use == "shared":
            return SHARED_GPU_RESOURCE
        if use == "mig":
            return MIG_RESOURCE_PREFIX + profile_slug(profile or "")
        if use == "mig-shared":
            return MIG_RESOURCE_PREFIX + profile_slug(profile or "") + SHARED_SUFFIX
    else:
        if use == "whole":
            return "%s/%s" % (GPUSHARE_GROUP, model_slug(model_key))
        if use == "mig":
            return "%s/%s-mig-%s" % (GPUSHARE_GROUP, model_slug(model_key), profile_slug(profile or ""))
        if use == "shared":
            # The time-shared GPU as one whole device, for claims placed while no pod holds
            # its shared claim (docs/quotas.md, "Time-shared GPUs under dra").
            return "%s/%s-shared" % (GPUSHARE_GROUP, model_slug(model_key))
    raise ValueError("no quota resource for use %r with backend %s" % (use, backend))


def full_size_profile(model: gpu_catalog.GpuModel) -> gpu_catalog.MigProfile:
    """The MIG profile spanning the whole GPU, plain media variant first (e.g. 7g.80gb, 4g.96gb)."""
    whole = [p for p in model.profiles if p.size == model.placement_units]
    if not whole:
        raise ValueError("%s has no full-size MIG profile" % model.key)
    return sorted(whole, key=lambda p: (p.media != "", p.unconfirmed, p.name))[0]


@dataclass
class NodePlan:
    host: str
    gpus: List[Dict[str, Any]]
    mig_config: Optional[str]
    device_plugin_config: Optional[str]
    labels: Dict[str, str]


@dataclass
class SharingPlan:
    nodes: Dict[str, NodePlan] = field(default_factory=dict)
    mig_configs: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    device_plugin_configs: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)


def _where(host: str, index: Any, field_name: str) -> str:
    return "host %s, GPU %s, field %s" % (host, index, field_name)


def _content_name(config: Any) -> str:
    """Deterministic name of a mig-parted config: equal node shapes share one config."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:10]
    return "gpushare-%s" % digest


def _solve_mig(host: str, entries: List[Dict[str, Any]]) -> Dict[str, Any]:
    return mig_solver.plan_node_layout(entries, "node", host=host)


class _Planner:
    def __init__(self, backend: str):
        if backend not in BACKENDS:
            raise ValueError("backend must be one of %s, got %r" % (", ".join(BACKENDS), backend))
        self.backend = backend
        self.result = SharingPlan()
        # Fleets repeat a handful of node shapes: solve each shape once.
        self._shape_cache: Dict[str, Tuple[Dict[str, Any], List[str], List[str]]] = {}

    def plan(self, nodes: Mapping[str, Sequence[Gpu]]) -> SharingPlan:
        for host in sorted(nodes):
            before = len(self.result.errors)
            try:
                node = self._plan_node(host, list(nodes[host]))
            except ValueError as exc:
                self.result.errors.extend(getattr(exc, "errors", None) or [str(exc)])
                continue
            if len(self.result.errors) == before:
                self.result.nodes[host] = node
        self.result.warnings.extend(self._layout_warnings())
        return self.result

    def _convert_shared(self, host: str, gpus: List[Gpu]) -> Dict[int, str]:
        """device_plugin only: index -> full-size MIG profile for shared GPUs next to whole ones."""
        if self.backend != "device_plugin":
            return {}
        shared = [g for g in gpus if g.use == "shared"]
        whole = [g for g in gpus if g.use == "whole"]
        if not shared or not whole:
            return {}
        converted: Dict[int, str] = {}
        for gpu in shared:
            model = gpu_catalog.lookup(gpu.model)
            if not model.mig_capable:
                # Reported with the node's other problems (its MIG GPUs are still checked).
                self.result.errors.append(
                    "%s: use shared next to whole GPUs (%s) on one node is impossible with the device_plugin "
                    "backend, which time-slices every full GPU of a node, and %s has no MIG to make a full-size "
                    "instance that could be time-sliced alone; use gpushare_gpu_backend: dra, or move the shared "
                    "GPU to a node without whole GPUs"
                    % (_where(host, gpu.index, "use"), ", ".join(str(g.index) for g in whole), model.key))
                continue
            converted[gpu.index] = full_size_profile(model).name
        return converted

    def _plan_node(self, host: str, gpus: List[Gpu]) -> NodePlan:
        converted = self._convert_shared(host, gpus)
        solver_input: List[Dict[str, Any]] = []
        for gpu in gpus:
            entry = gpu.as_solver_entry()
            entry.pop("team", None)
            entry.pop("replicas", None)
            if gpu.index in converted:
                entry = {"index": gpu.index, "model": gpu.model, "use": "mig",
                         "mig": {"profiles": {converted[gpu.index]: 1}}}
            solver_input.append(entry)
        layout, mig_config = self._layout(host, gpus, solver_input)
        by_index = {item["index"]: item for item in layout.get("gpus", [])}
        node_gpus: List[Dict[str, Any]] = []
        shared_replicas: Dict[str, int] = {}
        mig_profiles_used: Dict[str, int] = {}
        for gpu in gpus:
            laid = by_index.get(gpu.index, {})
            instances = list(laid.get("instances", []))
            mig_enabled = bool(laid.get("mig_enabled", False))
            entry: Dict[str, Any] = {"index": gpu.index, "model": gpu.model, "use": gpu.use, "team": gpu.team,
                                     "mig_enabled": mig_enabled, "instances": instances}
            if gpu.replicas is not None:
                entry["replicas"] = gpu.replicas
            if gpu.uuid:
                entry["uuid"] = gpu.uuid
            resources: Dict[str, int] = {}
            if gpu.use == "whole":
                entry["flavor"] = flavor_name(gpu.model, "whole")
                resources[resource_name(self.backend, gpu.model, "whole")] = 1
            elif gpu.use == "mig":
                entry["flavor"] = flavor_name(gpu.model, "mig")
                for instance in instances:  # each MIG instance counts once
                    name = resource_name(self.backend, gpu.model, "mig", instance["profile"])
                    resources[name] = resources.get(name, 0) + 1
                    mig_profiles_used[instance["profile"]] = gpu.index
            elif gpu.index in converted:
                entry["flavor"] = flavor_name(gpu.model, "mig")
                name = resource_name(self.backend, gpu.model, "mig-shared", converted[gpu.index])
                resources[name] = gpu.replicas or 0
                shared_replicas[name] = self._same_replicas(host, gpu, shared_replicas.get(name))
                self.result.warnings.append(
                    "host %s, GPU %s: the device_plugin backend time-slices every full GPU of a node, so this "
                    "shared GPU becomes one full-size MIG instance %s, time-sliced %d ways as %s, and GPUs %s stay "
                    "whole" % (host, gpu.index, converted[gpu.index], gpu.replicas, name,
                               ", ".join(str(g.index) for g in gpus if g.use == "whole")))
            elif self.backend == "device_plugin":
                entry["flavor"] = flavor_name(gpu.model, "shared")
                name = resource_name(self.backend, gpu.model, "shared")
                resources[name] = gpu.replicas or 0
                shared_replicas[GPU_RESOURCE] = self._same_replicas(host, gpu, shared_replicas.get(GPU_RESOURCE))
            else:
                # dra: the pods that share the GPU use a standalone ResourceClaim, outside Kueue
                # (Kueue 0.19 refuses workloads with resourceClaimName). The GPU itself is counted
                # as one whole device of its own resource, in the owner's nominal quota, so it can
                # be lent to a claim that takes it while no pod holds the shared claim.
                entry["flavor"] = flavor_name(gpu.model, "shared")
                entry["claim"] = shared_claim_name(host, gpu.index)
                resources[resource_name(self.backend, gpu.model, "shared")] = 1
            entry["resources"] = resources
            node_gpus.append(entry)
        for index, profile in converted.items():
            if profile in mig_profiles_used:
                raise ValueError(
                    "%s: GPU %s must become a full-size %s instance to be time-sliced, but GPU %s also has %s "
                    "instances, and the device plugin would time-slice those too; use gpushare_gpu_backend: dra "
                    "or another layout" % (_where(host, index, "use"), index, profile, mig_profiles_used[profile],
                                           profile))
        labels: Dict[str, str] = {}
        for model_key in sorted({gpu.model for gpu in gpus}):
            labels[model_label(model_key)] = "true"
        if mig_config is not None:
            labels[MIG_CONFIG_LABEL] = mig_config
        plugin_config = None
        if self.backend == "device_plugin" and gpus:
            plugin_config = self._device_plugin_config(shared_replicas)
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = plugin_config
        return NodePlan(host=host, gpus=node_gpus, mig_config=mig_config,
                        device_plugin_config=plugin_config, labels=labels)

    @staticmethod
    def _same_replicas(host: str, gpu: Gpu, seen: Optional[int]) -> int:
        if seen is not None and seen != gpu.replicas:
            raise ValueError(
                "%s: the device plugin applies one replica count to every time-sliced GPU of a node; this node "
                "mixes %d and %d" % (_where(host, gpu.index, "replicas"), seen, gpu.replicas or 0))
        return gpu.replicas or 0

    def _layout(self, host: str, gpus: List[Gpu],
                solver_input: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], Optional[str]]:
        """MIG layout and mig-parted config name of a node (None when it has no MIG-capable GPU)."""
        if not any(gpu_catalog.lookup(gpu.model).mig_capable for gpu in gpus):
            return {"gpus": []}, None
        if not any(entry["use"] == "mig" for entry in solver_input):
            self.result.mig_configs.setdefault(ALL_DISABLED, [{"devices": "all", "mig-enabled": False}])
            return {"gpus": []}, ALL_DISABLED
        shape = json.dumps(solver_input, sort_keys=True)
        cached = self._shape_cache.get(shape)
        if cached is None:
            layout = _solve_mig(host, solver_input)
            devices = layout["mig_parted"]["mig-configs"]["node"]
            name = _content_name(devices)
            self.result.mig_configs.setdefault(name, devices)
            cached = ({"gpus": layout["gpus"], "name": name}, list(layout.get("warnings", [])), [])
            self._shape_cache[shape] = cached
        cached[2].append(host)
        return cached[0], cached[0]["name"]

    def _layout_warnings(self) -> List[str]:
        """The MIG warnings of each node shape once, naming every host of that shape.

        The solver's warnings name the first host of the shape ("host a, GPU 1 ..."); the
        other hosts get the same layout, so they are named in the same warning.
        """
        warnings = []
        for _layout, shape_warnings, hosts in self._shape_cache.values():
            first = "host %s, " % hosts[0]
            shown = ", ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else "")
            for warning in shape_warnings:
                if len(hosts) > 1 and warning.startswith(first):
                    warning = "hosts %s, %s" % (shown, warning[len(first):])
                warnings.append(warning)
        return warnings

    def _device_plugin_config(self, shared_replicas: Dict[str, int]) -> str:
        flags = {"migStrategy": "mixed"}
        if not shared_replicas:
            self.result.device_plugin_configs.setdefault(DEVICE_PLUGIN_DEFAULT, {"version": "v1", "flags": flags})
            return DEVICE_PLUGIN_DEFAULT
        resources = []
        name_parts = []
        for resource, replicas in sorted(shared_replicas.items()):
            base = resource[: -len(SHARED_SUFFIX)] if resource.endswith(SHARED_SUFFIX) else resource
            resources.append({"name": base, "replicas": replicas})
            name_parts.append("%s-x%d" % (base.split("/", 1)[1], replicas))
        name = "gpushare-ts-" + "-".join(name_parts)
        self.result.device_plugin_configs.setdefault(name, {
            "version": "v1",
            "flags": flags,
            "sharing": {"timeSlicing": {
                "renameByDefault": True,
                # Asking for two slots of one time-sliced GPU gives no more GPU: refuse it.
                "failRequestsGreaterThanOne": True,
                "resources": resources,
            }},
        })
        return name


def shared_claim_name(host: str, index: int) -> str:
    """ResourceClaim name of a shared GPU under dra (DNS label from the host name)."""
    return names.dns_label("shared", host, "gpu%d" % index)


def plan_sharing(nodes: Mapping[str, Sequence[Gpu]], backend: str) -> SharingPlan:
    """Plan every node; problems are collected in ``SharingPlan.errors``, not raised."""
    return _Planner(backend).plan(nodes)
