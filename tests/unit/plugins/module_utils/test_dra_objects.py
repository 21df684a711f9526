# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planner import dra_objects
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

from gpushare_checks import device, device_matches, validate_core

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
UUID2 = "GPU-2fa81118-5a5f-aa66-7660-471eed407181"


def example_plan(gpu_facts=None):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    return build_plan(data["gpushare_teams"], data["nodes"], gpu_facts=gpu_facts, backend="dra")


def by_kind(plan, kind):
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in plan["objects"] if o["kind"] == kind}


def selector(obj):
    return obj["spec"]["selectors"][0]["cel"]["expression"]


def test_example_dra_objects_and_kueue_mappings():
    plan = example_plan()
    classes = by_kind(plan, "DeviceClass")
    assert sorted(key[1] for key in classes) == [
        "1g.24gb.rtx-pro-6000.gpushare.io", "data.rtx-pro-6000.shared.gpushare.io", "rtx-pro-6000.gpushare.io",
        "rtx-pro-6000.shared.gpushare.io"]
    assert plan["kueue_configuration"]["resources"]["deviceClassMappings"] == [
        {"name": "gpushare.io/rtx-pro-6000", "deviceClassNames": ["rtx-pro-6000.gpushare.io"]},
        {"name": "gpushare.io/rtx-pro-6000-shared", "deviceClassNames": ["rtx-pro-6000.shared.gpushare.io"]},
        {"name": "gpushare.io/rtx-pro-6000-mig-1g.24gb", "deviceClassNames": ["1g.24gb.rtx-pro-6000.gpushare.io"]}]
    templates = by_kind(plan, "ResourceClaimTemplate")
    assert sorted(templates) == [(ns, name) for ns in ("data", "production", "training")
                                 for name in ("gpu-rtx-pro-6000", "gpu-rtx-pro-6000-shared", "mig-rtx-pro-6000-1g.24gb")]
    request = templates[("training", "gpu-rtx-pro-6000")]["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["allocationMode"] == "ExactCount" and request["exactly"]["count"] == 1
    claims = by_kind(plan, "ResourceClaim")
    assert list(claims) == [("data", "shared-gpu1-gpu2")]
    # No replica count is promised on the claim: DRA caps nothing of the kind.
    assert set(claims[("data", "shared-gpu1-gpu2")]["metadata"]["annotations"]) == {
        "gpushare.io/node", "gpushare.io/gpu-index"}
    # The shared claim's class is not mapped: Kueue does not count standalone claims (it refuses them).
    mapped = {c for m in plan["kueue_configuration"]["resources"]["deviceClassMappings"] for c in m["deviceClassNames"]}
    assert "data.rtx-pro-6000.shared.gpushare.io" not in mapped


def test_shared_claim_is_pinned_by_uuid_when_facts_know_it():
    facts = {"gpu1": {"gpus": [{"index": i, "name": RTX, "uuid": "GPU-%d" % i} for i in range(4)]}}
    facts["gpu1"]["gpus"][2]["uuid"] = UUID2
    plan = example_plan(facts)
    claim = by_kind(plan, "ResourceClaim")[("data", "shared-gpu1-gpu2")]
    expression = claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
    assert device_matches(expression, device(RTX, uuid=UUID2))
    assert not device_matches(expression, device(RTX, uuid="GPU-3"))
    assert not any("no uuid known" in w for w in plan["warnings"])
    # The whole-GPU class leaves the pinned shared GPU alone; other GPUs of the model still match.
    whole = selector(by_kind(plan, "DeviceClass")[(None, "rtx-pro-6000.gpushare.io")])
    assert not device_matches(whole, device(RTX, uuid=UUID2))
    assert device_matches(whole, device(RTX, uuid="GPU-3"))
    assert any("no uuid known" in w for w in example_plan()["warnings"])
    # The lendable class is exactly the time-shared GPU, taken whole.
    lendable = selector(by_kind(plan, "DeviceClass")[(None, "rtx-pro-6000.shared.gpushare.io")])
    assert device_matches(lendable, device(RTX, uuid=UUID2))
    assert not device_matches(lendable, device(RTX, uuid="GPU-3"))
    assert not device_matches(lendable, device(RTX, kind="mig", profile="1g.24gb", uuid=UUID2))


def test_device_class_selectors_on_sample_devices():
    classes = {key[1]: o for key, o in by_kind(example_plan(), "DeviceClass").items()}
    whole = selector(classes["rtx-pro-6000.gpushare.io"])
    mig = selector(classes["1g.24gb.rtx-pro-6000.gpushare.io"])
    assert device_matches(whole, device(RTX, memory="97887Mi"))
    assert not device_matches(whole, device("NVIDIA H100 80GB HBM3", memory="80Gi"))  # other model
    assert not device_matches(whole, device(RTX, kind="mig", profile="1g.24gb", memory="24192Mi"))
    assert not device_matches(whole, device(RTX, driver="gpu.example.com"))  # another driver
    assert device_matches(mig, device(RTX, kind="mig", profile="1g.24gb", memory="24192Mi"))
    assert not device_matches(mig, device(RTX, kind="mig", profile="2g.48gb", memory="48512Mi"))
    assert not device_matches(mig, device("NVIDIA A30", kind="mig", profile="1g.24gb"))
    assert not device_matches(mig, device(RTX, memory="97887Mi"))


def test_memory_floor_of_templates_on_sample_devices():
    templates = by_kind(example_plan(), "ResourceClaimTemplate")

    def floor(name):
        request = templates[("production", name)]["spec"]["spec"]["devices"]["requests"][0]
        return request["exactly"]["selectors"][0]["cel"]["expression"]

    whole, mig = floor("gpu-rtx-pro-6000"), floor("mig-rtx-pro-6000-1g.24gb")
    # No real capture of the Server Edition: 95 % of 97887 MiB, in whole GiB.
    assert whole.endswith("compareTo(quantity('90Gi')) >= 0")
    assert device_matches(whole, device(RTX, memory="97887Mi"))
    assert device_matches(whole, device(RTX, memory="90Gi"))
    assert not device_matches(whole, device(RTX, memory="89Gi"))
    assert device_matches(mig, device(RTX, kind="mig", profile="1g.24gb", memory="24192Mi"))
    assert not device_matches(mig, device(RTX, kind="mig", profile="1g.24gb", memory="20Gi"))
    assert dra_objects.memory_at_least_expression(40) == (
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0")
    assert device_matches(dra_objects.memory_at_least_expression(40), device("NVIDIA A100-PCIE-40GB", memory="40Gi"))
    assert not device_matches(dra_objects.memory_at_least_expression(40), device("NVIDIA L4", memory="23034Mi"))


def test_product_names_with_quotes_are_escaped_in_cel():
    assert dra_objects._quote("it's") == "'it\\'s'"


def test_dra_objects_validate_for_kubernetes_1_34_to_1_36():
    plan = example_plan()
    checked = 0
    for obj in plan["objects"]:
        if obj["apiVersion"] == dra_objects.RESOURCE_API:
            validate_core(obj)
            checked += 1
    assert checked == 4 + 9 + 1


def test_schema_check_rejects_a_broken_claim():
    claim = dict(by_kind(example_plan(), "ResourceClaim")[("data", "shared-gpu1-gpu2")])
    claim["spec"] = {"devices": {"requests": [{"name": "gpu", "deviceClassName": "x"}]}}  # v1beta1 shape
    with pytest.raises(AssertionError, match="invalid for Kubernetes 1.34"):
        validate_core(claim)


def test_driver_device_classes_of_the_reference_still_select_by_type(reference_dir):
    """Our classes rely on the attributes the driver's own classes use."""
    rendered = list(yaml.safe_load_all((reference_dir / "dra-driver" / "deviceclasses-rendered-v1.yaml").read_text()))
    gpu_class = next(o for o in rendered if o["metadata"]["name"] == "gpu.nvidia.com")
    assert device_matches(selector(gpu_class), device(RTX))
    ours = selector(by_kind(example_plan(), "DeviceClass")[(None, "rtx-pro-6000.gpushare.io")])
    assert selector(gpu_class).split(" && ") == ours.split(" && ")[:2]


def _inventory(model, profiles):
    teams = [{"name": "serving", "namespaces": ["serving"], "priority": 100}]
    gpus = [{"index": 0, "model": model, "team": "serving", "use": "whole"}]
    if profiles:
        gpus.append({"index": 1, "model": model, "team": "serving", "use": "mig", "mig": {"profiles": profiles}})
    return teams, {"node1": gpus}


def test_h100_whole_gpu_template_fits_the_memory_nvml_reports():
    """The H100 80GB publishes 81559 MiB (real capture), so an 80Gi floor could never be met."""
    teams, nodes = _inventory("H100-80GB", {"3g.40gb": 2})
    plan = build_plan(teams, nodes, backend="dra")
    templates = by_kind(plan, "ResourceClaimTemplate")
    whole = templates[("serving", "gpu-h100-80gb")]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    expression = whole["selectors"][0]["cel"]["expression"]
    for product in gpu_catalog.lookup("H100-80GB").product_names:
        published = "%dMi" % gpu_catalog.published_memory_mib(product)
        assert device_matches(expression, device(product, memory=published)), product
    assert device_matches(expression, device("NVIDIA H100 80GB HBM3", memory="81559Mi"))
    mig = templates[("serving", "mig-h100-80gb-3g.40gb")]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert device_matches(mig["selectors"][0]["cel"]["expression"],
                          device("NVIDIA H100 80GB HBM3", kind="mig", profile="3g.40gb", memory="40448Mi"))


def _floor_holds(model_key, profile=None):
    """The template floor for (model, profile), with its class selector, on a device publishing the figure."""
    model = gpu_catalog.lookup(model_key)
    gib = dra_objects.memory_floor_gib(model_key, profile)
    floor = dra_objects.memory_at_least_expression(gib)
    if profile is None:
        cls = dra_objects.whole_gpu_expression(model_key)
        kinds = [(product, "gpu", None, gpu_catalog.published_memory_mib(product)) for product in model.product_names]
    else:
        cls = dra_objects.mig_expression(model_key, profile)
        kinds = [(product, "mig", profile, gpu_catalog.published_memory_mib(model_key, profile))
                 for product in model.product_names]
    for product, kind, name, mib in kinds:
        assert gib * 1024 <= mib, (model_key, profile, product)
        dev = device(product, kind=kind, profile=name, memory="%dMi" % mib)
        assert device_matches(cls, dev) and device_matches(floor, dev), (model_key, profile, product)
        # One MiB less than the floor is refused, so the floor is a real floor.
        assert not device_matches(floor, device(product, kind=kind, profile=name, memory="%dMi" % (gib * 1024 - 1)))


@pytest.mark.parametrize("model_key", sorted(gpu_catalog.MODELS))
def test_every_template_floor_is_at_most_what_the_driver_publishes(model_key):
    _floor_holds(model_key)
    for profile in gpu_catalog.MODELS[model_key].profiles:
        _floor_holds(model_key, profile.name)


@pytest.mark.parametrize("model_key", sorted(gpu_catalog.MODELS))
def test_every_planned_template_uses_the_published_floor(model_key):
    """Through the planner: whole-GPU and MIG templates of every model carry the published floor."""
    model = gpu_catalog.MODELS[model_key]
    plain = [p.name for p in model.profiles if re.fullmatch(r"\d+g\.\d+gb", p.name)]
    profiles = {plain[0]: 1} if plain else None
    teams, nodes = _inventory(model_key, profiles)
    plan = build_plan(teams, nodes, backend="dra")
    assert not plan.get("errors"), plan.get("errors")
    templates = by_kind(plan, "ResourceClaimTemplate")
    seen = 0
    for (_namespace, name), template in templates.items():
        exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        expression = exactly["selectors"][0]["cel"]["expression"]
        is_mig = name.startswith("mig-")
        profile = plain[0] if is_mig else None
        published = gpu_catalog.published_memory_mib(model_key, profile)
        dev = device(model.product_names[0], kind="mig" if is_mig else "gpu", profile=profile,
                     memory="%dMi" % published)
        assert device_matches(expression, dev), (model_key, profile, expression)
        seen += 1
    assert seen == (2 if plain else 1)
