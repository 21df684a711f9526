# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PlanError, build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.quotas import resource_groups

from gpushare_checks import kueue_cel_failures, kueue_webhook_problems, quota_of, validate_kueue

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
BACKENDS = ("dra", "device_plugin")


def load(name):
    return yaml.safe_load((FIXTURES / name).read_text())


def kinds(plan, kind):
    return [o for o in plan["objects"] if o["kind"] == kind]


def queues(plan):
    return {cq["metadata"]["name"]: cq for cq in kinds(plan, "ClusterQueue")}


def nominal_sums(plan):
    """(flavor, resource) -> sum of nominal quotas over all ClusterQueues."""
    sums = Counter()
    for cq in kinds(plan, "ClusterQueue"):
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for quota in flavor["resources"]:
                    if quota["name"] not in ("cpu", "memory"):
                        sums[(flavor["name"], quota["name"])] += int(quota["nominalQuota"])
    return sums


# --- the four-GPU server of the design ---------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_four_gpu_example_ownership_and_reclaim_order(backend):
    data = load("four_gpu_example.yml")
    plan = build_plan(data["gpushare_teams"], data["nodes"], backend=backend)
    gpus = plan["nodes"]["gpu1"]["gpus"]
    assert [(g["index"], g["team"], g["use"]) for g in gpus] == [
        (0, "production", "whole"), (1, "production", "mig"), (2, "data", "shared"), (3, "training", "whole")]
    assert [i["name"] for i in gpus[1]["instances"]][:3] == ["embeddings", "classifier", "speech-to-text"]
    teams = plan["teams"]
    whole = "nvidia.com/gpu" if backend == "device_plugin" else "gpushare.io/rtx-pro-6000"
    mig = "nvidia.com/mig-1g.24gb" if backend == "device_plugin" else "gpushare.io/rtx-pro-6000-mig-1g.24gb"
    assert teams["production"]["capacity"] == {whole: 1, mig: len(gpus[1]["instances"])}
    assert teams["training"]["capacity"] == {whole: 1}
    if backend == "device_plugin":
        assert teams["data"]["capacity"] == {"nvidia.com/mig-4g.96gb.shared": 5}
    else:  # a standalone claim: outside Kueue, documented in docs/quotas.md
        # The notebooks' standalone claim is outside Kueue; the GPU itself is one lendable
        # whole device of its own resource in the data team's quota (docs/quotas.md).
        assert teams["data"]["capacity"] == {"gpushare.io/rtx-pro-6000-shared": 1}
        assert teams["data"]["shared_claims"] == ["data/shared-gpu1-gpu2"]
    # Every team takes back what it lent, from any borrower (Kueue: reclaimWithinCohort Any).
    assert {name: t["reclaim"] for name, t in teams.items()} == {
        "production": "Any", "data": "Any", "training": "Any"}
    cqs = queues(plan)
    # Training can borrow everything production and data lend: its queue lists their flavors and
    # resources (nominal 0), has no borrowing limit, and the lenders set no lending limit.
    for lender in ("production", "data"):
        for group in cqs[lender]["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for quota in flavor["resources"]:
                    assert "lendingLimit" not in quota
                    borrower = quota_of(cqs["training"], flavor["name"], quota["name"])
                    assert borrower is not None and "borrowingLimit" not in borrower
    assert quota_of(cqs["training"], "rtx-pro-6000-mig", mig)["nominalQuota"] == "0"


# --- every object against the upstream CRDs ----------------------------------------------

@pytest.mark.parametrize("fixture, backend", [
    ("four_gpu_example.yml", "dra"), ("four_gpu_example.yml", "device_plugin"),
    ("fleet_device_plugin.yml", "device_plugin"), ("fleet_device_plugin.yml", "dra")])
def test_kueue_objects_validate_against_the_v0_19_2_crds(fixture, backend, reference_dir):
    data = load(fixture)
    if backend == "dra":
        for team in data["gpushare_teams"]:  # limits name resources, which differ per backend
            if isinstance(team.get("lend"), dict):
                team["lend"] = {"gpushare.io/h100-80gb": 2}
    plan = build_plan(data["gpushare_teams"], data["nodes"], backend=backend,
                      tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    kueue_objects = [o for o in plan["objects"] if o["apiVersion"].startswith("kueue.x-k8s.io/")]
    gpu_flavors = [o for o in kueue_objects if o["kind"] == "ResourceFlavor" and o["metadata"]["name"] != "gpushare-cpu"]
    assert gpu_flavors and all(f["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu" for f in gpu_flavors)
    assert Counter(o["kind"] for o in kueue_objects)["ClusterQueue"] == len(data["gpushare_teams"])
    for obj in kueue_objects:
        validate_kueue(reference_dir, obj)
        if obj["kind"] == "ClusterQueue":
            assert kueue_webhook_problems(obj) == []


def test_crd_checks_catch_v1beta1_cohort_and_borrowing_without_cohort(reference_dir):
    data = load("four_gpu_example.yml")
    cq = queues(build_plan(data["gpushare_teams"], data["nodes"]))["training"]
    old_style = copy.deepcopy(cq)
    old_style["spec"]["cohort"] = old_style["spec"].pop("cohortName")
    with pytest.raises(AssertionError, match="unknown to the CRD: \\['cohort'\\]"):
        validate_kueue(reference_dir, old_style)
    no_cohort = copy.deepcopy(cq)
    del no_cohort["spec"]["cohortName"]
    no_cohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 1
    assert kueue_cel_failures(reference_dir, no_cohort) == [".spec: borrowingLimit must be nil when cohort is empty"]
    uneven = copy.deepcopy(cq)
    uneven["spec"]["resourceGroups"][0]["coveredResources"].append("example.com/other")
    assert len(kueue_cel_failures(reference_dir, uneven)) == 1
    lending = copy.deepcopy(cq)
    quota = lending["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    quota["lendingLimit"] = int(quota["nominalQuota"]) + 1
    assert any("lendingLimit above nominalQuota" in p for p in kueue_webhook_problems(lending))


# --- limits, cpu/memory and configuration --------------------------------------------------

def test_fleet_limits_cpu_memory_and_configuration():
    data = load("fleet_device_plugin.yml")
    plan = build_plan(data["gpushare_teams"], data["nodes"], backend="device_plugin")
    cqs = queues(plan)
    assert quota_of(cqs["production"], "h100-80gb-whole", "nvidia.com/gpu") == {
        "name": "nvidia.com/gpu", "nominalQuota": "4", "lendingLimit": "2"}
    assert quota_of(cqs["research"], "h100-80gb-whole", "nvidia.com/gpu") == {
        "name": "nvidia.com/gpu", "nominalQuota": "0", "borrowingLimit": "4"}
    assert plan["teams"]["research"]["borrowing_limit"]["h100-80gb-whole/nvidia.com/gpu"] == 4
    assert plan["teams"]["production"]["lending_limit"] == {"h100-80gb-whole/nvidia.com/gpu": 2}
    # cpu/memory only where a team sets them; the rest is left to IgnoreUndeclared.
    cpu_groups = [g for g in cqs["training"]["spec"]["resourceGroups"] if "cpu" in g["coveredResources"]]
    assert cpu_groups == [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "gpushare-cpu", "resources": [
        {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"}]}]}]
    assert not any("cpu" in g["coveredResources"] for g in cqs["research"]["spec"]["resourceGroups"])
    assert plan["kueue_configuration"]["resources"]["quotaCheckStrategy"] == "IgnoreUndeclared"
    flavors = {f["metadata"]["name"]: f["spec"] for f in kinds(plan, "ResourceFlavor")}
    # H100-80GB has several product names (SXM, PCIe, H800): the planner's label, not GFD's.
    assert flavors["h100-80gb-whole"]["nodeLabels"] == {"gpushare.io/gpu.h100-80gb": "true"}
    assert flavors["l40s-shared"]["nodeLabels"] == {"nvidia.com/gpu.product": "NVIDIA-L40S-SHARED"}
    example = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    example_plan = build_plan(example["gpushare_teams"], example["nodes"], backend="device_plugin")
    example_flavors = {f["metadata"]["name"]: f["spec"] for f in kinds(example_plan, "ResourceFlavor")}
    assert example_flavors["rtx-pro-6000-whole"]["nodeLabels"] == {
        "nvidia.com/gpu.product": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"}
    assert flavors["h100-80gb-mig"]["nodeLabels"] == {"gpushare.io/gpu.h100-80gb": "true"}
    assert all(plan["nodes"][h]["labels"].get("gpushare.io/gpu.h100-80gb") == "true" for h in ("hgx1", "hgx2"))


def test_lend_mapping_above_nominal_and_unknown_resource_are_errors():
    data = load("fleet_device_plugin.yml")
    data["gpushare_teams"][0]["lend"] = {"nvidia.com/gpu": 5, "nvidia.com/tpu": 1}
    with pytest.raises(PlanError) as caught:
        build_plan(data["gpushare_teams"], data["nodes"], backend="device_plugin")
    assert len(caught.value.errors) == 2
    assert caught.value.errors[0].startswith("team production, field lend[nvidia.com/tpu]: no such GPU resource")
    assert "lending limit 5 for nvidia.com/gpu on flavor h100-80gb-whole is above the team's nominal quota 4" in \
        caught.value.errors[1]


def test_resource_groups_join_flavors_that_share_a_resource():
    pairs = [("a-whole", "nvidia.com/gpu"), ("b-whole", "nvidia.com/gpu"), ("a-mig", "nvidia.com/mig-1g.10gb"),
             ("b-mig", "nvidia.com/mig-1g.10gb"), ("b-mig", "nvidia.com/mig-2g.20gb"), ("c-shared", "x.shared")]
    assert resource_groups(pairs) == [
        (["a-mig", "b-mig"], ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"]),
        (["a-whole", "b-whole"], ["nvidia.com/gpu"]),
        (["c-shared"], ["x.shared"])]


# --- invariants over generated inventories ------------------------------------------------

MIG_CHOICES = {"H100-80GB": ["1g.10gb", "2g.20gb", "3g.40gb"], "A100-40GB": ["1g.5gb", "2g.10gb", "3g.20gb"]}
MODELS = ["H100-80GB", "A100-40GB", "L40S", "L4"]


@st.composite
def inventories(draw):
    team_count = draw(st.integers(1, 5))
    priorities = draw(st.lists(st.integers(0, 10_000), min_size=team_count, max_size=team_count, unique=True))
    teams = [{"name": "team%d" % t, "namespaces": ["ns%d-%d" % (t, n) for n in range(draw(st.integers(1, 2)))],
              "priority": priorities[t]} for t in range(team_count)]
    nodes = {}
    for host in range(draw(st.integers(1, 5))):
        model = draw(st.sampled_from(MODELS))
        node_kind = draw(st.sampled_from(["whole", "mixed", "shared"]))
        replicas = draw(st.integers(2, 8))
        gpus = []
        for index in range(draw(st.integers(1, 8))):
            team = "team%d" % draw(st.integers(0, team_count - 1))
            if node_kind == "shared":
                gpus.append({"index": index, "model": model, "team": team, "use": "shared", "replicas": replicas})
            elif node_kind == "mixed" and model in MIG_CHOICES and draw(st.booleans()):
                profile = draw(st.sampled_from(MIG_CHOICES[model]))
                count = draw(st.integers(1, 2))
                gpus.append({"index": index, "model": model, "team": team, "use": "mig",
                             "mig": {"profiles": {profile: count}}})
            else:
                gpus.append({"index": index, "model": model, "team": team, "use": "whole"})
        nodes["node%d" % host] = gpus
    return teams, nodes


def physical_units(nodes, backend):
    """Independent count from the inventory: what each (kind, model, resource) physically offers."""
    units = Counter()
    for gpus in nodes.values():
        for gpu in gpus:
            model = gpu["model"].lower()
            if gpu["use"] == "whole":
                units[("whole", model)] += 1
            elif gpu["use"] == "mig":
                for profile, count in gpu["mig"]["profiles"].items():
                    units[("mig", model, profile)] += count  # each instance once
            elif backend == "device_plugin":
                units[("shared", model)] += gpu["replicas"]
            else:  # dra: the time-shared GPU counted once, as a whole device
                units[("shared", model)] += 1
    return units


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inventories(), st.sampled_from(BACKENDS))
def test_nominal_quotas_add_up_to_physical_capacity(inventory, backend):
    teams, nodes = inventory
    plan = build_plan(teams, nodes, backend=backend)
    sums = nominal_sums(plan)
    counted = Counter()
    for (flavor, resource), total in sums.items():
        model, kind = flavor.rsplit("-", 1)
        if kind == "mig":
            profile = resource.rsplit("mig-", 1)[1]
            counted[("mig", model, profile)] += total
        else:
            counted[(kind, model)] += total
    assert +counted == +physical_units(nodes, backend)
    # Per team, capacity equals the sum of its nominal quotas, and matches the GPUs it owns.
    for team, entry in plan["teams"].items():
        cq = queues(plan)[team]
        per_resource = Counter()
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for quota in flavor["resources"]:
                    per_resource[quota["name"]] += int(quota["nominalQuota"])
        assert +per_resource == Counter(entry["capacity"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inventories(), st.sampled_from(BACKENDS))
def test_queues_cohort_reclaim_and_namespace_invariants(inventory, backend):
    teams, nodes = inventory
    plan = build_plan(teams, nodes, backend=backend, cohort="pool")
    cqs = queues(plan)
    assert set(cqs) == {t["name"] for t in teams}
    assert all(cq["spec"]["cohortName"] == "pool" for cq in cqs.values())
    # What you lend, you get back (every queue reclaims from any borrower); production first
    # (a borrowing workload may preempt lower-priority workloads of queues over their nominal).
    for cq in cqs.values():
        assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"},
                                            "withinClusterQueue": "LowerPriority"}
    all_pairs = set(nominal_sums(plan))
    namespaces = {o["metadata"]["name"]: o["metadata"]["labels"]["gpushare.io/team"] for o in kinds(plan, "Namespace")}
    for team in teams:
        cq = cqs[team["name"]]
        assert cq["spec"]["namespaceSelector"] == {"matchLabels": {"gpushare.io/team": team["name"]}}
        admitted = {ns for ns, owner in namespaces.items() if owner == team["name"]}
        assert admitted == set(team["namespaces"])
        listed = {(f["name"], q["name"]) for g in cq["spec"]["resourceGroups"] for f in g["flavors"]
                  for q in f["resources"] if q["name"] not in ("cpu", "memory")}
        assert listed == all_pairs  # every queue can borrow every kind in the cohort
    local_queues = kinds(plan, "LocalQueue")
    assert sorted((lq["metadata"]["namespace"], lq["spec"]["clusterQueue"]) for lq in local_queues) == sorted(
        (ns, t["name"]) for t in teams for ns in t["namespaces"])
    priorities = {w["metadata"]["name"]: w["value"] for w in kinds(plan, "WorkloadPriorityClass")}
    assert priorities == {t["name"]: t["priority"] for t in teams}


def test_a_team_called_default_cannot_own_a_shared_gpu_under_dra():
    teams = [{"name": "default", "namespaces": ["lab"], "priority": 10}]
    nodes = {"n1": [{"index": 0, "model": "L40S", "team": "default", "use": "shared", "replicas": 4}]}
    with pytest.raises(PlanError, match=r"team default, field name: its LocalQueue would be called 'default'"):
        build_plan(teams, nodes, backend="dra")
    build_plan(teams, nodes, backend="device_plugin")  # counted slots: the pods are queued and admitted
    build_plan(teams, {"n1": [{"index": 0, "model": "L40S", "team": "default", "use": "whole"}]}, backend="dra")


def test_time_shared_gpu_is_lendable_unless_the_owner_says_no():
    data = load("four_gpu_example.yml")
    plan = build_plan(data["gpushare_teams"], data["nodes"], backend="dra")
    cqs = queues(plan)
    assert quota_of(cqs["data"], "rtx-pro-6000-shared", "gpushare.io/rtx-pro-6000-shared") == {
        "name": "gpushare.io/rtx-pro-6000-shared", "nominalQuota": "1"}
    assert quota_of(cqs["training"], "rtx-pro-6000-shared", "gpushare.io/rtx-pro-6000-shared")["nominalQuota"] == "0"
    teams = copy.deepcopy(data["gpushare_teams"])
    teams[1]["lend"] = {"gpushare.io/rtx-pro-6000-shared": 0}
    kept = queues(build_plan(teams, data["nodes"], backend="dra"))
    assert quota_of(kept["data"], "rtx-pro-6000-shared", "gpushare.io/rtx-pro-6000-shared")["lendingLimit"] == "0"


def test_cluster_queue_quantities_are_strings_as_the_api_server_returns_them():
    # Kueue defaults a ClusterQueue on CREATE only; a number sent again on UPDATE is stored as
    # sent, so numbers here made every second apply of the plan change the ClusterQueues.
    data = load("four_gpu_example.yml")
    for backend in ("dra", "device_plugin"):
        teams = copy.deepcopy(data["gpushare_teams"])
        teams[2]["borrow"] = 1
        teams[1]["lend"] = 0
        plan = build_plan(teams, data["nodes"], backend=backend)
        seen = 0
        for cq in kinds(plan, "ClusterQueue"):
            for group in cq["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for quota in flavor["resources"]:
                        for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                            if key in quota:
                                seen += 1
                                assert isinstance(quota[key], str), (backend, cq["metadata"]["name"], quota)
        assert seen
