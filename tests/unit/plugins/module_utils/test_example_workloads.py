# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example workloads ask for exactly what the planner produced for the example inventory."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.render import examples as example_workloads
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

from gpushare_checks import quota_of, validate_core

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
        if backend == "dra" and obj["metadata"]["labels"][example_workloads.EXAMPLE_LABEL] == "notebook":
            # Kueue 0.19 never admits a pod that uses a ResourceClaim directly: not queue-managed.
            assert example_workloads.QUEUE_LABEL not in obj["metadata"]["labels"]
            assert example_workloads.PRIORITY_LABEL not in obj["metadata"]["labels"]
            continue
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
    # Two GPUs: training's own whole GPU and the data team's time-shared GPU, taken whole once
    # no notebook holds it (the 19:00 step of the worked day); each claim counted by Kueue.
    assert device_classes(objects[("Job", "fine-tune")]) == mappings[whole] + mappings["gpushare.io/rtx-pro-6000-shared"]
    assert "--nproc-per-node=2" in _pod_spec(objects[("Job", "fine-tune")])["containers"][0]["command"]
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


# --- every example is admissible on its plan --------------------------------------------------
#
# An independent check of what Kueue v0.19.2 and the scheduler would do with each example on an
# otherwise idle cluster: the queue must have, in one flavor per resource group, its nominal
# quota plus what it may borrow (its borrowingLimit of what the other queues of the cohort may
# lend: lendingLimit, else their nominal quota) for every resource the workload asks for; and
# one node must hold distinct devices for all of one pod's claims (DeviceClass and request CEL
# evaluated on the devices the plan puts on that node, with the memory the driver publishes).

from itertools import permutations  # noqa: E402

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PlanError  # noqa: E402

from gpushare_checks import device, device_matches  # noqa: E402


def _cluster_queue(plan, namespace, queue):
    local = _plan_objects(plan, "LocalQueue", namespace)[queue]
    return _plan_objects(plan, "ClusterQueue")[local["spec"]["clusterQueue"]]


def _pods(obj):
    if obj["kind"] == "Pod":
        return 1
    if obj["kind"] == "Deployment":
        return obj["spec"]["replicas"]
    return obj["spec"]["parallelism"]


def _kueue_requests(plan, obj):
    """resource -> units Kueue counts for the workload (extended resources, or mapped claim templates)."""
    spec = _pod_spec(obj)
    requests = {}
    for name, value in (spec["containers"][0]["resources"].get("limits") or {}).items():
        requests[name] = requests.get(name, 0) + value * _pods(obj)
    mappings = plan["kueue_configuration"].get("resources", {}).get("deviceClassMappings") or []
    by_class = {cls: m["name"] for m in mappings for cls in m["deviceClassNames"]}
    templates = _plan_objects(plan, "ResourceClaimTemplate", obj["metadata"]["namespace"])
    for claim in spec.get("resourceClaims") or []:
        template = templates[claim["resourceClaimTemplateName"]]
        exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        resource = by_class[exactly["deviceClassName"]]
        requests[resource] = requests.get(resource, 0) + exactly["count"] * _pods(obj)
    return requests


def _fits_some_flavor(plan, cq, requests):
    cohort = [q for q in _plan_objects(plan, "ClusterQueue").values()
              if q["spec"]["cohortName"] == cq["spec"]["cohortName"] and q is not cq]
    for group in cq["spec"]["resourceGroups"]:
        wanted = {r: n for r, n in requests.items() if r in group["coveredResources"]}
        if not wanted:
            continue
        fits = False
        for flavor in group["flavors"]:
            ok = True
            for resource, count in wanted.items():
                own = quota_of(cq, flavor["name"], resource)
                lend = 0
                for other in cohort:
                    entry = quota_of(other, flavor["name"], resource) or {"nominalQuota": "0"}
                    lend += min(int(entry.get("lendingLimit", entry["nominalQuota"])), int(entry["nominalQuota"]))
                borrow = int(own.get("borrowingLimit", lend))
                if count > int(own["nominalQuota"]) + min(borrow, lend):
                    ok = False
            fits = fits or ok
        if not fits:
            return False
    return all(any(r in g["coveredResources"] for g in cq["spec"]["resourceGroups"]) for r in requests)


