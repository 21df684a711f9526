# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA objects (resource.k8s.io/v1) for the NVIDIA DRA driver: DeviceClasses,
per-team ResourceClaimTemplates and the standalone claims of shared GPUs.

The driver's own classes (gpu.nvidia.com, mig.nvidia.com) select any GPU or any MIG
slice; the plan adds one class per GPU model and one per model and MIG profile, so that
Kueue can count each kind separately (``deviceClassMappings``) and a pod gets the
model it was admitted for. Devices are told apart by the attributes the driver
publishes: ``type``, ``productName``, ``profile``, ``uuid`` and capacity ``memory``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import sharing
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import Team
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DESCRIPTION_ANNOTATION, DRA_DRIVER, GPUSHARE_GROUP, RESOURCE_API, TEAM_LABEL)

DRIVER = DRA_DRIVER
_ATTR = "device.attributes['%s']" % DRIVER


@dataclass
class DraPlan:
    objects: List[Dict[str, Any]] = field(default_factory=list)
    device_class_mappings: List[Dict[str, Any]] = field(default_factory=list)
    # team -> DeviceClass names its ResourceClaimTemplates may use
    template_classes: Dict[str, List[str]] = field(default_factory=dict)
    # team -> [(namespace, claim name, DeviceClass name)] of its shared GPUs
    shared_claims: Dict[str, List[Tuple[str, str, str]]] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)


def _quote(text: str) -> str:
    return "'%s'" % text.replace("\\", "\\\\").replace("'", "\\'")


def whole_class_name(model_key: str) -> str:
    return "%s.%s" % (sharing.model_slug(model_key), GPUSHARE_GROUP)


def mig_class_name(model_key: str, profile: str) -> str:
    return "%s.%s.%s" % (sharing.profile_slug(profile), sharing.model_slug(model_key), GPUSHARE_GROUP)


def shared_class_name(model_key: str, team: str) -> str:
    """Class of a team's standalone shared claims (not counted by Kueue)."""
    return "%s.%s.shared.%s" % (team, sharing.model_slug(model_key), GPUSHARE_GROUP)


def lendable_class_name(model_key: str) -> str:
    """Class of the time-shared GPUs of a model taken whole, counted as ``<model>-shared``."""
    return "%s.shared.%s" % (sharing.model_slug(model_key), GPUSHARE_GROUP)


def whole_template_name(model_key: str) -> str:
    """ResourceClaimTemplate of one whole GPU of a model, in every team namespace."""
    return "gpu-%s" % sharing.model_slug(model_key)


def lendable_template_name(model_key: str) -> str:
    """ResourceClaimTemplate of one time-shared GPU of a model taken whole, in every team namespace."""
    return "gpu-%s-shared" % sharing.model_slug(model_key)


def claims_that_can_cross(gpus: Iterable[Tuple[str, Mapping[str, Any]]]) -> List[str]:
    """Per model with whole and time-shared GPUs, where a time-shared one has no uuid: which claims can cross.

    The DeviceClasses select a model's cards by product name; only a uuid tells a whole card from
    a time-shared one (see _counted_classes). ``gpus`` are (host, plan GPU entry) pairs.
    """
    by_model: Dict[str, Dict[str, List[Tuple[str, Mapping[str, Any]]]]] = {}
    for host, gpu in gpus:
        if gpu.get("use") in ("whole", "shared"):
            by_model.setdefault(str(gpu["model"]), {"whole": [], "shared": []})[gpu["use"]].append((host, gpu))
    out = []
    for model in sorted(by_model):
        unpinned = [(host, gpu) for host, gpu in by_model[model]["shared"] if not gpu.get("uuid")]
        if not by_model[model]["whole"] or not unpinned:
            continue
        claims = sorted(str(gpu["claim"]) for _host, gpu in unpinned if gpu.get("claim"))
        out.append(
            "%s: no uuid known for the time-shared %s (run gpu_facts; site.yml pins them once it has), so a whole-GPU "
            "claim (template %s) can be allocated a time-shared card, and a time-shared card's claims (%s; template "
            "%s) a whole one" % (model, "; ".join("host %s, GPU %s" % (host, gpu["index"]) for host, gpu in unpinned),
                                 whole_template_name(model), ", ".join(claims) or "the shared claim",
                                 lendable_template_name(model)))
    return out


def uuid_in_expression(uuids: Sequence[str]) -> str:
    return "%s.uuid in [%s]" % (_ATTR, ", ".join(_quote(u) for u in uuids))


def product_expression(model_key: str) -> str:
    names = gpu_catalog.lookup(model_key).product_names
    return "%s.productName in [%s]" % (_ATTR, ", ".join(_quote(n) for n in names))


