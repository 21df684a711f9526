"""playbooks/etcd_restore.yml's restore on the rehearsal's real control plane, with Kueue watching.

A private control plane (this module stops its etcd): a ClusterQueue of 2 CPUs for team-a, a
kwok node, and Job ``before`` (1 CPU) admitted by Kueue and running. The kubeadm role's snapshot
script takes a snapshot of the rehearsal's etcd (TLS, the API server's etcd client certificate).
Then the cluster moves on: Job ``after`` is admitted (the queue is full), a ConfigMap is made and
one that was in the snapshot is deleted. The restore is the playbook's: the API server, the
controller manager and the scheduler stop, then etcd; the collection's own command
(``etcd_restore.restore_commands``, from a kubeadm-shaped manifest carrying the rehearsal etcd's
real flags) restores the snapshot with ``--bump-revision 1000000000 --mark-compacted``; the data
directories are swapped; etcd starts, then the API server (ready), then the controller manager and
the scheduler.

Kueue and kwok (the kubelets' stand-in) keep running across the restore: the playbook restarts
them afterwards (``rollout restart`` of kueue-system, every kubelet), but the point here is what
the controllers that were watching do. Each holds resourceVersions from the store's future.

- etcdutl v3.6.16 ``snapshot/v3_snapshot.go`` (modifyLatestRevision): the bump moves the latest
  revision and marks it compacted, so every later write is past anything a client saw.
- k8s.io/apiserver v0.35.4 ``pkg/storage/cacher/watch_cache.go`` (getAllEventsSinceLocked): a
  watch from below the oldest revision the (new) watch cache holds answers 410 Expired, "too old
  resource version"; a watch from above the store's current revision is accepted and waits,
  silently, for revisions past it (``cacher.go`` waitUntilWatchCacheFreshAndForceAllEvents blocks
  only watch-lists, for 3 s, then answers "Too large resource version").
- client-go v0.35.4 ``tools/cache/reflector.go``: a watch that closes cleanly is resumed from the
  last resourceVersion seen (``watch``); an Expired answer, or a watch that ends with an error, makes
  the reflector list again (``ListAndWatchWithContext``), and a list the server answers "Too large
  resource version" is repeated from the store's current state (``relistResourceVersion``).

On this control plane Kueue's watches end with an error when the API server stops (its log:
"http2: client connection force closed via ClientConn.Close"), and its first requests to the
restarted API server are refused (403) until the API server's RBAC caches fill: both make its
informers list again whatever the restore did, so the Kueue test below holds without the bump too
(kwok likewise ran, without the bump, a pod created below the last revision seen before). What only the bump gives is checked directly:
new writes get resourceVersions past every one seen before, and a watch resumed from the last
one seen answers Expired instead of staying open and missing what changes.

What is shown: what existed at the snapshot is back (Job ``before`` with its admitted Workload and
running pod, the deleted ConfigMap with its old uid) and what came after is gone and stays gone;
every write after the restore gets a resourceVersion above every one seen before it, and a watch
from the last one seen answers 410 Expired; Kueue, never restarted, admits a new Job into the place
Job ``after`` held, so its cache no longer counts the Workload the restore removed, and the
ClusterQueue counts only the snapshot's Workload and the new one.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import etcd_restore
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

import etcd_tools  # tests/support
from pods import QUEUE_NAME_LABEL  # tests/support
from rehearsal_env import KUEUE_CONFIGURATION, api_get, api_ok, wait_until

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
NS = "team-a"
NODE = "kwok-restore-1"
#: The playbook's stop and start order (playbooks/etcd_restore.yml).
STOP = [["kube-apiserver", "kube-controller-manager", "kube-scheduler"], ["etcd"]]
START = [["etcd"], ["kube-apiserver"], ["kube-controller-manager", "kube-scheduler"]]


def _absent(info, path):
    """The API server answers 404 Not Found (not merely: no answer)."""
    return rc.api_request(info, "GET", path)[0] == 404


def _list(info, path, strict):
    """The items at ``path``; ``strict``: the list must succeed (else [] and the caller polls again)."""
    return (api_ok(info, "GET", path) if strict else api_get(info, path) or {}).get("items") or []


def _job(name):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_NAME_LABEL: NS}},
            "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "registry.example/app:1",
                                "resources": {"requests": {"cpu": "1"}}}]}}}}


def _config_map(name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {"name": name}}


def _true(obj, kind):
    return any(c.get("type") == kind and c.get("status") == "True" for c in ((obj or {}).get("status") or {}).get("conditions") or [])


def _workloads(info, job, strict=False):
    items = _list(info, f"{KUEUE}/namespaces/{NS}/workloads", strict)
    return [w for w in items if any(o.get("kind") == "Job" and o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])]


def _pods(info, job, strict=False):
    query = urllib.parse.urlencode({"labelSelector": f"job-name={job}"})
    return _list(info, f"/api/v1/namespaces/{NS}/pods?{query}", strict)


def _admitted_and_running(info, job, timeout=120):
    """The Job's Workload once Kueue admitted it and its pod once kwok runs it."""
    workload = wait_until(f"Workload of Job {job} admitted", lambda: next(
        (w for w in _workloads(info, job) if _true(w, "Admitted")), None), timeout, 1.0)
    pod = wait_until(f"pod of Job {job} running", lambda: next(
        (p for p in _pods(info, job) if p["status"].get("phase") == "Running"), None), timeout, 1.0)
    return workload, pod


