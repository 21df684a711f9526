# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from pathlib import Path

import yaml

from module_runner import run_module
from ansible_collections.gpushare.cluster.plugins.modules import team_quotas

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"


def run(capsys, args):
    return run_module(team_quotas, args, capsys)[1]


def test_returns_capacity_objects_and_configuration(capsys):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    result = run(capsys, {"teams": data["gpushare_teams"], "nodes": data["nodes"], "_ansible_check_mode": True})
    assert result["changed"] is False and "failed" not in result
    assert result["capacity"]["production"] == {"gpushare.io/rtx-pro-6000": 1, "gpushare.io/rtx-pro-6000-mig-1g.24gb": 4}
    assert result["kueue_configuration"]["resources"]["deviceClassMappings"]
    kinds = {o["kind"] for o in result["objects"]}
    assert {"Namespace", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass",
            "DeviceClass", "ResourceClaimTemplate", "ResourceClaim"} <= kinds
    assert any("no uuid known" in w for w in result["warnings_list"])


def test_fails_with_every_error(capsys):
    data = yaml.safe_load((FIXTURES / "bad_inventory.yml").read_text())
    result = run(capsys, {"teams": data["gpushare_teams"], "nodes": data["nodes"], "backend": "device_plugin"})
    assert result["failed"] is True
    assert len(result["errors"]) == 7
    assert result["msg"].startswith("the plan cannot be made, 7 problem(s):")
