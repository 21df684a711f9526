# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpushare_rehearsal_steps: validation, the worked day derived from a plan, workload manifests, judging."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import steps as rs

from gpushare_checks import validate_core
from test_rehearsal_world import inventory_plan


@pytest.fixture(scope="module", params=["dra", "device_plugin"])
def example(request):
    return inventory_plan("example", request.param)


def _by_at(steps):
    return {s["at"]: s for s in steps}


def test_worked_day_of_the_example(example):
    steps = rs.validate_steps(example, rs.default_steps(example))
    day = _by_at(steps)
    assert [s["at"] for s in steps] == ["08:00", "09:30", "10:00", "13:00", "19:00", "07:00", "07:30"]
    assert day["08:00"]["submit"][0] == {"team": "production", "name": "vllm", "gpus": 1, "model": "RTX-PRO-6000"}
    assert [w["mig"] for w in day["09:30"]["submit"]] == ["1g.24gb"] * 3
    assert [w["name"] for w in day["09:30"]["submit"]] == ["embeddings", "classifier", "speech-to-text"]
    assert [w["name"] for w in day["10:00"]["submit"]] == ["notebook-%d" % n for n in range(1, 6)]
    assert all(w["team"] == "data" and w["shared"] for w in day["10:00"]["submit"])
    # the cohort has two whole RTX PRO 6000 in quota (production 1, training 1); serving holds one
    assert day["13:00"]["submit"] == [{"team": "training", "name": "fine-tune", "gpus": 2, "model": "RTX-PRO-6000"}]
    assert day["13:00"]["expect"]["pending"] == ["fine-tune"]
    assert day["19:00"]["delete"] == ["vllm"] + ["notebook-%d" % n for n in range(1, 6)]
    assert day["19:00"]["expect"]["admitted"] == ["fine-tune"] and day["19:00"]["expect"]["borrowing"] == {"training": 1}
    assert day["07:00"]["expect"]["preempted"] == ["fine-tune"] and day["07:00"]["expect"]["pending"] == ["fine-tune"]
    denied = day["07:30"]["expect"]["denied"]
    assert "training-uses-production-queue" in denied and "training-uses-production-priority" in denied
    assert ("training-uses-data-claim" in denied) == (example["backend"] == "dra")


def test_worked_day_of_the_multinode_inventory():
    plan = inventory_plan("multinode", "dra")
    day = _by_at(rs.validate_steps(plan, rs.default_steps(plan)))
    # 14 whole H100 in quota: production 4, research 2, training 8
    assert day["13:00"]["submit"][0]["gpus"] == 14
    assert day["19:00"]["expect"]["borrowing"] == {"training": 6}
    request = rs.workload_request(plan, day["13:00"]["submit"][0])
    # no node has 14 whole H100: one pod per GPU
    assert request["pods"] == 14 and request["per_pod"] == 1


def test_borrowing_limit_lowers_what_the_fine_tune_asks():
    plan = copy.deepcopy(inventory_plan("multinode", "dra"))
    resource = list(plan["teams"]["training"]["capacity"])[0]
    plan["teams"]["training"]["borrowing_limit"] = {resource: 2}
    day = _by_at(rs.default_steps(plan))
    assert day["13:00"]["submit"][0]["gpus"] == 10
    assert day["19:00"]["expect"]["borrowing"] == {"training": 2}


def test_workloads_use_exactly_what_the_plan_gives_the_team(example):
    plan_objects = {(o["kind"], (o["metadata"].get("namespace")), o["metadata"]["name"]) for o in example["objects"]}
    for step in rs.validate_steps(example, rs.default_steps(example)):
        for workload in step["submit"]:
            objects = rs.workload_objects(example, workload)
            main = objects[-1]
            validate_core(main)
            labels = main["metadata"]["labels"]
            namespace = main["metadata"]["namespace"]
            assert namespace == example["teams"][workload["team"]]["namespaces"][0]
            if "queue" not in workload and not workload.get("shared"):
                assert ("LocalQueue", namespace, labels[rs.QUEUE_LABEL]) in plan_objects
            if "priority" in workload:
                assert labels[rs.PRIORITY_LABEL] == workload["priority"]
            spec = main["spec"]["template"]["spec"] if main["kind"] == "Job" else main["spec"]
            for claim in spec.get("resourceClaims") or []:
                if "resourceClaimTemplateName" in claim:
                    assert ("ResourceClaimTemplate", namespace, claim["resourceClaimTemplateName"]) in plan_objects
                elif "claim" not in workload:
                    assert ("ResourceClaim", namespace, claim["resourceClaimName"]) in plan_objects
            if example["backend"] == "device_plugin":
                limits = spec["containers"][0]["resources"]["limits"]
                counted = {r for t in example["teams"].values() for r in t.get("capacity") or {}}
                assert set(limits) <= counted
                # quantities as strings: the Kubernetes client's models refuse integers
                assert all(isinstance(v, str) for v in limits.values()), limits


