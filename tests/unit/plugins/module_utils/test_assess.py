# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The assessment's proposal against worlds whose truth the test wrote (tests/support/assess_worlds.py)."""

from __future__ import annotations

import json
import pytest
import yaml

from assess_worlds import (DAY, HOUR, L40S, NOTEBOOK_USERS, RTX, TEAMS, WORKED_DAY_TODAY, WORKED_DAY_USERS, World,
                           assess, overloaded, worked_day)
from ansible_collections.gpushare.cluster.plugins.module_utils.assess import files
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.mig_solver import plan_node_layout
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan


def _assess(world, tmp_path, today, users, teams=TEAMS):
    return assess(world, tmp_path, today, users, teams)


def _by_index(assessment, host):
    return {gpu["index"]: gpu for gpu in assessment["gpus"] if gpu["host"] == host}


def _peak_at_once(world, host, index, users):
    """The truth: most jobs of these users running at once on the card, at a sample."""
    jobs = [job for job in world.jobs if job.host == host and job.index == index and job.user in users]
    return max(sum(1 for job in jobs if job.start <= step < job.end)
               for step in range(0, world.days * DAY, world.interval))


def _plans(assessment):
    """The proposal passes the planner as plan.yml runs it."""
    return build_plan(TEAMS, assessment["proposal"]["hosts"])


@pytest.fixture(scope="module")
def worked(tmp_path_factory):
    world = worked_day()
    return world, _assess(world, tmp_path_factory.mktemp("worked"), WORKED_DAY_TODAY, WORKED_DAY_USERS)


def test_worked_day_proposes_the_readme_split(worked):
    world, assessment = worked
    gpus = _by_index(assessment, "gpu1")
    assert [gpus[i]["proposed"]["use"] for i in range(4)] == ["whole", "mig", "shared", "whole"]
    assert [gpus[i]["proposed"]["team"] for i in range(4)] == ["production", "production", "data", "training"]
    assert "serving" in gpus[0]["why"] and "batch" in gpus[3]["why"]
    # One MIG instance per steady small process, each at least its peak plus the headroom.
    headroom = assessment["thresholds"]["headroom"]
    instances = {i["name"]: i["memory"] for i in gpus[1]["proposed"]["mig"]["instances"]}
    peaks = {job.user: job.memory_mib for job in world.jobs if job.index == 1}
    assert set(instances) == set(peaks)
    for user, memory in instances.items():
        assert int(memory[:-3]) * 1024 >= peaks[user] * (1 + headroom)
    layout = plan_node_layout([gpus[1]["proposed"]], "x", host="gpu1")["gpus"][0]["instances"]
    # The assessment states the placement it proposed: the planner's, instance for instance.
    assert gpus[1]["mig_layout"] == [instance for instance in layout if instance["name"]]
    assert all(gpus[i]["mig_layout"] == [] for i in (0, 2, 3))
    model = catalog.lookup("RTX-PRO-6000")
    for instance in layout:
        if instance["name"]:
            assert model.profile(instance["profile"]).memory_mib >= peaks[instance["name"]] * (1 + headroom)
    # Replicas: at least the truth's peak of notebooks at once.
    assert gpus[2]["proposed"]["replicas"] >= _peak_at_once(world, "gpu1", 2, NOTEBOOK_USERS) >= 2
    assert gpus[2]["figures"]["peak_concurrent_sessions"] == _peak_at_once(world, "gpu1", 2, NOTEBOOK_USERS)
    assert _plans(assessment)["nodes"]["gpu1"]


def test_worked_day_figures_follow_the_truth(worked):
    world, assessment = worked
    gpus = _by_index(assessment, "gpu1")
    fine_tune = [job for job in world.jobs if job.user == "trainer"]
    busy = sum(job.end - job.start for job in fine_tune) / float(world.days * DAY)
    assert gpus[3]["figures"]["busy_fraction"] == pytest.approx(busy, abs=0.01)
    heat = gpus[3]["figures"]["busy_by_weekday_hour"]
    assert heat[0][14] == 1.0 and heat[0][10] == 0.0  # Monday: training at 14:00, idle at 10:00
    assert heat[5][14] == 0.0  # no fine-tune starts on Saturday
    # A week of samples: every weekday and hour seen once, so a 0 there is idle, not unseen.
    assert gpus[3]["figures"]["sampled_hours_by_weekday_hour"] == [[1] * 24] * 7
    notebooks = assessment["teams"]["data"]
    assert notebooks["users"] == sorted(NOTEBOOK_USERS)
    assert notebooks["sessions"] == sum(1 for job in world.jobs if job.user in NOTEBOOK_USERS)
    lengths = sorted(job.end - job.start for job in world.jobs if job.user in NOTEBOOK_USERS)
    assert notebooks["longest_session_minutes"] == pytest.approx(lengths[-1] / 60.0, abs=world.interval / 60.0)
    assert notebooks["peak_memory_per_process_mib"] == max(j.memory_mib for j in world.jobs if j.user in NOTEBOOK_USERS)
    assert assessment["teams"]["production"]["kinds"] == {"serving": 1, "small": 3, "batch": 0, "session": 0}
    assert assessment["unassigned"] == [] and assessment["problems"] == []


