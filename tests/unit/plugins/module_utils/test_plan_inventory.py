# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_inventory, the one validation plan.yml and site.yml share, on the corpus of mistaken
inventories read as Ansible reads them (tests/fixtures/mistaken_inventories)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import (
    CLUSTER_SETTINGS, CONTROLLER_VARIABLES, HOST_VARIABLES, REQUIRED, PlanError, plan_inventory)

import mistakes  # tests/support


# Cases of layer settings need the role defaults the playbooks read (README.md of the corpus).
CASES = [case for case in mistakes.load_cases() if not case.get("layer")]
COMPOSABLE = [case for case in CASES if case.get("compose")]


def inputs(cases, tmp):
    inventory = Path(tempfile.mkdtemp(dir=str(tmp))) / "inventory"
    return mistakes.ansible_inputs(mistakes.build(cases, inventory), HOST_VARIABLES, CONTROLLER_VARIABLES)


def errors_of(cases, tmp, discovery_pending=False):
    controller, hosts, groups = inputs(cases, tmp)
    with pytest.raises(PlanError) as raised:
        plan_inventory(controller, hosts, groups, discovery_pending=discovery_pending)
    return raised.value.errors


def test_the_example_inventory_plans(tmp_path):
    controller, hosts, groups = inputs([], tmp_path)
    plan = plan_inventory(controller, hosts, groups)
    assert (plan["distribution"], plan["kubernetes_version"], plan["backend"]) == ("microk8s", "1.35", "dra")
    assert plan["nodes"]["gpu1"]["node_name"] == "gpu1"
    assert plan_inventory(controller, hosts, groups, discovery_pending=True) is None


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_every_mistake_is_reported(case, tmp_path):
    errors = errors_of([case], tmp_path)
    assert not mistakes.missing(case["errors"], errors), errors


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_the_check_before_discovery_reports_the_same(case, tmp_path):
    """site.yml checks before it contacts a host: with every model named, it is the whole check."""
    assert errors_of([case], tmp_path, discovery_pending=True) == errors_of([case], tmp_path)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(COMPOSABLE), min_size=2, max_size=len(COMPOSABLE), unique_by=lambda c: c["id"]))
def test_mistakes_together_are_all_reported_in_one_run(chosen):
    with tempfile.TemporaryDirectory() as tmp:
        errors = errors_of(chosen, tmp)
    expected = [text for case in chosen for text in case["errors"]]
    assert not mistakes.missing(expected, errors), errors


def test_a_model_left_out_waits_for_discovery_only_before_it(tmp_path):
    case = {"files": {"host_vars/gpu1.yml": {"gpushare_gpus": [{"index": 0, "team": "production", "use": "whole"}]}}}
    controller, hosts, groups = inputs([case], tmp_path)
    assert plan_inventory(controller, hosts, groups, discovery_pending=True) is None
    # Before discovery, the rest of the entry is still checked.
    case["files"]["host_vars/gpu1.yml"]["gpushare_gpus"].append({"index": 1, "team": "nobody", "use": "whole",
                                                                 "model": "L4"})
    controller, hosts, groups = inputs([case], tmp_path)
    with pytest.raises(PlanError) as raised:
        plan_inventory(controller, hosts, groups, discovery_pending=True)
    assert raised.value.errors == ["host gpu1, GPU 1, field team: unknown team 'nobody' (teams: production, data, "
                                   "training)"]
    case["files"]["host_vars/gpu1.yml"]["gpushare_gpus"].pop()
    controller, hosts, groups = inputs([case], tmp_path)
    with pytest.raises(PlanError) as raised:
        plan_inventory(controller, hosts, groups)
    assert raised.value.errors == ["host gpu1, GPU 0, field model: not set and no gpu_facts for this host to discover it"]


def test_node_names_are_those_kubernetes_registers(tmp_path):
    case = {"files": {"hosts.yml": {"all": {"children": {
        "control_plane": {"hosts": {"GPU1.Example.COM": {"ansible_host": "192.0.2.10"}}},
        "workers": {"hosts": {"GPU1.Example.COM": None, "node2": {"kubernetes_common_node_name": "rack2-node2"}}}}}},
        "host_vars/GPU1.Example.COM.yml": {"gpushare_gpus": [
            {"index": 0, "model": "L40S", "team": "production", "use": "whole"}]},
        "host_vars/node2.yml": {"gpushare_gpus": [{"index": 0, "model": "L40S", "team": "data", "use": "whole"}]}}}
    controller, hosts, groups = inputs([case], tmp_path)
    plan = plan_inventory(controller, hosts, groups)
    assert {host: node["node_name"] for host, node in plan["nodes"].items()} == {
        "GPU1.Example.COM": "gpu1", "node2": "rack2-node2"}


def test_one_home_of_the_defaults_agrees_with_the_modules_and_the_docs():
    import yaml
    from ansible_collections.gpushare.cluster.plugins.doc_fragments.plan_inputs import ModuleDocFragment
    fragment = {**yaml.safe_load(ModuleDocFragment.SHARING)["options"], **yaml.safe_load(ModuleDocFragment.CLUSTER)["options"]}
    doc = (Path(__file__).resolve().parents[4] / "docs" / "inventory.md").read_text(encoding="utf-8")
    for variable, (option, default) in CLUSTER_SETTINGS.items():
        if default is REQUIRED:
            assert fragment[option].get("required") is True and "default" not in fragment[option], option
            assert "| `%s` |" % variable in doc.split("## Required", 1)[1].split("##", 1)[0], variable
        else:
            assert fragment[option]["default"] == default, option
            assert "| `%s` | `%s` |" % (variable, default) in doc, variable
