# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import (
    normalise_inventory,
)
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PlanError, build_plan

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
TEAMS = [{"name": "a", "namespaces": ["a"], "priority": 10}, {"name": "b", "namespaces": ["b"], "priority": 5}]


def load(name):
    return yaml.safe_load((FIXTURES / name).read_text())


def test_count_shorthand_takes_the_indexes_right_after_the_entry_before_it():
    inventory, errors = normalise_inventory(TEAMS, {"n1": [
        {"count": 2, "model": "h100-80gb", "team": "b", "use": "whole"},
        {"index": 4, "model": "L4", "team": "a", "use": "whole"},
        {"count": 2, "model": "h100-80gb", "team": "b", "use": "whole"},
    ]})
    assert errors == []
    gpus = inventory.nodes["n1"]
    assert [(g.index, g.model, g.team) for g in gpus] == [
        (0, "H100-80GB", "b"), (1, "H100-80GB", "b"), (4, "L4", "a"), (5, "H100-80GB", "b"), (6, "H100-80GB", "b")]


def test_an_index_taken_by_a_count_is_refused_not_renumbered():
    errors = normalise_inventory(TEAMS, {"n1": [
        {"count": 4, "model": "L4", "team": "a", "use": "whole"},
        {"index": 2, "model": "L4", "team": "b", "use": "whole"},
    ]})[1]
    assert errors == ["host n1, GPU 2, field index: GPU 2 is given twice, by gpushare_gpus[0] and gpushare_gpus[1] "
                      "(index: 2); a count takes the indexes right after the entry before it"]
    errors = normalise_inventory(TEAMS, {"n1": [
        {"index": 1, "model": "L4", "team": "a", "use": "whole"},
        {"index": 0, "model": "L4", "team": "a", "use": "whole"},
        {"count": 2, "model": "L4", "team": "b", "use": "whole"},
    ]})[1]
    assert errors == ["host n1, GPU 1, field index: GPU 1 is given twice, by gpushare_gpus[0] and gpushare_gpus[2] "
                      "(count: 2); a count takes the indexes right after the entry before it"]


def test_one_uuid_on_two_gpus_is_refused_across_hosts():
    errors = normalise_inventory(TEAMS, {
        "n1": [{"index": 0, "model": "L4", "team": "a", "use": "whole", "uuid": "GPU-1111"}],
        "n2": [{"index": 3, "model": "L4", "team": "a", "use": "whole", "uuid": "GPU-1111"}],
    })[1]
    assert errors == ["host n2, GPU 3, field uuid: GPU-1111 is given to 2 GPUs (host n1, GPU 0; host n2, GPU 3); "
                      "a uuid names one physical GPU"]


@pytest.mark.parametrize("value, text", [(0.5, "0.5"), (2.0, "2"), (1.25, "1.25"), (64, "64"), ("500m", "500m")])
def test_cpu_and_memory_accept_yaml_numbers(value, text):
    teams = [dict(TEAMS[0], cpu=value, memory=value)] + TEAMS[1:]
    inventory, errors = normalise_inventory(teams, {})
    assert errors == []
    assert (inventory.teams[0].cpu, inventory.teams[0].memory) == (text, text)


@pytest.mark.parametrize("teams, expected", [
    ({"production": {"namespaces": ["p"], "priority": 1}}, "gpushare_teams: must be a non-empty list of teams "
     "(each a mapping with name, namespaces and priority), got a mapping"),
    (None, "gpushare_teams: not set; the inventory must list the teams (docs/inventory.md)"),
    ("production", "gpushare_teams: must be a non-empty list of teams (each a mapping with name, namespaces and "
     "priority), got a string ('production')"),
])
def test_teams_of_the_wrong_shape_name_the_variable_not_a_python_class(teams, expected):
    assert normalise_inventory(teams, {})[1] == [expected]


