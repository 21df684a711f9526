# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan contract: the shape of ``gpushare_plan`` (plan.json) and the one check of it.

:func:`planner.plan.build_plan <ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan.build_plan>`
makes a :class:`Plan`; the consumers (add-on values and files, prune, examples, the report,
usage) receive it as a plain dict from an Ansible fact or plan.json and call
:func:`check_plan` with the fields they read before they read them. The keys are described
for users in docs/plan.md; docs/architecture.md says who produces and who consumes each.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypedDict, get_origin, get_type_hints

from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import PlanContractError

# Shape version of the plan (the plan's ``version`` field).
PLAN_VERSION = 1


class PlanNode(TypedDict, total=False):
    """``nodes.<host>``: one host with GPUs."""

    node_name: str
    gpus: List[Dict[str, Any]]
    labels: Dict[str, str]
    mig_config: Optional[str]
    device_plugin_config: Optional[str]


class PlanTeam(TypedDict, total=False):
    """``teams.<team>``: one team's queue, quota and access."""

    namespaces: List[str]
    priority: int
    group: str
    queue: str
    capacity: Dict[str, int]
    borrowing_limit: Any
    lending_limit: Any
    reclaim: str
    namespace_quota: Any
    shared_claims: List[Dict[str, Any]]
    access: Dict[str, Any]


class Plan(TypedDict):
    """``gpushare_plan`` / plan.json, as build_plan returns it."""

    version: int
    backend: str
    distribution: str
    kubernetes_version: str
    cohort: str
    nodes: Dict[str, PlanNode]
    mig_parted: Dict[str, Any]
    device_plugin_configs: Dict[str, Any]
    teams: Dict[str, PlanTeam]
    objects: List[Dict[str, Any]]
    kueue_configuration: Dict[str, Any]
    oidc: Optional[Dict[str, Any]]
    warnings: List[str]


FIELDS = tuple(Plan.__annotations__)
# The resolved type of each field (the TypedDict keeps them as forward references).
_PLAN_TYPES = get_type_hints(Plan)
# The fields every consumer needs whatever else it reads.
REQUIRED = ("version", "backend", "distribution", "nodes")


def check_plan(plan: Any, fields: Sequence[str] = REQUIRED) -> Mapping[str, Any]:
    """Return ``plan`` when it is a plan with ``fields``; raise :class:`PlanContractError` naming the field.

    A field the :class:`Plan` types as a list or a mapping must be one; ``backend`` and
    ``distribution``, when asked for, must also be among the supported ones. An empty plan
    names the first field the caller asked for, so each consumer's message says what it needs.
    """
    if not isinstance(plan, Mapping) or not plan:
        raise PlanContractError("gpushare_plan: missing or empty (gpushare_plan.%s: missing); run the plan step "
                                "(gpushare.cluster.cluster_plan) first" % (fields[0] if fields else "version"))
    for field in fields:
        if field not in plan:
            raise PlanContractError(f"gpushare_plan.{field}: missing")
        container = _container(field)
        if container and not isinstance(plan[field], container[0]):
            raise PlanContractError(f"gpushare_plan.{field}: not a {container[1]} (got {type(plan[field]).__name__})")
    if "backend" in fields and plan["backend"] not in versions.BACKENDS:
        raise PlanContractError(f"gpushare_plan.backend: {plan['backend']!r} is neither %s" % _either(versions.BACKENDS))
    if "distribution" in fields and plan["distribution"] not in versions.DISTRIBUTIONS:
        raise PlanContractError(f"gpushare_plan.distribution: {plan['distribution']!r} is neither %s"
                                % _either(versions.DISTRIBUTIONS))
    return plan


def _container(field: str) -> Optional[Tuple[type, str]]:
    """(type, word) of a field the Plan types as a list or a mapping; None for the others."""
    origin = get_origin(_PLAN_TYPES.get(field))
    if origin is list:
        return list, "list"
    if origin is dict:
        return Mapping, "mapping"
    return None


def _either(choices: Sequence[str]) -> str:
    return " nor ".join(repr(choice) for choice in choices)


def check_plan_file(plan: Any, error: Type[Exception] = PlanContractError) -> Mapping[str, Any]:
    """Return ``plan`` (plan.json or the fact) when it has ``nodes`` and a supported ``backend``.

    The check of the readers that work from plan.json alone (the rehearsal's world and steps,
    the examples); ``error`` is the reader's own error class, so its caller sees one kind.
    """
    if not isinstance(plan, Mapping) or not isinstance(plan.get("nodes"), Mapping):
        raise error("plan: field 'nodes' is missing")
    if plan.get("backend") not in versions.BACKENDS:
        raise error("plan: field 'backend' must be %s, got %r"
                    % (" or ".join(versions.BACKENDS), plan.get("backend")))
    return plan


class PlanLookups:
    """Read-only look-ups into a plan, shared by the readers that walk its GPUs and objects.

    Subclasses set ``error`` to their own error class and add the look-ups only they need.
    """

    error: Type[Exception] = PlanContractError

    def __init__(self, plan: Mapping[str, Any]):
        self.plan = check_plan_file(plan, self.error)
        self.backend: str = plan["backend"]
        self.teams: Mapping[str, Any] = plan.get("teams") or {}
        self.objects = [obj for obj in plan.get("objects") or [] if isinstance(obj, Mapping)]

    def gpus(self) -> List[Tuple[str, Mapping[str, Any]]]:
        """(host, GPU) of every planned GPU, by host and then GPU index."""
        nodes = self.plan["nodes"]
        return [(host, gpu) for host in sorted(nodes)
                for gpu in sorted(nodes[host].get("gpus") or [], key=lambda gpu: int(gpu.get("index", 0)))]

    def priority(self, team: str) -> int:
        return int((self.teams.get(team) or {}).get("priority", 0))

    def by_kind(self, kind: str, namespace: Optional[str] = None) -> List[Mapping[str, Any]]:
        """The plan's objects of ``kind`` (in ``namespace`` when given)."""
        return [obj for obj in self.objects if obj.get("kind") == kind
                and (namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace)]

    def priority_class(self, team: str) -> Optional[str]:
        """The WorkloadPriorityClass carrying the team's priority, when the plan has exactly one."""
        matches = [obj["metadata"]["name"] for obj in self.by_kind("WorkloadPriorityClass")
                   if obj.get("value") == self.priority(team)]
        return matches[0] if len(matches) == 1 else None

    def device_classes(self, resource: str) -> List[str]:
        """The DeviceClasses Kueue counts as ``resource`` (kueue_configuration deviceClassMappings)."""
        mappings = ((self.plan.get("kueue_configuration") or {}).get("resources") or {}).get("deviceClassMappings") or []
        for mapping in mappings:
            if mapping.get("name") == resource:
                return list(mapping.get("deviceClassNames") or [])
        return []