def _node_devices(plan, host):
    """The devices the NVIDIA DRA driver would publish on the node, as CEL sees them."""
    devices = []
    for gpu in plan["nodes"][host]["gpus"]:
        model = gpu_catalog.lookup(gpu["model"])
        product = model.product_names[0]
        uuid = gpu.get("uuid") or "GPU-%s-%d" % (host, gpu["index"])
        if gpu["use"] == "mig":
            for inst in gpu["instances"]:
                devices.append(device(product, kind="mig", profile=inst["profile"], uuid="MIG-%s-%d" % (uuid, inst["start"]),
                                      memory="%dMi" % gpu_catalog.published_memory_mib(model.key, inst["profile"])))
        else:
            devices.append(device(product, uuid=uuid, memory="%dMi" % gpu_catalog.published_memory_mib(product)))
    return devices


def _claim_expressions(plan, spec_devices):
    classes = dict(_plan_objects(plan, "DeviceClass"))
    exactly = spec_devices["requests"][0]["exactly"]
    expressions = [s["cel"]["expression"] for s in classes[exactly["deviceClassName"]]["spec"]["selectors"]]
    expressions += [s["cel"]["expression"] for s in exactly.get("selectors") or []]
    return expressions


def _placeable(plan, obj):
    """Some node holds distinct devices for every claim of one pod."""
    spec = _pod_spec(obj)
    namespace = obj["metadata"]["namespace"]
    wanted = []
    for claim in spec.get("resourceClaims") or []:
        if "resourceClaimTemplateName" in claim:
            template = _plan_objects(plan, "ResourceClaimTemplate", namespace)[claim["resourceClaimTemplateName"]]
            wanted.append(_claim_expressions(plan, template["spec"]["spec"]["devices"]))
        else:
            shared = _plan_objects(plan, "ResourceClaim", namespace)[claim["resourceClaimName"]]
            wanted.append(_claim_expressions(plan, shared["spec"]["devices"]))
    if not wanted:
        return True
    for host in plan["nodes"]:
        devices = _node_devices(plan, host)
        matches = [[i for i, dev in enumerate(devices) if all(device_matches(e, dev) for e in exprs)] for exprs in wanted]
        if any(len(set(choice)) == len(choice) and all(c in m for c, m in zip(choice, matches))
               for choice in permutations(range(len(devices)), len(wanted))):
            return True
    return False


def _assert_admissible(plan, objects):
    for obj in objects:
        labels = obj["metadata"]["labels"]
        name = obj["metadata"]["name"]
        spec = _pod_spec(obj)
        if example_workloads.QUEUE_LABEL not in labels:
            # Only the notebooks of a shared claim under dra run outside Kueue, and they use
            # nothing but that claim.
            assert plan["backend"] == "dra" and labels[example_workloads.EXAMPLE_LABEL] == "notebook", name
            assert all("resourceClaimName" in c for c in spec["resourceClaims"]), name
            assert not spec["containers"][0]["resources"].get("limits"), name
        else:
            assert not any("resourceClaimName" in c for c in spec.get("resourceClaims") or []), name
            cq = _cluster_queue(plan, obj["metadata"]["namespace"], labels[example_workloads.QUEUE_LABEL])
            requests = _kueue_requests(plan, obj)
            assert requests, name
            assert _fits_some_flavor(plan, cq, requests), (name, requests)
        if plan["backend"] == "dra":
            assert _placeable(plan, obj), name


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_the_example_inventory_examples_are_admissible(backend):
    _assert_admissible(_example_plan(backend), example_workloads.build_examples(_example_plan(backend)))


