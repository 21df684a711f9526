# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proposals from fixed figures and inventories."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.usage.advice import (
    AdviceThresholds,
    apply_proposal,
    expand_gpus,
    propose,
    summary_lines,
)

TEAMS = [{"name": "production", "priority": 1000}, {"name": "data", "priority": 100},
         {"name": "training", "priority": 10}]
NODES = {"gpu1": [
    {"index": 0, "model": "H100-80GB", "team": "production", "use": "whole"},
    {"index": 1, "model": "H100-80GB", "team": "production", "use": "mig",
     "mig": {"instances": [{"name": "embeddings", "memory": "30GiB"}, {"name": "chat", "memory": "40GiB"}]}},
    {"index": 2, "model": "H100-80GB", "team": "data", "use": "whole"},
    {"index": 3, "model": "H100-80GB", "team": "training", "use": "whole"},
]}


def team(**values):
    base = {"has_data": True, "gpu_hours_allocated": 100.0, "gpu_hours_busy": 50.0, "efficiency": 0.5,
            "allocated_peak": 1.0, "allocated_p95": 1.0, "borrowing_hours": 0.0, "borrowed_peak": 0.0,
            "lending_hours": 0.0, "pending_hours": 0.0, "pending_peak": 0.0, "wait_p95_seconds": 0.0,
            "nominal_quota": 1.0, "borrowing_limit": None}
    base.update(values)
    return base


def device(index, busy, hours=336.0, profile=None, used=None, total=None, instance=None):
    return {"host": "gpu1", "gpu": index, "mig_profile": profile, "mig_instance_id": instance,
            "allocated_hours": hours, "busy_ratio_when_allocated": busy, "idle_allocated_hours": 0.0,
            "memory_used_peak_mib": used, "memory_total_mib": total}


def figures(**changes):
    base = {
        "window": {"hours": 336.0, "step_seconds": 300},
        "teams": {"production": team(allocated_peak=2.0), "data": team(), "training": team()},
        "gpus": [device(0, 0.6), device(1, 0.3, profile="3g.40gb", used=30000, total=40192, instance=1),
                 device(1, 0.3, profile="3g.40gb", used=36000, total=40192, instance=2), device(2, 0.5), device(3, 0.9)],
        "cluster": {"gpus": 4, "devices": 5, "busy_share": 0.5, "allocated_share": 0.7, "saturated_hours": 0.0,
                    "saturated_with_waiting_hours": 0.0, "wait_p95_seconds_max": 0.0,
                    "team_pending_most": None, "team_waiting_longest": None},
        "missing": [],
    }
    for key, value in changes.items():
        base[key] = value
    return base


def kinds(proposals):
    return [p["kind"] for p in proposals]


def test_balanced_cluster_gets_no_proposal():
    assert propose(figures(), TEAMS, NODES) == []


def test_whole_gpu_busy_a_few_percent_moves_to_shared():
    data = figures()
    data["gpus"][3] = device(2, 0.04)
    [proposal] = propose(data, TEAMS, NODES)
    assert proposal["kind"] == "whole_to_shared" and proposal["team"] == "data"
    assert proposal["where"] == "host_vars/gpu1.yml"
    assert proposal["variable"] == "gpushare_gpus[index=2].use"
    assert (proposal["current"], proposal["proposed"]) == ("whole", "shared")
    # 0.5 target / 0.04 busy = 12 -> capped at 8 replicas
    assert proposal["also"] == {"gpushare_gpus[index=2].replicas": 8}
    assert "4.0%" in proposal["reason"]


def test_short_allocation_is_not_enough_evidence():
    data = figures()
    data["gpus"][3] = device(2, 0.04, hours=10.0)
    assert propose(data, TEAMS, NODES) == []


def test_waiting_team_at_quota_gets_a_gpu_from_an_idle_lower_priority_team():
    teams = [{"name": "production", "priority": 1000}, {"name": "data", "priority": 5},
             {"name": "training", "priority": 10}]
    data = figures()
    data["teams"]["training"] = team(pending_hours=60.0, wait_p95_seconds=7200.0, allocated_peak=2.0, borrowed_peak=1.0)
    data["gpus"][3] = device(2, 0.2)
    proposals = propose(data, teams, NODES)
    assert kinds(proposals) == ["move_gpu"]
    move = proposals[0]
    assert move["variable"] == "gpushare_gpus[index=2].team"
    assert (move["current"], move["proposed"]) == ("data", "training")
    assert move["figures"]["pending_hours"] == 60.0 and move["figures"]["donor_busy_ratio_when_allocated"] == 0.2
    assert "nominal quota to 2" in move["reason"]


