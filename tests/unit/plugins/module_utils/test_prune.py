# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What applying a plan deletes (module_utils/changes/prune.py): only owned objects the plan no longer
holds, in the documented order, and the refusals that protect running work."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import prune
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"

INVENTORY = yaml.safe_load((FIXTURES / "inventories" / "four_gpu_example.yml").read_text())


def _plan(teams=None):
    return build_plan(teams if teams is not None else INVENTORY["gpushare_teams"], INVENTORY["nodes"], backend="dra")


def _without_team(name):
    teams = [t for t in INVENTORY["gpushare_teams"] if t["name"] != name]
    nodes = copy.deepcopy(INVENTORY["nodes"])
    keep = teams[0]["name"]
    for gpus in nodes.values():
        for gpu in gpus:
            if gpu.get("team") == name:
                gpu["team"] = keep
    return build_plan(teams, nodes, backend="dra")


def _live(plan):
    """The plan's objects as the cluster returns them (status, uid; the kind is kept)."""
    return [dict(copy.deepcopy(obj), status={}) for obj in plan["objects"]]


def _workload(namespace, queue, admitted_to=None, finished=False):
    conditions = [{"type": "Admitted", "status": "True"}] if admitted_to else []
    if finished:
        conditions.append({"type": "Finished", "status": "True"})
    status = {"conditions": conditions}
    if admitted_to:
        status["admission"] = {"clusterQueue": admitted_to}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "job-%s-x" % queue, "namespace": namespace},
            "spec": {"queueName": queue}, "status": status}


def _deleted(result):
    return [(d["kind"], d["namespace"], d["name"]) for d in result["delete"]]


ALL_KINDS = prune.DELETE_ORDER


def test_the_same_plan_deletes_nothing():
    plan = _plan()
    result = prune.prune_plan(plan["objects"], _live(plan), ALL_KINDS)
    assert result == {"delete": [], "delete_objects": [], "terminating": [], "namespaces": [], "refused": [],
                      "confirmed": []}


def test_a_removed_team_loses_every_object_in_a_safe_order():
    before, after = _plan(), _without_team("training")
    result = prune.prune_plan(after["objects"], _live(before), ALL_KINDS)
    deleted = _deleted(result)
    assert ("ClusterQueue", None, "training") in deleted
    assert ("LocalQueue", "training", "training") in deleted
    assert ("Namespace", None, "training") in deleted
    assert ("WorkloadPriorityClass", None, "training") in deleted
    assert ("ValidatingAdmissionPolicy", None, "gpushare-claims-training") in deleted
    assert ("ResourceClaimTemplate", "training", "gpu-rtx-pro-6000") in deleted
    assert ("RoleBinding", "training", "gpushare-team") in deleted
    # nothing of the teams that stay
    assert not [d for d in deleted if d[1] in ("production", "data") or d[2] in ("production", "data")]
    kinds = [d[0] for d in deleted]
    assert kinds == sorted(kinds, key=prune.DELETE_ORDER.index)
    # bindings before policies; ClusterQueues before their flavors' and queues; LocalQueues, then namespaces last
    assert kinds.index("ValidatingAdmissionPolicyBinding") < kinds.index("ValidatingAdmissionPolicy")
    assert kinds.index("ClusterQueue") < kinds.index("LocalQueue") < kinds.index("Namespace")
    assert kinds[-1] == "Namespace" and result["namespaces"] == ["training"]
    assert result["refused"] == []
    assert all(d["generation"] == ownership.generation_of(before["objects"]) for d in result["delete"])
    # the same deletions, in the same order, as the objects one kubernetes.core.k8s state=absent call takes
    references = result["delete_objects"]
    assert [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in references] == deleted
    assert all(o["apiVersion"] == d["api_version"] for o, d in zip(references, result["delete"]))
    namespace = references[-1]
    assert namespace == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "training"}}


