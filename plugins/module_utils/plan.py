# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole ``gpushare_plan``: one pure function from the inventory (and the GPU facts
found on the hosts) to every decision the roles apply.

Errors from every stage (inventory, MIG layouts, sharing, quotas) are collected and
raised together as one :class:`PlanError`, so a bad inventory is reported in one go
and nothing partial is ever returned.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpushare.cluster.plugins.module_utils import dra_objects, isolation, quotas, sharing
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import normalise_inventory

PLAN_VERSION = 1
DISTRIBUTIONS = ("microk8s", "kubeadm")
SUPPORTED_MINORS = (34, 35, 36)
# Argument spec of the options every planner module shares (doc fragment
# gpushare.cluster.plan_inputs documents them).
PLAN_INPUT_ARGUMENT_SPEC = dict(
    teams=dict(type="list", elements="dict", required=True),
    nodes=dict(type="dict", required=True),
    gpu_facts=dict(type="dict"),
    backend=dict(type="str", choices=["dra", "device_plugin"], default="dra"),
    cohort=dict(type="str", default="gpushare"),
    tolerations=dict(type="list", elements="dict", default=[]),
)
_VERSION = re.compile(r"^v?1\.(\d+)(\.\d+)?$")


class PlanError(ValueError):
    """Every problem that keeps the plan from being made, in one message."""

    def __init__(self, errors: Sequence[str]):
        self.errors = list(errors)
        super().__init__("the plan cannot be made, %d problem(s):\n- %s" % (len(self.errors), "\n- ".join(self.errors)))


def _check_settings(backend: str, distribution: str, kubernetes_version: str, cohort: str, errors: List[str]) -> None:
    if backend not in sharing.BACKENDS:
        errors.append("gpushare_gpu_backend: must be one of %s, got %r" % (", ".join(sharing.BACKENDS), backend))
    if distribution not in DISTRIBUTIONS:
        errors.append("gpushare_kubernetes_distribution: must be one of %s, got %r"
                      % (", ".join(DISTRIBUTIONS), distribution))
    match = _VERSION.match(str(kubernetes_version))
    if not match or int(match.group(1)) not in SUPPORTED_MINORS:
        errors.append("gpushare_kubernetes_version: supported are 1.34, 1.35 and 1.36 (DRA resource.k8s.io/v1 "
                      "needs 1.34), got %r" % (kubernetes_version,))
    if not isinstance(cohort, str) or not re.match(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", cohort):
        errors.append("cohort: must be a lowercase DNS label, got %r" % (cohort,))


def _assemble(teams: Any, nodes: Mapping[str, Any], gpu_facts: Optional[Mapping[str, Any]], backend: str,
              cohort: str, tolerations: Sequence[Mapping[str, Any]], errors: List[str]) -> Dict[str, Any]:
    inventory, inventory_errors = normalise_inventory(teams, nodes, gpu_facts)
    errors.extend(inventory_errors)
    if backend not in sharing.BACKENDS:
        raise PlanError(errors)
    shares = sharing.plan_sharing(inventory.nodes, backend)
    errors.extend(shares.errors)
    warnings = list(shares.warnings)
    dra = dra_objects.build_dra_objects(inventory.teams, shares.nodes) if backend == "dra" else None
    quota = quotas.build_quotas(inventory.teams, shares.nodes, backend, cohort, tolerations,
                                dra.device_class_mappings if dra else ())
    errors.extend(quota.errors)
    if errors:
        raise PlanError(errors)
    rbac_objects, rbac_warnings = isolation.rbac(inventory.teams)
    objects: List[Dict[str, Any]] = isolation.namespaces(inventory.teams) + quota.objects
    if dra is not None:
        objects += dra.objects
        warnings += dra.warnings
    objects += rbac_objects + isolation.queue_policy(backend)
    if dra is not None:
        objects += isolation.claim_policies(inventory.teams, dra.template_classes, dra.shared_claims)
    warnings += rbac_warnings + quota.warnings
    return {"inventory": inventory, "shares": shares, "quota": quota, "dra": dra, "objects": objects,
            "warnings": warnings}


def team_quotas(teams: Any, nodes: Mapping[str, Any], backend: str = "dra", cohort: str = "gpushare",
                gpu_facts: Optional[Mapping[str, Any]] = None,
                tolerations: Sequence[Mapping[str, Any]] = ()) -> Dict[str, Any]:
    """The ``team_quotas`` module contract: capacity, objects and kueue_configuration."""
    errors: List[str] = []
    if backend not in sharing.BACKENDS:
        errors.append("backend: must be one of %s, got %r" % (", ".join(sharing.BACKENDS), backend))
    parts = _assemble(teams, nodes, gpu_facts, backend, cohort, tolerations, errors)
    return {"capacity": parts["quota"].capacity, "objects": parts["objects"],
            "kueue_configuration": parts["quota"].kueue_configuration, "warnings": parts["warnings"]}


def build_plan(teams: Any, nodes: Mapping[str, Any], gpu_facts: Optional[Mapping[str, Any]] = None,
               backend: str = "dra", distribution: str = "microk8s", kubernetes_version: str = "1.35",
               cohort: str = "gpushare", tolerations: Sequence[Mapping[str, Any]] = ()) -> Dict[str, Any]:
    """The ``gpushare_plan`` dict of CONVENTIONS.md; raises PlanError listing every problem.

    ``nodes``: host -> its ``gpushare_gpus`` list; ``gpu_facts``: host -> its
    ``gpushare_gpu_facts`` (optional); ``tolerations``: added to every GPU ResourceFlavor.
    """
    errors: List[str] = []
    _check_settings(backend, distribution, kubernetes_version, cohort, errors)
    parts = _assemble(teams, nodes, gpu_facts, backend, cohort, tolerations, errors)
    inventory, shares, quota, dra = parts["inventory"], parts["shares"], parts["quota"], parts["dra"]
    team_plan: Dict[str, Any] = {}
    for team in inventory.teams:
        limits = quota.team_limits[team.name]
        entry = {
            "namespaces": list(team.namespaces),
            "priority": team.priority,
            "group": team.group,
            "capacity": quota.capacity[team.name],
            "borrowing_limit": limits["borrowing_limit"],
            "lending_limit": limits["lending_limit"],
            "reclaim": limits["reclaim"],
            "queue": team.name,
        }
        if dra is not None:
            entry["shared_claims"] = ["%s/%s" % claim[:2] for claim in dra.shared_claims.get(team.name, [])]
        team_plan[team.name] = entry
    nodes_plan = {
        host: {"gpus": node.gpus, "mig_config": node.mig_config,
               "device_plugin_config": node.device_plugin_config, "labels": node.labels}
        for host, node in shares.nodes.items()
    }
    plan: Dict[str, Any] = {
        "version": PLAN_VERSION,
        "backend": backend,
        "distribution": distribution,
        "kubernetes_version": str(kubernetes_version),
        "cohort": cohort,
        "nodes": nodes_plan,
        "mig_parted": {"version": "v1", "mig-configs": dict(sorted(shares.mig_configs.items()))},
        "device_plugin_configs": dict(sorted(shares.device_plugin_configs.items())) if backend == "device_plugin" else {},
        "teams": team_plan,
        "objects": parts["objects"],
        "kueue_configuration": quota.kueue_configuration,
        "warnings": parts["warnings"],
    }
    return plan