def _cpu_usage(info):
    """(admitted Workloads, CPU in use) in the ClusterQueue's status, as Kueue last wrote it."""
    status = (api_get(info, f"{KUEUE}/clusterqueues/{NS}") or {}).get("status") or {}
    cpu = [r["total"] for f in status.get("flavorsUsage") or [] for r in f["resources"] if r["name"] == "cpu"]
    return status.get("admittedWorkloads"), cpu[0] if cpu else None


def _revision(info):
    """The store's current revision, as the API server reports it on a list read from etcd."""
    return int(api_ok(info, "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=1")["metadata"]["resourceVersion"])


def _queue_setup(info):
    rc.apply_objects(info, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": NODE, "annotations": {rc.KWOK_ANNOTATION: rc.KWOK_ANNOTATION_VALUE},
                      "labels": {"kubernetes.io/hostname": NODE}},
         "status": {"capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                    "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": NS},
         "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": NS, "namespace": NS},
         "spec": {"clusterQueue": NS}},
    ])
    wait_until("ClusterQueue active", lambda: _true(api_get(info, f"{KUEUE}/clusterqueues/{NS}"), "Active"), 60, 0.5)


def _snapshot(info, tools, script, backups):
    """The kubeadm role's snapshot script against the rehearsal's etcd; returns the file."""
    env = dict(os.environ, ETCDCTL=tools["etcdctl"], ENDPOINT=f"https://127.0.0.1:{info['ports']['etcd']}",
               CACERT=info["pki"]["etcd_ca_crt"], CERT=info["pki"]["etcd_client_crt"], KEY=info["pki"]["etcd_client_key"],
               BACKUP_DIR=str(backups), KEEP="1")
    result = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split("snapshot ", 1)[1].split()[0]


