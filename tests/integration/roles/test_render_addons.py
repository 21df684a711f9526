# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render every add-on role with ansible-playbook on the controller only, for the plans
of the bundled inventories (built by the real planner), then check what was written:
values against the pinned charts, manifests against CRDs and Kubernetes schemas,
idempotence (a second run changes nothing) and check mode (nothing written).

The plans render in separate ansible-playbook processes started together, then the
idempotence and check-mode runs start together; the runs and what is asserted on them
are the same as one after the other."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from addon_checks import MONITORING, inventory_plan, render_alerts, validate_manifest, values_problems
from .k8s_render import collections_dir

REPO = Path(__file__).resolve().parents[3]
ROLES = ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")
PLANS = {
    "example": lambda: inventory_plan("example"),
    "multinode": lambda: inventory_plan("multinode"),
    "example-device-plugin": lambda: inventory_plan("example", backend="device_plugin"),
}


def write_playbook(tmp: Path, out: Path, names=tuple(PLANS), label: str = "") -> Path:
    """One play per plan: every role with gpushare_render_only, as plan.yml runs them."""
    plays = []
    for name in names:
        make = PLANS[name]
        plan_file = tmp / f"{name}.plan.json"
        plan_file.write_text(json.dumps(make()))
        plays.append({
            "name": f"Render the add-ons for {name}",
            "hosts": "localhost",
            "gather_facts": False,
            "vars": {
                "gpushare_plan": "{{ lookup('ansible.builtin.file', '%s') | ansible.builtin.from_json }}" % plan_file,
                "gpushare_render_dir": str(out / name),
                "gpushare_render_only": True,
                "gpushare_mirrors": {"registry": "mirror.example:5000"} if name == "multinode" else {},
            },
            "roles": [f"gpushare.cluster.{role}" for role in ROLES],
        })
    playbook = tmp / f"render-{out.name}{label}.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    return playbook