def test_objects_without_the_ownership_label_are_never_deleted():
    before, after = _plan(), _without_team("training")
    live = _live(before)
    for obj in live:
        obj["metadata"]["labels"].pop(ownership.MANAGED_BY_LABEL)
    hand_made = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": "by-hand", "namespace": "data", "labels": {"team": "data"}}}
    other_owner = {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "argo", "labels": {ownership.MANAGED_BY_LABEL: "Helm"}}}
    result = prune.prune_plan(after["objects"], live + [hand_made, other_owner], ALL_KINDS)
    assert result["delete"] == []


def test_only_the_kinds_asked_for_are_deleted_but_refusals_see_every_kind():
    before, after = _plan(), _without_team("training")
    live = _live(before)
    workloads = [_workload("training", "training", admitted_to="training")]
    result = prune.prune_plan(after["objects"], live, prune.PRUNED_KINDS["dra_driver"], workloads)
    assert {d["kind"] for d in result["delete"]} <= set(prune.PRUNED_KINDS["dra_driver"])
    # the DRA objects of training are refused too: its queues hold an admitted workload
    assert any("ClusterQueue training" in r and "1 admitted and 0 pending" in r for r in result["refused"])
    assert any("ResourceClaimTemplate training/gpu-rtx-pro-6000" in r for r in result["refused"])


def test_a_team_with_admitted_or_pending_workloads_is_refused_unless_confirmed():
    before, after = _plan(), _without_team("training")
    workloads = [_workload("training", "training", admitted_to="training"), _workload("training", "training")]
    workloads[1]["metadata"]["name"] = "job-waiting"
    result = prune.prune_plan(after["objects"], _live(before), ALL_KINDS, workloads)
    text = "\n".join(result["refused"])
    assert "team training, LocalQueue training/training: its queue LocalQueue training/training holds " \
           "1 admitted and 1 pending Workload(s) (training/job-training-x, training/job-waiting)" in text
    assert "Namespace training: it still holds" in text
    assert result["delete"]  # still listed: the caller fails on the refusals before deleting anything
    message = prune.refusal_message(result["refused"], "kueue")
    assert "gpushare_confirm_disruptive=true" in message and "Nothing was deleted" in message
    confirmed = prune.prune_plan(after["objects"], _live(before), ALL_KINDS, workloads, confirm=True)
    assert confirmed["refused"] == [] and confirmed["confirmed"] == result["refused"]
    assert _deleted(confirmed) == _deleted(result)


def test_finished_workloads_and_other_teams_workloads_do_not_refuse():
    before, after = _plan(), _without_team("training")
    workloads = [_workload("training", "training", admitted_to="training", finished=True),
                 _workload("data", "data", admitted_to="data")]
    assert prune.prune_plan(after["objects"], _live(before), ALL_KINDS, workloads)["refused"] == []


def test_a_pending_workload_of_a_queue_pointing_at_a_removed_cluster_queue_refuses_it():
    before, after = _plan(), _without_team("training")
    live = _live(before)
    # a LocalQueue of another namespace feeding training's ClusterQueue, pending workload in it
    live.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": "extra", "namespace": "lab"}, "spec": {"clusterQueue": "training"}})
    result = prune.prune_plan(after["objects"], live, ("ClusterQueue",), [_workload("lab", "extra")])
    assert any(r.startswith("team training, ClusterQueue training:") and "0 admitted and 1 pending" in r
               for r in result["refused"])


def test_a_namespace_with_running_pods_and_a_claim_in_use_are_refused():
    before = _plan()
    after = copy.deepcopy(before)
    gone = {("ResourceClaim", "shared-gpu1-gpu2"), ("Namespace", "data")}
    after["objects"] = [o for o in after["objects"] if (o["kind"], o["metadata"]["name"]) not in gone]
    live = _live(before)
    claim = next(o for o in live if o["kind"] == "ResourceClaim")
    claim["status"] = {"reservedFor": [{"resource": "pods", "name": "notebook-1", "uid": "1"}]}
    pods = [{"kind": "Pod", "metadata": {"name": "notebook-1", "namespace": "data"}, "status": {"phase": "Running"}},
            {"kind": "Pod", "metadata": {"name": "done", "namespace": "data"}, "status": {"phase": "Succeeded"}}]
    result = prune.prune_plan(after["objects"], live, ALL_KINDS, pods=pods)
    assert "ResourceClaim data/shared-gpu1-gpu2: in use by notebook-1; deleting it takes the GPU from under them" \
        in result["refused"]
    assert "Namespace data: it still holds 1 running Pod(s) (notebook-1); deleting the namespace deletes them" \
        in result["refused"]