def _restore(info, tools, snapshot):
    """playbooks/etcd_restore.yml's steps on this control plane; returns the new info()."""
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "etcd", "namespace": "kube-system"},
                               "spec": {"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.6.16-0",
                                                        "command": info["commands"]["etcd"]}]}})
    mine = etcd_restore.restore_commands({"cp1": manifest}, snapshot, "gpushare-restore-rehearsal", tools["etcdutl"])["cp1"]
    data_dir = mine["member"]["data_dir"]
    for names in STOP:
        assert rc.stop_components(info["dir"], names) == names
    restore = subprocess.run(mine["argv"], capture_output=True, text=True, timeout=120, check=False)
    assert restore.returncode == 0, restore.stdout + restore.stderr
    os.rename(data_dir, data_dir + ".before-restore")
    os.rename(mine["restored_dir"], data_dir)
    for names in START:
        info = rc.start_components(info["dir"], names)
    # /readyz answers before the storage of every resource is initialised: until then a request
    # gets 429 "storage is (re)initializing" with Retry-After, which clients honour and retry.
    for path in (f"{KUEUE}/namespaces/{NS}/workloads", f"/apis/batch/v1/namespaces/{NS}/jobs", f"/api/v1/namespaces/{NS}/pods"):
        wait_until(f"{path} served again", lambda p=path: rc.api_request(info, "GET", p)[0] == 200, 60, 0.5)
    return info


