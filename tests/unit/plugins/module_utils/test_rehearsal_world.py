# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated GPU world publishes what the NVIDIA DRA driver v0.4.1 and the device plugin would."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as rehearsal_world
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

from gpushare_checks import validate_core

INVENTORIES = Path(__file__).resolve().parents[4] / "inventories"


def inventory_plan(name, backend=None):
    root = INVENTORIES / name
    settings = yaml.safe_load((root / "group_vars" / "all" / "gpushare.yml").read_text())
    nodes = {p.stem: yaml.safe_load(p.read_text())["gpushare_gpus"] for p in sorted((root / "host_vars").glob("*.yml"))}
    return build_plan(settings["gpushare_teams"], nodes, backend=backend or settings["gpushare_gpu_backend"],
                      distribution=settings["gpushare_kubernetes_distribution"],
                      kubernetes_version=str(settings["gpushare_kubernetes_version"]))


def _devices(world):
    return {d["name"]: d for s in world["resource_slices"] for d in s["spec"]["devices"]}


def test_dra_slice_has_the_driver_pool_and_device_names_of_the_driver():
    world = rehearsal_world.build_world(inventory_plan("example", "dra"))
    (slice_object,) = world["resource_slices"]
    spec = slice_object["spec"]
    assert spec["driver"] == "gpu.nvidia.com" and spec["nodeName"] == "gpu1"
    assert spec["pool"] == {"name": "gpu1", "generation": 1, "resourceSliceCount": 1}
    # GPU 1 has MIG on: its four 1g.24gb devices (GI profile id 14 on RTX PRO 6000) are published
    # at their placement starts, the GPU itself is not.
    assert sorted(_devices(world)) == ["gpu-0", "gpu-1-mig-1g24gb-14-0", "gpu-1-mig-1g24gb-14-3",
                                       "gpu-1-mig-1g24gb-14-6", "gpu-1-mig-1g24gb-14-9", "gpu-2", "gpu-3"]


