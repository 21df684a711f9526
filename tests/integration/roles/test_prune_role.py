# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prune role as the kueue role runs it, by ansible-playbook against the kubernetes.core
stand-ins (tests/fixtures/addons/fake_kubernetes) holding the objects of an earlier plan.

What this proves: check mode and diff mode list the deletions and delete nothing; a real run
deletes exactly the owned objects of the role's kinds the plan no longer holds, in order, and
a second run changes nothing; an admitted Workload refuses the prune before any deletion, and
gpushare_confirm_disruptive lets it through. The real API server side is in
tests/integration/rehearsal/test_day_two.py."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import prune
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

from .k8s_render import run_on_fake_cluster

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
INVENTORY = yaml.safe_load((FIXTURES / "inventories" / "four_gpu_example.yml").read_text())


def _plans():
    before = build_plan(INVENTORY["gpushare_teams"], INVENTORY["nodes"], backend="dra")
    nodes = copy.deepcopy(INVENTORY["nodes"])
    for gpu in nodes["gpu1"]:
        if gpu["team"] == "training":
            gpu["team"] = "data"
    after = build_plan([t for t in INVENTORY["gpushare_teams"] if t["name"] != "training"], nodes, backend="dra")
    return before, after


HAND_MADE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "by-hand", "namespace": "training", "labels": {"gpushare.io/team": "training"}}}


def run_prune(tmp: Path, objects, args=()):
    before, after = _plans()
    state = tmp / "cluster.json"
    if objects is None:
        objects = json.loads(state.read_text())["objects"]
    else:
        objects = [o for o in before["objects"] if o["kind"] in prune.PRUNED_KINDS["kueue"]] + objects
    state.write_text(json.dumps({"nodes": {}, "pods": [], "objects": objects, "calls": []}))
    playbook = tmp / "prune.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Prune the kueue objects", "hosts": "localhost", "gather_facts": False,
        "vars": {"gpushare_plan": after},
        "tasks": [{"name": "Prune", "ansible.builtin.include_role": {"name": "gpushare.cluster.prune"},
                   "vars": {"prune_role": "kueue"}}],
    }]))
    return run_on_fake_cluster(tmp, playbook, state, args)


def _names(objects):
    return sorted((o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]) for o in objects)


def _deletions(state):
    """(kind, namespace, name, check mode) of every object a k8s state=absent call was given: the role
    deletes its list in one call (a definition list), one entry per object, in order."""
    found = []
    for call in state["calls"]:
        if call["module"] != "k8s" or call.get("state") != "absent":
            continue
        for obj in call["definition"] if isinstance(call.get("definition"), list) else [call]:
            metadata = obj.get("metadata") or obj
            found.append((obj["kind"], metadata.get("namespace") or "", metadata["name"], bool(call.get("check_mode"))))
    return found


def _changed(stdout):
    return int(re.search(r"^localhost\s+:.*changed=(\d+)", stdout, re.M).group(1))


GONE = [("ClusterQueue", "", "training"), ("LocalQueue", "training", "training"),
        ("WorkloadPriorityClass", "", "training")]


def test_check_and_diff_mode_list_the_deletions_and_delete_nothing(tmp_path):
    before, _after = _plans()
    result, state = run_prune(tmp_path, [HAND_MADE], ("--check", "--diff"))
    assert result.returncode == 0, result.stdout[-4000:]
    generation = "(plan generation %s)" % ownership.generation_of(before["objects"])
    assert "kueue prune: would delete ClusterQueue training %s, WorkloadPriorityClass training %s, LocalQueue " \
           "training/training %s" % (generation, generation, generation) in " ".join(result.stdout.split())
    assert set(GONE) <= set(_names(state["objects"]))
    deletes = _deletions(state)
    assert len(deletes) == 3 and all(check_mode for *_object, check_mode in deletes)


def test_a_run_deletes_the_owned_objects_the_plan_left_and_a_second_run_changes_nothing(tmp_path):
    before, _after = _plans()
    result, state = run_prune(tmp_path, [HAND_MADE])
    assert result.returncode == 0, result.stdout[-4000:]
    deletes = [(kind, namespace, name) for kind, namespace, name, _check in _deletions(state)]
    assert deletes == [GONE[0], GONE[2], GONE[1]]  # ClusterQueue, WorkloadPriorityClass, LocalQueue last
    left = _names(state["objects"])
    assert not set(GONE) & set(left)
    assert ("LocalQueue", "training", "by-hand") in left  # no ownership label: never touched
    # the role's kinds, then every Workload, are listed by k8s_list (one module process), the kinds
    # asking for owned objects only; no k8s_info process lists anything
    listed = [c for c in state["calls"] if c["module"] == "k8s_list" and c["kind"] != "Pod"]
    assert [c["kind"] for c in listed] == [k["kind"] for k in prune.list_kinds("kueue")] + ["Workload"]
    assert listed[-1] == {"module": "k8s_list", "api_version": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                          "label_selectors": [], "field_selectors": []}
    assert not [c for c in state["calls"] if c["module"] == "k8s_info"]
    listings = listed[:-1]
    assert listings and all(c["label_selectors"] == ["%s=%s" % (ownership.MANAGED_BY_LABEL, ownership.MANAGED_BY)]
                            for c in listings)
    assert f"(plan generation {ownership.generation_of(before['objects'])})" in result.stdout
    again, _state = run_prune(tmp_path, None)
    assert again.returncode == 0 and _changed(again.stdout) == 0, again.stdout[-3000:]


def test_an_admitted_workload_refuses_the_prune_unless_confirmed(tmp_path):
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "job-fine-tune-1", "namespace": "training"}, "spec": {"queueName": "training"},
                "status": {"admission": {"clusterQueue": "training"},
                           "conditions": [{"type": "Admitted", "status": "True"}]}}
    result, state = run_prune(tmp_path, [workload])
    assert result.returncode != 0
    message = " ".join(result.stdout.split())
    assert "team training, ClusterQueue training: its queue ClusterQueue training holds 1 admitted and 0 pending " \
           "Workload(s) (training/job-fine-tune-1)" in message
    assert "-e gpushare_confirm_disruptive=true" in message
    assert not [c for c in state["calls"] if c["module"] == "k8s"]  # nothing deleted
    confirmed, state = run_prune(tmp_path, [workload], ("-e", "gpushare_confirm_disruptive=true"))
    assert confirmed.returncode == 0, confirmed.stdout[-3000:]
    assert "confirmed by gpushare_confirm_disruptive" in confirmed.stdout
    assert not set(GONE) & set(_names(state["objects"]))
