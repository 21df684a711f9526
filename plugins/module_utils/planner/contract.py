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

from typing import Any, Dict, List, Mapping, Optional, Sequence, TypedDict

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
# The fields every consumer needs whatever else it reads.
REQUIRED = ("version", "backend", "distribution", "nodes")


def check_plan(plan: Any, fields: Sequence[str] = REQUIRED) -> Mapping[str, Any]:
    """Return ``plan`` when it is a plan with ``fields``; raise :class:`PlanContractError` naming the field.

    ``backend`` and ``distribution``, when asked for, must also be among the supported ones.
    """
    if not isinstance(plan, Mapping) or not plan:
        raise PlanContractError("gpushare_plan: missing or empty; run the plan step (gpushare.cluster.cluster_plan) first")
    for field in fields:
        if field not in plan:
            raise PlanContractError(f"gpushare_plan.{field}: missing")
    if "backend" in fields and plan["backend"] not in versions.BACKENDS:
        raise PlanContractError(f"gpushare_plan.backend: {plan['backend']!r} is neither %s" % _either(versions.BACKENDS))
    if "distribution" in fields and plan["distribution"] not in versions.DISTRIBUTIONS:
        raise PlanContractError(f"gpushare_plan.distribution: {plan['distribution']!r} is neither %s"
                                % _either(versions.DISTRIBUTIONS))
    return plan


def _either(choices: Sequence[str]) -> str:
    return " nor ".join(repr(choice) for choice in choices)