def test_waiting_team_never_takes_from_a_higher_priority_team():
    data = figures()
    data["teams"]["training"] = team(pending_hours=60.0, wait_p95_seconds=7200.0, allocated_peak=2.0)
    data["gpus"][3] = device(2, 0.2)  # data (priority 100) outranks training (10)
    [proposal] = propose(data, TEAMS, NODES)
    assert proposal["kind"] == "add_gpu_for_quota"
    assert proposal["variable"] == "gpushare_gpus (append)"
    assert proposal["proposed"] == {"count": 1, "team": "training", "use": "whole", "model": "H100-80GB"}
    assert "60 h of 336 h" in proposal["reason"] and "whole GPUs (H100-80GB)" in proposal["reason"]


def _limits(*rows):
    return [{"flavor": flavor, "resource": resource, "limit": limit, "unlimited": limit is None,
             "borrowed_peak": peak, "reached": limit is not None and peak >= limit} for flavor, resource, limit, peak in rows]


def test_borrowing_limit_reached_raises_the_limit():
    data = figures()
    data["teams"]["training"] = team(pending_hours=40.0, wait_p95_seconds=3600.0, allocated_peak=3.0,
                                     borrowed_peak=2.0, borrowing_limit=2.0, nominal_quota=1.0,
                                     borrowing_limits=_limits(("h100-80gb-whole", "gpushare.io/h100-80gb", 2.0, 2.0)))
    data["teams"]["data"] = team(lending_hours=100.0)
    teams = [dict(t, borrow=2) if t["name"] == "training" else t for t in TEAMS]
    [proposal] = propose(data, teams, NODES)
    assert proposal["kind"] == "raise_borrowing_limit"
    assert proposal["variable"] == "gpushare_teams[name=training].borrow"
    assert (proposal["current"], proposal["proposed"]) == (2, 4)


def test_a_borrowing_limit_is_per_resource_never_a_sum():
    """borrow: {whole: 1} reached on the whole GPUs, not on MIG: raise that one, keep the mapping."""
    data = figures()
    data["teams"]["training"] = team(pending_hours=40.0, wait_p95_seconds=3600.0, allocated_peak=2.0,
                                     nominal_quota=1.0, borrowing_limits=_limits(
                                         ("h100-80gb-whole", "gpushare.io/h100-80gb", 1.0, 1.0),
                                         ("h100-80gb-mig", "gpushare.io/h100-80gb-mig-3g.40gb", 5.0, 0.0)))
    teams = [dict(t, borrow={"gpushare.io/h100-80gb": 1, "gpushare.io/h100-80gb-mig-3g.40gb": 5})
             if t["name"] == "training" else t for t in TEAMS]
    [proposal] = propose(data, teams, NODES)
    assert proposal["kind"] == "raise_borrowing_limit"
    assert proposal["proposed"] == {"gpushare.io/h100-80gb": 2, "gpushare.io/h100-80gb-mig-3g.40gb": 5}


def test_short_waits_are_not_a_quota_problem():
    data = figures()
    data["teams"]["training"] = team(pending_hours=60.0, wait_p95_seconds=120.0, allocated_peak=2.0)
    assert propose(data, TEAMS, NODES) == []
    data["teams"]["training"] = team(pending_hours=5.0, wait_p95_seconds=7200.0, allocated_peak=2.0)
    assert propose(data, TEAMS, NODES) == []  # 5 h < 5 % of 336 h


def test_waiting_below_own_quota_is_flagged_not_raised():
    data = figures()
    data["teams"]["training"] = team(pending_hours=60.0, wait_p95_seconds=7200.0, allocated_peak=1.0, nominal_quota=4.0)
    [proposal] = propose(data, TEAMS, NODES)
    assert proposal["kind"] == "investigate_waiting" and proposal["variable"] is None


def test_missing_wait_histogram_lets_pending_time_decide():
    data = figures()
    data["teams"]["training"] = team(pending_hours=60.0, wait_p95_seconds=None, allocated_peak=1.0, nominal_quota=1.0)
    assert kinds(propose(data, TEAMS, NODES)) == ["add_gpu_for_quota"]


