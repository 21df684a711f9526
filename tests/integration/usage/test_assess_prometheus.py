# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/assess.yml reading dcgm-exporter's series from a real Prometheus: the two weeks of
the example cluster that the usage report reads (the ``prometheus`` fixture of conftest.py).

The truth of those series (usage_series.py): GPU 0 holds 78 GiB all day (vLLM); GPU 1 is cut
into four 1g.24gb MIG instances, three used; GPU 2 has notebooks 10:00-19:00 and the fine-tune
19:00-05:10; GPU 3 has the fine-tune 19:00-05:10 and nothing else.
"""
from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

import usage_series
from runner import PLAYBOOKS, REPO_ROOT, ansible_playbook
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.proposal import CANNOT_DECIDE
from ansible_collections.gpushare.cluster.plugins.modules import gpu_assessment

EXAMPLE = REPO_ROOT / "inventories" / "example"
GIB = usage_series.GIB
# The fine-tune runs 19:00 to 05:10: 10 h 10 min of every day.
FINETUNE_SHARE = (24 - 19 + 5 + 10 / 60.0) / 24


@pytest.fixture(scope="module")
def assessed(prometheus, tmp_path_factory):
    dest = tmp_path_factory.mktemp("assess-prometheus") / "assess"
    run = ansible_playbook("-i", str(EXAMPLE), str(PLAYBOOKS / "assess.yml"),
                           "-e", "gpushare_assess_prometheus_url=%s" % prometheus["url"],
                           "-e", "gpushare_assess_end=%d" % prometheus["end"],
                           "-e", "gpushare_assess_step=5m", "-e", "gpushare_assess_dir=%s" % dest)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {"assessment": json.loads((dest / "assessment.json").read_text()), "dest": dest, "stdout": run.stdout}


def _gpus(assessment):
    return {gpu["index"]: gpu for gpu in assessment["gpus"]}


def test_the_proposal_follows_the_cards_figures(assessed):
    assessment = assessed["assessment"]
    assert assessment["source"] == {"kind": "prometheus", "url": assessed["assessment"]["source"]["url"],
                                    "step_seconds": 300, "clock": "UTC"}
    assert assessment["window"]["hours"] == 336.0
    gpus = _gpus(assessment)
    # GPU 0 holds 78 GiB of 95.6 all the time: steady heavy, whole for production.
    assert gpus[0]["proposed"] == {"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "whole"}
    assert gpus[0]["why"].startswith("steady heavy use: the card held 50 % of its memory or more in 100 % of "
                                     "the window")
    assert gpus[0]["figures"]["peak_memory_used_mib"] == 78 * GIB
    # GPU 1: its MIG instances read as one card, memory summed; it keeps the inventory's instances.
    assert gpus[1]["figures"]["peak_memory_used_mib"] == int((2.5 + 6 + 17) * GIB)
    assert gpus[1]["proposed"]["use"] == "mig"
    assert sorted(i["name"] for i in gpus[1]["mig_layout"]) == ["classifier", "embeddings", "speech-to-text"]
    # GPU 2 and GPU 3: busy only while the fine-tune runs; no steady heavy use, so today's entries stay.
    assert gpus[2]["proposed"] == {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "shared",
                                   "replicas": 5}
    assert gpus[3]["proposed"] == {"index": 3, "model": "RTX-PRO-6000", "team": "training", "use": "whole"}
    for index in (2, 3):
        assert abs(gpus[index]["figures"]["busy_fraction"] - FINETUNE_SHARE) < 0.01
    assert gpus[3]["figures"]["busy_by_weekday_hour"][0][22] == 1.0 and \
        gpus[3]["figures"]["busy_by_weekday_hour"][0][12] == 0.0


def test_it_says_what_it_cannot_decide_for_every_gpu(assessed):
    for gpu in assessed["assessment"]["gpus"]:
        assert gpu["cannot_decide"] == list(CANNOT_DECIDE)
        assert gpu["figures"]["processes"] == 0
    assert assessed["stdout"].count("Cannot decide whether to cut it with MIG") == 4
    page = (assessed["dest"] / "assessment.html").read_text()
    assert "Read without per-process data" in page and "UTC, dcgm-exporter series from Prometheus" in page
    # No sessions to replay: said, and no replay.yml written.
    assert assessed["assessment"]["replay"]["why"] == ("read without per-process data (Prometheus): there are no "
                                                       "sessions to replay")
    assert "replay: read without per-process data" in assessed["stdout"]
    assert not (assessed["dest"] / "replay.yml").exists()


def test_capacity_and_team_hours_count_each_card_for_its_team_today(assessed):
    assessment = assessed["assessment"]
    capacity = assessment["capacity"]
    # 19:00 on a weekday: GPU 0 busy 75 % (it holds 82 % of its memory), GPU 1's busiest instance
    # 50 %, GPUs 2 and 3 run the fine-tune at 92 and 93 %: about 3.2 of the 4 cards.
    assert capacity["busiest_hour"].endswith(" 19:00") and capacity["busiest_hour"][:3] not in ("Sat", "Sun")
    assert capacity["another_gpu_advised"] is False and 3.1 < capacity["demand_gpu_equivalents"] < 3.35
    assert "counted without per-process data" in capacity["why"]
    # The fine-tune's hours on GPU 2 count for data, GPU 2's team today: who used it is not known.
    training = assessment["teams"]["training"]["gpu_hours"]
    assert abs(training - 0.93 * FINETUNE_SHARE * 336) < 3
    assert assessment["teams"]["data"]["gpu_hours"] > training


def test_the_proposal_inventory_holds_the_proposal(assessed):
    host_vars = yaml.safe_load((assessed["dest"] / "proposal" / "host_vars" / "gpu1.yml").read_text())
    assert host_vars["gpushare_gpus"] == assessed["assessment"]["proposal"]["hosts"]["gpu1"]


def _module(prometheus, hosts, hostnames=None):
    args = {"prometheus": {"url": prometheus["url"], "end": str(prometheus["end"]), "window": "1d", "step": "10m",
                           "hostnames": hostnames or {}},
            "hosts": hosts, "teams": yaml.safe_load((EXAMPLE / "group_vars" / "all" / "gpushare.yml").read_text())
            ["gpushare_teams"]}
    buffer = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(buffer):
        with pytest.raises(SystemExit):
            gpu_assessment.main()
    return json.loads(buffer.getvalue())


def test_a_mapped_host_is_read_and_a_host_without_series_is_listed(prometheus):
    today = yaml.safe_load((EXAMPLE / "host_vars" / "gpu1.yml").read_text())["gpushare_gpus"]
    result = _module(prometheus, {"node-a": today, "gpu9": [{"index": 0, "model": "RTX-PRO-6000", "team": "data"}]},
                     {"node-a": "gpu1"})
    assert not result.get("failed"), result.get("msg")
    assert [gpu["index"] for gpu in result["proposal"]["hosts"]["node-a"]] == [0, 1, 2, 3]
    assert ("host gpu9: no GPU series in Prometheus (DCGM_FI_DEV_GPU_UTIL with hostname or Hostname gpu9); its GPUs "
            "keep their inventory entries") in result["problems"]


def test_series_of_no_inventory_host_fail_naming_the_node(prometheus):
    result = _module(prometheus, {"gpu9": [{"index": 0, "model": "RTX-PRO-6000", "team": "data"}]})
    assert result["failed"] is True and "Traceback" not in result["msg"]
    assert "no host has samples: nothing to assess (no DCGM_FI_DEV_GPU_UTIL series of these hosts at" in result["msg"]
    assert "Prometheus has GPU series of node gpu1 (GPU 0, 1, 2, 3) that match no host of gpushare_assess_hosts " \
           "(gpu9)" in result["msg"]
