"""Team isolation on a real API server: a hostile team member tries each way around the queue.

The plan of the worked day (four GPUs, three teams, dra) is applied to a rehearsal control
plane (kube-apiserver 1.35 with Pod Security, ValidatingAdmissionPolicy and RBAC, the
controller manager, the scheduler and Kueue, all real); then a user in the training team's
group (a client certificate, so RBAC applies) and one of the data team send the requests of
docs/security.md. The admin path (the plan's objects) and the legitimate team paths must
still work. NetworkPolicies are accepted here but not enforced (no CNI).
"""

from __future__ import annotations

import copy
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import isolation
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

from pods import pod
from rehearsal_env import wait_until

REPO_ROOT = Path(__file__).resolve().parents[3]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "inventories" / "four_gpu_example.yml"
KUEUE_DEFAULTS = REPO_ROOT / "roles" / "kueue" / "defaults" / "main.yml"
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
TRAINING_USER, DATA_USER = "tess", "dana"
SCHEDULER = "system:kube-scheduler"
CLAIM_CONTROLLER = "system:serviceaccount:kube-system:resource-claim-controller"
# training gets a small namespace quota so that enforcement can be shown.
TRAINING_QUOTA = {"pods": 20, "cpu": "4", "memory": "8Gi"}


def _plan():
    data = yaml.safe_load(FIXTURE.read_text())
    teams = copy.deepcopy(data["gpushare_teams"])
    next(t for t in teams if t["name"] == "training")["namespace_quota"] = TRAINING_QUOTA
    return build_plan(teams, data["nodes"], backend="dra", kubernetes_version="1.35")


def _request(info, method, path, body=None, cert=None, impersonate=None, content_type="application/json"):
    """One API request as the admin, as ``cert`` (crt, key), or as the admin impersonating a user."""
    crt, key = cert or (info["pki"]["admin_crt"], info["pki"]["admin_key"])
    context = ssl.create_default_context(cafile=info["pki"]["ca_crt"])
    context.load_cert_chain(crt, key)
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    if impersonate:
        headers["Impersonate-User"] = impersonate
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(info["server"] + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=15) as response:  # nosec - loopback only
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def _wait_for(what, check, timeout=60.0):
    return wait_until(what, check, timeout, interval=0.5)


def _path(obj):
    """The collection path of an object, from its apiVersion and kind."""
    plural = {"NetworkPolicy": "networkpolicies", "ResourceQuota": "resourcequotas", "LimitRange": "limitranges",
              "ResourceClaimTemplate": "resourceclaimtemplates", "ResourceClaim": "resourceclaims",
              "DeviceClass": "deviceclasses", "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
              "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings", "ConfigMap": "configmaps",
              "Secret": "secrets", "Pod": "pods", "Job": "jobs", "Deployment": "deployments", "StatefulSet": "statefulsets",
              "Namespace": "namespaces",
              "RuntimeClass": "runtimeclasses"}[obj["kind"]]
    api = obj["apiVersion"]
    base = "/api/v1" if api == "v1" else "/apis/" + api
    namespace = obj["metadata"].get("namespace")
    return base + ("/namespaces/%s" % namespace if namespace else "") + "/" + plural


def _create(info, obj, **kwargs):
    return _request(info, "POST", _path(obj), obj, **kwargs)


def _apply_all(info, objects):
    rc.apply_objects(info, objects, field_manager="gpushare-tenancy")


