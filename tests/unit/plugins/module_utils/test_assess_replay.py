# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The busiest day as rehearsal steps (assess/replay.py) against worlds whose truth the test
wrote, and the waits the rehearsal reads from its steps (rehearsal/steps.py ``waits``)."""

from __future__ import annotations

import yaml

from assess_worlds import HOUR, L40S, TEAMS, WORKED_DAY_TODAY, WORKED_DAY_USERS, assess, overloaded, worked_day
from ansible_collections.gpushare.cluster.plugins.module_utils.assess import replay as assess_replay
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.inventory_text import replay_text
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import steps as rehearsal_steps

OVERLOADED_USERS = {"serve": "production", "tune-a": "training", "tune-b": "training"}


def _workloads(replay):
    return {w["name"]: w for w in replay["workloads"]}


def _valid_on_the_proposal(assessment):
    """The steps are ones the rehearsal accepts on the plan of the proposal (every lookup resolves)."""
    plan = build_plan(TEAMS, assessment["proposal"]["hosts"])
    checked = rehearsal_steps.validate_steps(plan, assessment["replay"]["steps"])
    for step in checked:
        for workload in step["submit"]:
            assert rehearsal_steps.workload_objects(plan, workload)
    return checked


def test_the_worked_day_replays_each_process_as_its_team_asks_on_the_proposal(tmp_path):
    world = worked_day(days=2)
    assessment = assess(world, tmp_path, WORKED_DAY_TODAY, WORKED_DAY_USERS)
    replay = assessment["replay"]
    assert replay["day"] in ("Mon 2026-03-02", "Tue 2026-03-03") and replay["slot_minutes"] == 60
    assert replay["left_out"] == []
    workloads = _workloads(replay)
    # The serving process a whole GPU, each small steady one the MIG profile the planner placed for it.
    assert {k: v for k, v in workloads["vllm-1000"].items() if k in ("team", "gpus", "submit", "delete")} == {
        "team": "production", "gpus": 1, "submit": "00:00", "delete": None}
    layout = {i["name"]: i["profile"] for gpu in assessment["gpus"] for i in gpu["mig_layout"]}
    for user, pid in (("embed", 1100), ("classify", 1200), ("stt", 1300)):
        assert workloads["%s-%d" % (user, pid)]["mig"] == layout[user]
    # Notebooks on data's shared GPU, each session from the hour it began in.
    notebooks = [w for w in workloads.values() if w["team"] == "data"]
    truth = [job for job in world.jobs if job.index == 2 and job.start // (24 * HOUR) == (0 if "Mon" in replay["day"] else 1)]
    assert len(notebooks) == len(truth) and all(w.get("shared") is True for w in notebooks)
    assert sorted(w["submit"] for w in notebooks) == sorted("%02d:00" % (job.start % (24 * HOUR) // HOUR) for job in truth)
    # The fine-tune from 13:00 runs past midnight: submitted at 13:00, never deleted that day.
    trainer = [w for w in workloads.values() if w["team"] == "training" and w["submit"] == "13:00"]
    assert len(trainer) == 1 and trainer[0]["gpus"] == 1 and trainer[0]["delete"] is None
    checked = _valid_on_the_proposal(assessment)
    assert [step["at"] for step in checked] == sorted(step["at"] for step in checked)


def test_a_session_is_deleted_at_the_boundary_it_ended_on_despite_the_samples_jitter(tmp_path):
    world, today = overloaded(days=1)
    assessment = assess(world, tmp_path, today, OVERLOADED_USERS)
    steps = assessment["replay"]["steps"]
    assert steps == [
        {"at": "00:00", "submit": [{"team": "production", "name": "serve-10", "gpus": 1}]},
        {"at": "09:00", "submit": [{"team": "training", "name": "tune-a-1000", "gpus": 1},
                                   {"team": "training", "name": "tune-b-2000", "gpus": 1}]},
        {"at": "17:00", "delete": ["tune-a-1000", "tune-b-2000"]},
    ]
    _valid_on_the_proposal(assessment)


def test_a_process_of_no_team_is_left_out_and_named(tmp_path):
    # A third card with no team today: its guest user maps to no team, so the guest is unassigned.
    world, today = overloaded(days=1)
    world.cards["node"].append((2, L40S[0], L40S[1]))
    world.daily("node", 2, "tune-c", 3000, 8, 12, 20, 90)
    world.daily("node", 2, "guest", 5000, 10, 11, 2, 5)
    today = {"node": today["node"] + [{"index": 2}]}
    assessment = assess(world, tmp_path, today, dict(OVERLOADED_USERS, **{"tune-c": "training"}))
    replay = assessment["replay"]
    assert "guest-5000" not in _workloads(replay)
    assert replay["left_out"] == ["host node, GPU 2, process 5000 (user guest): no team (map the user in "
                                  "gpushare_assess_users)"]


def test_without_demand_there_is_nothing_to_replay():
    result = assess_replay.replay([], [], {})
    assert result["steps"] == [] and result["day"] is None
    assert result["why"] == "no process was seen: nothing to replay"


def test_replay_yml_is_the_steps_as_a_vars_file(tmp_path):
    world, today = overloaded(days=1)
    replay = assess(world, tmp_path, today, OVERLOADED_USERS)["replay"]
    text = replay_text(replay)
    assert text.startswith("# The busiest recorded day (Mon 2026-03-02) as rehearsal steps")
    assert yaml.safe_load(text) == {"gpushare_rehearsal_steps": replay["steps"]}


def _step(at, submitted=(), deleted=(), **teams):
    return {"at": at, "submitted": list(submitted), "deleted": list(deleted),
            "teams": {team: dict({"admitted": [], "pending": [], "denied": []}, **states) for team, states in teams.items()}}


def test_waits_from_submit_to_the_first_step_that_found_the_workload_admitted():
    steps = [
        _step("09:00", ["a", "b", "c", "x"], training={"admitted": ["a"], "pending": ["b", "c"]},
              data={"denied": ["x"]}),
        _step("10:30", [], [], training={"admitted": ["a"], "pending": ["b", "c"]}),
        _step("12:00", ["d"], ["a"], training={"admitted": ["b", "d"], "pending": ["c"]}),
        _step("15:00", [], ["c"], training={"admitted": ["b", "d"]}),
        _step("16:00", ["e"], [], training={"admitted": ["b", "d"], "pending": ["e"]}),
    ]
    result = rehearsal_steps.waits(steps)
    assert result["unit"] == "minutes"
    by_name = {w["workload"]: w for w in result["workloads"]}
    assert (by_name["a"]["state"], by_name["a"]["waited"]) == ("admitted", 0)
    assert (by_name["b"]["admitted"], by_name["b"]["waited"]) == ("12:00", 180)
    assert (by_name["c"]["state"], by_name["c"]["waited"]) == ("never admitted", 360)  # deleted at 15:00
    assert (by_name["e"]["state"], by_name["e"]["waited"]) == ("never admitted", 480)  # to the end of the day
    assert (by_name["x"]["state"], by_name["x"]["waited"]) == ("denied", 0)
    assert result["teams"] == {"training": {"workloads": 5, "waited": 3, "never_admitted": ["c", "e"],
                                            "longest": 480, "total": 1020}}


def test_waits_are_counted_in_steps_when_the_labels_are_not_clock_times():
    steps = [_step("morning", ["a", "b"], training={"admitted": ["a"], "pending": ["b"]}),
             _step("noon", [], ["a"], training={"admitted": ["b"]})]
    result = rehearsal_steps.waits(steps)
    assert result["unit"] == "steps"
    assert [(w["workload"], w["waited"]) for w in result["workloads"]] == [("a", 0), ("b", 1)]
