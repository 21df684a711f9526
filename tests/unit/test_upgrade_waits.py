"""The rolling upgrades wait for each node with the node_back step, between the kubelet's restart
and the uncordon: a Ready-only wait passes at once on the old kubelet's condition. The step
itself runs against the rehearsal's API server (tests/integration/rehearsal/test_node_back.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"


def _steps(role):
    tasks = yaml.safe_load((ROLES / role / "tasks" / "upgrade_node.yml").read_text())
    block = next(task["block"] for task in tasks if "block" in task)
    return block


@pytest.mark.parametrize("role, restart", [("kubeadm", "Restart the kubelet"), ("microk8s", "Refresh MicroK8s to the new channel")])
def test_the_roll_waits_for_the_new_kubelet_before_the_uncordon(role, restart):
    steps = _steps(role)
    names = [step["name"] for step in steps]
    waits = [i for i, step in enumerate(steps)
             if (step.get("ansible.builtin.include_role") or {}).get("tasks_from") == "node_back"
             and step["ansible.builtin.include_role"]["name"] == "gpushare.cluster.kubernetes_steps"]
    assert len(waits) == 1, names
    wait = steps[waits[0]]
    assert names.index(restart) < waits[0] < names.index("Uncordon the node"), names
    # The node as read before the restart: its heartbeat is the one to see renewed.
    assert wait["vars"]["kubernetes_steps_node_before"]
    # No other wait on the Ready condition alone.
    assert not [step for step in steps if "wait_condition" in (step.get("kubernetes.core.k8s_info") or {})]
