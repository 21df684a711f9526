# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_operator role's node relabel sequence, run for real by ansible-playbook
against stand-ins of the kubernetes.core modules (tests/fixtures/addons/
fake_kubernetes) that keep a small cluster in a JSON file and log every call.

What this proves: the task order per node (cordon, mark and evict only the GPU pods
through k8s_drain, wait until they are gone, label, wait for MIG Manager, wait until the node is
back with its GPUs advertised as planned, uncordon), one node finished before the next starts,
and the failure paths: a node that does not come back (the run stops there, cordoned, naming the
nodes left untouched); MIG Manager reports failed
(the run stops, the node stays cordoned, the error quotes the node's state and the MIG
Manager log, later nodes are not touched); a PodDisruptionBudget keeps refusing the
eviction (retried until gpu_operator_drain_timeout, then the run stops naming the pods
still there, the node stays cordoned and unlabelled); a GPU pod no controller manages
(refused at once unless gpu_operator_drain_force); check mode changes nothing and waits for
nothing; the driver manager's pause of the DRA plugin's label is not relabelled; a re-run finishes
a node an earlier run left cordoned on a failed layout (MIG Manager's pod restarted). The k8s_drain stand-in applies the
real module's pod filters and messages (kubernetes.core 6.2.0). What it does not prove:
how a real API server, kubelet, PodDisruptionBudget controller or MIG Manager behave."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    EVICT_FOR_RELABEL_LABEL, RELABEL_UNFINISHED_ANNOTATION)

from .k8s_render import collections_dir, run_on_fake_cluster

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "addons"
FAKE = FIXTURES / "fake_kubernetes"


EVICT_LABEL = EVICT_FOR_RELABEL_LABEL
UNFINISHED = RELABEL_UNFINISHED_ANNOTATION


def pod(name, namespace, node, resources=None, owner=None, labels=None, volumes=None):
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner, "name": "x"}]
    return {"metadata": metadata, "status": {"phase": "Running"},
            "spec": {"nodeName": node, "volumes": volumes or [],
                     "containers": [{"name": "c", "resources": {"limits": resources or {}}}]}}


def cluster(mig_result):
    return {
        # what the device plugin advertises once the node is back (plan_device_plugin.yml)
        "nodes": {"a100": {"labels": {"nvidia.com/mig.config": "all-disabled"},
                           "allocatable": {"nvidia.com/mig-3g.20gb": "2", "nvidia.com/gpu": "1"}},
                  "l40s": {"labels": {}, "allocatable": {"nvidia.com/gpu.shared": "8"}}},
        "pods": [
            # /dev/shm as an emptyDir, as GPU serving pods often have
            pod("trainer", "data", "a100", {"nvidia.com/mig-3g.20gb": 1}, owner="Job",
                volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory"}}]),
            pod("web", "data", "a100", {"cpu": "1"}, owner="ReplicaSet"),
            pod("nvidia-mig-manager-abcde", "gpu-operator", "a100", owner="DaemonSet",
                labels={"app": "nvidia-mig-manager"}),
            pod("notebook", "data-notebooks", "l40s", {"nvidia.com/gpu.shared": 1}, owner="StatefulSet"),
        ],
        "mig_result": {"a100": mig_result},
        "logs": {"nvidia-mig-manager-abcde": ["Applying the selected MIG config to the node",
                                              "Error: failed to create GPU instance 3g.20gb: Insufficient Resources"]},
        "calls": [],
    }


def run_relabel(tmp: Path, mig_result: str, change=None, extra_vars=None, args=()):
    state = tmp / "cluster.json"
    start = cluster(mig_result)
    if change:
        change(start)
    state.write_text(json.dumps(start))
    playbook = tmp / "relabel.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Relabel the GPU nodes",
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {"gpushare_plan": yaml.safe_load((FIXTURES / "plan_device_plugin.yml").read_text()),
                 "gpu_operator_mig_log_lines": 1, **(extra_vars or {})},
        "tasks": [{"name": "Relabel",
                   "ansible.builtin.include_role": {"name": "gpushare.cluster.gpu_operator", "tasks_from": "relabel"}}],
    }]))
    # the stand-ins come first, so kubernetes.core.* resolves to them
    return run_on_fake_cluster(tmp, playbook, state, args)


