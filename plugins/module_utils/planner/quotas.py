# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team capacity and the Kueue v1beta2 objects (Kueue v0.19) that enforce it.

Counting rules (docs/quotas.md explains them):
- a whole GPU is one unit of its model's resource, a MIG instance one unit of its profile's
  resource; a time-sliced GPU under device_plugin is ``replicas`` units of
  ``nvidia.com/gpu.shared`` (or ``nvidia.com/mig-<profile>.shared``);
- under dra the pods that share a GPU use a standalone ResourceClaim, which Kueue does not
  count (Kueue 0.19 refuses workloads with ``resourceClaimName``), so they run outside Kueue;
  the GPU itself is one unit of ``gpushare.io/<model>-shared`` in its owner's nominal quota,
  lent (unless ``lend`` says otherwise) to claims that take it whole while no pod shares it;
- a team's nominal quota is exactly what it owns, so the nominal quotas of a flavor and
  resource add up to the physical capacity;
- every ClusterQueue lists every GPU flavor and resource of the cohort (nominal 0 where
  the team owns none): Kueue lets a queue borrow only what it lists.

Reclaim ("what you lend, you get back; production first"), from Kueue v0.19.2
pkg/scheduler/preemption (classical preemption, no fair sharing):
- ``reclaimWithinCohort: Any`` on every queue: a workload that fits its queue's nominal quota
  preempts borrowers in other queues whatever their priority, so every team gets back what it
  lent (with ``LowerPriority`` only the top-priority team could);
- ``borrowWithinCohort: LowerPriority`` on every queue: a workload that must borrow may preempt
  lower-priority workloads, but only in queues that are themselves over their nominal quota
  (classical/hierarchical_preemption.go collects candidates only from such queues), so
  borrowing never takes a team's own quota away; among borrowers, priority wins;
- admission order within the cohort is "fits nominal quota" first, then priority
  (PrioritySortingWithinCohort, on by default), so production goes first for free capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import sharing
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import Team
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import GPU_PRODUCT_LABEL, KUEUE_API, TEAM_LABEL

CPU_FLAVOR = "gpushare-cpu"
RECLAIM_WITHIN_COHORT = "Any"
BORROW_WITHIN_COHORT = "LowerPriority"
WITHIN_CLUSTER_QUEUE = "LowerPriority"
# Kueue's pod webhook gives every unlabelled pod the LocalQueue "default" when one exists in
# its namespace (pkg/controller/jobs/pod/pod_webhook.go), which would queue the pods of a
# shared claim, and Kueue 0.19 never admits those.
KUEUE_DEFAULT_QUEUE = "default"

FlavorResource = Tuple[str, str]


@dataclass
class QuotaPlan:
    # (flavor, resource) -> team -> units
    units: Dict[FlavorResource, Dict[str, int]] = field(default_factory=dict)
    flavors: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # flavor -> (model, kind)
    capacity: Dict[str, Dict[str, int]] = field(default_factory=dict)  # team -> resource -> units
    team_limits: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    objects: List[Dict[str, Any]] = field(default_factory=list)
    kueue_configuration: Dict[str, Any] = field(default_factory=dict)
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


UnitMap = Dict[FlavorResource, Dict[str, int]]


def _quantity(value: Any) -> str:
    """A ClusterQueue quantity written as the API server returns it: a string.

    Kueue's defaulting webhook runs on CREATE only (kueue v0.19.2
    pkg/webhooks/clusterqueue_webhook.go, ``verbs=create``) and turns a number into its string
    form there; an UPDATE that sends the number again is stored as sent, so an integer here
    would make every second apply of the plan report a change.
    """
    return str(value)


def collect_units(nodes: Mapping[str, sharing.NodePlan]) -> Tuple[UnitMap, Dict[str, Tuple[str, str]]]:
    """Units owned per (flavor, resource) and team, from the per-node sharing plan."""
    units: Dict[FlavorResource, Dict[str, int]] = {}
    flavors: Dict[str, Tuple[str, str]] = {}
    for host in sorted(nodes):
        for gpu in nodes[host].gpus:
            flavor = gpu.get("flavor")
            if not flavor:
                continue
            flavors[flavor] = (gpu["model"], flavor.rsplit("-", 1)[1])
            for resource, count in gpu["resources"].items():
                per_team = units.setdefault((flavor, resource), {})
                per_team[gpu["team"]] = per_team.get(gpu["team"], 0) + count
    return units, flavors


