"""The quota side of the worked day on a real control plane: kube-apiserver, the scheduler's DRA
allocation, the claim controller and Kueue v0.19.2 (with the plan's own Kueue configuration),
simulated GPUs published as ResourceSlices the way the NVIDIA DRA driver v0.4.1 writes them
(capacity ``memory`` from ``gpu_catalog.published_memory_mib``), pods run by kwok.

What it shows for real: the example workloads of the four-GPU plan are admitted and placed (the
template floors are met by what the driver publishes; Kueue's DRA check against the slices
passes); the notebooks reach the time-shared GPU through the shared claim without a queue label;
the fine-tune is admitted, waits in the scheduler while the notebooks hold GPU 2, and is placed
on GPUs 3 and 2 once they are gone; a lower-priority team gets its lent GPU back from a
production borrower by preemption. The admission policies are not applied here (their own
rehearsal tests cover them).
"""

from __future__ import annotations

import copy
import time

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.render import examples as example_workloads
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import kube as rehearsal_kube
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import steps as rehearsal_steps
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as rehearsal_world
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

from rehearsal_env import REPO_ROOT, wait_until

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "inventories" / "four_gpu_example.yml"
RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
HOST = "gpu1"
UUIDS = {index: "GPU-0000000%d-0000-0000-0000-00000000000%d" % (index, index) for index in range(4)}

# kind -> (API prefix, plural, namespaced)
PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "WorkloadPriorityClass": ("/apis/kueue.x-k8s.io/v1beta2", "workloadpriorityclasses", False),
    "ResourceFlavor": ("/apis/kueue.x-k8s.io/v1beta2", "resourceflavors", False),
    "Cohort": ("/apis/kueue.x-k8s.io/v1beta2", "cohorts", False),
    "ClusterQueue": ("/apis/kueue.x-k8s.io/v1beta2", "clusterqueues", False),
    "LocalQueue": ("/apis/kueue.x-k8s.io/v1beta2", "localqueues", True),
    "Workload": ("/apis/kueue.x-k8s.io/v1beta2", "workloads", True),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
}
APPLY_ORDER = ("Namespace", "DeviceClass", "ResourceClaimTemplate", "ResourceClaim", "WorkloadPriorityClass",
               "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue")


def _path(kind, name=None, namespace=None):
    prefix, plural, namespaced = PATHS[kind]
    path = prefix + ("/namespaces/%s" % namespace if namespaced and namespace else "") + "/" + plural
    return path + ("/" + name if name else "")


def _apply(info, obj):
    meta = obj["metadata"]
    status, body = rc.api_request(info, "PATCH", _path(obj["kind"], meta["name"], meta.get("namespace"))
                                  + "?fieldManager=gpushare-rehearsal&force=true", obj,
                                  content_type="application/apply-patch+yaml")
    assert status in (200, 201), "%s %s: HTTP %s: %s" % (obj["kind"], meta["name"], status, body)
    return body


def _get(info, kind, name=None, namespace=None):
    status, body = rc.api_request(info, "GET", _path(kind, name, namespace))
    return body if status == 200 else None


def _delete(info, kind, name, namespace=None):
    rc.api_request(info, "DELETE", _path(kind, name, namespace) + "?propagationPolicy=Background")


def _wait(what, check, timeout=120.0):
    return wait_until(what, check, timeout, interval=1.0)


def _condition(obj, kind):
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in ((obj or {}).get("status") or {}).get("conditions") or [])


def _pods(info, namespace, prefix):
    items = (_get(info, "Pod", namespace=namespace) or {}).get("items") or []
    return [p for p in items if p["metadata"]["name"].startswith(prefix) and not p["metadata"].get("deletionTimestamp")]


def _workloads(info, namespace):
    return (_get(info, "Workload", namespace=namespace) or {}).get("items") or []


def _allocated_devices(info, namespace, pod):
    """Device names the scheduler allocated to the pod's claims."""
    names = [s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []]
    names += [c["resourceClaimName"] for c in pod["spec"].get("resourceClaims") or [] if c.get("resourceClaimName")]
    devices = []
    for name in names:
        claim = _get(info, "ResourceClaim", name, namespace) or {}
        for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            devices.append(result["device"])
    return sorted(devices)


def _plan():
    data = yaml.safe_load(FIXTURE.read_text())
    facts = {HOST: {"gpus": [{"index": i, "name": RTX, "uuid": UUIDS[i]} for i in range(4)]}}
    return build_plan(data["gpushare_teams"], data["nodes"], gpu_facts=facts, backend="dra")


