# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every mistaken inventory of the corpus (tests/fixtures/mistaken_inventories) through
plan.yml and site.yml end to end: both refuse it with the same list of errors, plan.yml writes
nothing, and site.yml stops before it contacts any host."""

from __future__ import annotations

import re

import pytest

import mistakes  # tests/support
import runner  # tests/support


CASES = mistakes.load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_plan_and_site_refuse_with_the_same_messages(case, tmp_path):
    inventory = mistakes.build([case], tmp_path / "inventory")
    plan_dir = tmp_path / "out" / "plan"
    plan = runner.run_plan_playbook(inventory, plan_dir)
    assert plan.returncode != 0
    plan_errors = mistakes.reported_errors(plan.stdout)
    assert not mistakes.missing(case["errors"], plan_errors), plan_errors
    assert not plan_dir.exists()

    # Discovery left on (the default): the check runs before it, so no host is contacted.
    site = runner.ansible_playbook("-i", str(inventory), str(runner.PLAYBOOKS / "site.yml"))
    assert site.returncode != 0
    assert mistakes.reported_errors(site.stdout) == plan_errors
    recap = site.stdout[site.stdout.index("PLAY RECAP"):]
    assert re.findall(r"^(\S+)\s+: ok=", recap, re.MULTILINE) == ["localhost"], recap
    assert "Discover the GPUs of the host" not in site.stdout


def test_a_plan_directory_that_is_a_file_is_refused_and_kept(tmp_path):
    inventory = mistakes.build([], tmp_path / "inventory")
    target = tmp_path / "plan"
    target.write_text("my notes\n", encoding="utf-8")
    result = runner.run_plan_playbook(inventory, target)
    assert result.returncode != 0
    assert mistakes.reported_errors(result.stdout) == [
        "gpushare_plan_dir: %s exists and is not a directory; the plan directory would replace it (move that file "
        "away or choose another gpushare_plan_dir)" % target]
    assert target.read_text(encoding="utf-8") == "my notes\n"


def test_a_file_plan_directory_is_reported_with_the_inventory_errors(tmp_path):
    case = next(case for case in CASES if case["id"] == "registry-given-as-url")
    inventory = mistakes.build([case], tmp_path / "inventory")
    target = tmp_path / "plan"
    target.write_text("x", encoding="utf-8")
    errors = mistakes.reported_errors(runner.run_plan_playbook(inventory, target).stdout)
    assert errors[0].startswith("gpushare_plan_dir: ") and not mistakes.missing(case["errors"], errors)
