"""Whether a node is back after its kubelet restarted or its host rebooted (node_restart.py), the
one test host_prep's reboot and kubernetes_steps' node_back wait on."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import node_restart

BEFORE = "2026-12-06T10:00:00Z"


def node(heartbeat=BEFORE, ready="True", version="v1.35.4", message="kubelet is posting ready status"):
    return {"kind": "Node", "metadata": {"name": "gpu1"}, "status": {
        "nodeInfo": {"kubeletVersion": version},
        "conditions": [{"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-12-06T12:00:00Z"},
                       {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat, "message": message}]}}


def test_a_node_with_a_newer_ready_heartbeat_on_the_version_is_back():
    assert node_restart.restart_problems(node("2026-12-06T10:03:10Z", version="v1.36.3"), node(), "1.36") == []
    assert node_restart.restart_problems(node("2026-12-06T10:03:10Z"), node()) == []  # a reboot: any version


def test_the_old_kubelet_s_ready_is_not_back():
    """Ready=True with the heartbeat read before: the node lifecycle controller has not noticed yet."""
    assert node_restart.restart_problems(node(), node()) == [
        "no Ready heartbeat since the restart (last %s, before the restart %s)" % (BEFORE, BEFORE)]
    # the other conditions' heartbeats do not count
    assert node_restart.restart_problems(node(), node("2026-12-06T09:00:00Z")) == []


@pytest.mark.parametrize("now,version,problem", [
    (node("2026-12-06T10:03:10Z", ready="Unknown", message="Kubelet stopped posting node status."), "",
     "Ready=Unknown (Kubelet stopped posting node status.)"),
    (node("2026-12-06T10:03:10Z", version="v1.35.4"), "1.36", "kubelet v1.35.4, expected 1.36"),
    (node("2026-12-06T10:03:10Z", version="v1.36.10"), "1.36.1", "kubelet v1.36.10, expected 1.36.1"),
    ({}, "", "the API server has no such node (or did not answer)"),
])
def test_each_reason_is_named(now, version, problem):
    assert problem in node_restart.restart_problems(now, node(), version)


def test_heartbeats_compare_as_times_and_any_is_newer_than_none():
    assert node_restart.newer("2026-12-06T10:00:01+00:00", "2026-12-06T10:00:00Z")
    assert node_restart.newer("2026-12-06T11:00:00+01:00", "2026-12-06T09:59:59Z")  # 10:00 UTC
    assert not node_restart.newer("2026-12-06T11:00:00+01:00", "2026-12-06T10:00:00Z")
    assert node_restart.newer("2026-12-06T10:00:00Z", "")
    assert not node_restart.newer("", BEFORE)
    assert node_restart.restart_problems(node("2026-12-06T10:03:10Z"), {}) == []  # no Node read before


@pytest.mark.parametrize("running,wanted,matches", [
    ("v1.36.3", "1.36", True), ("v1.36.3", "v1.36", True), ("v1.36.1", "1.36.1", True),
    ("v1.36.10", "1.36.1", False), ("v1.3", "1.36", False), ("", "1.36", False), ("v1.35.4", "", True),
])
def test_versions_match_by_minor_or_patch(running, wanted, matches):
    assert node_restart.version_matches(running, wanted) is matches