def steps(calls):
    """Calls as short words, ignoring the initial read of all nodes."""
    out = []
    for call in calls:
        module, kind = call["module"], call.get("kind") or (call.get("definition") or {}).get("kind")
        if module == "k8s_drain" and call["state"] == "drain":
            assert call["pod_selectors"] == [f"{EVICT_LABEL}=true"], call  # only the marked GPU pods
            assert call["delete_options"] == {"force": False, "delete_emptydir_data": True, "ignore_daemonsets": True}
            out.append(f"evict {call['name']}")
        elif module == "k8s_drain":
            out.append(f"{call['state']} {call['name']}")
        elif module == "k8s_info" and kind == "Pod" and call.get("label_selectors") == [f"{EVICT_LABEL}=true"]:
            out.append("pods left " + call["field_selectors"][0].split("=")[1])
        elif module == "k8s_info" and kind == "Pod" and call.get("label_selectors"):
            out.append("find mig-manager " + call["field_selectors"][0].split("=")[1])
        elif module == "k8s_info" and kind == "Pod":
            out.append("list pods " + call["field_selectors"][0].split("=")[1])
        elif module == "k8s_info" and kind == "Node" and call.get("name"):
            out.append(f"wait {call['name']}")
        elif module == "k8s" and call.get("state") == "absent":
            out.append(f"delete {call['namespace']}/{call['name']}")
        elif module == "k8s" and call.get("state") == "patched" and call["definition"]["kind"] == "Pod":
            meta = call["definition"]["metadata"]
            assert meta["labels"] == {EVICT_LABEL: "true"}, meta
            out.append(f"mark {meta['namespace']}/{meta['name']}")
        elif module == "k8s" and call.get("state") == "patched":
            meta = call["definition"]["metadata"]
            unfinished = (meta.get("annotations") or {}).get(UNFINISHED, "")
            if "labels" in meta:
                out.append("label %s %s%s" % (meta["name"], ",".join(sorted(meta["labels"])),
                                              " +unfinished" if unfinished else ""))
            elif unfinished is None:
                out.append(f"finished {meta['name']}")
        elif module == "k8s_log":
            out.append(f"log {call['name']}")
        elif module == "k8s_exec":
            out.append(f"read config {call['pod']}")
    return out


def test_nodes_are_relabelled_one_at_a_time_in_order(tmp_path):
    result, state = run_relabel(tmp_path, "success")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert state["calls"][0]["module"] == "k8s_info" and state["calls"][0]["kind"] == "Node"
    assert steps(state["calls"]) == [
        "cordon a100", "list pods a100", "mark data/trainer", "evict a100", "pods left a100",
        "find mig-manager a100",
        "read config nvidia-mig-manager-abcde", "label a100 nvidia.com/mig.config,nvidia.com/mig.config.state +unfinished",
        "wait a100", "wait a100", "uncordon a100", "finished a100",
        "cordon l40s", "list pods l40s", "mark data-notebooks/notebook", "evict l40s", "pods left l40s",
        "label l40s nvidia.com/device-plugin.config +unfinished", "wait l40s", "uncordon l40s", "finished l40s",
    ]
    # evicted, never deleted: the Eviction API is what honours PodDisruptionBudgets
    assert state["evicted"] == ["data/trainer", "data-notebooks/notebook"]
    assert not [c for c in state["calls"] if c["module"] == "k8s" and c.get("state") == "absent"]
    assert state["nodes"]["a100"]["labels"]["nvidia.com/mig.config"] == "gpushare-a100"
    assert state["nodes"]["l40s"]["labels"]["nvidia.com/device-plugin.config"] == "gpushare-ts-4"
    assert not state["nodes"]["a100"]["unschedulable"] and not state["nodes"]["l40s"]["unschedulable"]
    # the CPU pod and the operator's DaemonSet pod stay
    assert {p["metadata"]["name"] for p in state["pods"]} == {"web", "nvidia-mig-manager-abcde"}


def test_a_failed_mig_change_stops_with_the_node_state_and_log(tmp_path):
    result, state = run_relabel(tmp_path, "failed")
    assert result.returncode != 0
    assert steps(state["calls"]) == [
        "cordon a100", "list pods a100", "mark data/trainer", "evict a100", "pods left a100",
        "find mig-manager a100", "read config nvidia-mig-manager-abcde",
        "label a100 nvidia.com/mig.config,nvidia.com/mig.config.state +unfinished", "wait a100",
        "find mig-manager a100", "log nvidia-mig-manager-abcde",
    ]
    assert state["nodes"]["a100"]["unschedulable"] is True  # left cordoned for the operator to look at
    assert "unschedulable" not in state["nodes"]["l40s"]  # the next node was never touched
    message = result.stdout
    assert "MIG configuration 'gpushare-a100' on node a100" in message
    assert "nvidia.com/mig.config.state is 'failed'. The node stays cordoned." in message
    assert "Insufficient Resources" in message  # the last log line (gpu_operator_mig_log_lines: 1)
    assert "Applying the selected MIG config" not in message


