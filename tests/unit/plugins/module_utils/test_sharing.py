# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import normalise_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.sharing import plan_sharing
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    MIG_CONFIG_LABEL,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
TEAMS = [{"name": "a", "namespaces": ["a"], "priority": 10}, {"name": "b", "namespaces": ["b"], "priority": 5}]


def plan(nodes, backend):
    inventory, errors = normalise_inventory(TEAMS, nodes)
    assert errors == []
    return plan_sharing(inventory.nodes, backend)


def four_gpu(backend):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    inventory, errors = normalise_inventory(data["gpushare_teams"], data["nodes"])
    assert errors == []
    return plan_sharing(inventory.nodes, backend)


def test_device_plugin_turns_a_shared_gpu_next_to_whole_ones_into_a_time_sliced_full_mig_instance():
    result = four_gpu("device_plugin")
    assert result.errors == []
    node = result.nodes["gpu1"]
    gpu2 = node.gpus[2]
    assert gpu2["mig_enabled"] is True
    assert [(i["profile"], i["start"], i["size"]) for i in gpu2["instances"]] == [("4g.96gb", 0, 12)]
    assert gpu2["resources"] == {"nvidia.com/mig-4g.96gb.shared": 5}
    assert [g["resources"] for g in node.gpus] == [
        {"nvidia.com/gpu": 1}, {"nvidia.com/mig-1g.24gb": 4}, {"nvidia.com/mig-4g.96gb.shared": 5},
        {"nvidia.com/gpu": 1}]
    assert any("GPU 2" in w and "full-size MIG instance 4g.96gb" in w for w in result.warnings)
    config = result.device_plugin_configs[node.device_plugin_config]
    assert config == {"version": "v1", "flags": {"migStrategy": "mixed"}, "sharing": {"timeSlicing": {
        "renameByDefault": True, "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/mig-4g.96gb", "replicas": 5}]}}}
    assert node.labels[DEVICE_PLUGIN_CONFIG_LABEL] == node.device_plugin_config
    devices = result.mig_configs[node.labels[MIG_CONFIG_LABEL]]
    assert {d["devices"][0]: d.get("mig-devices") for d in devices} == {
        0: None, 1: {"1g.24gb": 4}, 2: {"4g.96gb": 1}, 3: None}


def test_device_plugin_refuses_whole_and_shared_full_gpus_on_a_non_mig_node():
    result = plan({"l40s": [{"index": 0, "model": "L40S", "team": "a", "use": "whole"},
                            {"index": 1, "model": "L40S", "team": "b", "use": "shared", "replicas": 3}]},
                  "device_plugin")
    assert len(result.errors) == 1
    message = result.errors[0]
    assert message.startswith("host l40s, GPU 1, field use: use shared next to whole GPUs (0)")
    assert "time-slices every full GPU of a node" in message and "gpushare_gpu_backend: dra" in message
    assert "l40s" not in result.nodes


def test_same_node_mix_is_fine_with_dra_and_becomes_a_claim():
    result = plan({"l40s": [{"index": 0, "model": "L40S", "team": "a", "use": "whole"},
                            {"index": 1, "model": "L40S", "team": "b", "use": "shared", "replicas": 3}]}, "dra")
    assert result.errors == []
    whole, shared = result.nodes["l40s"].gpus
    assert whole["resources"] == {"gpushare.io/l40s": 1}
    # The pods share a standalone claim; the GPU counts once, whole, in its own resource.
    assert shared["resources"] == {"gpushare.io/l40s-shared": 1} and shared["claim"] == "shared-l40s-gpu1"
    assert shared["flavor"] == "l40s-shared"
    assert result.nodes["l40s"].mig_config is None and result.nodes["l40s"].device_plugin_config is None


