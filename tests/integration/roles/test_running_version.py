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
