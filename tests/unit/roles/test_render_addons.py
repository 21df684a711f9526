# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render every add-on role with ansible-playbook on the controller only, for the plans
of the bundled inventories (built by the real planner), then check what was written:
values against the pinned charts, manifests against CRDs and Kubernetes schemas,
idempotence (a second run changes nothing) and check mode (nothing written)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .addon_checks import inventory_plan, validate_manifest, values_problems

REPO = Path(__file__).resolve().parents[3]
ROLES = ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")
PLANS = {
    "example": lambda: inventory_plan("example"),
    "multinode": lambda: inventory_plan("multinode"),
    "example-device-plugin": lambda: inventory_plan("example", backend="device_plugin"),
}


def collections_dir() -> str:
    for entry in sys.path:
        if (Path(entry) / "ansible_collections" / "gpushare" / "cluster").exists():
            return entry
    raise RuntimeError("ansible_collections/gpushare/cluster is not on sys.path")


def write_playbook(tmp: Path, out: Path, names=tuple(PLANS)) -> Path:
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
    playbook = tmp / f"render-{out.name}.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    return playbook


def run(tmp: Path, playbook: Path, *args: str) -> str:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-local"), ANSIBLE_HOME=str(tmp / "ansible-home"))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook), *args]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return result.stdout


def recap(stdout: str) -> dict:
    match = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)", stdout)
    assert match, stdout[-2000:]
    return {"ok": int(match.group(1)), "changed": int(match.group(2))}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("addons")
    out = tmp / "out"
    playbook = write_playbook(tmp, out)
    first = run(tmp, playbook)
    # the same tasks run for every plan, so one plan shows idempotence
    second = run(tmp, write_playbook(tmp, out, names=("example",)))
    return {"out": out, "first": first, "second": second, "tmp": tmp}


def test_render_writes_every_values_file_and_manifest(rendered):
    out = rendered["out"]
    for name in PLANS:
        files = sorted(str(p.relative_to(out / name)) for p in (out / name).rglob("*.yaml"))
        expected = {
            "values/gpu-operator.yaml", "values/kueue.yaml", "values/kube-prometheus-stack.yaml",
            "manifests/gpu_operator/namespace.yaml", "manifests/gpu_operator/node-labels.yaml",
            "manifests/kueue/queues.yaml", "manifests/tenancy/namespaces.yaml", "manifests/tenancy/rbac.yaml",
            "manifests/tenancy/admission.yaml", "manifests/monitoring/namespace.yaml",
            "manifests/monitoring/prometheusrule.yaml", "manifests/monitoring/dashboards.yaml",
        }
        dra = {"values/dra-driver-nvidia-gpu.yaml", "manifests/dra_driver/namespace.yaml",
               "manifests/dra_driver/deviceclasses.yaml", "manifests/dra_driver/claims.yaml"}
        if name == "example-device-plugin":
            assert set(files) == expected, files
        else:
            assert set(files) == expected | dra, files


def test_every_role_says_it_stopped_after_render(rendered):
    for role in ROLES:
        assert f"{role}: render only (gpushare_render_only)" in rendered["first"]
    assert "dra_driver: the plan's backend is device_plugin; nothing to render" in rendered["first"]
    assert "kubernetes.core" not in rendered["first"]  # no apply task ran


def test_second_render_changes_nothing(rendered):
    assert recap(rendered["first"])["changed"] > 0
    assert recap(rendered["second"])["changed"] == 0, rendered["second"][-3000:]
    assert "Render the add-ons for example" in rendered["second"]


def test_check_mode_writes_nothing(rendered):
    tmp = rendered["tmp"]
    out = tmp / "check"
    stdout = run(tmp, write_playbook(tmp, out, names=("example",)), "--check")
    assert recap(stdout)["changed"] > 0  # it reports what it would write ...
    assert not out.exists()  # ... and writes nothing


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
    assert "mirror.example:5000/nvidia/k8s" in (rendered["out"] / "multinode" / "values" / "gpu-operator.yaml").read_text()


def test_no_secret_is_rendered(rendered):
    for path in rendered["out"].rglob("*.yaml"):
        for obj in yaml.safe_load_all(path.read_text()):
            assert not obj or obj.get("kind") != "Secret", path
