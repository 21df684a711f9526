# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example workloads ask for exactly what the planner produced for the example inventory."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils import example_workloads
from ansible_collections.gpushare.cluster.plugins.module_utils.plan import build_plan

from gpushare_checks import validate_core

EXAMPLE = Path(__file__).resolve().parents[4] / "inventories" / "example"


def _example_plan(backend):
    teams = yaml.safe_load((EXAMPLE / "group_vars" / "all" / "gpushare.yml").read_text(encoding="utf-8"))["gpushare_teams"]
    gpus = yaml.safe_load((EXAMPLE / "host_vars" / "gpu1.yml").read_text(encoding="utf-8"))["gpushare_gpus"]
    return build_plan(teams, {"gpu1": gpus}, backend=backend, distribution="microk8s", kubernetes_version="1.35")


def _pod_spec(obj):
    return obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]


def _by_name(objects):
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}


def _plan_objects(plan, kind, namespace=None):
    return {obj["metadata"]["name"]: obj for obj in plan["objects"]
            if obj["kind"] == kind and (namespace is None or obj["metadata"].get("namespace") == namespace)}


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_the_worked_day_workloads_in_their_team_namespaces_and_queues(backend):
    plan = _example_plan(backend)
    objects = example_workloads.build_examples(plan)
    assert sorted(_by_name(objects)) == sorted(
        [("Deployment", "vllm"), ("Deployment", "embeddings"), ("Deployment", "classifier"),
         ("Deployment", "speech-to-text"), ("Job", "fine-tune")]
        + [("Pod", "notebook-%d" % n) for n in range(1, 6)])
    namespaces = {obj["metadata"]["name"]: obj["metadata"]["namespace"] for obj in objects}
    assert namespaces["vllm"] == namespaces["embeddings"] == "production"
    assert namespaces["notebook-3"] == "data"
    assert namespaces["fine-tune"] == "training"
    for obj in objects:
        namespace = obj["metadata"]["namespace"]
        queue = obj["metadata"]["labels"][example_workloads.QUEUE_LABEL]
        assert queue in _plan_objects(plan, "LocalQueue", namespace), (obj["metadata"]["name"], queue)
        assert obj["metadata"]["labels"][example_workloads.PRIORITY_LABEL] in _plan_objects(plan, "WorkloadPriorityClass")
        if "template" in obj["spec"]:
            assert obj["spec"]["template"]["metadata"]["labels"][example_workloads.QUEUE_LABEL] == queue
    job = _by_name(objects)[("Job", "fine-tune")]
    assert job["spec"]["suspend"] is True


def test_dra_workloads_use_the_plans_claim_templates_and_shared_claim():
    plan = _example_plan("dra")
    objects = _by_name(example_workloads.build_examples(plan))
    mappings = {m["name"]: m["deviceClassNames"] for m in plan["kueue_configuration"]["resources"]["deviceClassMappings"]}

    def device_classes(obj):
        namespace = obj["metadata"]["namespace"]
        templates = _plan_objects(plan, "ResourceClaimTemplate", namespace)
        spec = _pod_spec(obj)
        names = [claim["name"] for claim in spec["containers"][0]["resources"]["claims"]]
        assert names == [claim["name"] for claim in spec["resourceClaims"]]
        return [templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
                for claim in spec["resourceClaims"]]

    whole = "gpushare.io/rtx-pro-6000"
    mig = "gpushare.io/rtx-pro-6000-mig-1g.24gb"
    assert device_classes(objects[("Deployment", "vllm")]) == mappings[whole]
    for name in ("embeddings", "classifier", "speech-to-text"):
        assert device_classes(objects[("Deployment", name)]) == mappings[mig]
    # Two whole GPUs: two claims from the whole-GPU template, each counted by Kueue.
    assert device_classes(objects[("Job", "fine-tune")]) == mappings[whole] * 2
    shared_claims = _plan_objects(plan, "ResourceClaim", "data")
    for number in range(1, 6):
        spec = _pod_spec(objects[("Pod", "notebook-%d" % number)])
        assert [claim["resourceClaimName"] for claim in spec["resourceClaims"]] == sorted(shared_claims)


def test_device_plugin_workloads_use_the_plans_resource_names():
    plan = _example_plan("device_plugin")
    objects = _by_name(example_workloads.build_examples(plan))
    gpus = plan["nodes"]["gpu1"]["gpus"]

    def limits(obj):
        return _pod_spec(obj)["containers"][0]["resources"]["limits"]

    assert limits(objects[("Deployment", "vllm")]) == {name: 1 for name in gpus[0]["resources"]}
    assert limits(objects[("Deployment", "classifier")]) == {name: 1 for name in gpus[1]["resources"]}
    assert limits(objects[("Pod", "notebook-1")]) == {name: 1 for name in gpus[2]["resources"]}
    assert limits(objects[("Job", "fine-tune")]) == {name: 2 for name in gpus[3]["resources"]}
    assert "resourceClaims" not in _pod_spec(objects[("Job", "fine-tune")])


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_workloads_validate_against_the_kubernetes_schemas(backend):
    for obj in example_workloads.build_examples(_example_plan(backend)):
        validate_core(obj)


def test_files_group_the_workloads_by_what_they_show():
    files = example_workloads.example_file_names(example_workloads.build_examples(_example_plan("dra")))
    assert {name: len(objs) for name, objs in files.items()} == {
        "10-serving.yaml": 1, "20-mig-models.yaml": 3, "30-notebooks.yaml": 5, "40-fine-tune.yaml": 1}


def test_a_plan_without_the_teams_queue_is_refused_naming_the_namespace():
    plan = _example_plan("dra")
    broken = copy.deepcopy(plan)
    broken["objects"] = [obj for obj in broken["objects"]
                         if not (obj["kind"] == "LocalQueue" and obj["metadata"]["namespace"] == "training")]
    with pytest.raises(ValueError, match="namespace training: no LocalQueue"):
        example_workloads.build_examples(broken)


def test_a_plan_without_a_claim_template_for_the_gpu_is_refused_naming_host_and_gpu():
    plan = _example_plan("dra")
    broken = copy.deepcopy(plan)
    broken["objects"] = [obj for obj in broken["objects"]
                         if not (obj["kind"] == "ResourceClaimTemplate" and obj["metadata"]["namespace"] == "production")]
    with pytest.raises(ValueError, match="host gpu1 GPU 0: no ResourceClaimTemplate in namespace production"):
        example_workloads.build_examples(broken)