def _watch(info, path, resource_version):
    """A watch from ``resource_version``, ended by the server after 3 s: (HTTP status, events)."""
    query = urllib.parse.urlencode({"watch": "true", "resourceVersion": str(resource_version), "timeoutSeconds": "3"})
    status, body = rc.api_request(info, "GET", f"{path}?{query}", timeout=30)
    if isinstance(body, dict):
        return status, [body]
    return status, [json.loads(line) for line in str(body).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def restored(rehearsal_bin, tmp_path_factory):
    """The scenario up to the restore; what was seen on the way (see the module's docstring)."""
    directory = tmp_path_factory.mktemp("restore")
    tools = etcd_tools.tools()
    script = etcd_tools.snapshot_script(directory)
    info = rc.start(str(directory / "cp"), kueue_configuration=KUEUE_CONFIGURATION, bin_dir=rehearsal_bin["bin_dir"])
    try:
        _queue_setup(info)
        jobs = f"/apis/batch/v1/namespaces/{NS}/jobs"
        maps = f"/api/v1/namespaces/{NS}/configmaps"
        api_ok(info, "POST", jobs, _job("before"))
        kept = api_ok(info, "POST", maps, _config_map("kept"))
        workload, pod = _admitted_and_running(info, "before")
        wait_until("ClusterQueue counting Job before", lambda: _cpu_usage(info) == (1, "1"), 60, 1.0)
        at_snapshot = {"job": api_get(info, f"{jobs}/before")["metadata"]["uid"], "workload": workload["metadata"]["uid"],
                       "pod": pod["metadata"]["uid"], "kept": kept["metadata"]["uid"]}
        snapshot = _snapshot(info, tools, script, directory / "backups")

        # The cluster moves on: Job after fills the queue; one ConfigMap made, one deleted.
        api_ok(info, "POST", jobs, _job("after"))
        after_workload, after_pod = _admitted_and_running(info, "after")
        wait_until("ClusterQueue counting both Jobs", lambda: _cpu_usage(info) == (2, "2"), 60, 1.0)
        api_ok(info, "POST", maps, _config_map("later"))
        api_ok(info, "DELETE", f"{maps}/kept")
        seen = _revision(info)
        status = json.loads(subprocess.run([tools["etcdutl"], "snapshot", "status", snapshot, "-w", "json"],
                                           capture_output=True, text=True, check=True).stdout)
        watchers = {name: info["pids"][name] for name in ("kueue", "kwok")}

        info = _restore(info, tools, snapshot)
        yield {"info": info, "at_snapshot": at_snapshot, "snapshot_revision": status["revision"], "seen": seen,
               "after": {"workload": after_workload["metadata"]["name"], "pod": after_pod["metadata"]["name"]},
               "watchers": watchers}
    finally:
        rc.stop(info["dir"])


def test_what_existed_at_the_snapshot_is_back_and_what_came_after_is_gone(restored):
    info, then = restored["info"], restored["at_snapshot"]
    assert api_get(info, f"/apis/batch/v1/namespaces/{NS}/jobs/before")["metadata"]["uid"] == then["job"]
    workload = next(iter(_workloads(info, "before", strict=True)), None)
    assert workload and workload["metadata"]["uid"] == then["workload"] and _true(workload, "Admitted"), workload
    assert [p["metadata"]["uid"] for p in _pods(info, "before", strict=True)] == [then["pod"]]
    assert api_get(info, f"/api/v1/namespaces/{NS}/configmaps/kept")["metadata"]["uid"] == then["kept"]
    assert _absent(info, f"/api/v1/namespaces/{NS}/configmaps/later")
    assert _absent(info, f"/apis/batch/v1/namespaces/{NS}/jobs/after")
    assert _workloads(info, "after", strict=True) == [] and _pods(info, "after", strict=True) == []


def test_every_write_after_the_restore_gets_a_resource_version_past_every_one_seen_before(restored):
    info, seen = restored["info"], restored["seen"]
    assert restored["snapshot_revision"] < seen
    made = api_ok(info, "POST", f"/api/v1/namespaces/{NS}/configmaps", _config_map("after-restore"))
    # Without the bump the store would go on from the snapshot's revision, handing out again
    # resourceVersions that clients saw on other objects before the restore.
    assert int(made["metadata"]["resourceVersion"]) > restored["snapshot_revision"] + etcd_restore.BUMP_REVISION > seen


def test_a_watch_resumed_where_it_was_before_the_restore_is_told_to_list_again(restored):
    """What a reflector does when its watch closes (client-go v0.35.4 tools/cache/reflector.go:
    watch again from the last resourceVersion seen): answered 410 Expired, "too old resource
    version", so it lists again. Without the bump and compaction that watch is accepted and stays
    silent until the store passes that revision: the change made here would never reach it."""
    info, seen = restored["info"], restored["seen"]
    changed = api_ok(info, "PATCH", f"/api/v1/namespaces/{NS}/configmaps/kept", {"data": {"changed": "after the restore"}},
                     content_type="application/merge-patch+json")
    status, events = _watch(info, f"/api/v1/namespaces/{NS}/configmaps", seen)
    answer = events[0].get("object", events[0]) if events else {}
    assert (status, answer.get("code"), answer.get("reason")) in ((200, 410, "Expired"), (410, 410, "Expired")), (
        "watch from %s, ConfigMap kept changed at %s: HTTP %s %s" % (seen, changed["metadata"]["resourceVersion"], status, events))
    assert "too old resource version" in answer.get("message", ""), answer


def test_kueue_watching_across_the_restore_forgets_the_future_and_admits_a_new_job(restored):
    info = restored["info"]
    # Neither Kueue nor kwok was restarted: the same processes watched before and after.
    assert {name: info["pids"][name] for name in restored["watchers"]} == restored["watchers"]
    assert rc.running(info["dir"])["kueue"] and rc.running(info["dir"])["kwok"]
    try:
        api_ok(info, "POST", f"/apis/batch/v1/namespaces/{NS}/jobs", _job("new"))
        # 2 CPUs: Job before holds 1; the new Job fits only if Kueue no longer counts Job after.
        workload, _pod = _admitted_and_running(info, "new")
        assert workload["status"]["admission"]["clusterQueue"] == NS
        wait_until("ClusterQueue counting Jobs before and new only", lambda: _cpu_usage(info) == (2, "2"), 60, 1.0)
        # What came after the snapshot stays gone: no controller made it again.
        assert _absent(info, f"/apis/batch/v1/namespaces/{NS}/jobs/after")
        assert _absent(info, f"{KUEUE}/namespaces/{NS}/workloads/{restored['after']['workload']}")
        assert _absent(info, f"/api/v1/namespaces/{NS}/pods/{restored['after']['pod']}")
        assert _workloads(info, "after", strict=True) == [] and _pods(info, "after", strict=True) == []
        assert [p["status"].get("phase") for p in _pods(info, "before", strict=True)] == ["Running"]
    finally:
        rc.api_request(info, "DELETE", f"/apis/batch/v1/namespaces/{NS}/jobs/new", {"propagationPolicy": "Background"})
