"""The rehearsal control plane, for real: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok and Kueue built from Go modules and started on 127.0.0.1."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

from rehearsal_env import GO_DIR, KUEUE_CONFIGURATION, api_get, api_ok, cache_root

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
NODE = "kwok-gpu-1"


def _wait_for(what, check, timeout=60.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not reached in {timeout} s")


def _apply(info, path, obj):
    """Server-side apply of one object at its own path."""
    return api_ok(info, "PATCH", f"{path}?fieldManager=rehearsal-test&force=true", obj,
                  content_type="application/apply-patch+yaml")


def _delete(info, path):
    """Delete one object and, in the background, what it owns (a Job's Workload and Pods)."""
    status, body = rc.api_request(info, "DELETE", path, {"propagationPolicy": "Background"})
    assert status in (200, 202, 404), (path, status, body)


@pytest.fixture(scope="module")
def team(rehearsal):
    """Namespace team-a, a ResourceFlavor, a ClusterQueue and a LocalQueue, through the webhooks."""
    _apply(rehearsal, "/api/v1/namespaces/team-a", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    _apply(rehearsal, f"{KUEUE}/resourceflavors/default-flavor",
           {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}})
    _apply(rehearsal, f"{KUEUE}/clusterqueues/team-a", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "team-a"},
        "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                     {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "4"},
                                                              {"name": "memory", "nominalQuota": "8Gi"}]}]}]}})
    _apply(rehearsal, f"{KUEUE}/namespaces/team-a/localqueues/team-a", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"}})
    return "team-a"


@pytest.fixture(scope="module")
def node(rehearsal):
    """One simulated node under kwok."""
    _apply(rehearsal, f"/api/v1/nodes/{NODE}", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {"kubernetes.io/hostname": NODE, "type": "kwok"}},
        "status": {"capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                   "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}}})
    return NODE


def _ready(obj, kind="Ready"):
    return any(c.get("type") == kind and c.get("status") == "True" for c in (obj or {}).get("status", {}).get("conditions") or [])


def test_every_component_is_ready(rehearsal, rehearsal_bin):
    assert set(rehearsal["pids"]) == set(rc.START_ORDER)
    assert all(rc.running(rehearsal["dir"]).values())
    status, text = rc.api_request(rehearsal, "GET", "/readyz?verbose")
    assert status == 200, text
    version = api_ok(rehearsal, "GET", "/version")
    assert version["gitVersion"] == "v" + rehearsal_bin["versions"]["kubernetes"]
    assert rehearsal["server"].startswith("https://127.0.0.1:")
    assert os.path.isabs(rehearsal["kubeconfig"]) and os.path.exists(rehearsal["kubeconfig"])
    # Kueue's CRDs of the release that runs, served at v1beta2 with the conversion webhook on loopback.
    crd = api_ok(rehearsal, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterqueues.kueue.x-k8s.io")
    assert "v1beta2" in [v["name"] for v in crd["spec"]["versions"] if v["served"]]
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"].startswith("https://127.0.0.1:")
    # Kueue's webhooks answer on 127.0.0.1 with the rehearsal CA.
    hooks = api_ok(rehearsal, "GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kueue-mutating-webhook-configuration")
    urls = {h["clientConfig"]["url"].rsplit("/", 1)[0] for h in hooks["webhooks"]}
    assert urls == {f"https://127.0.0.1:{rehearsal['ports']['kueue_webhook']}"}
    # Controllers act as their own service accounts (kubeadm's --use-service-account-credentials).
    for account in ("resource-claim-controller", "job-controller", "namespace-controller", "certificate-controller"):
        assert api_get(rehearsal, f"/api/v1/namespaces/kube-system/serviceaccounts/{account}"), account


def test_kueue_runs_the_callers_configuration_with_only_out_of_cluster_fields_changed(rehearsal):
    import json

    with open(rehearsal["kueue_config"], encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["managedJobsNamespaceSelector"] == KUEUE_CONFIGURATION["managedJobsNamespaceSelector"]
    assert config["integrations"] == KUEUE_CONFIGURATION["integrations"]
    assert config["leaderElection"] == {"leaderElect": False, "resourceName": "c1f6bfd2.kueue.x-k8s.io"}
    assert config["webhook"]["host"] == "127.0.0.1" and config["internalCertManagement"] == {"enable": False}


def test_queues_are_accepted_and_the_cluster_queue_becomes_active(rehearsal, team):
    _wait_for("ClusterQueue team-a Active", lambda: _ready(api_get(rehearsal, f"{KUEUE}/clusterqueues/team-a"), "Active"))
    _wait_for("LocalQueue team-a Active", lambda: _ready(api_get(rehearsal, f"{KUEUE}/namespaces/team-a/localqueues/team-a"), "Active"))


def test_kueue_webhooks_answer_for_real(rehearsal, team):
    # Kueue's mutating webhook (mclusterqueue.kb.io) adds its finalizer on create
    # (pkg/webhooks/clusterqueue_webhook.go Default, v0.19.2). In a dry run no controller ever
    # sees the object, so the finalizer in the answer can only come from the webhook.
    cq = api_ok(rehearsal, "POST", f"{KUEUE}/clusterqueues?dryRun=All", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "probe-dry-run"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default-flavor", "resources": [
            {"name": "cpu", "nominalQuota": "1"}]}]}]}})
    assert "kueue.x-k8s.io/resource-in-use" in cq["metadata"].get("finalizers", [])
    # And a ClusterQueue its schema (CEL) refuses is refused before it is stored.
    status, obj = rc.api_request(rehearsal, "POST", f"{KUEUE}/clusterqueues?dryRun=All", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "no-cohort"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default-flavor", "resources": [
            {"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}]}]}]}})
    assert status == 422 and "borrowingLimit must be nil when cohort is empty" in obj["message"], obj


def test_a_kwok_node_turns_ready_and_a_pod_on_it_runs(rehearsal, node):
    _wait_for("node Ready", lambda: _ready(api_get(rehearsal, f"/api/v1/nodes/{node}")))
    api_ok(rehearsal, "POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                 "containers": [{"name": "c", "image": "rehearsal.invalid/none", "resources": {"requests": {"cpu": "100m"}}}]}})

    def running_pod():
        pod = api_get(rehearsal, "/api/v1/namespaces/default/pods/probe")
        return pod if pod and pod["status"].get("phase") == "Running" else None

    pod = _wait_for("pod Running", running_pod)
    assert pod["spec"]["nodeName"] == node  # placed by the real scheduler
    api_ok(rehearsal, "DELETE", "/api/v1/namespaces/default/pods/probe")
    _wait_for("pod gone", lambda: api_get(rehearsal, "/api/v1/namespaces/default/pods/probe") is None)


def test_a_queued_job_is_suspended_admitted_and_its_pod_scheduled(rehearsal, team, node):
    try:
        _wait_for("node Ready", lambda: _ready(api_get(rehearsal, f"/api/v1/nodes/{node}")))
        job = api_ok(rehearsal, "POST", "/apis/batch/v1/namespaces/team-a/jobs", {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
            "spec": {"suspend": False, "parallelism": 2, "completions": 2, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "rehearsal.invalid/none", "resources": {"requests": {"cpu": "1"}}}]}}}})
        # Kueue's job webhook (mjob.kb.io) suspends a queued Job on creation.
        assert job["spec"]["suspend"] is True
        workloads = _wait_for("Workload admitted", lambda: [
            w for w in (api_get(rehearsal, f"{KUEUE}/namespaces/team-a/workloads") or {}).get("items", [])
            if _ready(w, "Admitted")])
        assert workloads[0]["status"]["admission"]["clusterQueue"] == "team-a"
        _wait_for("Job unsuspended", lambda: not api_get(rehearsal, "/apis/batch/v1/namespaces/team-a/jobs/train")["spec"]["suspend"])

        def running_job_pods():
            items = (api_get(rehearsal, "/api/v1/namespaces/team-a/pods?labelSelector=job-name%3Dtrain") or {}).get("items", [])
            running = [p for p in items if p["status"].get("phase") == "Running"]
            return running if len(running) == 2 else None

        pods = _wait_for("two Job pods Running", running_job_pods)
        assert {p["spec"]["nodeName"] for p in pods} == {node}
        usage = _wait_for("ClusterQueue usage", lambda: [
            r for f in (api_get(rehearsal, f"{KUEUE}/clusterqueues/team-a") or {}).get("status", {}).get("flavorsUsage", [])
            for r in f["resources"] if r["name"] == "cpu" and r["total"] == "2"])
        assert usage
    finally:
        # the Job's Workload and Pods go with it (the shared control plane's leak check)
        _delete(rehearsal, "/apis/batch/v1/namespaces/team-a/jobs/train")