def test_mig_instance_that_never_fills_its_memory_shrinks_named_through_the_plan():
    data = figures()
    data["gpus"][1] = device(1, 0.3, profile="3g.40gb", used=6000, total=40192, instance=1)
    plan = {"nodes": {"gpu1": {"gpus": [{"index": 1, "instances": [
        {"name": "embeddings", "profile": "3g.40gb"}, {"name": "chat", "profile": "4g.40gb"}]}]}}}
    [proposal] = propose(data, TEAMS, NODES, plan=plan)
    assert proposal["kind"] == "mig_smaller_profile"
    assert proposal["variable"] == "gpushare_gpus[index=1].mig.instances[name=embeddings].memory"
    # 6000 MiB * 1.25 = 7500 MiB -> 8 GiB
    assert (proposal["current"], proposal["proposed"]) == ("30GiB", "8GiB")
    assert "5.9 GiB of its 39.2 GiB" in proposal["reason"]
    # From the GPU catalog: the smallest H100-80GB profile holding 8 GiB.
    assert "the planner would pick 1g.10gb (9.8 GiB) instead" in proposal["reason"]


def test_mig_instance_without_plan_and_several_needs_gets_no_proposal():
    """Which need the slice serves is unknown: a proposal would name no key of the entry."""
    data = figures()
    data["gpus"][1] = device(1, 0.3, profile="3g.40gb", used=6000, total=40192, instance=1)
    assert propose(data, TEAMS, NODES) == []
    one_need = {"gpu1": [dict(NODES["gpu1"][1], mig={"instances": [{"name": "chat", "memory": "40GiB"}]})]}
    [proposal] = propose(data, TEAMS, one_need)
    assert proposal["variable"] == "gpushare_gpus[index=1].mig.instances[name=chat].memory"
    assert (proposal["current"], proposal["proposed"]) == ("40GiB", "8GiB")


def test_a_shared_gpu_on_a_full_size_mig_instance_gets_no_mig_proposal():
    """device_plugin carries a shared GPU on a full-size MIG instance; its entry has no mig key."""
    nodes = {"gpu1": [{"index": 0, "model": "H100-80GB", "team": "production", "use": "whole"},
                      {"index": 1, "model": "H100-80GB", "team": "data", "use": "shared", "replicas": 4}]}
    data = figures(gpus=[device(0, 0.6), device(1, 0.3, profile="7g.80gb", used=3000, total=81408, instance=0)])
    assert [p for p in propose(data, TEAMS, nodes) if p["kind"] == "mig_smaller_profile"] == []


def test_smallest_slices_and_unused_slices_are_left_alone():
    data = figures()
    data["gpus"][1] = device(1, 0.3, profile="1g.10gb", used=1000, total=9856, instance=9)
    data["gpus"][2] = device(1, 0.0, hours=0.0, profile="3g.40gb", used=0, total=40192, instance=2)
    assert propose(data, TEAMS, NODES) == []


def test_saturated_cluster_with_waits_justifies_another_card_for_the_waiting_load():
    data = figures()
    data["cluster"].update(saturated_hours=120.0, saturated_with_waiting_hours=80.0, busy_share=0.9,
                           team_pending_most="production")
    [proposal] = propose(data, TEAMS, NODES)
    assert proposal["kind"] == "add_gpu"
    assert proposal["proposed"] == {"count": 1, "team": "production", "use": "whole", "model": "H100-80GB"}
    assert "waited for 80 h of 336 h" in proposal["reason"] and "90%" in proposal["reason"]


def test_quota_proposal_for_a_team_replaces_the_cluster_one():
    data = figures()
    data["teams"]["training"] = team(pending_hours=90.0, wait_p95_seconds=7200.0, allocated_peak=1.0)
    data["cluster"].update(saturated_with_waiting_hours=80.0, team_pending_most="training")
    assert kinds(propose(data, TEAMS, NODES)) == ["add_gpu_for_quota"]


def test_thresholds_are_used():
    data = figures()
    data["gpus"][3] = device(2, 0.15)
    assert propose(data, TEAMS, NODES) == []
    assert kinds(propose(data, TEAMS, NODES, thresholds=AdviceThresholds(shared_below=0.2))) == ["whole_to_shared"]


def test_count_shorthand_is_expanded_as_the_planner_does():
    gpus = expand_gpus("h", [{"index": 0, "team": "a"}, {"count": 3, "team": "b"}])
    assert sorted(gpus) == [0, 1, 2, 3] and gpus[3]["team"] == "b"
    gpus = expand_gpus("h", [{"index": 2, "team": "a"}, {"count": 2, "team": "b"}])
    assert sorted(gpus) == [2, 3, 4]
    with pytest.raises(ValueError, match=r"host h, gpushare_gpus\[0\], field index: must be a non-negative integer"):
        expand_gpus("h", [{"team": "a"}])


