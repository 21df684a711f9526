# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each add-on role's render step reads of the plan.

A plan of thousands of GPUs is megabytes; handed whole to Ansible variables it is
copied and walked by every task that names it. plan.yml gives each role this view
instead: the same plan with only the keys (and the object kinds) the role reads.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping

from ansible_collections.gpushare.cluster.plugins.module_utils.helm_values import KINDS_BY_ROLE

_COMMON = ("version", "backend", "distribution", "kubernetes_version", "cohort")
# Plan keys (besides the common ones and the role's object kinds) each role reads.
_KEYS = {
    "gpu_operator": ("mig_parted", "device_plugin_configs"),
    "dra_driver": (),
    "kueue": ("teams", "kueue_configuration"),
    "tenancy": ("teams",),
}
# Node fields gpu_operator's node labels read; of the GPUs only whether there are any.
_NODE_FIELDS = ("labels", "mig_config", "device_plugin_config")


def plan_view(plan: Mapping[str, Any], role: str) -> Dict[str, Any]:
    """The part of ``plan`` the render step of ``role`` reads, in the plan's shape."""
    if role not in _KEYS:
        raise ValueError(f"role: {role!r} has no plan view (known: {', '.join(sorted(_KEYS))})")
    view: Dict[str, Any] = {key: plan[key] for key in _COMMON + _KEYS[role] if key in plan}
    nodes = plan.get("nodes") or {}
    if role == "gpu_operator":
        view["nodes"] = {host: dict({field: node[field] for field in _NODE_FIELDS if field in node},
                                    gpus=[{"index": gpu["index"]} for gpu in node.get("gpus") or []])
                         for host, node in nodes.items()}
    else:
        view["nodes"] = {}
    kinds = KINDS_BY_ROLE.get(role)
    if kinds:
        view["objects"] = [obj for obj in plan.get("objects") or [] if obj.get("kind") in kinds]
    return view


def plan_views(plan: Mapping[str, Any], roles: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    """Role name -> :func:`plan_view` for each role that reads the plan."""
    return {role: plan_view(plan, role) for role in roles if role in _KEYS}