def test_worked_day_needs_no_card(worked):
    world, assessment = worked
    answer = assessment["capacity"]
    assert answer["another_gpu_advised"] is False and answer["gpus"] == 4
    assert answer["why"].startswith("no card to add")
    # Truth at 14:00 on a weekday: vLLM 1 + training 1 + the MIG shares + the notebooks' memory.
    assert 2.0 < answer["demand_gpu_equivalents"] < 4.0
    assert answer["spare_gpu_equivalents"] == pytest.approx(4 - answer["demand_gpu_equivalents"], abs=0.01)


def test_a_card_without_mig_is_never_mig(tmp_path):
    world = World({"l40s-1": [(0, L40S[0], L40S[1]), (1, L40S[0], L40S[1])]}, days=3)
    for number, user in enumerate(("embed", "classify", "stt")):
        world.steady("l40s-1", 0, user, 100 + number, 6 + number, 5)
    world.notebooks("l40s-1", 1, ["alice", "bob"], memory_gib=(3, 6))
    today = {"l40s-1": [{"index": 0, "team": "production", "use": "whole"},
                        {"index": 1, "team": "data", "use": "whole"}]}
    assessment = _assess(world, tmp_path, today, {})
    gpus = _by_index(assessment, "l40s-1")
    assert gpus[0]["model"] == "L40S"
    assert gpus[0]["proposed"]["use"] == "shared" and "cannot be cut with MIG" in gpus[0]["why"]
    assert gpus[0]["proposed"]["replicas"] >= 3
    assert gpus[1]["proposed"]["use"] == "shared"
    assert all(gpu["proposed"]["use"] != "mig" for gpu in assessment["gpus"])
    # No user map: every process belongs to its card's team today.
    assert {p["team_from"] for g in assessment["gpus"] for p in g["figures"]["by_process"]} == {"gpu"}
    _plans(assessment)


def test_an_overloaded_cluster_needs_another_card(tmp_path):
    # Two fine-tunes at once on training's one card every weekday 09:00-17:00: one would wait.
    world, today = overloaded(days=7)
    assessment = _assess(world, tmp_path, today, {})
    answer = assessment["capacity"]
    assert answer["another_gpu_advised"] is True and answer["why"].startswith("another card")
    assert answer["demand_gpu_equivalents"] == pytest.approx(3.0, abs=0.05)
    assert answer["teams_waiting"] == ["training"] and answer["model"] == "L40S" and answer["cards_to_add"] == 1
    # The hours over: weekdays 09:00-16:00, 8 a day, 5 days.
    assert len(answer["hours_over"]) == 5 * 8
    assert all(h.split()[0] in ("Mon", "Tue", "Wed", "Thu", "Fri") for h in answer["hours_over"])
    assert {h.split()[2] for h in answer["hours_over"]} == {"%02d:00" % hour for hour in range(9, 17)}
    assert _plans(assessment)["nodes"]


def test_sharing_avoids_a_purchase(tmp_path):
    """Three teams' notebooks, each on a card of its own today, would fit on one: no card to add,
    though each team held its card all day."""
    world = World({"ws": [(i, RTX[0], RTX[1]) for i in range(3)]}, days=5)
    for index, team_users in enumerate((["a1", "a2"], ["b1", "b2"], ["c1", "c2", "c3"])):
        world.notebooks("ws", index, team_users, seed=index, memory_gib=(2, 5), utilization=3)
    today = {"ws": [{"index": i, "team": team["name"]} for i, team in enumerate(TEAMS)]}
    assessment = _assess(world, tmp_path, today, {})
    answer = assessment["capacity"]
    assert answer["another_gpu_advised"] is False
    assert answer["demand_gpu_equivalents"] < 1.0
    assert [g["proposed"]["use"] for g in assessment["gpus"]] == ["shared"] * 3
    assert _plans(assessment)["nodes"]["ws"]


