# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PlanError, build_plan, team_quotas

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
PLAN_KEYS = {"version", "backend", "distribution", "kubernetes_version", "cohort", "nodes", "mig_parted",
             "device_plugin_configs", "teams", "objects", "kueue_configuration", "oidc", "warnings"}


def load(name):
    return yaml.safe_load((FIXTURES / name).read_text())


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_plan_has_the_agreed_shape_and_is_json(backend):
    data = load("four_gpu_example.yml")
    plan = build_plan(data["gpushare_teams"], data["nodes"], backend=backend, distribution="kubeadm",
                      kubernetes_version="1.36")
    assert set(plan) == PLAN_KEYS
    assert (plan["version"], plan["backend"], plan["distribution"], plan["kubernetes_version"], plan["cohort"]) == (
        1, backend, "kubeadm", "1.36", "gpushare")
    assert json.loads(json.dumps(plan)) == plan
    node = plan["nodes"]["gpu1"]
    assert set(node) == {"node_name", "gpus", "mig_config", "device_plugin_config", "labels"}
    for gpu in node["gpus"]:
        assert {"index", "model", "use", "team", "mig_enabled", "instances", "resources"} <= set(gpu)
    assert node["gpus"][2]["replicas"] == 5
    # Every config a node label names is in the plan.
    assert node["mig_config"] in plan["mig_parted"]["mig-configs"]
    assert plan["mig_parted"]["version"] == "v1"
    if backend == "device_plugin":
        assert node["device_plugin_config"] in plan["device_plugin_configs"]
    else:
        assert node["device_plugin_config"] is None and plan["device_plugin_configs"] == {}
    team = plan["teams"]["production"]
    assert {"namespaces", "priority", "group", "capacity", "borrowing_limit", "lending_limit", "reclaim"} <= set(team)


def test_settings_are_checked_together_with_the_inventory():
    data = load("four_gpu_example.yml")
    data["nodes"]["gpu1"][0]["team"] = "nobody"
    with pytest.raises(PlanError) as caught:
        build_plan(data["gpushare_teams"], data["nodes"], distribution="k3s", kubernetes_version="1.30", cohort="Pool")
    assert [e.split(":")[0] for e in caught.value.errors] == [
        "gpushare_kubernetes_distribution", "gpushare_kubernetes_version", "cohort", "host gpu1, GPU 0, field team"]
    with pytest.raises(PlanError, match="gpushare_gpu_backend: must be one of dra, device_plugin"):
        build_plan(data["gpushare_teams"], {}, backend="cdi")


def test_mig_layout_errors_are_collected_with_the_rest():
    teams = [{"name": "a", "namespaces": ["a"], "priority": 1}]
    nodes = {"n1": [{"index": 0, "model": "A100-40GB", "team": "a", "use": "mig",
                     "mig": {"instances": [{"name": "big", "memory": "60GiB"}]}}],
             "n2": [{"index": 0, "model": "L4", "team": "ghost", "use": "whole"}]}
    with pytest.raises(PlanError) as caught:
        build_plan(teams, nodes)
    assert len(caught.value.errors) == 2
    assert caught.value.errors[0].startswith("host n2, GPU 0, field team")
    assert "host n1" in caught.value.errors[1] and "GPU 0" in caught.value.errors[1]


def test_team_quotas_contract():
    data = load("four_gpu_example.yml")
    result = team_quotas(data["gpushare_teams"], data["nodes"], backend="device_plugin", cohort="pool")
    assert set(result) == {"capacity", "objects", "kueue_configuration", "warnings"}
    assert result["capacity"]["training"] == {"nvidia.com/gpu": 1}
    contract_kinds = {"Namespace", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    assert {o["kind"] for o in result["objects"]} >= contract_kinds
    assert [o["metadata"]["name"] for o in result["objects"] if o["kind"] == "Cohort"] == ["pool"]
    assert "deviceClassMappings" not in result["kueue_configuration"]["resources"]


def test_plans_are_deterministic():
    data = load("fleet_device_plugin.yml")
    first = build_plan(data["gpushare_teams"], data["nodes"], backend="device_plugin")
    second = build_plan(data["gpushare_teams"], dict(reversed(list(data["nodes"].items()))), backend="device_plugin")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