def test_dra_attributes_and_memory_are_as_nvml_reports():
    world = rehearsal_world.build_world(inventory_plan("example", "dra"))
    devices = _devices(world)
    whole = devices["gpu-0"]
    model = gpu_catalog.lookup("RTX-PRO-6000")
    assert whole["attributes"]["type"] == {"string": "gpu"}
    assert whole["attributes"]["productName"] == {"string": "NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert re.match(r"^GPU-[0-9a-f-]{36}$", whole["attributes"]["uuid"]["string"])
    assert "index" not in whole["attributes"] and "minor" not in whole["attributes"]
    assert int(whole["capacity"]["memory"]["value"]) == model.memory_mib * 2 ** 20
    mig = devices["gpu-1-mig-1g24gb-14-3"]
    assert mig["attributes"]["type"] == {"string": "mig"} and mig["attributes"]["profile"] == {"string": "1g.24gb"}
    assert mig["attributes"]["parentUUID"]["string"].startswith("GPU-")
    assert int(mig["capacity"]["memory"]["value"]) == model.profile("1g.24gb").memory_mib * 2 ** 20
    # a 1g.24gb on the 12-unit RTX PRO grid occupies placement units 3, 4, 5
    assert sorted(k for k in mig["capacity"] if k.startswith("memorySlice")) == ["memorySlice3", "memorySlice4", "memorySlice5"]
    uuids = [d["attributes"]["uuid"]["string"] for d in devices.values()]
    assert len(set(uuids)) == len(uuids)


def test_uuid_from_gpu_facts_is_published():
    plan = inventory_plan("example", "dra")
    plan = copy.deepcopy(plan)
    plan["nodes"]["gpu1"]["gpus"][0]["uuid"] = "GPU-12345678-aaaa-bbbb-cccc-1234567890ab"
    world = rehearsal_world.build_world(plan)
    assert _devices(world)["gpu-0"]["attributes"]["uuid"]["string"] == "GPU-12345678-aaaa-bbbb-cccc-1234567890ab"


def test_world_objects_pass_the_kubernetes_schema():
    for backend in ("dra", "device_plugin"):
        world = rehearsal_world.build_world(inventory_plan("example", backend), hosts=["gpu1", "cpu1"])
        for obj in world["nodes"] + world["resource_slices"]:
            validate_core(obj)


def test_nodes_carry_the_plan_labels_and_the_kwok_annotation():
    plan = inventory_plan("multinode", "dra")
    world = rehearsal_world.build_world(plan, hosts=["cp1", "cp2", "cp3", "hgx1", "hgx2", "a100", "l40s"])
    nodes = {n["metadata"]["name"]: n for n in world["nodes"]}
    assert sorted(nodes) == ["a100", "cp1", "cp2", "cp3", "hgx1", "hgx2", "l40s"]
    for host, node_plan in plan["nodes"].items():
        assert node_plan["labels"].items() <= nodes[host]["metadata"]["labels"].items()
        assert nodes[host]["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert "nvidia.com/gpu.present" not in nodes["cp1"]["metadata"]["labels"]
    assert {s["spec"]["nodeName"] for s in world["resource_slices"]} == set(plan["nodes"])


def test_device_plugin_advertises_mixed_strategy_and_time_sliced_replicas():
    plan = inventory_plan("example", "device_plugin")
    world = rehearsal_world.build_world(plan)
    assert world["resource_slices"] == []
    capacity = world["nodes"][0]["status"]["capacity"]
    # GPUs 0 and 3 whole, GPU 1 four 1g.24gb, GPU 2 one full-size 4g.96gb time-sliced 5 ways (renamed .shared)
    assert capacity["nvidia.com/gpu"] == "2"
    assert capacity["nvidia.com/mig-1g.24gb"] == "4"
    assert capacity["nvidia.com/mig-4g.96gb.shared"] == "5"
    assert "nvidia.com/mig-4g.96gb" not in capacity
    # and that is what the plan counts, resource by resource
    counted = {}
    for gpu in plan["nodes"]["gpu1"]["gpus"]:
        for resource, count in gpu["resources"].items():
            counted[resource] = counted.get(resource, 0) + count
    assert {k: int(v) for k, v in capacity.items() if k.startswith("nvidia.com/")} == counted


def test_device_plugin_full_gpu_time_slicing_renames_and_marks_the_product():
    config = {"version": "v1", "sharing": {"timeSlicing": {"renameByDefault": True,
                                                           "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}
    gpus = [{"index": 0, "model": "L40S", "use": "shared", "team": "data", "mig_enabled": False, "instances": []}]
    advertised, index = rehearsal_world.extended_resources("n1", gpus, config)
    assert advertised == {"nvidia.com/gpu.shared": 4}
    assert index[0]["device"] == "nvidia.com/gpu.shared" and index[0]["replicas"] == 4
    labels = rehearsal_world._gfd_labels("n1", gpus, "device_plugin", config)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-L40S-SHARED"


def test_mig_device_name_follows_the_driver():
    assert rehearsal_world.mig_device_name(3, "1g.10gb+me", 19, 6) == "gpu-3-mig-1g10gb-me-19-6"
    assert rehearsal_world.mig_device_name(0, "3g.40gb", 9, 4) == "gpu-0-mig-3g40gb-9-4"


def test_bad_plans_name_host_and_gpu():
    plan = copy.deepcopy(inventory_plan("example", "dra"))
    plan["nodes"]["gpu1"]["gpus"][1]["instances"] = []
    with pytest.raises(rehearsal_world.WorldError, match="host gpu1, GPU 1: MIG is enabled but the plan lists no 'instances'"):
        rehearsal_world.build_world(plan)
    plan = copy.deepcopy(inventory_plan("example", "dra"))
    plan["nodes"]["gpu1"]["gpus"][3]["model"] = "NOPE-9000"
    with pytest.raises(rehearsal_world.WorldError, match="host gpu1, GPU 3: field 'model'"):
        rehearsal_world.build_world(plan)
    with pytest.raises(rehearsal_world.WorldError, match="backend"):
        rehearsal_world.build_world(dict(plan, backend="magic"))


def test_find_device_maps_an_allocation_back_to_the_inventory_gpu():
    world = rehearsal_world.build_world(inventory_plan("example", "dra"))
    entry = rehearsal_world.find_device(world, "gpu1", "gpu-1-mig-1g24gb-14-6", pool="gpu1")
    assert entry["index"] == 1 and entry["profile"] == "1g.24gb" and entry["instance"] == "speech-to-text"
    assert rehearsal_world.find_device(world, "gpu1", "gpu-9") is None


@pytest.mark.parametrize("inventory", ["example", "multinode"])
def test_every_claim_template_of_the_plan_selects_published_devices_of_its_kind(inventory):
    """The plan's DeviceClass and template selectors, evaluated (CEL) on the simulated slices:
    each template must find at least one device, and only devices of the model and profile it names."""
    from gpushare_checks import device, device_matches

    plan = inventory_plan(inventory, "dra")
    world = rehearsal_world.build_world(plan)
    classes = {o["metadata"]["name"]: o for o in plan["objects"] if o["kind"] == "DeviceClass"}
    cel_devices = []
    for entry, dev in zip(world["devices"], [d for s in world["resource_slices"] for d in s["spec"]["devices"]]):
        attrs = dev["attributes"]
        cel_devices.append((entry, device(attrs["productName"]["string"], kind=attrs["type"]["string"],
                                          memory=dev["capacity"]["memory"]["value"],
                                          profile=(attrs.get("profile") or {}).get("string"),
                                          uuid=attrs["uuid"]["string"])))
    templates = [o for o in plan["objects"] if o["kind"] == "ResourceClaimTemplate"]
    assert templates
    for template in templates:
        for request in template["spec"]["spec"]["devices"]["requests"]:
            exactly = request["exactly"]
            expressions = [s["cel"]["expression"] for s in classes[exactly["deviceClassName"]]["spec"]["selectors"]]
            expressions += [s["cel"]["expression"] for s in exactly.get("selectors") or []]
            chosen = [entry for entry, dev in cel_devices if all(device_matches(e, dev) for e in expressions)]
            where = "%s/%s" % (template["metadata"]["namespace"], template["metadata"]["name"])
            assert chosen, "%s selects no published device (memory floor above what the driver publishes?)" % where
            assert len({(e["model"], e["profile"]) for e in chosen}) == 1, (where, chosen)


def _example_inventory(name="example"):
    root = INVENTORIES / name
    settings = yaml.safe_load((root / "group_vars" / "all" / "gpushare.yml").read_text())
    nodes = {p.stem: yaml.safe_load(p.read_text())["gpushare_gpus"] for p in sorted((root / "host_vars").glob("*.yml"))}
    return settings, nodes


@pytest.mark.parametrize("inventory", ["example", "multinode"])
def test_the_rehearsal_plans_with_the_uuids_its_world_publishes(inventory):
    """rehearse.yml sets these facts before it plans: the plan pins what the ResourceSlices publish."""
    settings, nodes = _example_inventory(inventory)
    facts = {host: rehearsal_world.simulated_gpu_facts(host, gpus) for host, gpus in nodes.items()}
    plan = build_plan(settings["gpushare_teams"], nodes, gpu_facts=facts, backend="dra",
                      distribution=settings["gpushare_kubernetes_distribution"],
                      kubernetes_version=str(settings["gpushare_kubernetes_version"]))
    world = rehearsal_world.build_world(plan)
    published = {(d["node"], d["index"]): d["uuid"] for d in world["devices"] if not d.get("profile")}
    for host, node in plan["nodes"].items():
        for gpu in node["gpus"]:
            assert gpu["uuid"] == rehearsal_world.gpu_uuid(host, {"index": gpu["index"]})
            if not gpu.get("mig_enabled"):
                assert published[(host, gpu["index"])] == gpu["uuid"]
    assert not [w for w in plan["warnings"] if "no uuid known" in w]
    if inventory == "example":
        classes = {o["metadata"]["name"]: o["spec"]["selectors"][0]["cel"]["expression"]
                   for o in plan["objects"] if o["kind"] == "DeviceClass"}
        gpu2 = facts["gpu1"]["gpus"][2]["uuid"]
        # the whole-GPU class leaves the notebooks' GPU out, the lendable class takes only it
        assert "!(device.attributes['gpu.nvidia.com'].uuid in ['%s'])" % gpu2 in classes["rtx-pro-6000.gpushare.io"]
        assert classes["rtx-pro-6000.shared.gpushare.io"].endswith(".uuid in ['%s']" % gpu2)


def test_simulated_facts_follow_the_count_shorthand_and_keep_an_inventory_uuid():
    facts = rehearsal_world.simulated_gpu_facts("node-a", [
        {"count": 2, "model": "H100-80GB", "team": "t", "use": "whole"},
        {"index": 2, "model": "H100-80GB", "team": "t", "use": "whole", "uuid": "GPU-given"}])
    assert [g["index"] for g in facts["gpus"]] == [0, 1, 2]
    assert facts["gpus"][2]["uuid"] == "GPU-given"
    assert facts["gpus"][0]["uuid"] == rehearsal_world.gpu_uuid("node-a", {"index": 0})
    assert gpu_catalog.lookup(facts["gpus"][0]["name"]).key == "H100-80GB"
    # nothing to simulate without a model, or for what is not a GPU list: the plan reports the inventory
    assert rehearsal_world.simulated_gpu_facts("node-a", [{"index": 0, "team": "t", "use": "whole"}]) is None
    assert rehearsal_world.simulated_gpu_facts("node-a", "nope") is None
