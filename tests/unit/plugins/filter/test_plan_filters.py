# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan filters: which refusals a run's tags make, and what pruning lists and deletes,
fed the way the roles feed them (looped k8s_info results)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.filter import plan_changes, prune_kinds, prune_plan

FILTERS = {}
for _module in (plan_changes, prune_kinds, prune_plan):
    FILTERS.update(_module.FilterModule().filters())

PLAN = yaml.safe_load((Path(__file__).resolve().parents[3] / "fixtures" / "addons" / "plan_example.yml")
                      .read_text(encoding="utf-8"))
OWNED = {"app.kubernetes.io/managed-by": "gpushare.cluster"}

CHANGES = {"disruptive": [
    {"kind": "drain", "layer": "gpu_stack", "reason": "gpu1 is drained"},
    {"kind": "team_removed", "layer": "queues", "reason": "team data is removed"},
]}


@pytest.mark.parametrize("run_tags, skip_tags, expected", [
    (["all"], [], ["gpu1 is drained", "team data is removed"]),
    (["kueue"], [], ["team data is removed"]),
    (["gpu_operator_relabel"], [], ["gpu1 is drained"]),
    (["all"], ["gpu_stack"], ["team data is removed"]),
    (["monitoring"], [], []),
])
def test_plan_change_refusals_follow_the_runs_tags(run_tags, skip_tags, expected):
    assert FILTERS["plan_change_refusals"](CHANGES, run_tags, skip_tags) == expected


def test_plan_change_refusals_default_to_a_full_run():
    assert FILTERS["plan_change_refusals"](CHANGES) == ["gpu1 is drained", "team data is removed"]
    assert FILTERS["plan_change_refusals"]({}) == []


def test_prune_kinds_lists_the_roles_kinds_then_the_queues():
    kinds = FILTERS["prune_kinds"]("dra_driver")
    assert [k["kind"] for k in kinds] == ["DeviceClass", "ResourceClaimTemplate", "ResourceClaim",
                                          "ClusterQueue", "LocalQueue"]
    assert all(k["label_selectors"] == ["app.kubernetes.io/managed-by=gpushare.cluster"] for k in kinds)
    assert [k["kind"] for k in FILTERS["prune_kinds"]("kueue")][-2:] == ["LocalQueue", "WorkloadPriorityClass"]
    with pytest.raises(AnsibleFilterError, match="role: 'monitoring' prunes nothing"):
        FILTERS["prune_kinds"]("monitoring")


def _live_queue(name, namespace, owned=True):
    metadata = {"name": name, "namespace": namespace}
    if owned:
        metadata["labels"] = dict(OWNED)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": metadata, "spec": {"clusterQueue": name}}


def _listed(extra):
    """k8s_info results looped over prune_kinds('kueue'): the plan's LocalQueues plus ``extra``;
    the items carry no kind, as k8s_info returns them, so the loop item names it."""
    queues = [dict(copy.deepcopy(obj), metadata=dict(obj["metadata"], labels=dict(OWNED)))
              for obj in PLAN["objects"] if obj["kind"] == "LocalQueue"]
    for queue in queues:
        del queue["kind"]
    return [{"item": {"kind": "LocalQueue"}, "resources": queues + extra}]


def test_prune_plan_deletes_only_owned_objects_the_plan_left():
    result = FILTERS["prune_plan"](PLAN, "kueue", _listed([_live_queue("old", "production"),
                                                           _live_queue("theirs", "production", owned=False)]))
    assert [(d["kind"], d["namespace"], d["name"]) for d in result["delete"]] == [("LocalQueue", "production", "old")]
    assert result["refused"] == [] and result["message"] == ""
    # Nothing left over: a second run deletes nothing.
    assert FILTERS["prune_plan"](PLAN, "kueue", _listed([]))["delete"] == []


def test_prune_plan_refuses_a_queue_in_use_unless_confirmed():
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "job-1", "namespace": "production"}, "spec": {"queueName": "old"},
                "status": {"conditions": []}}
    listed = _listed([_live_queue("old", "production")])
    refused = FILTERS["prune_plan"](PLAN, "kueue", listed, [workload])
    # The role deletes nothing while anything is refused; the refusal names the queue and its workload.
    assert len(refused["refused"]) == 1 and "old" in refused["refused"][0] and "production/job-1" in refused["refused"][0]
    assert "gpushare_confirm_disruptive" in refused["message"]
    confirmed = FILTERS["prune_plan"](PLAN, "kueue", listed, [workload], confirm=True)
    assert [d["name"] for d in confirmed["delete"]] == ["old"]
    assert confirmed["refused"] == [] and confirmed["confirmed"] == refused["refused"]


def test_prune_plan_refuses_a_missing_plan():
    with pytest.raises(AnsibleFilterError, match="gpushare_plan.objects: missing"):
        FILTERS["prune_plan"]({}, "kueue", [])