def test_a_disruption_budget_that_keeps_refusing_stops_the_run_with_the_pods_named(tmp_path):
    def serving_pods(start):
        start["pods"].append(pod("vllm-0", "production", "a100", {"nvidia.com/mig-3g.20gb": 1}, owner="ReplicaSet"))
        start["pdb_blocked"] = ["production/vllm-0"]

    result, state = run_relabel(tmp_path, "success", serving_pods, {"gpu_operator_drain_timeout": 2})
    assert result.returncode != 0
    # retried while the budget refuses (timeout 2 s: delay 2 s, one retry), then nothing else
    assert steps(state["calls"]) == [
        "cordon a100", "list pods a100", "mark data/trainer", "mark production/vllm-0",
        "evict a100", "evict a100", "pods left a100",
    ]
    assert state["nodes"]["a100"]["unschedulable"] is True  # left cordoned
    assert state["nodes"]["a100"]["labels"]["nvidia.com/mig.config"] == "all-disabled"  # not relabelled
    assert "unschedulable" not in state["nodes"]["l40s"]
    assert {p["metadata"]["name"] for p in state["pods"]} >= {"vllm-0", "web"}
    message = result.stdout
    assert "Node a100: GPU pods still on the node" in message
    assert "gpu_operator_drain_timeout=2 s): production/vllm-0." in message
    assert "violate the pod's disruption budget" in message
    assert "The node stays cordoned" in message


def test_a_gpu_pod_no_controller_manages_is_refused_at_once_unless_forced(tmp_path):
    def bare_pod(start):
        start["pods"].append(pod("debug", "data", "a100", {"nvidia.com/mig-1g.5gb": 1}))

    result, state = run_relabel(tmp_path, "success", bare_pod)
    assert result.returncode != 0
    assert steps(state["calls"]) == [
        "cordon a100", "list pods a100", "mark data/trainer", "mark data/debug", "evict a100", "pods left a100"]
    assert "Node a100: GPU pods still on the node" in result.stdout
    assert "s): data/trainer, data/debug." in result.stdout
    assert "use option force set to yes" in result.stdout
    assert state["nodes"]["a100"]["unschedulable"] is True

    forced, state = run_relabel(tmp_path, "success", bare_pod, {"gpu_operator_drain_force": True})
    assert forced.returncode == 0, forced.stdout[-3000:]
    assert "data/debug" in state["evicted"]


def test_check_mode_changes_nothing_and_waits_for_nothing(tmp_path):
    result, state = run_relabel(tmp_path, "failed", args=("--check",))
    assert result.returncode == 0, result.stdout[-3000:]
    start = cluster("failed")
    assert state["nodes"] == start["nodes"] and state["pods"] == start["pods"]
    # k8s_drain does not support check mode (skipped); k8s only reports; no waits, no log
    assert {c["module"] for c in state["calls"]} == {"k8s_info", "k8s"}
    assert all(c.get("check_mode") for c in state["calls"] if c["module"] == "k8s")
    assert steps(state["calls"]) == [
        "list pods a100", "mark data/trainer", "label a100 nvidia.com/mig.config,nvidia.com/mig.config.state +unfinished",
        "list pods l40s", "mark data-notebooks/notebook", "label l40s nvidia.com/device-plugin.config +unfinished",
    ]


def test_nothing_happens_when_the_labels_are_already_right(tmp_path):
    state_file = tmp_path / "cluster.json"
    result, state = run_relabel(tmp_path, "success")
    assert result.returncode == 0
    state["calls"] = []
    state_file.write_text(json.dumps(state))
    # second run on the relabelled cluster: only the read of the nodes
    env_result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "relabel.yml")],
                                env=dict(os.environ, GPUSHARE_FAKE_CLUSTER=str(state_file), ANSIBLE_NOCOLOR="1",
                                         ANSIBLE_COLLECTIONS_PATH=f"{FAKE}:{collections_dir()}",
                                         ANSIBLE_HOME=str(tmp_path / "ansible-home")),
                                capture_output=True, text=True, timeout=300, check=False)
    assert env_result.returncode == 0, env_result.stdout[-3000:]
    calls = json.loads(state_file.read_text())["calls"]
    assert [c["module"] for c in calls] == ["k8s_info"]


