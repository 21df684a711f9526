# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The add-on role filters (plan_objects, relabel, readiness): what they return for a plan and
live objects, and that bad input becomes an AnsibleFilterError naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.filter import plan_objects, readiness, relabel

FILTERS = {}
for _module in (plan_objects, readiness, relabel):
    FILTERS.update(_module.FilterModule().filters())

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "addons"


def _plan(name):
    return yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))


def test_plan_objects_keeps_the_roles_kinds_in_plan_order():
    plan = _plan("plan_example.yml")
    queue_kinds = {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    kueue = FILTERS["plan_objects"](plan, "kueue")
    assert kueue == [obj for obj in plan["objects"] if obj["kind"] in queue_kinds]
    assert {obj["kind"] for obj in kueue} == queue_kinds
    assert {obj["kind"] for obj in FILTERS["plan_objects"](plan, "dra_driver")} == {
        "DeviceClass", "ResourceClaim", "ResourceClaimTemplate"}
    assert "Namespace" in {obj["kind"] for obj in FILTERS["plan_objects"](plan, "tenancy")}


@pytest.mark.parametrize("plan, role, message", [
    ({}, "kueue", "gpushare_plan: missing or empty"),
    ({"version": 1, "backend": "dra", "distribution": "kubeadm"}, "kueue", "gpushare_plan.nodes: missing"),
    ({"version": 1, "backend": "dra", "distribution": "kubeadm", "nodes": {}, "objects": [{"kind": "X"}]}, "kueue",
     r"gpushare_plan.objects\[0\]: not a Kubernetes object"),
    ({"version": 1, "backend": "dra", "distribution": "kubeadm", "nodes": {}}, "monitoring",
     "role: 'monitoring' applies no plan objects"),
])
def test_plan_objects_refuses_bad_input(plan, role, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["plan_objects"](plan, role)


def test_relabel_steps_name_only_nodes_that_change():
    plan = _plan("plan_device_plugin.yml")
    current = {"a100": {"nvidia.com/mig.config": "gpushare-a100"},
               "l40s": {"nvidia.com/device-plugin.config": "old"}}
    assert FILTERS["relabel_steps"](plan, current) == [
        {"node": "l40s", "labels": {"nvidia.com/device-plugin.config": "gpushare-ts-4"}, "mig_change": False,
         "drain": True, "mig_config": None, "resume": False, "restart_mig_manager": False}]
    with pytest.raises(AnsibleFilterError, match="nodes l40s: in the plan but not in the cluster"):
        FILTERS["relabel_steps"](plan, {"a100": {}})


def test_gpu_pods_skips_daemonsets_and_finished_pods():
    gpu = {"containers": [{"resources": {"requests": {"nvidia.com/mig-3g.20gb": 1}}}]}
    pods = [
        {"metadata": {"name": "train", "namespace": "research"}, "spec": gpu, "status": {"phase": "Running"}},
        {"metadata": {"name": "init", "namespace": "data"},
         "spec": {"initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
        {"metadata": {"name": "exporter", "namespace": "gpu-operator", "ownerReferences": [{"kind": "DaemonSet"}]},
         "spec": gpu},
        {"metadata": {"name": "old", "namespace": "research"}, "spec": gpu, "status": {"phase": "Failed"}},
        {"metadata": {"name": "cpu", "namespace": "research"}, "spec": {"containers": [{}]}},
    ]
    assert FILTERS["gpu_pods"](pods) == [{"name": "train", "namespace": "research"},
                                         {"name": "init", "namespace": "data"}]


def _node(name, ready="True", allocatable=None):
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletNotReady"}],
                       "allocatable": allocatable or {}}}


def test_node_back_problems_device_plugin_counts_every_resource():
    plan = _plan("plan_device_plugin.yml")
    back = _node("a100", allocatable={"nvidia.com/mig-3g.20gb": "2", "nvidia.com/gpu": "1"})
    assert FILTERS["node_back_problems"](plan, "a100", [back]) == []
    short = _node("a100", ready="False", allocatable={"nvidia.com/mig-3g.20gb": "1", "nvidia.com/gpu": "1"})
    assert FILTERS["node_back_problems"](plan, "a100", [short]) == [
        "node a100 is not Ready (KubeletNotReady)",
        "node a100 advertises nvidia.com/mig-3g.20gb: 1, the plan has 2"]
    assert FILTERS["node_back_problems"](plan, "a100", []) == ["node a100 is not in the cluster"]
    with pytest.raises(AnsibleFilterError, match="node nowhere: not in the plan"):
        FILTERS["node_back_problems"](plan, "nowhere", [])


def _slice(node, types):
    """``types``: "gpu", or the profile of a mig device."""
    return {"spec": {"nodeName": node, "driver": "gpu.nvidia.com", "devices": [
        {"attributes": {"type": {"string": "gpu"}}} if kind == "gpu"
        else {"attributes": {"type": {"string": "mig"}, "profile": {"string": kind}}} for kind in types]}}


def test_node_back_problems_dra_counts_published_devices_and_their_profiles():
    plan = _plan("plan_example.yml")  # gpu1: three GPUs with MIG off, one with 1g.24gb x2 and 2g.48gb
    published = [_slice("gpu1", ["gpu", "gpu", "gpu"]), _slice("gpu1", ["1g.24gb", "2g.48gb", "1g.24gb"]),
                 _slice("other", ["gpu"])]
    assert FILTERS["node_back_problems"](plan, "gpu1", None, published) == []
    assert FILTERS["node_back_problems"](plan, "gpu1", None, published[:1]) == [
        "node gpu1 publishes 0 mig device(s) (gpu.nvidia.com ResourceSlices), the plan has 3"]
    # three MIG devices still, but of the previous layout
    previous = published[:1] + [_slice("gpu1", ["1g.24gb", "1g.24gb", "1g.24gb"])]
    assert FILTERS["node_back_problems"](plan, "gpu1", None, previous) == [
        "node gpu1 publishes MIG devices 1g.24gb x3 (gpu.nvidia.com ResourceSlices), "
        "the plan has 1g.24gb x2, 2g.48gb x1"]
    # Without slices only the Node is checked.
    assert FILTERS["node_back_problems"](plan, "gpu1", [_node("gpu1")]) == []


def test_cluster_queue_problems():
    queues = [{"metadata": {"name": "research"}, "status": {"conditions": [{"type": "Active", "status": "True"}]}},
              {"metadata": {"name": "data"},
               "status": {"conditions": [{"type": "Active", "status": "False", "message": "flavor missing"}]}},
              {"metadata": {"name": "new"}}]
    assert FILTERS["cluster_queue_problems"](queues, ["research", "data", "new", "gone"]) == [
        "data (flavor missing)", "new (no status yet)", "gone (not found)"]
    assert FILTERS["cluster_queue_problems"](queues, ["research"]) == []


def test_not_available():
    available = {"metadata": {"name": "grafana"}, "status": {"conditions": [{"type": "Available", "status": "True"}]}}
    waiting = {"metadata": {"name": "prometheus"},
               "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]}}
    results = [{"item": {"kind": "Deployment"}, "resources": [available, waiting]},
               {"item": {"kind": "StatefulSet"}, "resources": []}]
    assert FILTERS["not_available"](results) == [
        "Deployment prometheus not Available (MinimumReplicasUnavailable)", "no StatefulSet found"]
    assert FILTERS["not_available"]([{"item": {"kind": "Deployment"}, "resources": [available]}]) == []