def test_objects_already_being_deleted_are_left_alone():
    before, after = _plan(), _without_team("training")
    live = _live(before)
    for obj in live:
        if obj["kind"] == "ClusterQueue" and obj["metadata"]["name"] == "training":
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    result = prune.prune_plan(after["objects"], live, ALL_KINDS)
    assert result["terminating"] == ["ClusterQueue training"]
    assert ("ClusterQueue", None, "training") not in _deleted(result)


def test_an_object_read_in_another_api_version_is_the_same_object():
    plan = _plan()
    live = _live(plan)
    for obj in live:
        if obj["kind"] == "ClusterQueue":
            obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert prune.prune_plan(plan["objects"], live, ALL_KINDS)["delete"] == []


def test_prune_role_reads_k8s_info_results_and_fills_in_the_kind():
    before, after = _plan(), _without_team("training")
    by_kind = {}
    for obj in _live(before):
        stripped = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        by_kind.setdefault(obj["kind"], []).append(stripped)
    listed = {"results": [{"item": entry, "resources": by_kind.get(entry["kind"], [])}
                          for entry in prune.list_kinds("tenancy")]}
    result = prune.prune_role(after, "tenancy", [listed])
    assert ("Namespace", None, "training") in _deleted(result)
    assert {d["kind"] for d in result["delete"]} <= set(prune.PRUNED_KINDS["tenancy"])
    assert result["message"] == ""
    # the boundaries of the namespaces the plan keeps are wanted, those of training are not
    boundaries = [{"apiVersion": "v1", "kind": "ResourceQuota",
                   "metadata": {"name": "gpushare-team", "namespace": ns,
                                "labels": {ownership.MANAGED_BY_LABEL: ownership.MANAGED_BY}}}
                  for ns in ("data", "training")]
    result = prune.prune_role(after, "tenancy", boundaries)
    assert [d["where"] for d in result["delete"] if d["kind"] == "ResourceQuota"] == ["ResourceQuota training/gpushare-team"]


def test_list_kinds_holds_each_role_and_the_queues():
    assert [k["kind"] for k in prune.list_kinds("dra_driver")] == [
        "DeviceClass", "ResourceClaimTemplate", "ResourceClaim", "ClusterQueue", "LocalQueue"]
    assert all(k["api_version"] == prune.API_VERSIONS[k["kind"]] for k in prune.list_kinds("tenancy"))
    # every kind a role applies is pruned, and every pruned kind has a place in the order
    assert set(ALL_KINDS) == {kind for kinds in prune.PRUNED_KINDS.values() for kind in kinds}
    with pytest.raises(ValueError, match="role: 'monitoring' prunes nothing"):
        prune.list_kinds("monitoring")
    with pytest.raises(ValueError, match="gpushare_plan.objects: missing"):
        prune.prune_role({}, "kueue", [])


def test_every_object_of_the_plan_and_of_team_quotas_is_stamped_with_one_generation():
    from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner import plan as plan_module

    plan = _plan()
    generations = {o["metadata"]["labels"][ownership.GENERATION_LABEL] for o in plan["objects"]}
    assert all(ownership.is_owned(o) for o in plan["objects"]) and len(generations) == 1
    # the generation is the hash of the unstamped objects, so it changes with the plan and only then
    assert generations == {ownership.generation(plan["objects"])}
    assert ownership.generation_of(_without_team("training")["objects"]) not in generations
    assert _plan()["objects"] == plan["objects"]
    contract = plan_module.team_quotas(INVENTORY["gpushare_teams"], INVENTORY["nodes"], backend="dra")
    assert contract["objects"] == plan["objects"]
    # the tenancy boundaries, made from the teams section, carry the plan's generation
    boundaries = addon_files.boundary_objects(plan)
    assert boundaries and all(ownership.is_owned(o) and o["metadata"]["labels"][ownership.GENERATION_LABEL]
                              in generations for o in boundaries)
