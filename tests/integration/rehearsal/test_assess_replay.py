# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The busiest recorded day replayed on the rehearsal against the assessment's proposal
(docs/assess.md, "Replay the busiest day"): assess.yml on samples whose truth the test wrote,
then rehearse.yml on build/assess/proposal with build/assess/replay.yml, on a real API server,
scheduler, controller manager and Kueue with simulated GPU nodes.

The world is the README's server (tests/support/assess_worlds.py) with a second fine-tune of
the training team, 13:00 to 15:00 beside the first, on the card training has alone: the
proposal keeps that card whole, nobody has an idle whole GPU to lend at 13:00, so the truth is
that one of the two runs waits its two hours and nobody else waits at all."""

from __future__ import annotations

import json

from assess_worlds import WORKED_DAY_USERS, worked_day
from runner import DEMO_VAULT_ARGS, PLAYBOOKS, REPO_ROOT, ansible_playbook


def test_the_busiest_day_replayed_on_the_proposal_says_who_would_wait(rehearsal_bin, tmp_path):
    world = worked_day(days=2)
    world.daily("gpu1", 3, "trainer", 4000, 13, 15, 20, 90)
    samples = world.write(tmp_path / "samples")
    assess_dir = tmp_path / "assess"
    assessed = ansible_playbook("-i", str(REPO_ROOT / "inventories" / "example"), str(PLAYBOOKS / "assess.yml"),
                                "-e", "gpushare_assess_collect=false", "-e", "gpushare_assess_samples_dir=%s" % samples,
                                "-e", "gpushare_assess_dir=%s" % assess_dir,
                                "-e", json.dumps({"gpushare_assess_users": WORKED_DAY_USERS}))
    assert assessed.returncode == 0, assessed.stdout + assessed.stderr
    replay = json.loads((assess_dir / "assessment.json").read_text())["replay"]
    assert replay["left_out"] == [] and (assess_dir / "replay.yml").exists()
    second_run = [w["name"] for w in replay["workloads"] if w["team"] == "training" and w["delete"] == "15:00"]
    assert len(second_run) == 1

    plan_dir = tmp_path / "plan"
    rehearsed = ansible_playbook("-i", str(assess_dir / "proposal"), str(PLAYBOOKS / "rehearse.yml"),
                                 "-e", "gpushare_plan_dir=%s" % plan_dir, "-e", "rehearsal_bin_dir=%s" % rehearsal_bin["bin_dir"],
                                 "-e", "@%s" % (assess_dir / "replay.yml"), "-e", "gpushare_rehearsal_second_apply=false",
                                 *DEMO_VAULT_ARGS, timeout=900)
    assert rehearsed.returncode == 0, rehearsed.stdout[-6000:] + rehearsed.stderr[-2000:]
    document = json.loads((plan_dir / "rehearsal.json").read_text())
    waits = document["waits"]
    assert waits["unit"] == "minutes"
    # Every workload of the day was submitted and either admitted or accounted for as waiting.
    assert sorted(w["workload"] for w in waits["workloads"]) == sorted(w["name"] for w in replay["workloads"])
    assert [w for w in waits["workloads"] if w["state"] == "denied"] == []
    teams = waits["teams"]
    assert teams["production"]["waited"] == 0 and teams["data"]["waited"] == 0, teams
    # One of training's two runs at 13:00 waits its two hours, never admitted (Kueue admits the
    # first submitted; which one that is does not matter to the team's wait).
    assert teams["training"]["waited"] == 1 and teams["training"]["longest"] == 120, teams
    assert len(teams["training"]["never_admitted"]) == 1
    assert "waits  training     1 of %d workload(s) waited, longest 120 minutes" % teams["training"]["workloads"] \
        in rehearsed.stdout
    # MIG processes got devices of the profile they asked for.
    allocations = [a for step in document["steps"] for a in step["allocations"]]
    assert allocations and not [a for a in allocations if a.get("mismatch")]
