# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated GPU world of a rehearsal: what the nodes and the GPU stack would publish.

From a ``gpushare_plan`` (docs/plan.md) this builds, without any I/O:

- one Node per inventory host, with the labels the plan gives it, the labels GPU Feature
  Discovery would add, an annotation that hands the Node to kwok, and a capacity;
- for ``dra``, one ResourceSlice per GPU node exactly as the NVIDIA DRA driver v0.4.1
  (kubernetes-sigs/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin) publishes it without the
  DynamicMIG feature gate: driver ``gpu.nvidia.com``, one pool named after the node holding a
  single slice (driver.go, publishResources), a full GPU as device ``gpu-<minor>`` when MIG is
  off (nvlib.go: a MIG-enabled GPU is not announced itself), each MIG device as
  ``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>`` (mig.go,
  ToCanonicalName), attributes ``type``, ``uuid``, ``productName``, ``brand``, ``architecture``,
  the versions, ``parentUUID`` and ``profile`` for MIG (deviceinfo.go, mig.go
  CommonAttributesMig), capacity ``memory`` in bytes (NVML's total for a GPU; the GI profile's
  ``memorySizeMB`` x MiB for MIG) and one ``memorySlice<N>`` per placement unit of a MIG device;
- for ``device_plugin``, the node's extended resources as the NVIDIA device plugin advertises
  them with ``mig.strategy: mixed`` (``nvidia.com/gpu`` per GPU without MIG,
  ``nvidia.com/mig-<profile>`` per MIG device) and the time-slicing config the node selects
  (count x replicas, renamed ``<name>.shared`` with ``renameByDefault``). This is modelled from
  the device plugin's rules, not copied from the plan's ``resources``, so a plan that counts
  what the plugin would not advertise shows up in the rehearsal.

``devices`` maps every simulated device back to the inventory GPU (node, index, model,
profile, team) so a rehearsal can say which GPU each claim got.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract, inventory, sharing
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DRA_DRIVER, GPU_PRODUCT_LABEL, GPU_RESOURCE, MIG_RESOURCE_PREFIX, RESOURCE_API, SHARED_SUFFIX)
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError

DRIVER = DRA_DRIVER
# kwok's default node selector (sigs.k8s.io/kwok v0.8.0, --manage-nodes-with-annotation-selector).
SIMULATED_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# What the simulated GPU stack reports for the driver; only the format matters to selectors.
DRIVER_VERSION = "580.95.5"
CUDA_DRIVER_VERSION = "13.0.0"
# A DRA driver of v0.4.1 publishes these (nvlib.go: brand from NVML, "Nvidia" on data-centre parts).
BRAND = "Nvidia"
NODE_CAPACITY = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti"}
_UUID_NAMESPACE = uuidlib.UUID("6f1d2a47-95b4-4c1e-9a55-7b9f1d0c2e31")


class WorldError(GpushareError):
    """The plan cannot be turned into a simulated world; the message names host and GPU."""


def _where(host: str, gpu: Mapping[str, Any]) -> str:
    return "host %s, GPU %s" % (host, gpu.get("index"))


def _uuid(prefix: str, *parts: Any) -> str:
    return "%s-%s" % (prefix, uuidlib.uuid5(_UUID_NAMESPACE, "/".join(str(p) for p in parts)))


def gpu_uuid(host: str, gpu: Mapping[str, Any]) -> str:
    """The GPU's UUID: the one gpu_facts found (in the plan), else a stable made-up one."""
    known = gpu.get("uuid")
    return str(known) if known else _uuid("GPU", host, gpu.get("index"))


def simulated_gpu_facts(host: str, entries: Any) -> Optional[Dict[str, Any]]:
    """The ``gpushare_gpu_facts`` a rehearsal host reports: the inventory's GPUs with the UUIDs its world publishes.

    Planning with these pins every GPU by ``uuid`` as site.yml does after discovery, so the
    rehearsal applies the plan site.yml would apply (whole-GPU and time-shared DeviceClasses
    select disjoint cards). ``gpu_uuid`` makes the same UUID for the ResourceSlices. A UUID the
    inventory gives stays the one used. ``None`` when an entry has no ``model`` (nothing to
    simulate) or ``entries`` are not GPU entries: the plan then reports the inventory as it is.
    """
    errors: List[str] = []
    expanded = inventory.expand_entries(host, entries, errors)
    if errors or not expanded or any(not raw.get("model") for _index, _position, raw in expanded):
        return None
    gpus = []
    for index, _position, raw in expanded:
        try:
            name = gpu_catalog.lookup(str(raw["model"])).product_names[0]
        except ValueError:
            return None
        gpus.append({"index": index, "uuid": gpu_uuid(host, dict(raw, index=index)), "name": name})
    return {"source": "rehearsal", "gpus": gpus}