def isolation_control_plane(rehearsal_bin, tmp_path_factory):
    """A control plane with the plan applied as the tenancy, dra_driver and kueue roles would
    (a generator: the body of conftest's session fixture ``isolation_cluster``)."""
    plan = _plan()
    frameworks = yaml.safe_load(KUEUE_DEFAULTS.read_text())["kueue_frameworks"]
    configuration = helm_values.kueue_configuration(plan, {"frameworks": frameworks})
    directory = tmp_path_factory.mktemp("isolation")
    # DRAExtendedResource on, as the kubeadm README suggests for 1.34-1.35: the worst case for the queue.
    info = rc.start(str(directory), kueue_configuration=configuration, bin_dir=rehearsal_bin["bin_dir"],
                    feature_gates={"DRAExtendedResource": True})
    try:
        objects = plan["objects"]
        tenancy = {name: list(yaml.safe_load_all(text)) for name, text in addon_files.render("tenancy", plan, {}).items()}
        _apply_all(info, [o for o in objects if o["kind"] == "Namespace"])
        operator_namespace = addon_files._privileged_namespace("gpu-operator")  # what the gpu_operator role applies
        _apply_all(info, [operator_namespace])
        _apply_all(info, [o for o in tenancy["manifests/tenancy/boundaries.yaml"] if o])
        _apply_all(info, [o for o in objects if o["kind"] in ("WorkloadPriorityClass", "ResourceFlavor", "Cohort")])
        queue_kinds = ("ClusterQueue", "LocalQueue", "DeviceClass", "Role", "RoleBinding")
        _apply_all(info, [o for o in objects if o["kind"] in queue_kinds])
        _apply_all(info, [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                           "handler": "nvidia"}])
        policy_kinds = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
        _apply_all(info, [o for o in objects if o["kind"] in policy_kinds])
        # The plan's claims and templates go through the claim policies, as the dra_driver role's apply does.
        _apply_all(info, [o for o in objects if o["kind"] in ("ResourceClaimTemplate", "ResourceClaim")])
        users = {}
        for user, group in ((TRAINING_USER, "ml-training"), (DATA_USER, "data-scientists")):
            rc.user_kubeconfig(str(directory), user, [group])
            users[user] = rc.user_cert_files(str(directory), user)
        # Policies take effect shortly after they are created: wait until each one answers.
        probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": "training"},
                 "data": {"NVIDIA_VISIBLE_DEVICES": "all"}}
        _wait_for("admission policies active", lambda: _request(
            info, "POST", _path(probe) + "?dryRun=All", probe)[0] == 403)
        template_pod = pod("training", templates=["gpu-rtx-pro-6000"])
        _wait_for("queue policy active", lambda: _request(
            info, "POST", _path(template_pod) + "?dryRun=All", template_pod)[0] == 403)
        yield {"info": info, "plan": plan, "users": users, "dir": str(directory)}
    finally:
        rc.stop(str(directory))


@pytest.fixture(scope="module")
def cluster(isolation_cluster):
    return isolation_cluster


def _workload(kind, name, namespace, template_pod, labels=None, template_labels=None):
    template = {"metadata": {"labels": dict(template_labels or {"app": name})}, "spec": dict(template_pod["spec"])}
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata,
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}}


def _as(cluster, user):
    return {"cert": cluster["users"][user]}


def _refused(answer, needle):
    status, body = answer
    message = body.get("message", "") if isinstance(body, dict) else str(body)
    assert status == 403 and needle in message, (status, message)
    return message


#: What the running test created, deleted after it (the control plane is shared; the session's
#: leak check, conftest.py, fails a test that leaves anything behind).
_MADE = []


@pytest.fixture(autouse=True)
def delete_what_the_test_made(cluster):
    yield
    while _MADE:
        obj = _MADE.pop()
        path = "%s/%s" % (_path(obj), obj["metadata"]["name"])
        status, body = _request(cluster["info"], "DELETE", path, {"propagationPolicy": "Background"})
        assert status in (200, 202, 404), (path, status, body)


def _created(answer):
    status, body = answer
    assert status == 201, (status, body.get("message") if isinstance(body, dict) else body)
    _MADE.append(body)
    return body


# --- Pod Security ------------------------------------------------------------------------------

