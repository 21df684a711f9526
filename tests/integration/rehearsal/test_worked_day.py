# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rehearse.yml end to end: the worked day on a real API server, scheduler, controller
manager and Kueue with simulated GPU nodes, on the example inventory (both backends) and on
the multinode inventory. Each run starts its own control plane and stops it.

What must hold (docs/rehearsal.md): every object of the plan accepted; a second apply changes
nothing; every claim allocated to a device of the model and profile it asked for; the day's
expectations, derived from the plan, all met (rehearsal.json ``passed``). When a planner
defect makes an expectation fail, the assertion message carries the unmet list."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planner import dra_objects

from rehearsal_env import REPO_ROOT, collection_path as _collection_path

RUNS = [("example", "dra"), ("example", "device_plugin"), ("multinode", "dra"), ("one-control-plane", "dra")]


def rehearse(tmp_path: Path, bin_dir: str, inventory: str, backend: str, extra=()):
    plan_dir = tmp_path / "plan"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(_collection_path()), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"))
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(REPO_ROOT / "inventories" / inventory),
               str(REPO_ROOT / "playbooks" / "rehearse.yml"), "-e", "gpushare_plan_dir=%s" % plan_dir,
               "-e", "gpushare_gpu_backend=%s" % backend, "-e", "rehearsal_bin_dir=%s" % bin_dir]
    vault = REPO_ROOT / "inventories" / inventory / "vault-password.txt"
    if vault.exists():
        command += ["--vault-password-file", str(vault)]
    command += list(extra)
    started = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    seconds = time.monotonic() - started
    document = None
    if (plan_dir / "rehearsal.json").exists():
        document = json.loads((plan_dir / "rehearsal.json").read_text())
    return result, document, plan_dir, seconds


def _recap(stdout: str, host: str):
    match = re.search(r"^%s\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)" % re.escape(host),
                      stdout, re.M)
    return tuple(int(g) for g in match.groups()) if match else None


@pytest.mark.parametrize("inventory, backend", RUNS, ids=["-".join(r) for r in RUNS])
def test_worked_day(rehearsal_bin, tmp_path, inventory, backend):
    result, document, plan_dir, seconds = rehearse(tmp_path, rehearsal_bin["bin_dir"], inventory, backend)
    print("rehearsal %s/%s: %.1f s (playbook), day %s s" % (inventory, backend, seconds, (document or {}).get("seconds")))
    unmet = (document or {}).get("unmet")
    assert result.returncode == 0, "unmet: %s\n%s\n%s" % (
        json.dumps(unmet, indent=1), result.stdout[-6000:], result.stderr[-2000:])
    # the second apply of the world and the plan changed nothing
    recap = _recap(result.stdout, "rehearsal-second-apply")
    assert recap is not None and recap[1] == 0 and recap[3] == 0, result.stdout[-4000:]
    assert document["passed"] and document["unmet"] == []
    steps = {s["at"]: s for s in document["steps"]}
    # every claim got a device of the model and profile it asked for
    allocations = [a for s in document["steps"] for a in s["allocations"]]
    assert allocations and not [a for a in allocations if a.get("mismatch")]
    assert all(a["model"] for a in allocations)
    # a step's allocations are every claim allocated then (08:00's serving too): the MIG ones got a profile
    mig = [a for a in steps["09:30"]["allocations"] if a.get("profile")]
    assert mig and all(a["model"] for a in mig)
    # borrowing at night, reclaim in the morning
    night = steps["19:00"]["teams"]
    assert night["training"]["admitted"] == ["fine-tune"] and night["training"]["borrowing"] > 0
    morning = steps["07:00"]["teams"]
    assert morning["training"]["preempted"] == ["fine-tune"] and morning["training"]["borrowing"] == 0
    # cross-team attempts refused by the API server
    denied = [n for t in steps["07:30"]["teams"].values() for n in t["denied"]]
    assert "training-uses-production-queue" in denied
    html = (plan_dir / "index.html").read_text()
    assert 'id="rehearsal"' in html and 'data-step="19:00"' in html
    if backend == "dra":
        _assert_whole_and_shared_cards_stay_apart(json.loads((plan_dir / "plan.json").read_text()), document, inventory)


def _assert_whole_and_shared_cards_stay_apart(plan, document, inventory):
    """The rehearsal plans with the UUIDs its nodes publish (as site.yml pins the discovered ones):
    a whole-GPU claim gets a whole card, a shared claim only its own GPU."""
    assert not [n for n in document["notes"] if n.startswith("Not pinned by uuid")], document["notes"]
    gpus = [(host, gpu) for host, node in plan["nodes"].items() for gpu in node["gpus"]]
    whole_classes = {dra_objects.whole_class_name(gpu["model"]) for _host, gpu in gpus if gpu["use"] == "whole"}
    shared_claims = {gpu["claim"]: (host, gpu["index"]) for host, gpu in gpus if gpu["use"] == "shared"}
    allocations = [a for s in document["steps"] for a in s["allocations"]]
    on_whole = [a for a in allocations if a.get("device_class") in whole_classes]
    assert on_whole and [a for a in on_whole if a["gpu_use"] != "whole"] == [], on_whole
    on_shared = [a for a in allocations if a.get("claim") in shared_claims]
    assert [a for a in on_shared if (a["node"], a["gpu_index"]) != shared_claims[a["claim"]]] == [], on_shared
    if inventory == "example":
        # the notebooks' claim only on GPU 2; the fine-tune's whole claims at night on whole cards (0 and 3)
        assert on_shared and {a["gpu_index"] for a in on_shared} == {2}
        night = [a for s in document["steps"] if s["at"] == "19:00" for a in s["allocations"] if a["workload"] == "fine-tune"]
        assert sorted(a["gpu_index"] for a in night) == [0, 3], night


def test_a_failed_expectation_fails_the_run_and_still_stops_the_control_plane(rehearsal_bin, tmp_path):
    # One GPU of its own quota: training's job is admitted at once, so expecting it pending must fail.
    steps = json.dumps([{"at": "08:00", "submit": [{"team": "training", "name": "greedy", "gpus": 1}],
                         "expect": {"pending": ["greedy"]}}])
    extra = ["-e", "gpushare_rehearsal_second_apply=false", "-e", '{"gpushare_rehearsal_steps": %s}' % steps]
    result, document, _plan_dir, _log = rehearse(tmp_path, rehearsal_bin["bin_dir"], "example", "dra", extra=extra)
    assert result.returncode != 0
    assert "08:00 training greedy: expected pending, was admitted" in result.stdout
    assert document["unmet"][0]["workload"] == "greedy"
    # the always: branch stopped every process of the rehearsal
    state = json.loads((tmp_path / "plan.rehearsal" / "state.json").read_text())
    for entry in state["processes"].values():
        assert not Path("/proc/%d" % entry["pid"]).exists() or "zombie" in Path("/proc/%d/status" % entry["pid"]).read_text()