def resource_groups(pairs: Sequence[FlavorResource]) -> List[Tuple[List[str], List[str]]]:
    """Kueue resource groups: flavors sharing a resource must be in one group (connected parts).

    Returns [(flavors, covered_resources)], both sorted, so output is stable.
    """
    parent: Dict[str, str] = {}

    def find(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for flavor, resource in pairs:
        parent[find("f:" + flavor)] = find("r:" + resource)
    components: Dict[str, Tuple[set, set]] = {}
    for flavor, resource in pairs:
        flavors, resources = components.setdefault(find("f:" + flavor), (set(), set()))
        flavors.add(flavor)
        resources.add(resource)
    return sorted((sorted(f), sorted(r)) for f, r in components.values())


def _limit_for(limit: Any, resource: str) -> Optional[int]:
    if limit is None:
        return None
    if isinstance(limit, int):
        return limit
    return limit.get(resource)


def _flavor_object(name: str, model: str, kind: str, backend: str,
                   tolerations: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    # GPU Feature Discovery's product label pins whole and time-sliced GPUs under
    # device_plugin (it appends -SHARED on time-sliced nodes), but only when the model has
    # one product name (A100-40GB, for one, is sold as SXM4 and PCIe). Otherwise, and for
    # MIG and dra, the planner's own model label, which the plan sets on every GPU node.
    single_product = len(gpu_catalog.lookup(model).product_names) == 1
    if backend == "device_plugin" and kind == "whole" and single_product:
        node_labels = {GPU_PRODUCT_LABEL: sharing.gfd_product(model)}
    elif backend == "device_plugin" and kind == "shared" and single_product:
        node_labels = {GPU_PRODUCT_LABEL: sharing.gfd_product(model) + "-SHARED"}
    else:
        node_labels = {sharing.model_label(model): "true"}
    spec: Dict[str, Any] = {"nodeLabels": node_labels}
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def build_quotas(teams: Sequence[Team], nodes: Mapping[str, sharing.NodePlan], backend: str,
                 cohort: str = "gpushare", tolerations: Sequence[Mapping[str, Any]] = (),
                 device_class_mappings: Sequence[Mapping[str, Any]] = ()) -> QuotaPlan:
    """Capacity per team and the Kueue objects; problems go to ``QuotaPlan.errors``."""
    plan = QuotaPlan()
    plan.units, plan.flavors = collect_units(nodes)
    pairs = sorted(plan.units)
    groups = resource_groups(pairs)
    gpu_resources = sorted({pair[1] for pair in pairs})

    for flavor in sorted(plan.flavors):
        model, kind = plan.flavors[flavor]
        plan.objects.append(_flavor_object(flavor, model, kind, backend, tolerations))
    if any(team.cpu or team.memory for team in teams):
        plan.objects.append({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": CPU_FLAVOR},
                             "spec": {}})
    plan.objects.append({"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": cohort}, "spec": {}})

    for team in teams:
        capacity: Dict[str, int] = {}
        for (flavor, resource), owners in plan.units.items():
            if owners.get(team.name):
                capacity[resource] = capacity.get(resource, 0) + owners[team.name]
        plan.capacity[team.name] = dict(sorted(capacity.items()))
        for field_name, limit in (("borrow", team.borrow), ("lend", team.lend)):
            if isinstance(limit, dict):
                for resource in sorted(set(limit) - set(gpu_resources)):
                    plan.errors.append(
                        "team %s, field %s[%s]: no such GPU resource in this cluster (resources: %s)"
                        % (team.name, field_name, resource, ", ".join(gpu_resources) or "none"))
        groups_spec, limits = _resource_groups(plan, team, groups)
        if backend == "dra" and team.name == KUEUE_DEFAULT_QUEUE and any(
                resource.endswith("-shared") for resource in plan.capacity[team.name]):
            plan.errors.append(
                "team %s, field name: its LocalQueue would be called %r, and Kueue gives that queue to every pod "
                "of the namespace without a queue label, including the pods of the team's shared GPU claim, which "
                "Kueue 0.19 never admits; rename the team" % (team.name, KUEUE_DEFAULT_QUEUE))
        plan.team_limits[team.name] = {"reclaim": RECLAIM_WITHIN_COHORT, **limits}
        plan.objects += _queue_objects(team, cohort, groups_spec)

    plan.kueue_configuration = _kueue_configuration(device_class_mappings)
    return plan


def _resource_groups(plan: QuotaPlan, team: Team, groups) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """The ClusterQueue resourceGroups of ``team`` and its limits by flavor/resource; problems go to ``plan.errors``."""
    limits: Dict[str, Any] = {"borrowing_limit": {}, "lending_limit": {}}
    groups_spec: List[Dict[str, Any]] = []
    for flavors, covered in groups:
        flavor_specs = []
        for flavor in flavors:
            resources = []
            for resource in covered:
                nominal = plan.units.get((flavor, resource), {}).get(team.name, 0)
                quota: Dict[str, Any] = {"name": resource, "nominalQuota": _quantity(nominal)}
                borrow = _limit_for(team.borrow, resource)
                if borrow is not None:
                    quota["borrowingLimit"] = _quantity(borrow)
                    limits["borrowing_limit"]["%s/%s" % (flavor, resource)] = borrow
                lend = _limit_for(team.lend, resource)
                if isinstance(team.lend, int) and lend is not None:
                    # One number for every resource: "lend at most N of each".
                    lend = min(lend, nominal)
                if lend is not None and nominal > 0:
                    if lend > nominal:
                        plan.errors.append(
                            "team %s, field lend: lending limit %d for %s on flavor %s is above the team's "
                            "nominal quota %d there" % (team.name, lend, resource, flavor, nominal))
                    else:
                        quota["lendingLimit"] = _quantity(lend)
                        limits["lending_limit"]["%s/%s" % (flavor, resource)] = lend
                resources.append(quota)
            flavor_specs.append({"name": flavor, "resources": resources})
        groups_spec.append({"coveredResources": list(covered), "flavors": flavor_specs})
    cpu_resources = [(name, value) for name, value in (("cpu", team.cpu), ("memory", team.memory)) if value]
    if cpu_resources:
        groups_spec.append({
            "coveredResources": [pair[0] for pair in cpu_resources],
            "flavors": [{"name": CPU_FLAVOR, "resources": [
                {"name": name, "nominalQuota": _quantity(value)} for name, value in cpu_resources]}],
        })
    return groups_spec, limits


def _queue_objects(team: Team, cohort: str, groups_spec: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The ClusterQueue, WorkloadPriorityClass and LocalQueues of ``team``."""
    objects: List[Dict[str, Any]] = []
    objects.append({
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": team.name, "labels": {TEAM_LABEL: team.name}},
        "spec": {
            "cohortName": cohort,
            # Only namespaces labelled with this team may submit here.
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {
                "reclaimWithinCohort": RECLAIM_WITHIN_COHORT,
                "borrowWithinCohort": {"policy": BORROW_WITHIN_COHORT},
                "withinClusterQueue": WITHIN_CLUSTER_QUEUE,
            },
            "resourceGroups": groups_spec,
        },
    })
    objects.append({
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": team.name},
        "value": team.priority,
        "description": "Priority of team %s's workloads in the %s cohort" % (team.name, cohort),
    })
    for namespace in team.namespaces:
        objects.append({
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": team.name, "namespace": namespace, "labels": {TEAM_LABEL: team.name}},
            "spec": {"clusterQueue": team.name},
        })
    return objects


def _kueue_configuration(device_class_mappings: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The parts of Kueue's Configuration the objects need."""
    resources_config: Dict[str, Any] = {
        # Queues do not list cpu/memory unless a team sets them; without this Kueue would
        # refuse every pod that requests cpu. GPU resources are always listed, so still counted.
        "quotaCheckStrategy": "IgnoreUndeclared",
    }
    if device_class_mappings:
        resources_config["deviceClassMappings"] = [dict(m) for m in device_class_mappings]
    return {
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]},
        "resources": resources_config,
    }