def start(tmp: Path, playbook: Path, *args: str) -> subprocess.Popen:
    """ansible-playbook started in the background (its own temp and home directories)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_LOCAL_TEMP=str(tmp / f"ansible-local-{playbook.stem}"),
               ANSIBLE_HOME=str(tmp / f"ansible-home-{playbook.stem}"))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook), *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> str:
    try:
        stdout, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    assert process.returncode == 0, stdout[-6000:] + stderr[-3000:]
    return stdout


def recap(stdout: str) -> dict:
    match = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)", stdout)
    assert match, stdout[-2000:]
    return {"ok": int(match.group(1)), "changed": int(match.group(2))}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("addons")
    out = tmp / "out"
    # every plan into its own directory: the runs are independent, so they run together
    first = {name: start(tmp, write_playbook(tmp, out, names=(name,), label=f"-first-{name}")) for name in PLANS}
    first = {name: finish(process) for name, process in first.items()}
    # the same tasks run for every plan, so one plan shows idempotence; check mode
    # writes elsewhere, so it runs alongside
    second = start(tmp, write_playbook(tmp, out, names=("example",), label="-second"))
    check = start(tmp, write_playbook(tmp, tmp / "check", names=("example",)), "--check")
    return {"out": out, "first": first, "second": finish(second), "check": finish(check), "tmp": tmp}


def test_render_writes_every_values_file_and_manifest(rendered):
    out = rendered["out"]
    for name in PLANS:
        files = sorted(str(p.relative_to(out / name)) for p in (out / name).rglob("*.yaml"))
        expected = {
            "values/gpu-operator.yaml", "values/kueue.yaml", "values/kube-prometheus-stack.yaml",
            "manifests/gpu_operator/namespace.yaml", "manifests/gpu_operator/node-labels.yaml",
            "manifests/kueue/queues.yaml", "manifests/tenancy/namespaces.yaml", "manifests/tenancy/rbac.yaml",
            "manifests/tenancy/admission.yaml", "manifests/tenancy/boundaries.yaml", "manifests/monitoring/namespace.yaml",
            "manifests/monitoring/prometheusrule.yaml", "manifests/monitoring/dashboards.yaml",
            # no StorageClass is named: the volumes come from the local-path provisioner
            "manifests/monitoring/local-path-storage.yaml",
        }
        dra = {"values/dra-driver-nvidia-gpu.yaml", "manifests/dra_driver/namespace.yaml",
               "manifests/dra_driver/deviceclasses.yaml", "manifests/dra_driver/claims.yaml",
               # dcgm-exporter may read the ResourceSlices (dra only)
               "manifests/gpu_operator/dcgm-exporter-rbac.yaml"}
        if name == "example-device-plugin":
            assert set(files) == expected, files
        else:
            assert set(files) == expected | dra, files


def test_every_role_says_it_stopped_after_render(rendered):
    for name, stdout in rendered["first"].items():
        for role in ROLES:
            assert f"{role}: render only (gpushare_render_only)" in stdout, name
        assert "kubernetes.core" not in stdout  # no apply task ran
    assert "dra_driver: the plan's backend is device_plugin; nothing to render" in rendered["first"][
        "example-device-plugin"]


def test_second_render_changes_nothing(rendered):
    for name, stdout in rendered["first"].items():
        assert recap(stdout)["changed"] > 0, name
    assert recap(rendered["second"])["changed"] == 0, rendered["second"][-3000:]
    assert "Render the add-ons for example" in rendered["second"]


def test_check_mode_writes_nothing(rendered):
    assert recap(rendered["check"])["changed"] > 0  # it reports what it would write ...
    assert "Render the add-ons for example" in rendered["check"]
    assert not (rendered["tmp"] / "check").exists()  # ... and writes nothing


def test_values_keys_exist_in_the_pinned_charts(rendered, reference_dir):
    problems = []
    checked = 0
    for values in sorted(rendered["out"].glob("*/values/*.yaml")):
        problems += values_problems(values.stem, yaml.safe_load(values.read_text()), reference_dir)
        checked += 1
    assert checked == 11
    assert not problems, "\n".join(problems)


def test_manifests_validate_against_crds_and_kubernetes_schemas(rendered, reference_dir):
    kinds = {}
    for manifest in sorted(rendered["out"].glob("*/manifests/*/*.yaml")):
        for obj in yaml.safe_load_all(manifest.read_text()):
            if obj is None:
                continue
            kinds.setdefault(validate_manifest(obj, reference_dir), set()).add(obj["kind"])
    assert {"PrometheusRule"} <= kinds["upstream CRD"]
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass"} <= kinds["kueue CRD"]
    assert {"Namespace", "Node", "ConfigMap", "DeviceClass", "ResourceClaimTemplate", "ResourceClaim", "Role",
            "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds["kubernetes schema"]


def test_rendered_files_follow_the_plan(rendered):
    out = rendered["out"]
    plan = inventory_plan("example")
    operator = yaml.safe_load((out / "example" / "values" / "gpu-operator.yaml").read_text())
    mig = yaml.safe_load(operator["migManager"]["config"]["data"]["config.yaml"])
    assert mig["mig-configs"][plan["nodes"]["gpu1"]["mig_config"]] == plan["mig_parted"]["mig-configs"][
        plan["nodes"]["gpu1"]["mig_config"]]
    assert operator["devicePlugin"]["enabled"] is False
    dra = yaml.safe_load((out / "example" / "values" / "dra-driver-nvidia-gpu.yaml").read_text())
    assert dra["featureGates"]["TimeSlicingSettings"] == any(
        "TimeSlicing" in json.dumps(o) for o in plan["objects"] if o["kind"] in ("ResourceClaim", "ResourceClaimTemplate"))
    kueue = yaml.safe_load((out / "example" / "values" / "kueue.yaml").read_text())
    config = yaml.safe_load(kueue["managerConfig"]["controllerManagerConfigYaml"])
    assert config["resources"]["deviceClassMappings"] == plan["kueue_configuration"]["resources"]["deviceClassMappings"]
    queues = list(yaml.safe_load_all((out / "example" / "manifests" / "kueue" / "queues.yaml").read_text()))
    for kind in ("ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass"):
        assert [q for q in queues if q["kind"] == kind] == [o for o in plan["objects"] if o["kind"] == kind]
    kinds = [q["kind"] for q in queues]
    assert kinds.index("ClusterQueue") > kinds.index("ResourceFlavor") and kinds[-1] == "LocalQueue"
    # device_plugin: the plan's sharing configs become the device plugin's named configs
    plan_dp = inventory_plan("example", backend="device_plugin")
    operator_dp = yaml.safe_load((out / "example-device-plugin" / "values" / "gpu-operator.yaml").read_text())
    data = operator_dp["devicePlugin"]["config"]["data"]
    assert {name: yaml.safe_load(text) for name, text in data.items() if name in plan_dp["device_plugin_configs"]} == \
        plan_dp["device_plugin_configs"]
    assert operator_dp["devicePlugin"]["config"]["default"] in data


def test_mirrors_replace_every_image_registry(rendered):
    for values in (rendered["out"] / "multinode" / "values").glob("*.yaml"):
        text = values.read_text()
        for upstream in ("nvcr.io", "registry.k8s.io", "quay.io", "docker.io", "ghcr.io"):
            assert f"{upstream}/" not in text, f"{values.name} still pulls from {upstream}"
    local_path = (rendered["out"] / "multinode" / "manifests" / "monitoring" / "local-path-storage.yaml").read_text()
    assert "image: mirror.example:5000/rancher/local-path-provisioner:v0.0.37" in local_path
    assert "image: mirror.example:5000/library/busybox:1.37.0" in local_path
    assert "mirror.example:5000/nvidia/k8s" in (rendered["out"] / "multinode" / "values" / "gpu-operator.yaml").read_text()


def test_no_secret_is_rendered(rendered):
    for path in rendered["out"].rglob("*.yaml"):
        for obj in yaml.safe_load_all(path.read_text()):
            assert not obj or obj.get("kind") != "Secret", path


def test_prometheus_rule_holds_the_recording_rules_and_the_alerts_at_default_thresholds(rendered):
    """What promtool tests (recording rules + alerts rendered by Jinja2 with the defaults)
    is what the role writes through Ansible's template lookup."""
    recording = yaml.safe_load((MONITORING / "files" / "rules" / "gpushare.rules.yml").read_text())["groups"]
    alerts = yaml.safe_load(render_alerts())["groups"]
    for name in PLANS:
        rule = yaml.safe_load((rendered["out"] / name / "manifests" / "monitoring" / "prometheusrule.yaml").read_text())
        assert rule["spec"]["groups"] == recording + alerts, name
    assert [a["for"] for a in alerts[0]["rules"] if a["alert"] == "GpushareGPUAllocatedIdle"] == ["3h"]