def test_model_and_uuid_come_from_gpu_facts_when_left_out():
    facts = {"n1": {"source": "nvidia-smi", "gpus": [
        {"index": 0, "uuid": "GPU-aaaa", "name": "NVIDIA H100 80GB HBM3", "model": "H100-80GB"},
        {"index": 1, "uuid": "GPU-bbbb", "name": "NVIDIA L40S", "pci_device_id": "0x26B910DE"},
    ]}}
    inventory, errors = normalise_inventory(TEAMS, {"n1": [
        {"index": 0, "team": "a", "use": "whole"}, {"index": 1, "team": "b", "use": "whole"}]}, facts)
    assert errors == []
    assert [(g.model, g.uuid) for g in inventory.nodes["n1"]] == [("H100-80GB", "GPU-aaaa"), ("L40S", "GPU-bbbb")]


def test_inventory_model_contradicting_the_facts_is_reported():
    facts = {"n1": {"gpus": [{"index": 0, "name": "NVIDIA L4", "model": "L4"}]}}
    entry = {"index": 0, "model": "A100-80GB", "team": "a", "use": "whole"}
    errors = normalise_inventory(TEAMS, {"n1": [entry]}, facts)[1]
    assert errors == ["host n1, GPU 0, field model: the inventory says A100-80GB but the host reports L4 (NVIDIA L4)"]


def test_missing_model_without_facts_and_index_absent_from_facts():
    errors = normalise_inventory(TEAMS, {"n1": [{"index": 0, "team": "a", "use": "whole"}]})[1]
    assert errors == ["host n1, GPU 0, field model: not set and no gpu_facts for this host to discover it"]
    facts = {"n1": {"gpus": [{"index": 0, "name": "NVIDIA L4"}]}}
    errors = normalise_inventory(TEAMS, {"n1": [{"index": 5, "model": "L4", "team": "a", "use": "whole"}]}, facts)[1]
    assert errors == ["host n1, GPU 5, field index: the host reports no GPU with this index (found: 0)"]


@pytest.mark.parametrize("entry, message", [
    ({"index": 0, "model": "L4", "team": "a", "use": "mig", "mig": {"profiles": {"1g.10gb": 1}}},
     "host n1, GPU 0, field use: L4 does not support MIG"),
    ({"index": 0, "model": "A100-40GB", "team": "a", "use": "whole", "mig": {"profiles": {"1g.5gb": 1}}},
     "host n1, GPU 0, field mig: mig is only valid with use: mig (use is 'whole')"),
    ({"index": 0, "model": "A100-40GB", "team": "a", "use": "mig"},
     "host n1, GPU 0, field mig: use: mig needs mig.instances (needs) or mig.profiles (name: count)"),
    ({"index": 0, "model": "L4", "team": "a", "use": "whole", "replicas": 4},
     "host n1, GPU 0, field replicas: replicas is only valid with use: shared (use is 'whole')"),
    ({"index": 0, "model": "L4", "team": "a", "use": "lent"},
     "host n1, GPU 0, field use: must be one of whole, mig, shared, got 'lent'"),
    ({"index": 0, "model": "L4", "team": "a", "use": "whole", "tema": "b"},
     "host n1, GPU 0, field tema: unknown option (known: count, index, mig, model, replicas, team, use, uuid)"),
    ({"index": 0, "count": 2, "model": "L4", "team": "a", "use": "whole"},
     "host n1, GPU 0, field count: give either index or count, not both"),
    ({"index": 0, "model": "NoSuchGPU", "team": "a", "use": "whole"}, "host n1, GPU 0, field model: unknown GPU model"),
])
def test_each_gpu_mistake_names_host_index_and_field(entry, message):
    errors = normalise_inventory(TEAMS, {"n1": [entry]})[1]
    assert len(errors) == 1 and errors[0].startswith(message), errors


