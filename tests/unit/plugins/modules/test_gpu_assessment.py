# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_assessment through AnsibleModule."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from assess_worlds import TEAMS, WORKED_DAY_TODAY, WORKED_DAY_USERS, worked_day
from module_runner import run_module
from ansible_collections.gpushare.cluster.plugins.modules import gpu_assessment

REPO = Path(__file__).resolve().parents[4]


def _args(tmp_path, **extra):
    samples = tmp_path / "samples"
    if not samples.exists():
        world = worked_day(days=2)
        world.write(samples)
    args = {"samples_dir": str(samples), "hosts": WORKED_DAY_TODAY, "teams": TEAMS, "users": WORKED_DAY_USERS,
            "inventory": str(REPO / "inventories" / "example"), "dest": str(tmp_path / "assess")}
    args.update(extra)
    return args


def test_check_mode_writes_nothing_and_says_it_would(tmp_path, capsys):
    code, result = run_module(gpu_assessment, dict(_args(tmp_path), _ansible_check_mode=True), capsys)
    assert code == 0 and result["changed"] is True
    assert not (tmp_path / "assess").exists()
    assert [line.split(":")[0] for line in result["summary"][:4]] == ["host gpu1, GPU %d (RTX-PRO-6000)" % i
                                                                      for i in range(4)]
    assert result["capacity"]["another_gpu_advised"] is False


def test_writes_then_reports_no_change(tmp_path, capsys):
    code, result = run_module(gpu_assessment, _args(tmp_path), capsys)
    assert code == 0 and result["changed"] is True
    written = json.loads((tmp_path / "assess" / "assessment.json").read_text())
    assert set(written) >= {"gpus", "teams", "capacity", "proposal", "unassigned", "problems"}
    assert set(written["capacity"]) >= {"busiest_hour", "demand_gpu_equivalents", "gpus", "another_gpu_advised", "why"}
    assert (tmp_path / "assess" / "proposal" / "group_vars" / "all" / "gpushare.yml").is_file()
    replay = (tmp_path / "assess" / "replay.yml").read_text()
    assert "gpushare_rehearsal_steps:" in replay and replay.count("\n  - {at: ") == len(written["replay"]["steps"])
    assert [line for line in result["summary"] if line.startswith("replay: the busiest day (%s), %d session(s)"
                                                                  % (written["replay"]["day"],
                                                                     len(written["replay"]["workloads"])))]
    code, result = run_module(gpu_assessment, _args(tmp_path), capsys)
    assert code == 0 and result["changed"] is False


def test_fails_with_the_message_and_keeps_the_previous_output(tmp_path, capsys):
    run_module(gpu_assessment, _args(tmp_path), capsys)
    before = (tmp_path / "assess" / "assessment.json").read_text()
    broken = tmp_path / "samples" / "gpu1" / "gpus-00.csv"
    broken.write_text("not, a, header\n")
    code, result = run_module(gpu_assessment, _args(tmp_path), capsys)
    assert code == 1 and result["failed"] is True
    assert result["msg"].startswith("host gpu1, file gpus-00.csv, line 1: header 'not, a, header' is not")
    assert (tmp_path / "assess" / "assessment.json").read_text() == before
    shutil.rmtree(str(tmp_path / "samples" / "gpu1"))
    code, result = run_module(gpu_assessment, _args(tmp_path), capsys)
    assert code == 1 and "no host has samples" in result["msg"]


def _unused_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_prometheus_fails_naming_it_and_keeps_the_previous_output(tmp_path, capsys):
    run_module(gpu_assessment, _args(tmp_path), capsys)
    before = (tmp_path / "assess" / "assessment.json").read_text()
    url = "http://127.0.0.1:%d" % _unused_port()
    args = dict(_args(tmp_path), prometheus={"url": url, "bearer_token": "s3cret-token", "window": "1d"})
    del args["samples_dir"]
    code, result = run_module(gpu_assessment, args, capsys)
    assert code == 1 and result["failed"] is True
    assert result["msg"].startswith("cannot reach Prometheus for query_range 'max by (hostname, Hostname, gpu, UUID, "
                                    "uuid, modelName, GPU_I_ID) (DCGM_FI_DEV_GPU_UTIL)' at %s" % url)
    assert "Traceback" not in result["msg"] and "s3cret-token" not in json.dumps(result)
    assert (tmp_path / "assess" / "assessment.json").read_text() == before


def test_samples_dir_and_prometheus_exclude_each_other(tmp_path, capsys):
    code, result = run_module(gpu_assessment, dict(_args(tmp_path), prometheus={"url": "http://127.0.0.1:9"}), capsys)
    assert code == 1 and "mutually exclusive: samples_dir|prometheus" in result["msg"]
    args = _args(tmp_path)
    del args["samples_dir"]
    code, result = run_module(gpu_assessment, args, capsys)
    assert code == 1 and "one of the following is required: samples_dir, prometheus" in result["msg"]
