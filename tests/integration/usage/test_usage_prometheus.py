# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_usage and usage_report.yml against a real Prometheus holding two weeks of the example
(the ``prometheus`` fixture of conftest.py, shared with the assessment's test)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

import usage_series
from ansible_collections.gpushare.cluster.plugins.modules import gpu_usage


@pytest.fixture(scope="module")
def report(prometheus, repo_root, tmp_path_factory):
    """usage_report.yml on the example inventory, as a user runs it."""
    out = tmp_path_factory.mktemp("usage-report")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ["GPUSHARE_COLLECTIONS_PATH"], ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    playbook = [str(Path(os.sys.executable).parent / "ansible-playbook"), "-i", "inventories/example",
                "playbooks/usage_report.yml", "-e", f"gpushare_usage_prometheus_url={prometheus['url']}",
                "-e", f"gpushare_usage_end={prometheus['end']}", "-e", f"gpushare_usage_dir={out}"]
    run = subprocess.run(playbook, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {"usage": json.loads((out / "usage.json").read_text()), "html": (out / "usage.html").read_text(),
            "html_path": out / "usage.html", "stdout": run.stdout}


def near(value, expected, tolerance):
    return value is not None and abs(value - expected) <= tolerance


def test_team_figures_tell_the_worked_day(report):
    figures = report["usage"]["figures"]
    assert figures["window"]["hours"] == 336.0 and figures["window"]["step_seconds"] == 300
    assert figures["missing"] == [] and figures["teams_without_data"] == []
    production, data, training = (figures["teams"][t] for t in ("production", "data", "training"))
    # vLLM on GPU 0 plus three MIG instances, all day: 4 devices x 336 h.
    assert near(production["gpu_hours_allocated"], 4 * 336, 10)
    assert production["allocated_peak"] == 4 and production["nominal_quota"] == 5
    assert 0.15 < production["efficiency"] < 0.35
    assert production["pending_hours"] == 0
    # Notebooks 10:00-19:00, about 3 % busy; GPU 2 lent 19:00-05:10.
    assert near(data["gpu_hours_allocated"], 9 * 14, 6)
    assert data["efficiency"] < 0.06
    assert near(data["lending_hours"], (24 - 19 + 5 + 10 / 60) * 14, 5) and data["borrowing_hours"] == 0
    # The fine-tune waits 13:00-19:00, then runs on two GPUs, one borrowed.
    assert near(training["pending_hours"], 6 * 14, 3)
    assert training["wait_mean_seconds"] == 6 * 3600 and training["admitted_workloads"] == 14
    assert training["wait_p95_seconds"] >= 3600
    assert near(training["borrowing_hours"], (24 - 19 + 5 + 10 / 60) * 14, 5)
    assert training["allocated_peak"] == 2 and training["nominal_quota"] == 1
    assert training["borrowing_unlimited"] is True
    assert training["efficiency"] > 0.85


def test_gpu_and_cluster_figures(report):
    figures = report["usage"]["figures"]
    gpus = {(g["gpu"], g["mig_instance_id"]): g for g in figures["gpus"]}
    assert near(gpus[(0, None)]["allocated_hours"], 336, 1)
    assert 0.25 < gpus[(0, None)]["busy_ratio_when_allocated"] < 0.45
    assert gpus[(0, None)]["idle_allocated_hours"] > 50  # nights at 5 % busy
    mig = [g for g in figures["gpus"] if g["mig_profile"]]
    assert len(mig) == 4 and {g["mig_profile"] for g in mig} == {"1g.24gb"}
    assert sorted(g["memory_used_peak_mib"] for g in mig) == [0, 2560, 6144, 17408]
    assert all(g["memory_total_mib"] == usage_series.MIG_MIB for g in mig)
    assert gpus[(1, "6")]["allocated_hours"] == 0  # the fill instance is never used
    cluster = figures["cluster"]
    assert cluster["gpus"] == 4 and cluster["devices"] == 7
    assert 0.2 < cluster["busy_share"] < 0.35
    assert near(cluster["pending_hours"], 84, 3) and cluster["team_pending_most"] == "training"


def test_proposals(report):
    proposals = report["usage"]["proposals"]
    assert [p["kind"] for p in proposals] == ["add_gpu_for_quota"], proposals
    [proposal] = proposals
    assert proposal["team"] == "training" and proposal["where"] == "host_vars/gpu1.yml"
    assert proposal["proposed"] == {"count": 1, "team": "training", "use": "whole", "model": "RTX-PRO-6000"}
    assert proposal["figures"]["nominal_quota"] == 1 and proposal["figures"]["allocated_peak"] == 2


def test_html_and_summary(report):
    html = report["html"]
    assert html.count("<svg") == 3 and "GPU use per team" in html
    assert "<script" not in html and "src=" not in html and "href=" not in html
    assert "team training: allocated" in report["stdout"] and "proposal add_gpu_for_quota" in report["stdout"]


def test_html_renders_in_a_browser(report, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("needs Debian's chromium to open the report")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path}",
                          "--dump-dom", report["html_path"].as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The browser parsed three SVG plots with their shapes (inline SVG, nothing fetched).
    assert dom.stdout.count("<svg") == 3 and dom.stdout.count("<polygon") >= 3
    assert "add gpu for quota" in dom.stdout


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_usage.main()
    return json.loads(capsys.readouterr().out)


def test_team_without_data_fails_or_warns(prometheus, capsys):
    args = {"url": prometheus["url"], "end": str(prometheus["end"]), "window": "2d",
            "teams": ["production", "research", {"name": "ops"}], "include_series": False}
    failed = run_module(capsys, args)
    assert failed["failed"] is True
    assert failed["msg"].startswith(f"teams: no data for research, ops at {prometheus['url']} over the last 2d")
    warned = run_module(capsys, dict(args, missing_teams="warn"))
    assert "failed" not in warned and warned["figures"]["teams_without_data"] == ["research", "ops"]
    assert "team research: no usage data in the window" in json.dumps(warned["warnings"])
    assert "series" not in warned["figures"]["teams"]["production"]


def test_http_error_returns_the_server_message_and_hides_the_token(prometheus, capsys):
    result = run_module(capsys, {"url": prometheus["url"], "end": str(prometheus["end"]), "window": "1d",
                                 "gpu_resource_regex": "(", "bearer_token": "tok-very-secret"})
    assert result["failed"] is True
    assert "HTTP 400 Bad Request" in result["msg"] and "error parsing regexp" in result["msg"]
    assert "tok-very-secret" not in json.dumps(result)


def test_unreachable_url(capsys):
    port = usage_series.free_port()
    result = run_module(capsys, {"url": f"http://127.0.0.1:{port}", "timeout": 3})
    assert result["failed"] is True
    assert result["msg"].startswith("cannot reach Prometheus for query_range 'gpushare:team_gpus_allocated' "
                                    f"at http://127.0.0.1:{port}")


def test_window_shorter_than_step(prometheus, capsys):
    result = run_module(capsys, {"url": prometheus["url"], "window": "5m", "step": "10m"})
    assert result["failed"] is True
    assert result["msg"] == "window: 5m is shorter than the step 10m; widen the window or shorten the step"


def test_quota_series_missing_are_reported_as_missing(prometheus, capsys):
    result = run_module(capsys, {"url": prometheus["url"], "end": str(prometheus["end"]), "window": "3d",
                                 "teams": ["training"], "gpu_resource_regex": "no-such-resource"})
    figures = result["figures"]
    assert {m["figure"] for m in figures["missing"]} == {"nominal_quota", "borrowing_limit"}
    assert figures["teams"]["training"]["nominal_quota"] is None
    assert near(figures["teams"]["training"]["pending_hours"], 18, 1)


def test_step_and_window_change_resolution_not_totals(prometheus, capsys):
    coarse = run_module(capsys, {"url": prometheus["url"], "end": str(prometheus["end"]), "window": "7d",
                                 "step": "1h", "teams": ["production"], "include_series": False})
    assert coarse["figures"]["window"]["samples"] == 7 * 24 + 1
    assert near(coarse["figures"]["teams"]["production"]["gpu_hours_allocated"], 4 * 7 * 24, 5)