def test_privileged_and_host_path_pods_are_refused_in_team_namespaces(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    privileged = pod("training", name="priv", security={"privileged": True})
    host_path = pod("training", name="hostpath", volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    host_net = pod("training", name="hostnet", hostNetwork=True)
    for refused in (privileged, host_path, host_net):
        _refused(_create(info, refused, **tess), 'violates PodSecurity "baseline:v1.34"')


def test_the_gpu_operator_namespace_still_runs_privileged_pods(cluster):
    info = cluster["info"]
    operator_pod = pod("gpu-operator", name="driver", security={"privileged": True},
                       volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    _created(_create(info, operator_pod))


# --- GPUs by environment variable ---------------------------------------------------------------

def test_nvidia_runtime_class_environment_and_keys_are_refused(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    _refused(_create(info, pod("training", name="rt", runtimeClassName="nvidia"), **tess), "NVIDIA runtime classes")
    _refused(_create(info, pod("training", name="env", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
                     **tess), "NVIDIA_* environment variables")
    env_from = [{"prefix": "NVIDIA_", "configMapRef": {"name": "c"}}]
    _refused(_create(info, pod("training", name="envfrom", envFrom=env_from), **tess), "envFrom prefix")
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "devices", "namespace": "training"},
              "data": {"NVIDIA_VISIBLE_DEVICES": "all"}}
    _refused(_create(info, config, **tess), "NVIDIA_* keys")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "devices", "namespace": "training"},
              "stringData": {"NVIDIA_VISIBLE_DEVICES": "all"}}
    _refused(_create(info, secret, **tess), "NVIDIA_* keys")
    _created(_create(info, dict(config, data={"MODEL": "llama"}), **tess))
    _created(_create(info, pod("training", name="plain-env", env=[{"name": "MODEL", "value": "llama"}],
                               envFrom=[{"configMapRef": {"name": "devices"}}]), **tess))


# --- the queue ------------------------------------------------------------------------------------

def test_a_forged_owner_does_not_skip_the_queue(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    mine = _created(_create(info, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "owner", "namespace": "training"}}, **tess))
    forged = pod("training", name="forged", templates=["gpu-rtx-pro-6000"] * 8, ownerReferences=[{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": mine["metadata"]["uid"], "controller": True}])
    _refused(_create(info, forged, **tess), "must carry the label kueue.x-k8s.io/queue-name: training")


def test_pod_group_forgery_is_refused(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    group = pod("training", name="group-0", queue="training", templates=["gpu-rtx-pro-6000"],
                labels={"kueue.x-k8s.io/pod-group-name": "g"},
                annotations={"kueue.x-k8s.io/pod-group-total-count": "8", "kueue.x-k8s.io/role-hash": "small"})
    _refused(_create(info, group, **tess), "pod-group")
    deployment = _workload("Deployment", "grouped", "training", pod("training"), labels={},
                           template_labels={"app": "grouped", "kueue.x-k8s.io/pod-group-name": "g"})
    _refused(_create(info, deployment, **tess), "pod-group")


def test_extended_resources_are_refused_or_need_the_queue(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    dra_extended = pod("training", name="ext", resources={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": "8"})
    # The API server reports the first failed validation: the missing queue label, then the resource.
    _refused(_create(info, dra_extended, **tess), "must carry the label kueue.x-k8s.io/queue-name: training")
    dra_extended["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "training"
    _refused(_create(info, dra_extended, **tess), "not nvidia.com/* or deviceclass.resource.kubernetes.io/* resources")
    _refused(_create(info, pod("training", name="plugin", queue="training", resources={"nvidia.com/gpu": "1"}),
                     **tess), "not nvidia.com/*")
    _refused(_create(info, pod("training", name="other-ext", resources={"example.com/gpu-40gi": "1"}), **tess),
             "must carry the label kueue.x-k8s.io/queue-name")


def test_another_teams_priority_class_is_refused_on_every_kind(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    gpu = pod("training", templates=["gpu-rtx-pro-6000"])
    spoofed = {"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/priority-class": "production"}
    for kind in ("Job", "Deployment", "StatefulSet"):
        obj = _workload(kind, "spoof-" + kind.lower(), "training", gpu, labels=spoofed)
        if kind == "StatefulSet":
            obj["spec"]["serviceName"] = obj["metadata"]["name"]
        _refused(_create(info, obj, **tess), "priority-class may only name the team's own")
    _refused(_create(info, pod("training", name="spoof", templates=["gpu-rtx-pro-6000"], labels=spoofed), **tess),
             "priority-class may only name the team's own")


def test_jobs_and_deployments_go_through_the_queue(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    labels = {"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/priority-class": "training"}
    gpu = pod("training", templates=["gpu-rtx-pro-6000"])
    job = _created(_create(info, _workload("Job", "fine-tune", "training", gpu, labels=labels), **tess))
    assert job["spec"]["suspend"] is True  # Kueue's webhook suspends it until admission
    _wait_for("a Workload for the Job", lambda: any(
        w["metadata"]["ownerReferences"][0]["name"] == "fine-tune"
        for w in _request(info, "GET", KUEUE_API + "/namespaces/training/workloads")[1].get("items", [])))
    _created(_create(info, _workload("Deployment", "serve", "training", gpu, labels=labels), **tess))
    # The ReplicaSet controller creates the pod (exempt by identity); Kueue gates it.
    pods = _wait_for("the Deployment's pod", lambda: list(
        _request(info, "GET", "/api/v1/namespaces/training/pods?labelSelector=app%3Dserve")[1]["items"]))
    assert {"name": "kueue.x-k8s.io/admission"} in pods[0]["spec"].get("schedulingGates", [])
    # Removing the gate is not the team's to do.
    ungated = _request(info, "PATCH", "/api/v1/namespaces/training/pods/%s" % pods[0]["metadata"]["name"],
                       {"spec": {"schedulingGates": []}}, content_type="application/merge-patch+json", **tess)
    assert ungated[0] == 403, ungated
    unsuspended = _request(info, "PATCH", "/apis/batch/v1/namespaces/training/jobs/fine-tune", {"spec": {"suspend": False}},
                           content_type="application/merge-patch+json", **tess)
    assert unsuspended[0] == 403, unsuspended


def test_notebooks_reach_the_shared_gpu_outside_the_queue(cluster):
    info, dana = cluster["info"], _as(cluster, DATA_USER)
    notebook = _created(_create(info, pod("data", name="notebook-1", claims=["shared-gpu1-gpu2"]), **dana))
    assert not notebook["spec"].get("schedulingGates")  # not queue-managed
    _refused(_create(info, pod("data", name="notebook-q", claims=["shared-gpu1-gpu2"], queue="data"), **dana),
             "remove the label kueue.x-k8s.io/queue-name")
    _refused(_create(info, pod("data", name="stolen", claims=["p-gpu0-abcde"]), **dana), "shared-GPU ResourceClaims")
    _refused(_create(info, pod("training", name="cross", claims=["shared-gpu1-gpu2"]), **_as(cluster, TRAINING_USER)),
             "shared-GPU ResourceClaims")


# --- claims -----------------------------------------------------------------------------------

def test_generated_claims_are_made_and_the_scheduler_finalizer_update_is_admitted(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    _created(_create(info, pod("training", name="claimer", queue="training", labels={
        "kueue.x-k8s.io/priority-class": "training"}, templates=["gpu-rtx-pro-6000"]), **tess))
    # The claim controller creates the pod's claim from the template (a CREATE the claim policy admits).
    # Other pods of the namespace (earlier tests' Deployments) have generated claims of their own.
    claims = _wait_for("the generated claim", lambda: [
        c for c in _request(info, "GET", "/apis/resource.k8s.io/v1/namespaces/training/resourceclaims")[1]["items"]
        if c["metadata"].get("annotations", {}).get("resource.kubernetes.io/pod-claim-name") == "gpu0"
        and [owner["name"] for owner in c["metadata"].get("ownerReferences", [])] == ["claimer"]])
    claim = claims[0]
    # kube-scheduler's PreBind: a plain Update adding its finalizer, as system:kube-scheduler.
    claim["metadata"].setdefault("finalizers", []).append("resource.kubernetes.io/delete-protection")
    status, body = _request(info, "PUT", "/apis/resource.k8s.io/v1/namespaces/training/resourceclaims/%s"
                            % claim["metadata"]["name"], claim, impersonate=SCHEDULER)
    assert status == 200, body
    assert "resource.kubernetes.io/delete-protection" in body["metadata"]["finalizers"]


def test_claims_are_the_plans_only(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "mine", "namespace": "training"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "rtx-pro-6000.gpushare.io"}}]}}}
    _refused(_create(info, claim, **tess), 'cannot create resource "resourceclaims"')  # RBAC
    _refused(_create(info, claim), "may only hold the shared-GPU claims")  # even the admin, by the policy
    everything = copy.deepcopy(claim)
    everything["metadata"]["name"] = "shared-gpu1-gpu2-all"
    everything["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
    _refused(_create(info, everything), "may only hold the shared-GPU claims")
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "all", "namespace": "training"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "rtx-pro-6000.gpushare.io", "allocationMode": "All"}}]}}}}
    _refused(_create(info, template), "ExactCount, no adminAccess")