def test_notebooks_are_labelled_as_the_plan_example_notebooks():
    plan = inventory_plan("example", "dra")
    from ansible_collections.gpushare.cluster.plugins.module_utils.render import examples as example_workloads
    example_pod = [o for o in example_workloads.build_examples(plan) if o["metadata"]["name"] == "notebook-1"][0]
    (pod,) = rs.workload_objects(plan, {"team": "data", "name": "notebook-1", "shared": True})
    wanted = {k: v for k, v in example_pod["metadata"]["labels"].items() if k != example_workloads.EXAMPLE_LABEL}
    assert {k: v for k, v in pod["metadata"]["labels"].items() if k != rs.WORKLOAD_LABEL} == wanted
    assert pod["spec"]["resourceClaims"] == example_pod["spec"]["resourceClaims"]


def test_another_teams_claim_is_a_claim_of_its_own_name_in_the_own_namespace():
    plan = inventory_plan("example", "dra")
    claim, pod = rs.workload_objects(plan, {"team": "training", "name": "x", "shared": True, "claim": "shared-gpu1-gpu2"})
    assert claim["kind"] == "ResourceClaim" and claim["metadata"]["namespace"] == "training"
    assert claim["metadata"]["name"] == "shared-gpu1-gpu2"
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "shared-gpu1-gpu2"}]


def test_jobs_run_until_deleted_under_kwok():
    plan = inventory_plan("example", "dra")
    (job,) = rs.workload_objects(plan, {"team": "training", "name": "ft", "gpus": 2})
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"]["metadata"]["annotations"][rs.KWOK_COMPLETE_DELAY] == rs.RUN_FOREVER
    assert [c["resourceClaimTemplateName"] for c in job["spec"]["template"]["spec"]["resourceClaims"]] == ["gpu-rtx-pro-6000"] * 2


@pytest.mark.parametrize("steps, message", [
    ([], "non-empty list"),
    ([{"submit": []}], r"gpushare_rehearsal_steps\[0\]: field 'at'"),
    ([{"at": "8", "when": 1}], "unknown field"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a"}]}], r"submit\[0\] \(a\): exactly one of 'gpus', 'mig', 'shared'"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "gpus": 0}]}], "'gpus' must be a positive integer"),
    ([{"at": "8", "submit": [{"team": "nobody", "name": "a", "gpus": 1}]}], "team 'nobody' is not in the plan"),
    ([{"at": "8", "submit": [{"team": "production", "name": "A_b", "gpus": 1}]}], "DNS-1123"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "mig": "1g.24gb", "memory": "10Gi"}]}], "'memory' only goes with 'gpus'"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "gpus": 1, "queue": "elsewhere"}]}], "not a LocalQueue of the plan"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "gpus": 1, "priority": "vip"}]}], "not a WorkloadPriorityClass"),
    ([{"at": "8", "delete": ["a"]}], r"\(at 8\): field 'delete': 'a' is not running"),
    ([{"at": "8", "expect": {"admitted": ["ghost"]}}], "'ghost' is never submitted"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "gpus": 1}]},
      {"at": "9", "submit": [{"team": "production", "name": "a", "gpus": 1}]}], "already submitted; delete it first"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "gpus": 1}], "expect": {"borrowing": {"production": -1}}}],
     "non-negative integer"),
    ([{"at": "8", "submit": [{"team": "production", "name": "a", "gpus": 1}], "expect": {"admitted": ["a"], "pending": ["a"]}}],
     "cannot be admitted and pending"),
])
def test_bad_steps_say_which_step_workload_and_field(steps, message):
    with pytest.raises(rs.StepsError, match=message):
        rs.validate_steps(inventory_plan("example", "dra"), steps)


def test_a_workload_the_plan_cannot_serve_is_an_error():
    plan = inventory_plan("example", "dra")
    with pytest.raises(rs.StepsError, match="no MIG instance of profile 2g.48gb"):
        rs.workload_objects(plan, {"team": "production", "name": "a", "mig": "2g.48gb"})
    with pytest.raises(rs.StepsError, match="no whole GPU of model H100-80GB"):
        rs.workload_objects(plan, {"team": "production", "name": "a", "gpus": 1, "model": "H100-80GB"})
    with pytest.raises(rs.StepsError, match="gives team training no shared GPU"):
        rs.workload_objects(plan, {"team": "training", "name": "a", "shared": True})


def _step(**expect):
    base = {"admitted": [], "pending": [], "preempted": [], "denied": [], "borrowing": {}}
    base.update(expect)
    return {"at": "19:00", "submit": [], "delete": [], "expect": base}