def _slice(plan):
    """The node's devices as the DRA driver would publish them (no counters: one device per MIG instance)."""
    devices = []
    for gpu in plan["nodes"][HOST]["gpus"]:
        common = {"productName": {"string": RTX}, "architecture": {"string": "Blackwell"}}
        if gpu["use"] == "mig":
            for inst in gpu["instances"]:
                # The driver's canonical name (v0.4.1 mig.go ToCanonicalName): profile without dots,
                # GI profile ID, placement start.
                profile_id = gpu_catalog.lookup(gpu["model"]).profile(inst["profile"]).id
                name = "gpu-%d-mig-%s-%d-%d" % (gpu["index"], inst["profile"].replace(".", "").replace("+", "-"),
                                                profile_id, inst["start"])
                devices.append({"name": name,
                                "attributes": dict(common, type={"string": "mig"}, profile={"string": inst["profile"]},
                                                   uuid={"string": "MIG-%d-%d" % (gpu["index"], inst["start"])},
                                                   parentUUID={"string": UUIDS[gpu["index"]]}),
                                "capacity": {"memory": {"value": "%dMi" % gpu_catalog.published_memory_mib(
                                    gpu["model"], inst["profile"])}}})
        else:
            devices.append({"name": "gpu-%d" % gpu["index"],
                            "attributes": dict(common, type={"string": "gpu"}, uuid={"string": UUIDS[gpu["index"]]}),
                            "capacity": {"memory": {"value": "%dMi" % gpu_catalog.published_memory_mib(RTX)}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "%s-gpu.nvidia.com" % HOST},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": HOST,
                     "pool": {"name": HOST, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def _apply_gpu_node(info, plan, labels):
    """The plan's GPU node, run by kwok, with ``labels`` and its devices published."""
    _apply(info, {"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": HOST, "annotations": dict(info["kwok_node_annotation"]),
                               "labels": dict(labels, **{"kubernetes.io/hostname": HOST})},
                  "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                             "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}})
    _apply(info, _slice(plan))


@pytest.fixture(scope="module")
def day(rehearsal_bin, tmp_path_factory):
    """A control plane running the plan's own Kueue configuration, with the plan applied."""
    plan = _plan()
    configuration = helm_values.kueue_configuration(plan, {})
    directory = tmp_path_factory.mktemp("quotas-day")
    info = rc.start(str(directory), kueue_configuration=configuration, bin_dir=rehearsal_bin["bin_dir"])
    try:
        for kind in APPLY_ORDER:
            for obj in plan["objects"]:
                if obj["kind"] == kind:
                    _apply(info, obj)
        _apply_gpu_node(info, plan, plan["nodes"][HOST]["labels"])
        for name in plan["teams"]:
            _wait("ClusterQueue %s active" % name, lambda n=name: _condition(_get(info, "ClusterQueue", n), "Active"))
        yield {"info": info, "plan": plan, "examples": example_workloads.build_examples(plan)}
    finally:
        rc.stop(str(directory))


def _example(day, name):
    return next(obj for obj in day["examples"] if obj["metadata"]["name"] == name)


def test_the_worked_day_on_a_real_scheduler_and_kueue(day):
    info = day["info"]
    # 08:00 / 09:30: vLLM and the three MIG models are admitted and placed on what the driver publishes.
    for name in ("vllm", "embeddings", "classifier", "speech-to-text"):
        _apply(info, _example(day, name))
    running = _wait("serving and MIG pods running", lambda: (
        len([p for p in _pods(info, "production", "") if p.get("status", {}).get("phase") == "Running"]) == 4
        and _pods(info, "production", "")))
    vllm = next(p for p in running if p["metadata"]["name"].startswith("vllm"))
    serving_gpu = _allocated_devices(info, "production", vllm)
    assert serving_gpu in (["gpu-0"], ["gpu-3"])  # never the time-shared GPU 2
    for pod in running:
        if not pod["metadata"]["name"].startswith("vllm"):
            assert _allocated_devices(info, "production", pod)[0].startswith("gpu-1-mig-")

    # 10:00: five notebooks share GPU 2 through the shared claim, without a queue label.
    for number in range(1, 6):
        notebook = _example(day, "notebook-%d" % number)
        assert example_workloads.QUEUE_LABEL not in notebook["metadata"]["labels"]
        _apply(info, notebook)
    _wait("notebooks running", lambda: len([p for p in _pods(info, "data", "notebook-")
                                            if p.get("status", {}).get("phase") == "Running"]) == 5)
    claim = _get(info, "ResourceClaim", "shared-gpu1-gpu2", "data")
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-2"]
    assert not _workloads(info, "data")  # not queue-managed: Kueue has no Workload for them

    # 13:00: the fine-tune (GPU 3 and data's lendable GPU 2) is admitted by Kueue, which does not
    # see the notebooks, and waits in the scheduler.
    _apply(info, _example(day, "fine-tune"))
    workload = _wait("fine-tune admitted", lambda: next(
        (w for w in _workloads(info, "training") if _condition(w, "Admitted")), None))
    pod = _wait("fine-tune pod created", lambda: next(iter(_pods(info, "training", "fine-tune")), None))
    time.sleep(10)
    pod = _get(info, "Pod", pod["metadata"]["name"], "training")
    assert not pod["spec"].get("nodeName"), "the fine-tune must not run while the notebooks hold GPU 2"
    assigned = workload["status"]["admission"]["podSetAssignments"][0]["flavors"]
    assert assigned == {"gpushare.io/rtx-pro-6000": "rtx-pro-6000-whole",
                        "gpushare.io/rtx-pro-6000-shared": "rtx-pro-6000-shared"}

    # 19:00: the notebooks close; the claim is released and the fine-tune is placed on GPUs 3 and 2.
    for number in range(1, 6):
        _delete(info, "Pod", "notebook-%d" % number, "data")
    _wait("shared claim released", lambda: not ((_get(info, "ResourceClaim", "shared-gpu1-gpu2", "data") or {})
                                                .get("status") or {}).get("allocation"), timeout=120)
    placed = _wait("fine-tune running", lambda: next(
        (p for p in _pods(info, "training", "fine-tune") if p.get("status", {}).get("phase") == "Running"), None),
        timeout=330)  # at worst the scheduler's 5-minute flush of unschedulable pods
    # GPU 2 (the notebooks' GPU, borrowed) and the whole GPU vLLM does not hold (GPU 3 in the story).
    assert _allocated_devices(info, "training", placed) == sorted(["gpu-2", ({"gpu-0", "gpu-3"} - set(serving_gpu)).pop()])

    # 05:10: the fine-tune ends; GPU 2 is the notebooks' again.
    _delete(info, "Job", "fine-tune", "training")
    _wait("fine-tune gone", lambda: not _pods(info, "training", "fine-tune"), timeout=120)
    _apply(info, _example(day, "notebook-1"))
    _wait("a notebook on GPU 2 again", lambda: [p for p in _pods(info, "data", "notebook-1")
                                                if p.get("status", {}).get("phase") == "Running"], timeout=120)
    claim = _get(info, "ResourceClaim", "shared-gpu1-gpu2", "data")
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-2"]


def _gpu_job(name, namespace, team, template, count=1):
    labels = {example_workloads.QUEUE_LABEL: team, example_workloads.PRIORITY_LABEL: team}
    claims = [{"name": "gpu-%d" % n, "resourceClaimTemplateName": template} for n in range(count)]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
                     "template": {"metadata": {"labels": dict(labels)}, "spec": {
                         "restartPolicy": "Never", "resourceClaims": claims,
                         "containers": [{"name": "work", "image": "busybox",
                                         "resources": {"claims": [{"name": c["name"]} for c in claims]}}]}}}}


