# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_usage against a real Prometheus holding the traps of usage_scenarios.py: borrowing
limits per flavor and resource, a redeployed MIG pod, a shared GPU on a full-size MIG
instance, and nodes that never reported. Every proposal is applied to the inventory and
planned again."""
from __future__ import annotations

import contextlib
import io
import json
import time

import pytest
from ansible.module_utils.testing import patch_module_args

import usage_scenarios
import usage_series
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.advice import apply_proposal
from ansible_collections.gpushare.cluster.plugins.modules import gpu_usage

PROMETHEUS = usage_series.PROMETHEUS
DAY = 86400


def _plan(teams, nodes):
    return build_plan(teams, nodes, backend=usage_scenarios.BACKEND, distribution=usage_scenarios.DISTRIBUTION,
                      kubernetes_version=usage_scenarios.VERSION)


@pytest.fixture(scope="module")
def usage(tmp_path_factory, repo_root):
    promtool = usage_series.promtool_or_skip()
    work = tmp_path_factory.mktemp("usage-traps")
    end = int(time.time()) // DAY * DAY - DAY
    start = end - 2 * DAY
    usage_series.build_tsdb(work, start, end, usage_series.monitoring_rules(repo_root), promtool=promtool,
                            series=usage_scenarios.generate(start, end))
    server = usage_series.LocalPrometheus(PROMETHEUS, work / "data", work)
    server.start()
    try:
        plan = _plan(usage_scenarios.TEAMS, usage_scenarios.NODES)
        args = {"url": server.url, "end": str(end), "window": "2d", "teams": usage_scenarios.TEAMS,
                "nodes": usage_scenarios.NODES, "plan": plan, "include_series": False,
                "thresholds": {"min_allocated_hours": 12.0}}
        buffer = io.StringIO()
        # gpu_usage prints its result; a module-scoped fixture cannot use capsys.
        with patch_module_args(args), contextlib.redirect_stdout(buffer):
            with pytest.raises(SystemExit):
                gpu_usage.main()
        result = json.loads(buffer.getvalue())
        assert not result.get("failed"), result.get("msg")
        yield result
    finally:
        server.stop()


def test_the_borrowing_limit_is_read_per_flavor_and_resource(usage):
    training = usage["figures"]["teams"]["training"]
    rows = {row["resource"]: row for row in training["borrowing_limits"]}
    assert set(rows) == {"nvidia.com/gpu", "nvidia.com/mig-1g.20gb", "nvidia.com/mig-1g.10gb"}
    assert rows["nvidia.com/gpu"]["limit"] == 1 and rows["nvidia.com/gpu"]["borrowed_peak"] == 1
    assert rows["nvidia.com/gpu"]["reached"] is True and rows["nvidia.com/mig-1g.20gb"]["reached"] is False
    assert training["borrowing_limit"] == 1 and training["borrowing_limit_reached"] is True
    assert training["borrowing_unlimited"] is False
    assert usage["figures"]["teams"]["production"]["borrowing_unlimited"] is True
    [raise_limit] = [p for p in usage["proposals"] if p["team"] == "training"]
    assert raise_limit["kind"] == "raise_borrowing_limit"
    assert (raise_limit["current"], raise_limit["proposed"]) == (1, 2)


def test_mig_memory_comes_from_one_sample_per_device(usage):
    slices = {(g["gpu"], g["mig_instance_id"]): g for g in usage["figures"]["gpus"] if g["mig_profile"]}
    model_a = slices[(1, "3")]
    assert model_a["memory_total_mib"] == usage_scenarios.SLICE_MIB
    assert model_a["memory_used_peak_mib"] == max(usage_scenarios.MODEL_A_USED)
    assert slices[(1, "4")]["memory_total_mib"] == usage_scenarios.SLICE_MIB
    assert slices[(2, "0")]["memory_total_mib"] == usage_scenarios.FULL_MIG_MIB


def test_every_proposal_changes_its_own_entry_and_plans_again(usage):
    proposals = usage["proposals"]
    assert proposals, "the data is made to produce proposals"
    kinds = {p["kind"] for p in proposals}
    assert "mig_smaller_profile" in kinds  # model-a: 4 GiB used of 20 GiB
    assert not any(p["kind"] == "mig_smaller_profile" and "index=2" in p["variable"] for p in proposals), proposals
    for proposal in proposals:
        teams, nodes = apply_proposal(usage_scenarios.TEAMS, usage_scenarios.NODES, proposal)
        if proposal["variable"]:
            assert (teams, nodes) != (usage_scenarios.TEAMS, usage_scenarios.NODES), proposal
        _plan(teams, nodes)  # raises PlanError listing every problem
    shrink = next(p for p in proposals if p["kind"] == "mig_smaller_profile")
    assert shrink["variable"] == "gpushare_gpus[index=1].mig.instances[name=model-a].memory"
    assert (shrink["current"], shrink["proposed"]) == ("16GiB", "5GiB")


def test_nodes_and_gpus_without_data_are_null_and_listed(usage):
    figures = usage["figures"]
    research, data = figures["teams"]["research"], figures["teams"]["data"]
    assert research["gpu_hours_allocated"] is None and research["efficiency"] is None
    assert research["gpus_without_data"] == ["gpu2 GPU 0", "gpu2 GPU 1"]
    assert data["gpu_hours_allocated"] is None and data["gpus_without_data"] == ["gpu1 GPU 4"]
    missing = [m for m in figures["missing"] if m["figure"] == "gpu_data"]
    assert [(m["host"], m["gpus"]) for m in missing] == [("gpu1", [4]), ("gpu2", [0, 1])]
    silent = {(g["host"], g["gpu"]): g for g in figures["gpus"] if not g["has_data"]}
    assert sorted(silent) == [("gpu1", 4), ("gpu2", 0), ("gpu2", 1)]
    assert all(g["allocated_hours"] is None for g in silent.values())
    assert figures["cluster"]["gpu_hours_allocated"] is None and figures["cluster"]["busy_share"] is None
    # Teams whose GPUs all reported keep their figures.
    assert figures["teams"]["production"]["gpu_hours_allocated"] > 0


def test_the_html_report_shows_the_missing_nodes(usage):
    from ansible_collections.gpushare.cluster.plugins.module_utils.usage.report_html import render_page
    html = render_page(usage["figures"], usage["proposals"])
    assert "gpu_data" in html and "gpu2" in html