# --- RBAC and the boundaries ------------------------------------------------------------------

def test_the_team_cannot_relabel_its_namespace_or_remove_its_boundaries(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    relabelled = _request(info, "PATCH", "/api/v1/namespaces/training", {"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "privileged"}}}, content_type="application/merge-patch+json", **tess)
    assert relabelled[0] == 403, relabelled
    for path in ("/apis/networking.k8s.io/v1/namespaces/training/networkpolicies/" + isolation.NETWORK_POLICY,
                 "/api/v1/namespaces/training/resourcequotas/" + isolation.RESOURCE_QUOTA,
                 "/api/v1/namespaces/training/limitranges/" + isolation.LIMIT_RANGE):
        assert _request(info, "GET", path, **tess)[0] == 200, path  # visible
        assert _request(info, "DELETE", path, **tess)[0] == 403, path  # not removable


def test_the_namespace_quota_is_enforced_and_defaults_requests(cluster):
    info, tess = cluster["info"], _as(cluster, TRAINING_USER)
    _refused(_create(info, pod("training", name="hog", resources={"cpu": "5", "memory": "1Gi"}), **tess),
             "exceeded quota: gpushare-team")
    defaulted = _created(_create(info, pod("training", name="small"), **tess))
    assert defaulted["spec"]["containers"][0]["resources"]["requests"] == isolation.CONTAINER_DEFAULT_REQUEST
    quota = _request(info, "GET", "/api/v1/namespaces/training/resourcequotas/" + isolation.RESOURCE_QUOTA)[1]
    assert quota["spec"]["hard"] == {"pods": "20", "requests.cpu": "4", "requests.memory": "8Gi"}
