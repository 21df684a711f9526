# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a planner module (cluster_plan, team_quotas) runs its planning function."""

from __future__ import annotations

from typing import Any, Callable, Dict

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PlanError


def planned(module: Any, planner: Callable[..., Dict[str, Any]], *args: Any, **kwargs: Any) -> Dict[str, Any]:
    """``planner(*args, **kwargs)``, each of its warnings a module warning.

    A PlanError fails the module with its message and every problem under ``errors``.
    """
    try:
        result = planner(*args, **kwargs)
    except PlanError as exc:
        module.fail_json(msg=str(exc), errors=exc.errors)
    for warning in result["warnings"]:
        module.warn(warning)
    return result