def test_kube_state_metrics_exports_every_label_the_rules_read(rendered):
    """The rules join namespaces to teams through label_gpushare_io_team and read the MIG
    state through label_nvidia_com_mig_config_state: kube-state-metrics only exports
    labels its allowlist names (with the name sanitised to [a-zA-Z0-9_])."""
    for name in PLANS:
        values = yaml.safe_load((rendered["out"] / name / "values" / "kube-prometheus-stack.yaml").read_text())
        allowlist = values["kube-state-metrics"]["metricLabelsAllowlist"]
        assert "namespaces=[gpushare.io/team]" in allowlist, name
        allowed = {}
        for entry in allowlist:
            resource, labels = re.fullmatch(r"(\w+)=\[(.*)\]", entry).groups()
            allowed[resource] = {re.sub(r"[^a-zA-Z0-9_]", "_", "label_" + label) for label in labels.split(",")}
        rule = yaml.safe_load((rendered["out"] / name / "manifests" / "monitoring" / "prometheusrule.yaml").read_text())
        used = {"namespaces": set(), "nodes": set()}
        for group in rule["spec"]["groups"]:
            for entry in group["rules"]:
                for metric, resource in (("kube_namespace_labels", "namespaces"), ("kube_node_labels", "nodes")):
                    for matchers in re.findall(metric + r"\{([^}]*)\}", entry["expr"]):
                        used[resource] |= set(re.findall(r"(label_\w+)\s*[!=~]", matchers))
                    if metric in entry["expr"]:
                        used[resource] |= set(re.findall(r'"(label_\w+)"', entry["expr"]))
        assert used["namespaces"] == {"label_gpushare_io_team"}
        assert used["nodes"] == {"label_nvidia_com_mig_config_state"}
        for resource, labels in used.items():
            assert labels <= allowed.get(resource, set()), (name, resource, labels)