def test_users_map_moves_processes_and_unknown_users_are_shown(tmp_path):
    world = World({"gpu1": [(0, RTX[0], RTX[1]), (1, RTX[0], RTX[1])]}, days=2)
    world.daily("gpu1", 0, "trainer", 100, 1, 20, 50, 95, weekdays_only=False)
    world.daily("gpu1", 1, "mallory", 200, 1, 5, 10, 95, weekdays_only=False)
    today = {"gpu1": [{"index": 0, "model": "RTX-PRO-6000"}, {"index": 1, "team": "data"}]}
    assessment = _assess(world, tmp_path, today, {"trainer": "training"})
    gpus = _by_index(assessment, "gpu1")
    assert gpus[0]["proposed"]["team"] == "training" and gpus[0]["teams"] == {"training": pytest.approx(38.0, 0.1)}
    # mallory is in no team, on a card of data's: counted as data's (the card's team today).
    assert gpus[1]["figures"]["by_process"][0]["team"] == "data"
    world.daily("gpu1", 0, "eve", 300, 21, 23, 4, 5, weekdays_only=False)
    assessment = _assess(world, tmp_path / "again", today, {"trainer": "training"})
    assert [(p["user"], p["team"]) for p in assessment["unassigned"]] == [("eve", "unassigned")] * 2
    assert any("user 'eve', who is in no team" in problem and "host gpu1, GPU 0" in problem
               for problem in assessment["problems"])


def test_the_proposal_inventory_keeps_the_users_settings_and_plans(tmp_path, worked):
    _world, assessment = worked
    inventory = tmp_path / "inventory"
    (inventory / "host_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text("all:\n  children:\n    workers:\n      hosts:\n        gpu1:\n")
    (inventory / "host_vars" / "gpu1.yml").write_text(
        "---\n# the user's comment\ngpushare_gpus:\n  - {index: 0, model: RTX-PRO-6000, team: production}\n"
        "  # a comment inside the block\n  - index: 1\n    model: RTX-PRO-6000\nmy_setting: 3  # kept\n")
    dest = tmp_path / "assess"
    files.publish(assessment, str(inventory), str(dest))
    text = (dest / "proposal" / "host_vars" / "gpu1.yml").read_text()
    assert "# the user's comment" in text and "my_setting: 3  # kept" in text
    assert "a comment inside the block" not in text
    loaded = yaml.safe_load(text)
    assert loaded["my_setting"] == 3
    assert loaded["gpushare_gpus"] == [gpu["proposed"] for gpu in assessment["gpus"]]
    assert text.count("# GPU ") == 4 and "steady heavy serving" in text
    assert json.loads((dest / "assessment.json").read_text())["capacity"] == assessment["capacity"]
    assert (dest / "proposal" / "hosts.yml").read_text() == (inventory / "hosts.yml").read_text()
    # The user's inventory is untouched.
    assert "a comment inside the block" in (inventory / "host_vars" / "gpu1.yml").read_text()
    assert files.unchanged(assessment, str(dest))
    # The page beside it is part of the output: one missing or stale is a change.
    page = dest / "assessment.html"
    assert page.read_text().startswith("<!DOCTYPE html>")
    page.write_text(page.read_text().replace("Enough cards?", "Enough GPUs?"))
    assert not files.unchanged(assessment, str(dest))
    page.unlink()
    assert not files.unchanged(assessment, str(dest))


def test_a_failed_publish_leaves_the_previous_assessment(tmp_path, worked):
    _world, assessment = worked
    dest = tmp_path / "assess"
    dest.mkdir()
    (dest / "assessment.json").write_text("previous")
    (dest / "assessment.html").write_text("previous page")
    with pytest.raises(ValueError, match="inventory .*: not found"):
        files.publish(assessment, str(tmp_path / "missing"), str(dest))
    assert (dest / "assessment.json").read_text() == "previous"
    assert (dest / "assessment.html").read_text() == "previous page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["assess"]


def test_window_hours(worked):
    world, assessment = worked
    assert assessment["window"]["from"] == "2026-03-02 00:00"
    assert assessment["window"]["hours"] == pytest.approx(world.days * 24 - world.interval / float(HOUR), abs=0.05)