def test_summary_lines_mention_missing_and_proposals():
    data = figures()
    data["teams"]["data"] = team(gpu_hours_busy=None, efficiency=None)
    data["missing"] = [{"figure": "busy", "series": "gpushare:team_gpus_busy", "source": "DCGM"}]
    data["gpus"][3] = device(2, 0.04)
    lines = summary_lines(data, propose(copy.deepcopy(data), TEAMS, NODES))
    assert lines[0] == "window: 336 h at 300 s steps"
    assert any(line.startswith("team data:") and "efficiency missing" in line for line in lines)
    assert "missing: busy (gpushare:team_gpus_busy; from DCGM)" in lines
    assert lines[-1].startswith("proposal whole_to_shared: host_vars/gpu1.yml: gpushare_gpus[index=2].use: 'whole' -> 'shared'")


def test_mig_on_a_model_whose_smallest_profile_is_already_used_gets_nothing():
    nodes = {"gpu1": [{"index": 1, "model": "RTX-PRO-6000", "team": "production", "use": "mig",
                       "mig": {"instances": [{"name": "embeddings", "memory": "10GiB"}]}}]}
    data = figures(gpus=[device(1, 0.2, profile="1g.24gb", used=2560, total=24064, instance=3)])
    assert propose(data, TEAMS, nodes) == []
    # 2g.48gb holding 6 GiB on the same model shrinks to 1g.24gb.
    data = figures(gpus=[device(1, 0.2, profile="2g.48gb", used=6144, total=48512, instance=1)])
    nodes["gpu1"][0]["mig"]["instances"][0]["memory"] = "40GiB"
    [proposal] = propose(data, TEAMS, nodes)
    assert "1g.24gb" in proposal["reason"] and proposal["proposed"] == "8GiB"
    assert proposal["variable"] == "gpushare_gpus[index=1].mig.instances[name=embeddings].memory"


def test_mig_on_an_unknown_model_uses_the_compute_slices():
    nodes = {"gpu1": [{"index": 1, "model": "FUTURE-GPU", "team": "production", "use": "mig",
                       "mig": {"instances": [{"name": "big", "memory": "80GiB"}]}}]}
    small = figures(gpus=[device(1, 0.2, profile="1g.30gb", used=2000, total=30000, instance=3)])
    assert propose(small, TEAMS, nodes) == []
    large = figures(gpus=[device(1, 0.2, profile="3g.90gb", used=2000, total=90000, instance=3)])
    [proposal] = propose(large, TEAMS, nodes)
    assert "lets the planner pick a smaller profile" in proposal["reason"]


def test_apply_proposal_splits_a_count_entry_and_keeps_every_index():
    nodes = {"gpu1": [{"index": 0, "model": "L4", "team": "data", "use": "whole"},
                      {"count": 4, "model": "L4", "team": "training", "use": "whole"}]}
    proposal = {"kind": "whole_to_shared", "where": "host_vars/gpu1.yml", "variable": "gpushare_gpus[index=2].use",
                "proposed": "shared", "also": {"gpushare_gpus[index=2].replicas": 4}}
    teams, changed = apply_proposal(TEAMS, nodes, proposal)
    assert teams == TEAMS and nodes["gpu1"][1]["count"] == 4  # the input is not modified
    assert changed["gpu1"] == [
        {"index": 0, "model": "L4", "team": "data", "use": "whole"},
        {"model": "L4", "team": "training", "use": "whole", "count": 1},
        {"model": "L4", "team": "training", "use": "shared", "index": 2, "replicas": 4},
        {"model": "L4", "team": "training", "use": "whole", "count": 2},
    ]
    assert sorted(expand_gpus("gpu1", changed["gpu1"])) == [0, 1, 2, 3, 4]


def test_apply_proposal_sets_team_and_mig_need_paths():
    teams, nodes = apply_proposal(TEAMS, NODES, {"kind": "raise_borrowing_limit", "where": "group_vars/all",
                                                 "variable": "gpushare_teams[name=training].borrow", "proposed": 3})
    assert next(t for t in teams if t["name"] == "training")["borrow"] == 3
    teams, nodes = apply_proposal(TEAMS, NODES, {
        "kind": "mig_smaller_profile", "where": "host_vars/gpu1.yml", "proposed": "8GiB",
        "variable": "gpushare_gpus[index=1].mig.instances[name=chat].memory"})
    assert nodes["gpu1"][1]["mig"]["instances"][1] == {"name": "chat", "memory": "8GiB"}
    with pytest.raises(ValueError, match=r"no entry with name nope"):
        apply_proposal(TEAMS, NODES, {"kind": "x", "where": "host_vars/gpu1.yml", "proposed": "1GiB",
                                      "variable": "gpushare_gpus[index=1].mig.instances[name=nope].memory"})