@pytest.mark.parametrize("teams, message", [
    ([{"name": "a", "namespaces": ["x"], "priority": 1}, {"name": "a", "namespaces": ["y"], "priority": 0}],
     "team a, field name: defined twice"),
    ([{"name": "Prod", "namespaces": ["x"], "priority": 1}], "team Prod, field name: must be a lowercase DNS label"),
    ([{"name": "a", "namespaces": [], "priority": 1}], "team a, field namespaces: must be a non-empty list"),
    ([{"name": "a", "namespaces": ["x"], "priority": "high"}], "team a, field priority: must be an integer"),
    ([{"name": "a", "namespaces": ["x"], "priority": 5}, {"name": "b", "namespaces": ["y"], "priority": 5}],
     "teams a, b, field priority: the highest priority (5) must belong to one team"),
    ([{"name": "a", "namespaces": ["x"], "priority": 1, "borrow": {"nvidia.com/gpu": -2}}],
     "team a, field borrow[nvidia.com/gpu]: must be a non-negative integer, got -2"),
    ([{"name": "a", "namespaces": ["x"], "priority": 1, "cpu": "lots"}],
     "team a, field cpu: 'lots' is not a Kubernetes quantity"),
])
def test_each_team_mistake_is_reported(teams, message):
    errors = normalise_inventory(teams, {})[1]
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_limits_accept_booleans_integers_and_mappings():
    teams = [{"name": "a", "namespaces": ["x"], "priority": 1, "borrow": False, "lend": 2},
             {"name": "b", "namespaces": ["y"], "priority": 0, "borrow": True, "lend": {"nvidia.com/gpu": 1}}]
    inventory, errors = normalise_inventory(teams, {})
    assert errors == []
    assert [(t.borrow, t.lend) for t in inventory.teams] == [(0, 2), (None, {"nvidia.com/gpu": 1})]


def test_bad_inventory_yields_one_report_with_every_error():
    data = load("bad_inventory.yml")
    with pytest.raises(PlanError) as caught:
        build_plan(data["gpushare_teams"], data["nodes"], backend="device_plugin")
    errors = caught.value.errors
    expected = [
        "team data, field namespaces: namespace shared-ns is already claimed by team production",
        "team data, field borrow: must be >= 0, got -1",
        "team training, field lend: must be true/false, a non-negative integer or a mapping",
        "host gpu1, GPU 0, field index: GPU 0 is given twice, by gpushare_gpus[0] and gpushare_gpus[1] (index: 0)",
        "host gpu1, GPU 2, field team: unknown team 'research'",
        "host gpu1, GPU 3, field replicas: a shared GPU needs replicas >= 2",
        "team production, field lend: lending limit 3 for nvidia.com/gpu on flavor h100-80gb-whole is above "
        "the team's nominal quota 2 there",
    ]
    for message in expected:
        assert any(error.startswith(message) for error in errors), (message, errors)
    assert len(errors) == len(expected), errors
    assert str(caught.value).startswith("the plan cannot be made, 7 problem(s):")


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 9), st.text(max_size=6), st.lists(st.integers(0, 3), max_size=2),
                 st.dictionaries(st.sampled_from(["1g.10gb", "x"]), st.integers(-1, 3), max_size=2))


@st.composite
def messy_inventories(draw):
    team_keys = st.sampled_from(["name", "namespaces", "priority", "group", "borrow", "lend", "cpu", "memory", "x"])
    teams = draw(st.lists(st.dictionaries(team_keys, st.one_of(JUNK, st.sampled_from(["a", "b", ["ns"], ["ns", "a"]]))),
                          max_size=3))
    gpu_keys = st.sampled_from(["index", "count", "model", "team", "use", "replicas", "mig", "uuid"])
    gpu_values = st.one_of(JUNK, st.sampled_from(["a", "b", "whole", "mig", "shared", "L4", "A100-40GB",
                                                  {"profiles": {"1g.5gb": 2}}]))
    nodes = draw(st.dictionaries(st.sampled_from(["n1", "n2"]),
                                 st.lists(st.dictionaries(gpu_keys, gpu_values), max_size=4), max_size=2))
    return teams, nodes


@settings(max_examples=60, deadline=None)
@given(messy_inventories(), st.sampled_from(["dra", "device_plugin"]))
def test_any_input_gives_a_plan_or_one_plan_error_never_a_crash(inventory, backend):
    teams, nodes = inventory
    try:
        build_plan(teams, nodes, backend=backend)
    except PlanError as exc:
        assert exc.errors and all(isinstance(e, str) and e for e in exc.errors)