def whole_gpu_expression(model_key: str) -> str:
    return "device.driver == %s && %s.type == 'gpu' && %s" % (_quote(DRIVER), _ATTR, product_expression(model_key))


def mig_expression(model_key: str, profile: str) -> str:
    return "device.driver == %s && %s.type == 'mig' && %s.profile == %s && %s" % (
        _quote(DRIVER), _ATTR, _ATTR, _quote(profile), product_expression(model_key))


def memory_floor_gib(model_key: str, profile: Optional[str] = None) -> int:
    """The "at least N GiB" floor of a template: whole GiB at or below what the driver publishes.

    The figure is ``gpu_catalog.published_memory_mib`` (NVML's total for a full GPU, the
    profile's NVML memory size for a MIG device), never the size in the name: a floor above
    it would leave every claim of the template unallocatable (and Kueue would reject the
    workload). Always at least 1 GiB.
    """
    return max(1, gpu_catalog.published_memory_mib(model_key, profile) // 1024)


def memory_at_least_expression(gib: int) -> str:
    """"A device with at least N GiB" on the capacity the driver publishes."""
    return "device.capacity[%s].memory.compareTo(quantity('%dGi')) >= 0" % (_quote(DRIVER), gib)


def uuid_expression(uuid: str) -> str:
    return "%s.uuid == %s" % (_ATTR, _quote(uuid))


def _device_class(name: str, expression: str, description: str) -> Dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": name, "annotations": {DESCRIPTION_ANNOTATION: description}},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _request(class_name: str, selectors: Sequence[str]) -> Dict[str, Any]:
    exactly: Dict[str, Any] = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": 1}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": "gpu", "exactly": exactly}


def build_dra_objects(teams: Sequence[Team], nodes: Mapping[str, sharing.NodePlan]) -> DraPlan:
    """DeviceClasses, Kueue mappings, claim templates per team namespace and shared claims."""
    plan = DraPlan()
    whole_models, mig_kinds, shared = _gpu_kinds(nodes)
    templates = _counted_classes(plan, whole_models, mig_kinds, shared)
    _shared_claims(plan, teams, shared)
    _claim_templates(plan, teams, templates)
    plan.warnings.extend(claims_that_can_cross((host, gpu) for host in sorted(nodes) for gpu in nodes[host].gpus))
    return plan


def _gpu_kinds(nodes: Mapping[str, sharing.NodePlan]):
    """The counted kinds of the nodes' GPUs: whole models and MIG kinds by resource, and the shared GPUs."""
    whole_models: Dict[str, str] = {}  # resource -> model
    mig_kinds: Dict[str, Tuple[str, str]] = {}  # resource -> (model, profile)
    shared: List[Tuple[str, Dict[str, Any]]] = []
    for host in sorted(nodes):
        for gpu in nodes[host].gpus:
            if gpu["use"] == "whole":
                whole_models[sharing.resource_name("dra", gpu["model"], "whole")] = gpu["model"]
            elif gpu["use"] == "mig":
                for instance in gpu["instances"]:
                    resource = sharing.resource_name("dra", gpu["model"], "mig", instance["profile"])
                    mig_kinds[resource] = (gpu["model"], instance["profile"])
            elif gpu["use"] == "shared":
                shared.append((host, gpu))
    return whole_models, mig_kinds, shared


