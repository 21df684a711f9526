# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The private roles kubernetes_steps and host_steps: they refuse to run on their own, and the shared
node drain (roles/kubernetes_steps/tasks/drain.yml) as the kubeadm and microk8s upgrades use it,
run for real by ansible-playbook against the kubernetes.core stand-ins (fake cluster).

What this proves: a drain without pod selectors evicts every pod but DaemonSet pods, with
delete_emptydir_data and without force, and waits until they are gone; a PodDisruptionBudget
that keeps refusing is retried until the timeout, then the run stops naming the pod, the node
left cordoned; check mode evicts nothing; the add-on roles hand their kubeconfig to every
kubernetes.core call through module_defaults. What it does not prove: how a real API server
answers evictions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from .k8s_render import run_on_fake_cluster
from .test_apply_addons import apply, fresh_cluster
from .test_mig_relabel import pod

ROLES = Path(__file__).resolve().parents[3] / "roles"


def play(tmp: Path, tasks, cluster_state=None, args=()):
    state = tmp / "cluster.json"
    state.write_text(json.dumps(cluster_state or {"nodes": {}, "pods": [], "calls": []}))
    playbook = tmp / "play.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Private role", "hosts": "localhost", "gather_facts": False,
                                         "tasks": tasks}]))
    return run_on_fake_cluster(tmp, playbook, state, args)


@pytest.mark.parametrize("role,entry_points", [("kubernetes_steps", "helm_release, helm_crds, drain, node_back"), ("host_steps", "os_vars")])
def test_a_private_role_refuses_to_run_on_its_own(tmp_path, role, entry_points):
    result, _state = play(tmp_path, [{"name": "Use it directly",
                                      "ansible.builtin.include_role": {"name": f"gpushare.cluster.{role}"}}])
    assert result.returncode != 0
    message = " ".join(result.stdout.split())
    assert f"gpushare.cluster.{role} is an internal role" in message
    assert f"tasks_from ({entry_points})" in message


def test_every_entry_point_is_documented():
    for role in ("kubernetes_steps", "host_steps"):
        specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        entry_points = {p.stem for p in (ROLES / role / "tasks").glob("*.yml")}
        assert set(specs) == entry_points, role
        defaults = set(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()))
        options = set().union(*(set(spec["options"]) for spec in specs.values()))
        assert defaults <= options, f"{role}: defaults without a documented option: {defaults - options}"


def drain_cluster(**changes):
    state = {"nodes": {"w1": {"labels": {}}},
             "pods": [pod("web", "apps", "w1", owner="ReplicaSet",
                          volumes=[{"name": "cache", "emptyDir": {}}]),
                      pod("db-0", "apps", "w1", owner="StatefulSet"),
                      pod("node-exporter", "monitoring", "w1", owner="DaemonSet"),
                      pod("elsewhere", "apps", "w2", owner="ReplicaSet")],
             "calls": []}
    state.update(changes)
    return state


def drain_task(**extra):
    include = {"name": "gpushare.cluster.kubernetes_steps", "tasks_from": "drain"}
    return [{"name": "Drain", "ansible.builtin.include_role": include,
             "vars": {"kubernetes_steps_drain_node": "w1", **extra}}]


def test_a_plain_drain_evicts_every_pod_but_daemonset_pods_and_waits_for_them(tmp_path):
    result, state = play(tmp_path, drain_task(), drain_cluster())
    assert result.returncode == 0, result.stdout[-3000:]
    assert state["evicted"] == ["apps/web", "apps/db-0"]
    assert state["nodes"]["w1"]["unschedulable"] is True  # cordoned; the caller uncordons
    drains = [c for c in state["calls"] if c["module"] == "k8s_drain"]
    assert drains == [{"module": "k8s_drain", "name": "w1", "state": "drain", "delete_options": {
        "force": False, "delete_emptydir_data": True, "ignore_daemonsets": True}}]
    waits = [c for c in state["calls"] if c["module"] == "k8s_info"]
    assert waits == [{"module": "k8s_info", "kind": "Pod", "field_selectors": ["spec.nodeName=w1"]}]


def test_a_budget_that_keeps_refusing_is_retried_then_stops_naming_the_pod(tmp_path):
    result, state = play(tmp_path, drain_task(kubernetes_steps_drain_timeout=2,
                                              kubernetes_steps_drain_timeout_name="kubeadm_drain_timeout"),
                         drain_cluster(pdb_blocked=["apps/db-0"]))
    assert result.returncode != 0
    # timeout 2 s: delay 2 s, one retry; then the pods left are listed once
    assert [c["module"] for c in state["calls"]] == ["k8s_drain", "k8s_drain", "k8s_info"]
    message = " ".join(result.stdout.split())
    assert "Node w1: pods still on the node" in message
    assert "up to kubeadm_drain_timeout=2 s): apps/db-0." in message  # web went, the DaemonSet pod is not counted
    assert "violate the pod's disruption budget" in message
    assert "The node stays cordoned. Let the pods go" in message
    assert state["nodes"]["w1"]["unschedulable"] is True


def test_check_mode_drains_nothing(tmp_path):
    result, state = play(tmp_path, drain_task(), drain_cluster(), args=("--check",))
    assert result.returncode == 0, result.stdout[-3000:]
    assert state["calls"] == [] and "evicted" not in state


def test_the_addon_roles_hand_their_kubeconfig_to_every_kubernetes_call(tmp_path):
    kubeconfigs = {f"{role}_kubeconfig": f"/tmp/{role}.kubeconfig"
                   for role in ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")}
    result, state = apply(tmp_path, ["gpu_operator", "dra_driver", "kueue", "monitoring"], fresh_cluster(), kubeconfigs)
    assert result.returncode == 0, result.stdout[-3000:]
    given = {kubeconfig for _module, kubeconfig in state["kubeconfigs"]}
    assert given <= set(kubeconfigs.values()) and len(given) == 4, given
    assert {module for module, _kubeconfig in state["kubeconfigs"]} >= {"k8s", "k8s_info", "helm"}