def test_a_lower_priority_team_takes_its_lent_gpu_back_from_production(day):
    """What you lend, you get back: training reclaims its whole GPU from a production borrower."""
    info = day["info"]
    _wait("the day's fine-tune is gone", lambda: not _pods(info, "training", "fine-tune"), timeout=120)
    # production already holds its own whole GPU (vLLM); a second one borrows training's idle unit.
    _apply(info, _gpu_job("burst", "production", "production", "gpu-rtx-pro-6000"))
    _wait("production burst admitted (borrowing)", lambda: next(
        (w for w in _workloads(info, "production") if w["metadata"]["name"].startswith("job-burst") and _condition(w, "Admitted")),
        None))
    cq = _get(info, "ClusterQueue", "production")
    assert cq["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
    # training needs its nominal GPU back: Kueue preempts production's borrower.
    _apply(info, _gpu_job("own-gpu", "training", "training", "gpu-rtx-pro-6000"))
    _wait("production burst preempted", lambda: next(
        (w for w in _workloads(info, "production") if w["metadata"]["name"].startswith("job-burst")
         and (_condition(w, "Preempted") or _condition(w, "Evicted"))), None), timeout=120)
    _wait("training's own GPU admitted", lambda: next(
        (w for w in _workloads(info, "training") if w["metadata"]["name"].startswith("job-own-gpu")
         and _condition(w, "Admitted")), None), timeout=120)
    _wait("training's pod running", lambda: [p for p in _pods(info, "training", "own-gpu")
                                             if p.get("status", {}).get("phase") == "Running"], timeout=330)


def _day_of_steps(day, teams, steps, plan=None):
    """run_day of the rehearsal on this control plane, each team in ``teams`` acting as a user in ``groups``."""
    info, plan = day["info"], plan or day["plan"]
    apis = {team: rehearsal_kube.api_client(rc.user_kubeconfig(info["dir"], "%s-engineer" % team, groups))
            for team, groups in teams.items()}
    checked = rehearsal_steps.validate_steps(plan, steps)
    return rehearsal_kube.run_day(rehearsal_kube.api_client(info["kubeconfig"]), apis, plan,
                                  rehearsal_world.build_world(plan, [HOST]), checked,
                                  before_the_day=rehearsal_steps.nobody_can_act_as(plan))


def test_a_refused_workload_leaves_its_team_alone_and_its_deletion_is_a_fact_of_the_day(day):
    """Issue 35: the clean-up after a refused workload must not touch another workload of its team,
    and deleting the refused workload later must not stop the day."""
    info, plan = day["info"], day["plan"]
    for kind, name, namespace in (("Job", "own-gpu", "training"), ("Job", "burst", "production")):
        _delete(info, kind, name, namespace)
    _wait("the earlier tests' Jobs gone", lambda: not _pods(info, "training", "own-gpu")
          and not _pods(info, "production", "burst"), timeout=120)
    # A training user who may create Jobs and ResourceClaims but not Pods: the attempt's claim is
    # created, then its Pod is refused by RBAC (the plan's own Role lets team users only read claims,
    # and its admission policies refuse such a claim itself; neither is applied in this module).
    rules = [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get", "list", "delete"]},
             {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["create", "get", "delete"]}]
    _apply(info, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "claim-makers", "namespace": "training"}, "rules": rules})
    _apply(info, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                  "metadata": {"name": "claim-makers", "namespace": "training"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "claim-makers"},
                  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "claim-makers"}]})
    attempt = {"team": "training", "name": "training-uses-data-claim", "shared": True,
               "claim": rehearsal_steps.PlanView(plan).shared_claims("data")[0]}
    doc = _day_of_steps(day, {"training": ["claim-makers"]}, [
        {"at": "10:00", "submit": [{"team": "training", "name": "exp-1", "gpus": 1}], "expect": {"admitted": ["exp-1"]}},
        {"at": "10:30", "submit": [attempt], "expect": {"denied": [attempt["name"]], "admitted": ["exp-1"]}},
        {"at": "11:00", "delete": [attempt["name"]], "expect": {"admitted": ["exp-1"]}},
    ])
    steps = {s["at"]: s for s in doc["steps"]}
    assert doc["passed"], doc["unmet"]
    # the claim was created before the pod was refused (else this would not be the case of the issue)
    assert steps["10:30"]["reasons"][attempt["name"]].startswith("pods is forbidden"), steps["10:30"]["reasons"]
    placed = {s: [(a["pod"], a["device"]) for a in steps[s]["allocations"] if a["workload"] == "exp-1"] for s in steps}
    assert placed["10:00"] and placed["10:30"] == placed["10:00"] and placed["11:00"] == placed["10:00"], placed
    assert steps["10:30"]["teams"]["training"]["admitted"] == ["exp-1"]
    left = _get(info, "ResourceClaim", attempt["claim"], "training")
    assert not left or left["metadata"].get("deletionTimestamp"), "the refused workload's claim is left behind"
    assert list(steps["11:00"]["not_running"]) == [attempt["name"]]
    assert "refused by the API server at 10:30" in steps["11:00"]["not_running"][attempt["name"]]

    # A team without a group: said before the day, and its workloads are refused by RBAC.
    nobody = copy.deepcopy(plan)
    nobody["teams"]["training"]["group"] = None
    doc = _day_of_steps(day, {"training": []}, [
        {"at": "12:00", "submit": [{"team": "training", "name": "exp-2", "gpus": 1}], "expect": {"denied": ["exp-2"]}}],
        plan=nobody)
    assert doc["passed"], doc["unmet"]
    (line,) = doc["before_the_day"]
    assert line.startswith("team training has no group") and "set group: for team training" in line
    assert "forbidden" in doc["steps"][0]["reasons"]["exp-2"].lower()
    _delete(info, "Job", "exp-1", "training")
    _wait("exp-1 gone", lambda: not _pods(info, "training", "exp-1"), timeout=120)