def _counted_classes(plan: DraPlan, whole_models: Dict[str, str], mig_kinds: Dict[str, Tuple[str, str]],
                     shared: List[Tuple[str, Dict[str, Any]]]) -> List[Tuple[str, str, List[str]]]:
    """A DeviceClass and a Kueue mapping per counted kind; returns the claim templates they need."""
    templates: List[Tuple[str, str, List[str]]] = []  # (template name, class, selectors)
    for resource in sorted(whole_models):
        model = whole_models[resource]
        name = whole_class_name(model)
        expression = whole_gpu_expression(model)
        pinned = sorted(g["uuid"] for _host, g in shared if g["model"] == model and g.get("uuid"))
        if pinned:
            # Shared GPUs known by uuid stay out of the whole-GPU class, so a whole-GPU claim
            # never lands on a GPU the inventory gave to time-sharing.
            expression += " && !(%s)" % uuid_in_expression(pinned)
        plan.objects.append(_device_class(name, expression, "A whole %s GPU" % model))
        plan.device_class_mappings.append({"name": resource, "deviceClassNames": [name]})
        templates.append((whole_template_name(model), name,
                          [memory_at_least_expression(memory_floor_gib(model))]))

    # Each time-shared GPU is also one whole device of "<model>-shared", in its owner's quota:
    # a claim of this class is allocated only while no pod holds the GPU's shared claim (the
    # claim controller deallocates a standalone claim when its last pod is gone), so a
    # borrower gets the notebooks' GPU after hours, and never while a notebook uses it.
    shared_models: Dict[str, List[str]] = {}  # model -> uuids of its shared GPUs (all known) or []
    for _host, gpu in shared:
        shared_models.setdefault(gpu["model"], []).append(gpu.get("uuid") or "")
    for model in sorted(shared_models):
        resource = sharing.resource_name("dra", model, "shared")
        name = lendable_class_name(model)
        expression = whole_gpu_expression(model)
        uuids = shared_models[model]
        if all(uuids):
            expression += " && %s" % uuid_in_expression(sorted(uuids))
        plan.objects.append(_device_class(
            name, expression, "A time-shared %s GPU taken whole while none of its sharing pods runs" % model))
        plan.device_class_mappings.append({"name": resource, "deviceClassNames": [name]})
        templates.append((lendable_template_name(model), name,
                          [memory_at_least_expression(memory_floor_gib(model))]))
    for resource in sorted(mig_kinds):
        model, profile = mig_kinds[resource]
        name = mig_class_name(model, profile)
        plan.objects.append(_device_class(name, mig_expression(model, profile),
                                          "A %s MIG instance of a %s GPU" % (profile, model)))
        plan.device_class_mappings.append({"name": resource, "deviceClassNames": [name]})
        templates.append(("mig-%s-%s" % (sharing.model_slug(model), sharing.profile_slug(profile)), name,
                          [memory_at_least_expression(memory_floor_gib(model, profile))]))
    return templates


def _shared_claims(plan: DraPlan, teams: Sequence[Team], shared: List[Tuple[str, Dict[str, Any]]]) -> None:
    """The class and the standalone ResourceClaim of each time-shared GPU, in its owner's namespace."""
    team_by_name = {team.name: team for team in teams}
    unpinned: List[str] = []
    shared_classes: Dict[str, str] = {}
    for host, gpu in shared:
        team = team_by_name[gpu["team"]]
        if not team.namespaces:  # already reported by the inventory checks
            continue
        class_name = shared_class_name(gpu["model"], team.name)
        if class_name not in shared_classes:
            shared_classes[class_name] = gpu["model"]
            plan.objects.append(_device_class(
                class_name, whole_gpu_expression(gpu["model"]),
                "A whole %s GPU time-shared by the pods of team %s (standalone claims only)" % (gpu["model"], team.name)))
        selectors = []
        if gpu.get("uuid"):
            selectors.append(uuid_expression(gpu["uuid"]))
        else:
            unpinned.append("host %s, GPU %s" % (host, gpu["index"]))
        namespace = team.namespaces[0]
        plan.shared_claims.setdefault(team.name, []).append((namespace, gpu["claim"], class_name))
        plan.objects.append({
            "apiVersion": RESOURCE_API,
            "kind": "ResourceClaim",
            # No replica count here: nothing in DRA caps how many pods share one claim (up to
            # the API's 256 reservations), so the plan does not pretend it does.
            "metadata": {"name": gpu["claim"], "namespace": namespace, "labels": {TEAM_LABEL: team.name},
                         "annotations": {"gpushare.io/node": host, "gpushare.io/gpu-index": str(gpu["index"])}},
            "spec": {"devices": {"requests": [_request(class_name, selectors)]}},
        })

    if unpinned:
        shown = "; ".join(unpinned[:5]) + ("; and %d more" % (len(unpinned) - 5) if len(unpinned) > 5 else "")
        plan.warnings.append(
            "%s: no uuid known (run gpu_facts), so each shared claim takes whichever free GPU of its model the "
            "first pod's node offers, not necessarily the GPU the inventory names" % shown)


def _claim_templates(plan: DraPlan, teams: Sequence[Team], templates: List[Tuple[str, str, List[str]]]) -> None:
    """Every claim template in every team namespace."""
    for team in teams:
        # Every team may ask for every counted kind: Kueue decides whether it is quota or borrowing.
        plan.template_classes[team.name] = [template[1] for template in templates]
        for namespace in team.namespaces:
            for template_name, class_name, selectors in templates:
                plan.objects.append({
                    "apiVersion": RESOURCE_API,
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": template_name, "namespace": namespace, "labels": {TEAM_LABEL: team.name}},
                    "spec": {"spec": {"devices": {"requests": [_request(class_name, selectors)]}}},
                })