def test_judge_names_step_team_and_workload():
    team_of = {"fine-tune": "training", "vllm": "production", "sneaky": "training"}
    step = _step(admitted=["fine-tune"], preempted=["vllm"], denied=["sneaky"], borrowing={"training": 1})
    observed = {"state": {"fine-tune": "pending", "vllm": "admitted", "sneaky": "admitted"}, "preempted": [],
                "borrowing": {"training": 0}, "refused": {}, "reasons": {"fine-tune": "Kueue: insufficient quota"},
                "allocations": [{"workload": "vllm", "mismatch": "got gpu-1-mig (RTX-PRO-6000 1g.24gb), but asked for a whole GPU"}]}
    unmet = rs.judge(step, observed, team_of)
    whats = {(u["team"], u["workload"], u["what"]) for u in unmet}
    assert ("training", "fine-tune", "expected admitted, was pending: Kueue: insufficient quota") in whats
    assert ("production", "vllm", "expected preempted during this step, was not") in whats
    assert ("training", "sneaky", "expected denied, was admitted") in whats
    assert ("training", "", "expected team training to borrow 1, borrowed 0") in whats
    assert any("asked for a whole GPU" in w for _step, _team, w in whats)
    assert all(u["step"] == "19:00" for u in unmet)


def test_judge_reports_a_refused_workload_that_should_have_run():
    unmet = rs.judge(_step(admitted=["vllm"]), {"state": {"vllm": "denied"}, "refused": {"vllm": "forbidden (Forbidden)"}},
                     {"vllm": "production"})
    assert {u["what"] for u in unmet} == {"expected admitted, was denied", "refused by the API server: forbidden (Forbidden)"}


def test_judge_passes_when_everything_holds():
    step = _step(admitted=["a"], pending=["b"], preempted=["b"], borrowing={"t": 0})
    observed = {"state": {"a": "admitted", "b": "pending"}, "preempted": ["b"], "borrowing": {}, "refused": {}}
    assert rs.judge(step, observed, {"a": "t", "b": "t"}) == []


def test_team_summary_attributes_lent_quota_to_idle_teams():
    plan = inventory_plan("example", "dra")
    teams = rs.team_summary(plan, {"fine-tune": "admitted"}, [], {"fine-tune": "training"},
                            {"training": {"in_use": 2, "borrowed": 1}, "production": {"in_use": 0, "borrowed": 0}},
                            {"fine-tune": 2})
    assert teams["training"]["borrowing"] == 1 and teams["training"]["gpus_in_use"] == 2
    assert teams["production"]["lent"] == 1 and teams["training"]["lent"] == 0
    assert teams["training"]["admitted"] == ["fine-tune"]


def test_result_document_shape():
    plan = inventory_plan("example", "dra")
    steps = rs.validate_steps(plan, [{"at": "08:00", "submit": [{"team": "production", "name": "vllm", "gpus": 1}]}])
    recorded = [{"at": "08:00", "teams": {}, "allocations": [{"workload": "vllm", "node": "gpu1", "device": "gpu-0",
                                                              "model": "RTX-PRO-6000", "profile": None}],
                 "unmet": [{"step": "08:00", "team": "production", "workload": "vllm", "what": "x"}]}]
    doc = rs.result_document(plan, steps, recorded)
    assert doc["backend"] == "dra" and doc["passed"] is False
    assert doc["steps"][0]["at"] == "08:00" and doc["steps"][0]["submitted"] == ["vllm"]
    assert doc["unmet"] == recorded[0]["unmet"]
    assert doc["notes"] and "outside Kueue" in doc["notes"][0]
    plan = inventory_plan("example", "device_plugin")
    assert "time-sliced units (nvidia.com/mig-4g.96gb.shared)" in rs.worked_day_story(plan)[0]


def test_a_team_without_group_is_said_before_the_day(example):
    plan = copy.deepcopy(example)
    assert rs.nobody_can_act_as(plan) == []
    plan["teams"]["training"]["group"] = None
    (line,) = rs.nobody_can_act_as(plan)
    assert line.startswith("team training has no group: its Role in training is bound to nobody")
    assert "set group: for team training in gpushare_teams" in line
    # a kubeconfig given for the team means someone acts as it
    assert rs.nobody_can_act_as(plan, given=["training"]) == []


def test_a_plan_without_uuids_says_which_claims_can_cross_between_whole_and_shared_cards(example):
    notes = rs.result_document(example, [], [])["notes"]
    crossing = [n for n in notes if n.startswith("Not pinned by uuid")]
    if example["backend"] == "device_plugin":
        assert crossing == []
        return
    (line,) = crossing
    assert "host gpu1, GPU 2" in line and "template gpu-rtx-pro-6000)" in line
    assert "shared-gpu1-gpu2; template gpu-rtx-pro-6000-shared" in line
    assert line[len("Not pinned by uuid: "):-1] in example["warnings"]  # the plan report and summary say it too
    pinned = copy.deepcopy(example)
    for gpu in pinned["nodes"]["gpu1"]["gpus"]:
        gpu["uuid"] = "GPU-%d" % gpu["index"]
    assert not [n for n in rs.result_document(pinned, [], [])["notes"] if n.startswith("Not pinned")]
