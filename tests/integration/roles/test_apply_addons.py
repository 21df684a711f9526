# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The add-on roles' apply steps, run by ansible-playbook against stand-ins of the
kubernetes.core modules (tests/fixtures/addons/fake_kubernetes), which keep a small
cluster in a JSON file and record every call.

What this proves: apply uses only kubernetes.core modules, installs each chart from the
rendered values file, applies every object of the plan, keeps the Grafana password out of
the output, and every wait fails with a message naming what was not ready. What it does
not prove: that the charts install on a real cluster (no API server here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from addon_checks import inventory_plan
from .k8s_render import collections_dir

FAKE = Path(__file__).resolve().parents[2] / "fixtures" / "addons" / "fake_kubernetes"
# The helm stand-in for `helm show crds` (kubernetes.core.helm has its own stand-in in FAKE).
FAKE_HELM_BIN = Path(__file__).resolve().parents[2] / "fixtures" / "addons" / "bin"
# The CRDs each chart ships in its crds/ directories at the pinned version (the names only; the
# rehearsal test test_chart_crds.py applies the real upstream files to a real API server).
CHART_CRDS = {
    "gpu-operator": ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"],
    "dra-driver-nvidia-gpu": ["computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com"],
    "kube-prometheus-stack": ["servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"],
}


def chart_crds(directory: Path) -> Path:
    """A $FAKE_HELM_CRDS tree: one minimal CRD file per name in CHART_CRDS, per chart."""
    for chart, names in CHART_CRDS.items():
        (directory / chart).mkdir(parents=True, exist_ok=True)
        for name in names:
            plural, group = name.split(".", 1)
            (directory / chart / f"{name}.yaml").write_text(yaml.safe_dump({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {"group": group, "scope": "Namespaced",
                         "names": {"plural": plural, "kind": plural.capitalize()[:-1]},
                         "versions": [{"name": "v1", "served": True, "storage": True,
                                       "schema": {"openAPIV3Schema": {"type": "object"}}}]}}))
    return directory


ROLES = ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")
PASSWORD = "grafana-s3cret-for-the-test"


def apply(tmp: Path, roles, cluster_state: dict, extra_vars: dict | None = None):
    plan_file = tmp / "plan.json"
    plan_file.write_text(json.dumps(inventory_plan("example")))
    state = tmp / "cluster.json"
    state.write_text(json.dumps(cluster_state))
    playbook = tmp / "apply.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Apply the add-ons",
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {"gpushare_plan": "{{ lookup('ansible.builtin.file', '%s') | ansible.builtin.from_json }}" % plan_file,
                 "gpushare_render_dir": str(tmp / "out"), "gpushare_render_only": False,
                 "monitoring_grafana_admin_password": PASSWORD, **(extra_vars or {})},
        "roles": [f"gpushare.cluster.{role}" for role in roles],
    }]))
    env = dict(os.environ, GPUSHARE_FAKE_CLUSTER=str(state), ANSIBLE_NOCOLOR="1",
               PATH=f"{FAKE_HELM_BIN}:{os.environ['PATH']}", FAKE_HELM_CRDS=str(chart_crds(tmp / "chart-crds")),
               ANSIBLE_COLLECTIONS_PATH=f"{FAKE}:{collections_dir()}",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_HOME=str(tmp / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-local"))
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-v", str(playbook)], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    return result, json.loads(state.read_text())


def published_devices(plan):
    """What the DRA driver publishes per node once the plan's layout is in place: one ``gpu``
    device per GPU with MIG off, one ``mig`` device of its profile per MIG instance."""
    return {node.get("node_name", host): {
        "gpu": sum(1 for gpu in node["gpus"] if not gpu.get("mig_enabled")),
        "mig": [instance["profile"] for gpu in node["gpus"] if gpu.get("mig_enabled") for instance in gpu["instances"]]}
        for host, node in plan["nodes"].items()}


def fresh_cluster(**changes):
    # The API server serves resource.k8s.io/v1beta1 as docs/monitoring.md asks under dra.
    state = {"nodes": {"gpu1": {"labels": {}}}, "pods": [], "mig_result": {"gpu1": "success"}, "logs": {},
             "slice_nodes": ["gpu1"], "slice_devices": published_devices(inventory_plan("example")),
             "crds": [], "calls": [],
             "served_api_versions": ["resource.k8s.io/v1", "resource.k8s.io/v1beta1"]}
    state.update(changes)
    return state


def _crd_applies(state):
    """(index in the calls, CRD names) of each server-side apply of CRDs."""
    return [(i, [o["metadata"]["name"] for o in c["definition"]]) for i, c in enumerate(state["calls"])
            if c["module"] == "k8s" and c.get("server_side_apply") and isinstance(c.get("definition"), list)]


def test_apply_installs_every_chart_and_object_of_the_plan(tmp_path):
    result, state = apply(tmp_path, ROLES, fresh_cluster())
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    releases = state["releases"]
    assert releases["gpu-operator"]["chart"] == "gpu-operator" and releases["gpu-operator"]["version"] == "v26.7.0"
    assert releases["dra-driver-nvidia-gpu"]["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert releases["kueue"]["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert releases["kube-prometheus-stack"]["version"] == "88.5.3"
    # fresh cluster without the prometheus-operator CRDs: Kueue goes in without its ServiceMonitor,
    # and the monitoring role, once it has installed the CRDs, upgrades the release with it: the
    # first run is complete (before, a second run was needed).
    assert "the ServiceMonitor CRD is not installed yet" in result.stdout
    assert state["helm_installs"] == ["gpu-operator", "dra-driver-nvidia-gpu", "kueue", "kube-prometheus-stack", "kueue"]
    assert releases["kueue"]["set_values"] is None
    # dcgm-exporter may read the DRA ResourceSlices (the plan's backend is dra)
    assert ("ClusterRole", "gpushare-dcgm-exporter-dra") in {(o["kind"], o["name"]) for o in state["applied"]}
    applied = {(o["kind"], o["name"]) for o in state["applied"]}
    plan = inventory_plan("example")
    assert {(o["kind"], o["metadata"]["name"]) for o in plan["objects"]} <= applied
    assert {("PrometheusRule", "gpushare"), ("ConfigMap", "gpushare-dashboard-teams"), ("Secret", "grafana-admin")} <= applied
    # the password reaches the Secret and nothing else
    assert state["secrets"]["grafana-admin"] == {"admin-user": "admin", "admin-password": PASSWORD}
    assert PASSWORD not in result.stdout + result.stderr
    # the GPU node got the plan's labels after the operator was ready
    assert plan["nodes"]["gpu1"]["labels"].items() <= state["nodes"]["gpu1"]["labels"].items()
    modules = [c["module"] for c in state["calls"]]
    assert set(modules) <= {"helm", "helm_info", "k8s", "k8s_info", "k8s_list", "k8s_drain", "k8s_log"}
    first_label = next(i for i, c in enumerate(state["calls"]) if c.get("state") == "patched")
    policy_read = next(i for i, c in enumerate(state["calls"]) if c.get("kind") == "ClusterPolicy")
    assert policy_read < first_label
    # Each chart's CRDs go in server-side before its own release (Helm never upgrades them);
    # Kueue's chart keeps its CRDs in templates/, which Helm upgrades itself: nothing first.
    applies = _crd_applies(state)
    helm_calls = {c["name"]: i for i, c in enumerate(state["calls"]) if c["module"] == "helm"}
    for chart in ("gpu-operator", "dra-driver-nvidia-gpu", "kube-prometheus-stack"):
        index = next(i for i, names in applies if names == sorted(CHART_CRDS[chart]))
        assert index < helm_calls[chart], (chart, index, helm_calls[chart])
    assert len(applies) == 3, applies
    call = state["calls"][applies[0][0]]
    assert call["server_side_apply"] == {"field_manager": "gpushare", "force_conflicts": True}
    assert call["apply"] is True and call["wait_condition"] == {"type": "Established", "status": "True"}
    assert {n for names in CHART_CRDS.values() for n in names} <= set(state["crds"])
    shown = (tmp_path / "chart-crds" / "calls.log").read_text().splitlines()
    assert "show crds gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version v26.7.0" in shown
    assert "show crds oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu --version v0.4.1" in shown


def test_monitoring_leaves_a_kueue_release_that_has_its_service_monitor_alone(tmp_path):
    result, state = apply(tmp_path, ("kueue", "monitoring"), fresh_cluster(crds=["servicemonitors.monitoring.coreos.com"]))
    assert result.returncode == 0, result.stdout[-4000:]
    assert state["helm_installs"] == ["kueue", "kube-prometheus-stack"]


def test_monitoring_without_kueue_installs_no_kueue(tmp_path):
    result, state = apply(tmp_path, ("monitoring",), fresh_cluster())
    assert result.returncode == 0, result.stdout[-4000:]
    assert state["helm_installs"] == ["kube-prometheus-stack"]


def test_gpu_operator_stops_before_the_chart_when_dcgm_exporter_could_not_watch_resource_slices(tmp_path):
    cluster = fresh_cluster(served_api_versions=["resource.k8s.io/v1"])  # Kubernetes 1.34+ defaults
    result, state = apply(tmp_path, ("gpu_operator",), cluster)
    assert result.returncode != 0
    assert "through resource.k8s.io/v1beta1, and this API server does not serve that version" in " ".join(
        result.stdout.split()), result.stdout[-3000:]
    assert "gpu-operator" not in state.get("releases", {})
    # The second run also leaves the chart's CRDs to the site (gpu_operator_apply_crds: false).
    second = {"gpu_operator_dcgm_dra_attribution": False, "gpu_operator_apply_crds": False}
    result, state = apply(tmp_path, ("gpu_operator",), cluster, second)
    assert result.returncode == 0, result.stdout[-4000:]
    assert ("ClusterRole", "gpushare-dcgm-exporter-dra") not in {(o["kind"], o["name"]) for o in state.get("applied", [])}
    assert not _crd_applies(state) and not (tmp_path / "chart-crds" / "calls.log").exists()
    assert "gpu-operator" in state["releases"]


def test_apply_with_monitoring_first_keeps_the_kueue_service_monitor(tmp_path):
    result, state = apply(tmp_path, ("kueue",), fresh_cluster(crds=["servicemonitors.monitoring.coreos.com"]))
    assert result.returncode == 0, result.stdout[-4000:]
    assert state["releases"]["kueue"]["set_values"] is None


@pytest.mark.parametrize("role, cluster, extra, message", [
    ("gpu_operator", {"cluster_policy_state": "notReady"}, {"gpu_operator_wait_timeout": 1},
     "GPU Operator not ready after 1 s: ClusterPolicy cluster-policy has state 'notReady'"),
    ("dra_driver", {"slice_nodes": []}, {"dra_driver_wait_timeout": 1},
     "DRA driver not ready after 1 s: no gpu.nvidia.com ResourceSlice from gpu1"),
    ("kueue", {"inactive_queues": {"data": "flavor rtx-pro-6000-whole not found"}}, {"kueue_wait_timeout": 1},
     "ClusterQueues not active: data (flavor rtx-pro-6000-whole not found)"),
], ids=["gpu_operator", "dra_driver", "kueue"])
def test_waits_fail_naming_what_is_not_ready(tmp_path, role, cluster, extra, message):
    result, _cluster = apply(tmp_path, (role,), fresh_cluster(**cluster), extra)
    assert result.returncode != 0
    assert message in " ".join(result.stdout.split()), result.stdout[-3000:]
