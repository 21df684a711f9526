"""The plans of the day-two rehearsal test: a base and one change of plan after another, each
case the plan before it with one thing changed (docs/operations.md, Pruning)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

#: The worked example (tests/fixtures/inventories/four_gpu_example.yml): its teams and gpu1;
#: gpu2 is two L40S here.
EXAMPLE = yaml.safe_load((Path(__file__).resolve().parents[2] / "fixtures" / "inventories"
                          / "four_gpu_example.yml").read_text(encoding="utf-8"))
TEAMS = EXAMPLE["gpushare_teams"]
NODES = {
    "gpu1": EXAMPLE["nodes"]["gpu1"],
    "gpu2": [
        {"index": 0, "model": "L40S", "team": "training", "use": "shared", "replicas": 4},
        {"index": 1, "model": "L40S", "team": "data", "use": "whole"},
    ],
}


def _gpu(inventory, host, index):
    return next(gpu for gpu in inventory["nodes"][host] if gpu["index"] == index)


def _team_removed(inventory):
    # data's shared GPU goes to training, still shared: its claim moves to training's namespace,
    # which the earlier plan's claim policy of training would refuse (dra_driver applies the new
    # policies before the claims).
    inventory["teams"] = [t for t in inventory["teams"] if t["name"] != "data"]
    _gpu(inventory, "gpu1", 2)["team"] = "training"
    _gpu(inventory, "gpu2", 1)["team"] = "training"


def _team_added(inventory):
    inventory["teams"].append({"name": "research", "namespaces": ["research"], "priority": 50, "group": "research"})
    _gpu(inventory, "gpu2", 1)["team"] = "research"


def _mig_changed(inventory):
    _gpu(inventory, "gpu1", 1)["mig"] = {"profiles": {"2g.48gb": 2}}


def _gpu_moved(inventory):
    _gpu(inventory, "gpu1", 3)["team"] = "production"
    # and the first shared GPU becomes whole (the "shared made whole" case makes the second one whole)
    gpu = _gpu(inventory, "gpu1", 2)
    gpu["use"] = "whole"
    del gpu["replicas"]


def _shared_made_whole(inventory):
    gpu = _gpu(inventory, "gpu2", 0)
    gpu["use"] = "whole"
    del gpu["replicas"]


def _node_removed(inventory):
    del inventory["nodes"]["gpu2"]
    # research keeps no GPU of its own: it stays a team that borrows


CASES = [("team-removed", _team_removed), ("team-added", _team_added), ("mig-layout-changed", _mig_changed),
         ("gpu-moved", _gpu_moved), ("shared-made-whole", _shared_made_whole), ("node-removed", _node_removed)]


def _training_removed(inventory):
    inventory["teams"] = [t for t in inventory["teams"] if t["name"] != "training"]
    for gpus in inventory["nodes"].values():
        for gpu in gpus:
            if gpu["team"] == "training":
                gpu["team"] = "production"


def plan_of(inventory: Dict[str, Any]) -> Dict[str, Any]:
    return build_plan(inventory["teams"], inventory["nodes"], backend="dra")


def chain() -> Tuple[Dict[str, Any], List[Tuple[str, Dict[str, Any]]], Dict[str, Any]]:
    """The base plan, (case, plan) for each change in order, and the last plan without training."""
    inventory = {"teams": copy.deepcopy(TEAMS), "nodes": copy.deepcopy(NODES)}
    base = plan_of(inventory)
    plans = []
    for name, change in CASES:
        change(inventory)
        plans.append((name, plan_of(inventory)))
    _training_removed(inventory)
    return base, plans, plan_of(inventory)
