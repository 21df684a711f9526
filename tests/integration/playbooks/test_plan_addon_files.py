# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan.yml writes the add-on files the roles write, byte for byte, with the same settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import runner  # tests/support


EXAMPLE = runner.REPO_ROOT / "inventories" / "example"
ROLES = ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")
# Role variables set the way users set them (extra vars here); both paths must honour them.
OVERRIDES = {
    "kueue_frameworks": ["batch/job", "pod"],
    "kueue_service_monitor": "no",  # a string, converted as the role's argument spec says
    "monitoring_retention": "90d",
    "monitoring_alert_gpu_idle_hours": 6,
    "gpu_operator_namespace": "nvidia-gpu",
    "gpushare_mirrors": {"registry": "mirror.example:5000"},
}


def _files(root: Path) -> dict:
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*")
            if path.is_file() and path.parts[len(root.parts)] in ("values", "manifests")
            and "examples" not in path.parts}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan-addons")
    overrides = tmp / "overrides.json"
    overrides.write_text(json.dumps(OVERRIDES), encoding="utf-8")
    plan_dir = tmp / "plan"
    planned = runner.run_plan_playbook(EXAMPLE, plan_dir, "-e", "@%s" % overrides)
    assert planned.returncode == 0, planned.stdout[-4000:] + planned.stderr[-3000:]

    # The roles' own render step, on the same plan set as the gpushare_plan fact (as the
    # preflight of site.yml sets it).
    playbook = tmp / "render.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Render every add-on role",
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {"gpushare_render_dir": str(tmp / "roles"), "gpushare_render_only": True},
        # plan_report reads the teams and settings from the inventory itself.
        "pre_tasks": [{"name": "Plan", "gpushare.cluster.plan_report": {"write": False}}],
        "roles": ["gpushare.cluster.%s" % role for role in ROLES],
    }], sort_keys=False), encoding="utf-8")
    rendered = runner.ansible_playbook("-i", str(EXAMPLE), str(playbook), *runner.DEMO_VAULT_ARGS, "-e", "@%s" % overrides)
    assert rendered.returncode == 0, rendered.stdout[-4000:] + rendered.stderr[-3000:]
    return _files(plan_dir), _files(tmp / "roles")


def test_plan_and_roles_write_the_same_bytes(both):
    planned, rendered = both
    assert sorted(planned) == sorted(rendered)
    # the example is dra (with the dcgm-exporter ClusterRole) and names no StorageClass (with the
    # local-path provisioner)
    assert len(planned) == 19
    for name, content in planned.items():
        assert content == rendered[name], name


def test_role_variables_reach_the_rendered_files(both):
    planned, _rendered = both
    kueue = yaml.safe_load(planned["values/kueue.yaml"])
    config = yaml.safe_load(kueue["managerConfig"]["controllerManagerConfigYaml"])
    assert config["integrations"]["frameworks"] == ["batch/job", "pod"]
    assert kueue["enablePrometheus"] is False
    monitoring = yaml.safe_load(planned["values/kube-prometheus-stack.yaml"])
    assert monitoring["prometheus"]["prometheusSpec"]["retention"] == "90d"
    rule = yaml.safe_load(planned["manifests/monitoring/prometheusrule.yaml"])
    idle = [r for group in rule["spec"]["groups"] for r in group["rules"] if r.get("alert") == "GpushareGPUAllocatedIdle"]
    assert idle and idle[0]["for"] == "6h"
    namespace = yaml.safe_load(planned["manifests/gpu_operator/namespace.yaml"])
    assert namespace["metadata"]["name"] == "nvidia-gpu"
    assert b"mirror.example:5000" in planned["values/gpu-operator.yaml"]


def test_a_setting_of_the_wrong_type_fails_naming_it_and_writes_nothing(tmp_path):
    plan_dir = tmp_path / "plan"
    result = runner.run_plan_playbook(EXAMPLE, plan_dir, "-e", '{"kueue_service_monitor": "sometimes"}')
    assert result.returncode != 0
    assert "kueue_service_monitor" in result.stdout + result.stderr
    assert not plan_dir.exists()


def test_render_addon_reports_a_diff_then_nothing(tmp_path):
    playbook = tmp_path / "render.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Render Kueue twice",
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            {"name": "Plan", "gpushare.cluster.plan_report": {"write": False}},
            {"name": "Write", "gpushare.cluster.render_addon": {
                "addon": "kueue", "plan": "{{ gpushare_plan }}", "dest": str(tmp_path / "out")},
             "register": "written"},
            {"name": "Show", "ansible.builtin.debug": {"msg": "CHANGED={{ written.changed_files | join(',') }}"}},
        ],
    }], sort_keys=False), encoding="utf-8")
    first = runner.ansible_playbook("-i", str(EXAMPLE), str(playbook), *runner.DEMO_VAULT_ARGS, "--diff")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-3000:]
    assert "CHANGED=values/kueue.yaml,manifests/kueue/queues.yaml" in first.stdout
    assert "+++ after: manifests/kueue/queues.yaml" in first.stdout
    assert "+kind: ClusterQueue" in first.stdout
    again = runner.ansible_playbook("-i", str(EXAMPLE), str(playbook), *runner.DEMO_VAULT_ARGS, "--diff")
    assert again.returncode == 0
    assert '"msg": "CHANGED="' in again.stdout
    assert "changed=0" in again.stdout