def test_a_node_that_does_not_come_back_stops_the_run_and_leaves_the_rest_untouched(tmp_path):
    def not_back(start):
        start["nodes"]["a100"]["ready"] = "False"
        start["nodes"]["a100"]["ready_message"] = "container runtime is down"

    result, state = run_relabel(tmp_path, "success", not_back, {"gpu_operator_node_back_timeout": 1})
    assert result.returncode != 0
    assert steps(state["calls"]) == [
        "cordon a100", "list pods a100", "mark data/trainer", "evict a100", "pods left a100",
        "find mig-manager a100", "read config nvidia-mig-manager-abcde",
        "label a100 nvidia.com/mig.config,nvidia.com/mig.config.state +unfinished", "wait a100", "wait a100", "wait a100"]  # one retry
    assert state["nodes"]["a100"]["unschedulable"] is True  # left cordoned
    assert "unschedulable" not in state["nodes"]["l40s"] and state["nodes"]["l40s"]["labels"] == {}
    message = " ".join(result.stdout.split())
    assert "Node a100 did not come back after its GPU layout changed" in message
    assert "node a100 is not Ready (container runtime is down)" in message
    assert "The run stopped at a100; nodes not relabelled yet, left untouched: l40s." in message


def test_a_node_back_without_its_planned_gpus_stops_the_run(tmp_path):
    def fewer_slices(start):
        start["nodes"]["l40s"]["allocatable"] = {"nvidia.com/gpu.shared": "4"}

    result, state = run_relabel(tmp_path, "success", fewer_slices, {"gpu_operator_node_back_timeout": 1})
    assert result.returncode != 0
    assert state["nodes"]["a100"]["unschedulable"] is False  # the first node came back and was uncordoned
    assert state["nodes"]["l40s"]["unschedulable"] is True
    message = " ".join(result.stdout.split())
    assert "node l40s advertises nvidia.com/gpu.shared: 4, the plan has 8" in message
    assert "left untouched: none." in message


def test_a_failed_mig_change_names_the_nodes_left_untouched(tmp_path):
    result, _state = run_relabel(tmp_path, "failed")
    assert "The run stopped at a100; nodes not relabelled yet, left untouched: l40s." in " ".join(result.stdout.split())


def test_the_driver_managers_pause_of_the_dra_plugin_label_survives_a_relabel(tmp_path):
    """During a driver reload k8s-driver-manager (v0.12.0) sets the eviction label, the DRA kubelet
    plugin's nvidia.com/dra-kubelet-plugin, to paused-for-driver-upgrade and puts "true" back after;
    a relabel in between must not set it back to true mid-rollout (it would restart the plugin)."""
    def paused(start):
        start["nodes"] = {"gpu1": {"labels": {"nvidia.com/mig.config": "gpushare-gpu1",
                                              "nvidia.com/dra-kubelet-plugin": "paused-for-driver-upgrade"},
                                   "allocatable": {}}}
        start["pods"] = []
    plan = yaml.safe_load((FIXTURES / "plan_example.yml").read_text())
    result, state = run_relabel(tmp_path, "success", change=paused, extra_vars={"gpushare_plan": plan})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert [c["module"] for c in state["calls"]] == ["k8s_info"]  # the read of the nodes, nothing else
    assert state["nodes"]["gpu1"]["labels"]["nvidia.com/dra-kubelet-plugin"] == "paused-for-driver-upgrade"


def test_the_success_of_the_previous_layout_is_not_taken_for_the_new_one(tmp_path):
    """The node shows nvidia.com/mig.config.state=success from its previous layout; MIG Manager
    answers the new label only after a while, with failed. The state is removed with the label
    change, so the wait sees no success until the manager's own answer, and the run stops."""
    def slow_manager(start):
        start["nodes"]["a100"]["labels"]["nvidia.com/mig.config.state"] = "success"
        start["mig_delay"] = {"a100": 2}

    result, state = run_relabel(tmp_path, "failed", slow_manager, {"gpu_operator_mig_wait_timeout": 20})
    assert result.returncode != 0, result.stdout[-3000:]
    assert "nvidia.com/mig.config.state is 'failed'" in result.stdout
    assert steps(state["calls"])[:10] == [
        "cordon a100", "list pods a100", "mark data/trainer", "evict a100", "pods left a100",
        "find mig-manager a100", "read config nvidia-mig-manager-abcde",
        "label a100 nvidia.com/mig.config,nvidia.com/mig.config.state +unfinished", "wait a100", "wait a100"]
    assert state["nodes"]["a100"]["unschedulable"] is True
    assert "unschedulable" not in state["nodes"]["l40s"]