def mig_device_name(minor: int, profile: str, profile_id: int, start: int) -> str:
    """The DRA device name of a MIG device (dra-driver-nvidia-gpu v0.4.1 mig.go ToCanonicalName)."""
    pname = re.sub(r"[^a-z0-9-.]", "-", profile.replace(".", "").lower()).strip("-").rstrip(".")
    return "gpu-%d-mig-%s-%d-%d" % (minor, pname, profile_id, start)


def _mib(value: int) -> str:
    return str(int(value) * 1024 * 1024)


def _model(host: str, gpu: Mapping[str, Any]) -> gpu_catalog.GpuModel:
    key = gpu.get("model")
    if not key:
        raise WorldError("%s: field 'model' is missing from the plan" % _where(host, gpu))
    try:
        return gpu_catalog.lookup(str(key))
    except ValueError as exc:
        raise WorldError("%s: field 'model': %s" % (_where(host, gpu), exc)) from exc


def published_memory_mib(model: gpu_catalog.GpuModel) -> int:
    """The memory (MiB) the DRA driver publishes for a full GPU: NVML's total (nvlib.go GetMemoryInfo)."""
    return int(getattr(model, "published_memory_mib", None) or model.memory_mib)


def _common_attributes(model: gpu_catalog.GpuModel) -> Dict[str, Dict[str, str]]:
    return {
        "productName": {"string": model.product_names[0]},
        "brand": {"string": BRAND},
        "architecture": {"string": model.architecture},
        "driverVersion": {"version": DRIVER_VERSION},
        "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
    }


