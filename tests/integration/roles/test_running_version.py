"""An install run never changes the Kubernetes a running node has (only upgrade.yml does), and
MicroK8s's own refreshes are held.

The roles' entry points run unchanged on local hosts; stand-ins for `snap`, `microk8s` and
`kubelet` (tests/fixtures/k8s/stubs) keep each node's snap in a JSON file and log every command
that would change it, so a test sees what a run would have done to the node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from .k8s_render import FIXTURES, collections_dir

STUBS = FIXTURES / "stubs"


def _run(tmp_path: Path, role: str, nodes: dict, group_vars: dict) -> subprocess.CompletedProcess:
    """Run the role's main entry point on local hosts; nodes: {name: (group, {host vars})}."""
    groups: dict = {}
    for name, (group, host_vars) in nodes.items():
        groups.setdefault(group, {"hosts": {}})["hosts"][name] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, **host_vars}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups, "vars": group_vars}}))
    playbook = tmp_path / "install.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Install", "hosts": "all", "gather_facts": False,
        # Each node's stand-ins read that node's own state.
        "environment": {"PATH": f"{STUBS}:{os.environ['PATH']}",
                        "FAKE_SNAP_STATE": "{{ fake_snap_state | default('') }}",
                        "FAKE_KUBELET_VERSION": "{{ fake_kubelet_version | default('') }}"},
        "tasks": [{"name": "Apply the role", "ansible.builtin.include_role": {"name": f"gpushare.cluster.{role}"}}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def _snap_nodes(tmp_path: Path, snaps: dict) -> dict:
    nodes = {}
    for name, (group, snap) in snaps.items():
        state = tmp_path / f"{name}.json"
        state.write_text(json.dumps(snap))
        nodes[name] = (group, {"fake_snap_state": str(state)})
    return nodes


def _changes(tmp_path: Path, name: str) -> list:
    log = tmp_path / f"{name}.json.log"
    return log.read_text().splitlines() if log.exists() else []


MICROK8S_VARS = {"microk8s_args_enabled": False, "microk8s_cluster_enabled": False}


def test_microk8s_installs_holds_refreshes_and_a_second_run_changes_nothing(tmp_path):
    nodes = _snap_nodes(tmp_path, {"mk1": ("control_plane", {}), "gpu1": ("workers", {})})
    first = _run(tmp_path, "microk8s", nodes, {**MICROK8S_VARS, "gpushare_kubernetes_version": "1.35"})
    assert first.returncode == 0, first.stdout[-4000:]
    for name in ("mk1", "gpu1"):
        assert _changes(tmp_path, name) == ["install --classic --channel 1.35/stable microk8s",
                                            "refresh --hold=forever microk8s"]
    second = _run(tmp_path, "microk8s", nodes, {**MICROK8S_VARS, "gpushare_kubernetes_version": "1.35"})
    assert second.returncode == 0, second.stdout[-4000:]
    assert "changed=0" in second.stdout and "changed=1" not in second.stdout
    assert len(_changes(tmp_path, "mk1")) == 2


def test_microk8s_version_bump_outside_upgrade_is_refused_naming_every_node(tmp_path):
    running = {"channel": "1.34/stable", "version": "v1.34.4", "held": True}
    nodes = _snap_nodes(tmp_path, {"mk1": ("control_plane", running), "gpu1": ("workers", running),
                                   "gpu2": ("workers", {})})
    result = _run(tmp_path, "microk8s", nodes, {**MICROK8S_VARS, "gpushare_kubernetes_version": "1.35"})
    assert result.returncode != 0
    message = " ".join(result.stdout.split())
    assert "Nothing was changed." in message
    assert "mk1 runs Kubernetes v1.34.4" in message and "gpu1 runs Kubernetes v1.34.4" in message
    assert "gpu2" not in message.split("Nothing was changed.")[1].split("To move")[0]  # not installed yet: nothing to refuse
    assert "playbooks/upgrade.yml" in message
    # community.general.snap would have refreshed every node at once; nothing ran.
    assert all(_changes(tmp_path, name) == [] for name in ("mk1", "gpu1", "gpu2"))


def test_microk8s_another_channel_of_the_same_minor_is_refused_too(tmp_path):
    nodes = _snap_nodes(tmp_path, {"mk1": ("control_plane", {"channel": "1.35/candidate", "version": "v1.35.5", "held": True})})
    result = _run(tmp_path, "microk8s", nodes, {**MICROK8S_VARS, "gpushare_kubernetes_version": "1.35"})
    assert result.returncode != 0
    assert "mk1 tracks the snap channel 1.35/candidate, not 1.35/stable" in " ".join(result.stdout.split())
    assert _changes(tmp_path, "mk1") == []


def test_kubeadm_version_bump_outside_upgrade_is_refused_before_the_repository_changes(tmp_path):
    nodes = {"cp1": ("control_plane", {"fake_kubelet_version": "v1.35.4", "ansible_host": "192.0.2.11"}),
             "gpu1": ("workers", {"fake_kubelet_version": "v1.36.3", "ansible_host": "192.0.2.21"}),
             "gpu2": ("workers", {"ansible_host": "192.0.2.22"})}
    settings = {"gpushare_kubernetes_version": "1.35", "kubeadm_packages_enabled": False, "kubeadm_cluster_enabled": False,
                "kubeadm_config_dir": str(tmp_path / "cfg")}
    result = _run(tmp_path, "kubeadm", nodes, settings)
    assert result.returncode != 0, result.stdout[-4000:]
    message = " ".join(result.stdout.split())
    assert "gpu1 runs Kubernetes v1.36.3, newer than gpushare_kubernetes_version 1.35" in message
    assert "set gpushare_kubernetes_version to 1.36" in message
    # The refusal comes before the repository step, which would have pointed the nodes at another minor.
    assert "Set up the Kubernetes package repository" not in result.stdout


# --- The upgrade entry point: the only path to another channel -------------------------------

def _upgrade(tmp_path: Path, snaps: dict, cluster: dict, group_vars: dict):
    """Run microk8s's upgrade entry point on local hosts over the kubernetes.core stand-ins'
    cluster; the snap stand-in restarts a node's kubelet there when it refreshes that node."""
    from .k8s_render import FAKE_KUBERNETES
    groups: dict = {}
    for name, (group, snap) in snaps.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(snap))
        groups.setdefault(group, {"hosts": {}})["hosts"][name] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "microk8s_node_name": name}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups, "vars": group_vars}}))
    state = tmp_path / "cluster.json"
    state.write_text(json.dumps(cluster))
    # The role runs every node's steps from the first control plane, delegated to the node
    # (loop variable __microk8s_step): the stand-ins must see that node's snap.
    node = "(__microk8s_step | default({})).get('host', inventory_hostname)"
    playbook = tmp_path / "upgrade.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Upgrade", "hosts": "all", "gather_facts": False,
        "environment": {"PATH": f"{STUBS}:{os.environ['PATH']}",
                        "FAKE_SNAP_STATE": "%s/{{ %s }}.json" % (tmp_path, node),
                        "FAKE_NODE_NAME": "{{ %s }}" % node},
        "tasks": [{"name": "Upgrade", "ansible.builtin.include_role": {"name": "gpushare.cluster.microk8s", "tasks_from": "upgrade"}}]}]))
    env = dict(os.environ, GPUSHARE_FAKE_CLUSTER=str(state), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=f"{FAKE_KUBERNETES}:{collections_dir()}",
               ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
                            env=env, capture_output=True, text=True, timeout=600, check=False)
    return result, json.loads(state.read_text())