def test_a_two_gpu_fine_tune_on_a_model_with_one_whole_gpu_asks_for_what_exists():
    """Issue: a two-GPU fine-tune on a cohort with one whole GPU of the model could never run."""
    teams = [{"name": "prod", "namespaces": ["prod"], "priority": 100},
             {"name": "train", "namespaces": ["train"], "priority": 1}]
    nodes = {"n1": [{"index": 0, "model": "H100-80GB", "team": "train", "use": "whole"},
                    {"index": 1, "model": "H100-80GB", "team": "prod", "use": "mig", "mig": {"profiles": {"3g.40gb": 2}}}]}
    for backend in ("dra", "device_plugin"):
        plan = build_plan(teams, nodes, backend=backend)
        objects = example_workloads.build_examples(plan)
        job = _by_name(objects)[("Job", "fine-tune")]
        assert "--nproc-per-node=1" in _pod_spec(job)["containers"][0]["command"]
        assert sum(_kueue_requests(plan, job).values()) == 1
        _assert_admissible(plan, objects)


def test_a_borrowing_limit_bounds_the_fine_tune():
    data = yaml.safe_load((Path(__file__).resolve().parents[3] / "fixtures" / "inventories" / "four_gpu_example.yml").read_text())
    teams = copy.deepcopy(data["gpushare_teams"])
    teams[2]["borrow"] = 0
    for backend in ("dra", "device_plugin"):
        plan = build_plan(teams, data["nodes"], backend=backend)
        job = _by_name(example_workloads.build_examples(plan))[("Job", "fine-tune")]
        assert sum(_kueue_requests(plan, job).values()) == 1, backend
    teams = copy.deepcopy(data["gpushare_teams"])
    teams[1]["lend"] = {"gpushare.io/rtx-pro-6000-shared": 0}  # data keeps its time-shared GPU
    plan = build_plan(teams, data["nodes"], backend="dra")
    job = _by_name(example_workloads.build_examples(plan))[("Job", "fine-tune")]
    assert _kueue_requests(plan, job) == {"gpushare.io/rtx-pro-6000": 2}  # borrows production's whole GPU
    _assert_admissible(plan, example_workloads.build_examples(plan))


_MODELS = {"RTX-PRO-6000": ["1g.24gb", "2g.48gb"], "H100-80GB": ["1g.10gb", "3g.40gb"], "L40S": []}


@st.composite
def _inventories(draw):
    team_count = draw(st.integers(1, 3))
    priorities = draw(st.lists(st.integers(1, 1000), min_size=team_count, max_size=team_count, unique=True))
    teams = []
    for t in range(team_count):
        team = {"name": "team%d" % t, "namespaces": ["ns%d" % t], "priority": priorities[t]}
        if draw(st.booleans()):
            team["borrow"] = draw(st.integers(0, 2))
        if draw(st.booleans()):
            team["lend"] = draw(st.integers(0, 2))
        teams.append(team)
    nodes, facts = {}, {}
    for host in range(draw(st.integers(1, 3))):
        model = draw(st.sampled_from(sorted(_MODELS)))
        replicas = draw(st.integers(2, 5))
        gpus = []
        for index in range(draw(st.integers(1, 4))):
            team = "team%d" % draw(st.integers(0, team_count - 1))
            use = draw(st.sampled_from(["whole", "shared", "mig"] if _MODELS[model] else ["whole", "shared"]))
            gpu = {"index": index, "model": model, "team": team, "use": use}
            if use == "shared":
                gpu["replicas"] = replicas
            if use == "mig":
                gpu["mig"] = {"profiles": {draw(st.sampled_from(_MODELS[model])): 1}}
            gpus.append(gpu)
        nodes["node%d" % host] = gpus
        if draw(st.booleans()):
            product = gpu_catalog.lookup(model).product_names[0]
            facts["node%d" % host] = {"gpus": [{"index": g["index"], "name": product,
                                                "uuid": "GPU-%d-%d" % (host, g["index"])} for g in gpus]}
    return teams, nodes, facts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_inventories(), st.sampled_from(["dra", "device_plugin"]))
def test_every_example_is_admissible_on_its_plan(inventory, backend):
    teams, nodes, facts = inventory
    try:
        plan = build_plan(teams, nodes, gpu_facts=facts, backend=backend)
    except PlanError:
        assume(False)  # an inventory the backend cannot plan (device_plugin mixes); the plan says why
    objects = example_workloads.build_examples(plan)
    _assert_admissible(plan, objects)