def _gpu_devices(host: str, gpu: Mapping[str, Any]) -> List[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """(ResourceSlice device, index entry) pairs for one inventory GPU."""
    where = _where(host, gpu)
    model = _model(host, gpu)
    try:
        minor = int(gpu["index"])
    except (KeyError, TypeError, ValueError) as exc:
        raise WorldError("%s: field 'index' must be an integer" % where) from exc
    parent = gpu_uuid(host, gpu)
    base = {"node": host, "index": minor, "model": model.key, "team": gpu.get("team"), "use": gpu.get("use")}
    if not gpu.get("mig_enabled"):
        attributes: Dict[str, Any] = {"type": {"string": "gpu"}, "uuid": {"string": parent}}
        attributes.update(_common_attributes(model))
        device = {"name": "gpu-%d" % minor, "attributes": attributes,
                  "capacity": {"memory": {"value": _mib(published_memory_mib(model))}}}
        return [(device, dict(base, device=device["name"], profile=None, uuid=parent,
                              memory_mib=published_memory_mib(model)))]
    instances = gpu.get("instances") or []
    if not instances:
        raise WorldError("%s: MIG is enabled but the plan lists no 'instances'" % where)
    pairs = []
    for number, instance in enumerate(instances):
        try:
            profile = model.profile(str(instance["profile"]))
            start = int(instance["start"])
        except (KeyError, TypeError, ValueError) as exc:
            raise WorldError("%s: instance %d: %s" % (where, number, exc)) from exc
        mig_uuid = _uuid("MIG", host, minor, profile.name, start)
        attributes = {"type": {"string": "mig"}, "uuid": {"string": mig_uuid},
                      "parentUUID": {"string": parent}, "profile": {"string": profile.name}}
        attributes.update(_common_attributes(model))
        capacity: Dict[str, Any] = {"memory": {"value": _mib(profile.memory_mib)}}
        for unit in range(start, start + profile.size):
            capacity["memorySlice%d" % unit] = {"value": "1"}
        device = {"name": mig_device_name(minor, profile.name, profile.id, start),
                  "attributes": attributes, "capacity": capacity}
        pairs.append((device, dict(base, device=device["name"], profile=profile.name, uuid=mig_uuid,
                                   memory_mib=profile.memory_mib, instance=instance.get("name"))))
    return pairs


def resource_slice(host: str, gpus: Sequence[Mapping[str, Any]]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """The node's ResourceSlice (one pool named after the node, one slice) and its device index."""
    devices: List[Dict[str, Any]] = []
    index: List[Dict[str, Any]] = []
    for gpu in sorted(gpus, key=lambda g: int(g.get("index", 0))):
        for device, entry in _gpu_devices(host, gpu):
            devices.append(device)
            index.append(dict(entry, driver=DRIVER, pool=host))
    slice_object = {
        "apiVersion": RESOURCE_API, "kind": "ResourceSlice",
        # The driver's helper uses generateName "<node>-gpu.nvidia.com-"; a fixed name keeps
        # a second run idempotent.
        "metadata": {"name": "%s-%s" % (host, DRIVER)},
        "spec": {"driver": DRIVER, "nodeName": host,
                 "pool": {"name": host, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }
    return slice_object, index


def _time_slicing(config: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Tuple[int, str]], bool]:
    """resource -> (replicas, advertised name) of a device plugin config, and failRequestsGreaterThanOne."""
    sharing_cfg = ((config or {}).get("sharing") or {}).get("timeSlicing") or {}
    rename_default = bool(sharing_cfg.get("renameByDefault"))
    out = {}
    for entry in sharing_cfg.get("resources") or []:
        name = str(entry["name"])
        replicas = int(entry.get("replicas") or 1)
        advertised = entry.get("rename") or (name + SHARED_SUFFIX if rename_default else name)
        out[name] = (replicas, str(advertised))
    return out, bool(sharing_cfg.get("failRequestsGreaterThanOne"))


def extended_resources(host: str, gpus: Sequence[Mapping[str, Any]],
                       config: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, int], List[Dict[str, Any]]]:
    """What the device plugin (mixed strategy) would advertise on the node, and its device index."""
    physical: Dict[str, List[Dict[str, Any]]] = {}
    for gpu in sorted(gpus, key=lambda g: int(g.get("index", 0))):
        model = _model(host, gpu)
        base = {"node": host, "index": gpu.get("index"), "model": model.key, "team": gpu.get("team"),
                "use": gpu.get("use"), "uuid": gpu_uuid(host, gpu)}
        if not gpu.get("mig_enabled"):
            physical.setdefault(GPU_RESOURCE, []).append(dict(base, profile=None))
            continue
        for instance in gpu.get("instances") or []:
            profile = model.profile(str(instance["profile"]))
            name = MIG_RESOURCE_PREFIX + profile.name.replace("+", ".")
            physical.setdefault(name, []).append(dict(base, profile=profile.name, instance=instance.get("name")))
    slicing, _renamed = _time_slicing(config)
    advertised: Dict[str, int] = {}
    index: List[Dict[str, Any]] = []
    for name in sorted(physical):
        replicas, shown = slicing.get(name, (1, name))
        advertised[shown] = advertised.get(shown, 0) + replicas * len(physical[name])
        for entry in physical[name]:
            index.append(dict(entry, device=shown, replicas=replicas))
    return advertised, index


def _gfd_labels(host: str, gpus: Sequence[Mapping[str, Any]], backend: str,
                config: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """Labels GPU Feature Discovery sets that the plan's flavors may select on."""
    if not gpus:
        return {}
    models = sorted({_model(host, gpu).key for gpu in gpus})
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": str(len(gpus))}
    product = sharing.gfd_product(models[0])
    if backend == "device_plugin":
        slicing, _renamed = _time_slicing(config)
        # GFD appends -SHARED to the product of time-sliced full GPUs (renamed or not).
        if GPU_RESOURCE in slicing:
            product += "-SHARED"
        labels["nvidia.com/mig.strategy"] = "mixed"
    labels[GPU_PRODUCT_LABEL] = product
    return labels


def build_world(plan: Mapping[str, Any], hosts: Optional[Sequence[str]] = None,
                simulated_annotation: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Nodes, ResourceSlices (dra) and the device index of the simulated cluster.

    ``hosts`` lists every inventory host (control plane too); hosts without GPUs become plain
    Nodes. Returns ``{"nodes": [...], "resource_slices": [...], "devices": [...]}``.
    """
    contract.check_plan_file(plan, WorldError)
    backend = plan["backend"]
    configs = plan.get("device_plugin_configs") or {}
    annotation = dict(SIMULATED_ANNOTATION if simulated_annotation is None else simulated_annotation)
    names = sorted(set(hosts or []) | set(plan["nodes"]))
    nodes, slices, devices = [], [], []
    for host in names:
        node_plan = plan["nodes"].get(host) or {}
        gpus = [gpu for gpu in node_plan.get("gpus") or [] if isinstance(gpu, Mapping)]
        config_name = node_plan.get("device_plugin_config")
        if config_name and config_name not in configs:
            raise WorldError("host %s: device_plugin_config %r is not in the plan's device_plugin_configs"
                             % (host, config_name))
        config = configs.get(config_name) if config_name else None
        labels = {"kubernetes.io/hostname": host, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "type": "kwok"}
        labels.update(_gfd_labels(host, gpus, backend, config))
        labels.update({str(k): str(v) for k, v in (node_plan.get("labels") or {}).items()})
        capacity = dict(NODE_CAPACITY)
        if gpus and backend == "dra":
            slice_object, index = resource_slice(host, gpus)
            slices.append(slice_object)
            devices.extend(index)
        elif gpus:
            advertised, index = extended_resources(host, gpus, config)
            capacity.update({name: str(count) for name, count in advertised.items()})
            devices.extend(index)
        nodes.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": host, "labels": labels, "annotations": annotation},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        })
    return {"backend": backend, "nodes": nodes, "resource_slices": slices, "devices": devices}


def find_device(world: Mapping[str, Any], node: str, device: str, pool: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The index entry of a device (DRA: by pool and device name; device plugin: by node and resource)."""
    for entry in world.get("devices") or []:
        if entry.get("node") == node and entry.get("device") == device and (pool is None or entry.get("pool") == pool):
            return dict(entry)
    return None