def test_time_slicing_a_node_of_shared_gpus_and_replicas_must_agree():
    result = plan({"n": [{"count": 2, "model": "L4", "team": "a", "use": "shared", "replicas": 4}]}, "device_plugin")
    node = result.nodes["n"]
    assert [g["resources"] for g in node.gpus] == [{"nvidia.com/gpu.shared": 4}] * 2
    assert result.device_plugin_configs[node.device_plugin_config]["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 4}]
    result = plan({"n": [{"index": 0, "model": "L4", "team": "a", "use": "shared", "replicas": 4},
                         {"index": 1, "model": "L4", "team": "b", "use": "shared", "replicas": 2}]}, "device_plugin")
    assert result.errors == [
        "host n, GPU 1, field replicas: the device plugin applies one replica count to every time-sliced GPU of "
        "a node; this node mixes 4 and 2"]


def test_time_sliced_full_size_profile_may_not_also_be_a_mig_instance_elsewhere_on_the_node():
    result = plan({"n": [
        {"index": 0, "model": "A100-40GB", "team": "a", "use": "whole"},
        {"index": 1, "model": "A100-40GB", "team": "a", "use": "mig", "mig": {"profiles": {"7g.40gb": 1}}},
        {"index": 2, "model": "A100-40GB", "team": "b", "use": "shared", "replicas": 2}]}, "device_plugin")
    assert len(result.errors) == 1 and "GPU 1 also has 7g.40gb instances" in result.errors[0]


def test_identical_nodes_share_one_mig_config_and_mig_instances_count_once_each():
    node = [{"index": 0, "model": "H100-80GB", "team": "a", "use": "mig", "mig": {"profiles": {"1g.10gb": 7}}},
            {"index": 1, "model": "H100-80GB", "team": "b", "use": "whole"}]
    result = plan({"h1": node, "h2": node, "h3": node}, "device_plugin")
    assert len(result.mig_configs) == 1
    assert {n.mig_config for n in result.nodes.values()} == set(result.mig_configs)
    assert all(n.gpus[0]["resources"] == {"nvidia.com/mig-1g.10gb": 7} for n in result.nodes.values())
    dra = plan({"h1": node}, "dra")
    assert dra.nodes["h1"].gpus[0]["resources"] == {"gpushare.io/h100-80gb-mig-1g.10gb": 7}


def test_non_mig_nodes_get_no_mig_config_and_mig_capable_ones_all_disabled():
    result = plan({"l4": [{"index": 0, "model": "L4", "team": "a", "use": "whole"}],
                   "a100": [{"index": 0, "model": "A100-40GB", "team": "a", "use": "whole"}]}, "device_plugin")
    assert MIG_CONFIG_LABEL not in result.nodes["l4"].labels
    assert result.nodes["a100"].labels[MIG_CONFIG_LABEL] == "all-disabled"
    assert result.mig_configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert result.device_plugin_configs == {"gpushare-default": {"version": "v1", "flags": {"migStrategy": "mixed"}}}


def test_names_are_valid_kubernetes_label_values_and_config_keys():
    result = four_gpu("device_plugin")
    for node in result.nodes.values():
        for key, value in node.labels.items():
            assert re.match(r"^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$", key), key
            assert re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$", value), value


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_device_plugin_config_uses_only_fields_of_the_v1_config_api(backend, reference_dir):
    """Field names checked against the Go structs quoted in the reference notes."""
    notes = (reference_dir / "gpu-operator" / "device-plugin-v0.20.0" / "CONFIG-API-NOTES.md").read_text()
    json_names = set(re.findall(r'json:"([A-Za-z]+)', notes))
    result = plan({"n": [{"count": 2, "model": "L4", "team": "a", "use": "shared", "replicas": 4}]}, backend)
    for config in result.device_plugin_configs.values():
        stack = [config]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                for key, value in item.items():
                    assert key in json_names | {"migStrategy"}, key
                    stack.append(value)
            elif isinstance(item, list):
                stack.extend(item)
    if backend == "dra":
        assert result.device_plugin_configs == {}


def test_a_mig_warning_is_given_once_per_node_shape_naming_every_host_of_it():
    gpus = [{"index": 0, "model": "A100-40GB", "team": "a", "use": "mig", "mig": {"profiles": {"3g.20gb": 2}}}]
    odd = [dict(gpus[0], mig={"profiles": {"1g.10gb": 4}})]
    result = plan({"n1": gpus, "n2": gpus, "n3": gpus, "n4": gpus, "odd": odd}, "dra")
    assert result.errors == []
    stranded = [w for w in result.warnings if "compute slices stay idle" in w]
    assert [w.split(": ", 1)[0] for w in stranded] == [
        "hosts n1, n2, n3 and 1 more, GPU 0 (A100-40GB)", "host odd, GPU 0 (A100-40GB)"]
    assert not any(re.match(r"host (\S+): host \1", w) for w in result.warnings), result.warnings


def test_counts_profile_matches_the_profile_whole_or_time_sliced_under_either_backend():
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner.sharing import counts_profile
    for resource in ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb.shared", "gpushare.io/a100-mig-1g.10gb"):
        assert counts_profile(resource, "1g.10gb")
    assert counts_profile("nvidia.com/mig-1g.10gb.me", "1g.10gb+me")
    for resource in ("nvidia.com/mig-2g.20gb", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb.me"):
        assert not counts_profile(resource, "1g.10gb")
