"""The upgrade roll's wait for a node whose kubelet restarted, on the rehearsal's API server.

The kubelets are simulated: each Node's status is written by the test as a kubelet would have
left it (version, Ready condition, heartbeat). What is real: the API server storing and serving
those Nodes, kubernetes.core's k8s_info and k8s_drain, and the kubernetes_steps node_back step
the kubeadm and microk8s upgrades run. A node still showing the old kubelet's Ready=True (the
node lifecycle controller only marks it after its 50 s grace period) must not pass.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

from rehearsal_env import run_local_playbook

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "node_back.yml"


def _time(seconds_ago: int) -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node(info, name, version, heartbeat):
    status, body = rc.api_request(info, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"gpushare.io/test": "node-back"}}})
    assert status == 201, body
    status, body = rc.api_request(info, "PATCH", f"/api/v1/nodes/{name}/status", {"status": {
        "nodeInfo": {"kubeletVersion": version},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": heartbeat, "lastTransitionTime": _time(3600)}]}},
        content_type="application/merge-patch+json")
    assert status == 200, body


def test_a_node_not_back_on_its_new_kubelet_stops_the_roll_cordoned_and_named(rehearsal, tmp_path):
    info = rehearsal
    before = _time(20)
    nodes = {
        # The new kubelet posted its status: new version, newer heartbeat.
        "node-back-upgraded": ("v1.36.3", _time(1)),
        # The kubelet did not come back: the Node still shows the old kubelet's Ready=True.
        "node-back-silent": ("v1.35.4", before),
        # A heartbeat from the old kubelet, or a version without a new heartbeat, is not enough.
        "node-back-stale": ("v1.36.3", before),
    }
    for name, (version, heartbeat) in nodes.items():
        _node(info, name, version, heartbeat)
    # The Node as the roll read it before the drain, on the old kubelet.
    read_before = {"status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": before}]}}
    try:
        variables = {
            "kubeconfig": info["kubeconfig"], "target_version": "1.36", "timeout": 5, "out_dir": str(tmp_path),
            "nodes": [{"name": name, "before": read_before} for name in nodes]}
        result = run_local_playbook(PLAYBOOK, variables, tmp_path)
        assert result.returncode == 0, result.stdout[-4000:]
        outcome = {name: (tmp_path / name).read_text() for name in nodes}
        unschedulable = {name: rc.api_request(info, "GET", f"/api/v1/nodes/{name}")[1]["spec"].get("unschedulable", False)
                         for name in nodes}
    finally:
        for name in nodes:
            rc.api_request(info, "DELETE", f"/api/v1/nodes/{name}")

    assert outcome["node-back-upgraded"] == "back"
    assert unschedulable["node-back-upgraded"] is False
    for name in ("node-back-silent", "node-back-stale"):
        message = " ".join(outcome[name].split())
        assert message.startswith(f"Node {name} is not back after its kubelet restarted"), message
        assert f"before the restart: {before}" in message
        assert "The node stays cordoned and the run stops here" in message
        assert unschedulable[name] is True
    assert "kubelet v1.35.4 (expected 1.36)" in " ".join(outcome["node-back-silent"].split())
    # On the new version, but no heartbeat since the restart (by now the node lifecycle controller
    # may have marked it Unknown too; either way it is not back).
    assert "kubelet v1.36.3 (expected 1.36), Ready=" in " ".join(outcome["node-back-stale"].split())