HELD_135 = {"channel": "1.35/stable", "version": "v1.35.4", "held": True}
SNAPS = {"mk1": ("control_plane", HELD_135), "gpu1": ("workers", HELD_135), "gpu2": ("workers", HELD_135)}


def _cluster(**extra):
    return {"server_version": "v1.35.4", "pods": [], **extra, "nodes": {
        name: {"labels": {}, "kubelet_version": "v1.35.4", "heartbeat": "2026-12-06T10:00:00Z"} for name in SNAPS}}


def test_microk8s_upgrade_refreshes_the_held_snaps_one_node_at_a_time_and_waits_for_each_kubelet(tmp_path):
    result, cluster = _upgrade(tmp_path, SNAPS, _cluster(), {"gpushare_kubernetes_version": "1.36"})
    assert result.returncode == 0, result.stdout[-4000:]
    for name in SNAPS:
        assert _changes(tmp_path, name) == ["refresh --classic --channel 1.36/stable microk8s"]
        snap = json.loads((tmp_path / f"{name}.json").read_text())
        assert snap["channel"] == "1.36/stable" and snap["held"] is True  # the hold stays
        assert cluster["nodes"][name]["unschedulable"] is False
    # One node at a time: each cordoned, refreshed, back and uncordoned before the next is touched.
    drains = [(call["name"], call["state"]) for call in cluster["calls"] if call["module"] == "k8s_drain"]
    assert drains == [(name, state) for name in ("mk1", "gpu1", "gpu2") for state in ("drain", "uncordon")]
    # A second run finds every node on the channel and changes nothing.
    again, cluster = _upgrade(tmp_path, {name: (group, json.loads((tmp_path / f"{name}.json").read_text()))
                                         for name, (group, _snap) in SNAPS.items()},
                              {**_cluster(), "nodes": cluster["nodes"]}, {"gpushare_kubernetes_version": "1.36"})
    assert again.returncode == 0, again.stdout[-4000:]
    assert all(len(_changes(tmp_path, name)) == 1 for name in SNAPS)
    assert not [call for call in cluster["calls"] if call["module"] == "k8s_drain"]


def test_microk8s_upgrade_stops_at_a_node_whose_kubelet_does_not_come_back(tmp_path):
    result, cluster = _upgrade(tmp_path, SNAPS, _cluster(kubelet_stays_down=["gpu1"]),
                               {"gpushare_kubernetes_version": "1.36", "microk8s_upgrade_node_timeout": 5})
    assert result.returncode != 0
    message = " ".join(result.stdout.split())
    assert "Node gpu1 is not back after its kubelet restarted" in message
    assert "kubelet v1.35.4 (expected 1.36)" in message and "The node stays cordoned" in message
    assert cluster["nodes"]["mk1"]["unschedulable"] is False and _changes(tmp_path, "mk1")
    assert cluster["nodes"]["gpu1"]["unschedulable"] is True
    assert _changes(tmp_path, "gpu2") == [] and "unschedulable" not in cluster["nodes"]["gpu2"]  # never touched