def test_the_label_waits_until_mig_manager_sees_the_new_config_in_its_file(tmp_path):
    """The ConfigMap reaches the MIG Manager pod's file after the kubelet's sync: the node is
    labelled only once the new config is in the file; if it never comes, the run stops before the
    label, the node cordoned and its labels unchanged."""
    def late_mount(start):
        start["mounted_mig_configs"] = {"a100": ["all-disabled"]}
        start["mig_mount_lag"] = {"a100": 2}

    result, state = run_relabel(tmp_path, "success", late_mount)
    assert result.returncode == 0, result.stdout[-3000:]
    sequence = steps(state["calls"])
    assert sequence[5:9] == ["find mig-manager a100", "read config nvidia-mig-manager-abcde",
                             "read config nvidia-mig-manager-abcde",
                             "label a100 nvidia.com/mig.config,nvidia.com/mig.config.state +unfinished"]

    def never(start):
        start["mounted_mig_configs"] = {"a100": ["all-disabled"]}

    result, state = run_relabel(tmp_path, "success", never, {"gpu_operator_mig_config_sync_timeout": 5})
    assert result.returncode != 0
    message = " ".join(result.stdout.split())
    assert "MIG configuration 'gpushare-a100' is not in /mig-parted-config/config.yaml of MIG Manager pod " \
           "nvidia-mig-manager-abcde on node a100 after gpu_operator_mig_config_sync_timeout=5 s" in message
    assert "The run stopped at a100; nodes not relabelled yet, left untouched: l40s." in message
    assert state["nodes"]["a100"]["labels"]["nvidia.com/mig.config"] == "all-disabled"
    assert state["nodes"]["a100"]["unschedulable"] is True


def test_a_rerun_finishes_the_node_an_earlier_run_left_cordoned_on_a_failed_layout(tmp_path):
    """The first run stops at a100 (MIG Manager reports failed) with the node labelled, cordoned and
    annotated; the cause fixed, the second run finds a100's labels right and still finishes it:
    MIG Manager's pod is restarted to apply the label again, the node waited for and uncordoned,
    and the next node relabelled."""
    first, state = run_relabel(tmp_path, "failed")
    assert first.returncode != 0
    assert state["nodes"]["a100"]["unschedulable"] is True
    assert state["nodes"]["a100"]["annotations"] == {UNFINISHED: "true"}
    assert state["nodes"]["a100"]["labels"]["nvidia.com/mig.config"] == "gpushare-a100"

    state.update(calls=[], mig_result={"a100": "success"})
    state_file = tmp_path / "cluster.json"
    state_file.write_text(json.dumps(state))
    second, state = run_on_fake_cluster(tmp_path, tmp_path / "relabel.yml", state_file)
    assert second.returncode == 0, second.stdout[-3000:]
    assert steps(state["calls"]) == [
        "cordon a100", "list pods a100", "label a100 nvidia.com/mig.config.state",
        "find mig-manager a100", "delete gpu-operator/nvidia-mig-manager-abcde", "wait a100", "wait a100",
        "uncordon a100", "finished a100",
        "cordon l40s", "list pods l40s", "mark data-notebooks/notebook", "evict l40s", "pods left l40s",
        "label l40s nvidia.com/device-plugin.config +unfinished", "wait l40s", "uncordon l40s", "finished l40s",
    ]
    assert state["mig_manager_restarts"] == ["a100"]
    assert state["nodes"]["a100"]["labels"]["nvidia.com/mig.config.state"] == "success"
    assert not state["nodes"]["a100"]["unschedulable"] and state["nodes"]["a100"]["annotations"] == {}
    assert not state["nodes"]["l40s"]["unschedulable"] and state["nodes"]["l40s"]["annotations"] == {}


def test_a_rerun_of_a_layout_that_fails_again_stops_there_again(tmp_path):
    first, state = run_relabel(tmp_path, "failed")
    assert first.returncode != 0
    state["calls"] = []
    state_file = tmp_path / "cluster.json"
    state_file.write_text(json.dumps(state))
    second, state = run_on_fake_cluster(tmp_path, tmp_path / "relabel.yml", state_file)
    assert second.returncode != 0
    assert state["nodes"]["a100"]["unschedulable"] is True
    assert state["nodes"]["a100"]["annotations"] == {UNFINISHED: "true"}  # still to finish
    assert "unschedulable" not in state["nodes"]["l40s"]
    message = " ".join(second.stdout.split())
    assert "nvidia.com/mig.config.state is 'failed'" in message
    assert "left untouched: l40s." in message