def test_a_team_user_certificate_is_held_to_rbac(rehearsal, team):
    binding = "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings/team-a-view"
    try:
        _apply(rehearsal, binding, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "team-a-view", "namespace": "team-a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a-users"}]})
        path = rc.user_kubeconfig(rehearsal["dir"], "alice", ["team-a-users"])
        assert os.path.exists(path)
        cert = rc.user_cert_files(rehearsal["dir"], "alice")
        status, _body = rc.api_request(rehearsal, "GET", "/api/v1/namespaces/team-a/pods", cert=cert)
        assert status == 200
        status, obj = rc.api_request(rehearsal, "GET", "/api/v1/namespaces/kube-system/secrets", cert=cert)
        assert status == 403 and 'User "alice" cannot list resource "secrets"' in obj["message"], obj
        status, obj = rc.api_request(rehearsal, "POST", f"{KUEUE}/clusterqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "alice"}, "spec": {}}, cert=cert)
        assert status == 403, obj
        with pytest.raises(rc.RehearsalError):
            rc.user_kubeconfig(rehearsal["dir"], "mallory", ["system:masters"])
    finally:
        _delete(rehearsal, binding)


def test_a_second_rehearsal_reuses_the_binaries_runs_alongside_and_stops_clean(rehearsal, tmp_path):
    again = rc.build(str(GO_DIR), cache_root())
    assert again["built"] == [] and again["bin_dir"] == rehearsal["bin_dir"]
    info = rc.start(str(tmp_path / "second"), kueue_configuration=KUEUE_CONFIGURATION, bin_dir=again["bin_dir"])
    try:
        assert not set(info["ports"].values()) & set(rehearsal["ports"].values())
        assert rc.api_request(info, "GET", "/readyz")[0] == 200
    finally:
        result = rc.stop(info["dir"])
    assert sorted(result["stopped"]) == sorted(rc.START_ORDER)
    for pid in info["pids"].values():
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    assert rc.stop(info["dir"])["changed"] is False
    # The session's rehearsal is untouched.
    assert all(rc.running(rehearsal["dir"]).values())


def test_a_component_that_fails_stops_everything_and_names_itself(rehearsal_bin, tmp_path):
    with pytest.raises(rc.RehearsalError) as err:
        rc.start(str(tmp_path / "bad"), bin_dir=rehearsal_bin["bin_dir"], apiserver_args={"no-such-flag": "x"}, timeout=60)
    assert "kube-apiserver" in str(err.value) and "unknown flag: --no-such-flag" in str(err.value)
    assert not any(rc.running(str(tmp_path / "bad")).values())
