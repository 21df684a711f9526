# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/assess.yml on generated samples of the worked day, then plan.yml on its proposal."""

from __future__ import annotations

import json

import yaml

from assess_worlds import WORKED_DAY_USERS, worked_day
from runner import PLAYBOOKS, REPO_ROOT, ansible_playbook, run_plan_playbook


def _assess(samples, dest):
    return ansible_playbook("-i", str(REPO_ROOT / "inventories" / "example"), str(PLAYBOOKS / "assess.yml"),
                            "-e", "gpushare_assess_collect=false", "-e", "gpushare_assess_samples_dir=%s" % samples,
                            "-e", "gpushare_assess_dir=%s" % dest,
                            "-e", json.dumps({"gpushare_assess_users": WORKED_DAY_USERS}))


def test_assess_then_plan_the_proposal(tmp_path):
    samples = worked_day(days=2).write(tmp_path / "samples")
    dest = tmp_path / "assess"
    run = _assess(samples, dest)
    assert run.returncode == 0, run.stdout + run.stderr
    assessment = json.loads((dest / "assessment.json").read_text())
    assert set(assessment) >= {"gpus", "teams", "capacity", "proposal", "unassigned", "problems"}
    assert [gpu["proposed"]["use"] for gpu in assessment["gpus"]] == ["whole", "mig", "shared", "whole"]
    assert "no card to add" in run.stdout
    page = (dest / "assessment.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and assessment["capacity"]["busiest_hour"] in page
    assert page.count('class="gpu-heat"') == len(assessment["gpus"])
    host_vars = yaml.safe_load((dest / "proposal" / "host_vars" / "gpu1.yml").read_text())
    assert host_vars["gpushare_gpus"] == assessment["proposal"]["hosts"]["gpu1"]
    # The user's settings came along unchanged.
    for name in ("hosts.yml", "group_vars/all/gpushare.yml", "group_vars/all/vault.yml"):
        assert (dest / "proposal" / name).read_text() == (REPO_ROOT / "inventories" / "example" / name).read_text()

    plan = run_plan_playbook(dest / "proposal", tmp_path / "plan", "-e", "gpushare_plan_render_addons=false")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    planned = json.loads((tmp_path / "plan" / "plan.json").read_text())
    gpus = {gpu["index"]: gpu for gpu in planned["nodes"]["gpu1"]["gpus"]}
    assert [gpus[i]["use"] for i in range(4)] == ["whole", "mig", "shared", "whole"]

    # A failed analysis leaves the previous assessment as it was.
    before = (dest / "assessment.json").read_text()
    page_before = (dest / "assessment.html").read_text()
    (samples / "gpu1" / "gpus-00.csv").write_text("garbage\n")
    failed = _assess(samples, dest)
    assert failed.returncode != 0
    assert "host gpu1, file gpus-00.csv, line 1: header 'garbage'" in failed.stdout
    assert (dest / "assessment.json").read_text() == before
    assert (dest / "assessment.html").read_text() == page_before
