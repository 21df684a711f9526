"""A MIG re-layout while pods hold MIG devices, on a real control plane (issue #31).

Two simulated nodes, gpu-a and gpu-b, each one RTX PRO 6000 cut with MIG (four 1g.24gb), under
the dra backend: the DRA driver's ResourceSlices as the rehearsal publishes them, pods whose MIG
devices the real scheduler allocated through ResourceClaims made from the plan's templates. The
gpu_operator role's relabel (tasks_from: relabel, as apply runs it; Helm skipped) then changes
the layout; MIG Manager is the stand-in of mig_manager_standin.py (labels, state, ResourceSlices;
see docs/testing.md for what it simulates). What is real: kube-apiserver (the Eviction API, the
labels and the patch that removes the state), kube-scheduler (allocation), the controller
manager (claims from templates, deleted with their pods; the DaemonSet that recreates a deleted
MIG Manager pod), kwok running the pods, and the role's kubernetes.core tasks.

Four runs of the role on one control plane:

1. four 1g.24gb -> two 2g.48gb on both nodes: each node is cordoned, its MIG pods evicted through
   the Eviction API and their claims deleted before it is labelled; the stand-in applies, the
   node's slice shows the new layout, the node is uncordoned and its annotation removed; gpu-b is
   labelled only once gpu-a is back.
2. two 2g.48gb -> one 4g.96gb, which the stand-in fails on gpu-a, slowly, while both nodes still
   carry ``nvidia.com/mig.config.state=success`` of the layout before: the run stops on gpu-a with
   the MIG configuration failure (not the previous layout's ``success`` taken, not a timeout
   elsewhere), gpu-a cordoned and annotated, gpu-b untouched.
3. a MIG Manager pod on gpu-a (DaemonSet) that still fails at its start, and the same plan again:
   the run resumes gpu-a (state cleared, pod restarted, the new pod's start applies), which fails
   again and stops there, saying the pod's log could not be read (kwok pods have none);
4. the stand-in then succeeds and the same plan again resumes gpu-a and then relabels gpu-b.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import kube
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as world_lib

from mig_manager_standin import MIG_CONFIG, MIG_STATE, MigManagerStandIn
from rehearsal_env import KUEUE_CONFIGURATION, wait_until
from test_day_two import RELABEL, DayTwo, _recap

NODES = ("gpu-a", "gpu-b")
TEAMS = [{"name": "production", "namespaces": ["production"], "priority": 1000, "group": "production-engineers"}]
LAYOUTS = [{"profiles": {"1g.24gb": 4}}, {"profiles": {"2g.48gb": 2}}, {"profiles": {"4g.96gb": 1}}]
UNFINISHED = "gpushare.io/relabel-unfinished"
NAMESPACE = "gpu-operator"
#: Small waits so that a failure ends quickly (the stand-in answers within a few seconds).
ROLE_VARS = {"gpu_operator_mig_wait_timeout": 30, "gpu_operator_node_back_timeout": 30,
             "gpu_operator_drain_timeout": 60, "gpu_operator_drain_force": True}
#: The pods holding MIG devices before the first re-layout: name -> node.
PODS = {"embeddings": "gpu-a", "classifier": "gpu-a", "speech": "gpu-b"}


def plan_of(layout):
    return build_plan(TEAMS, {host: [{"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "mig",
                                      "mig": layout}] for host in NODES}, backend="dra")


PLANS = [plan_of(layout) for layout in LAYOUTS]


def _node(info, name):
    status, body = rc.api_request(info, "GET", "/api/v1/nodes/" + name)
    assert status == 200, body
    return body


def _profiles(info, name):
    status, body = rc.api_request(info, "GET", "/apis/resource.k8s.io/v1/resourceslices")
    assert status == 200, body
    return sorted(d["attributes"]["profile"]["string"] for s in body["items"] if s["spec"]["nodeName"] == name
                  for d in s["spec"]["devices"])


def _wanted_profiles(plan, name):
    return sorted(i["profile"] for gpu in plan["nodes"][name]["gpus"] for i in gpu["instances"])


class PodRecorder(threading.Thread):
    """Every state of the pods of a namespace, through a watch: a pod evicted and deleted at once
    still shows its DisruptionTarget condition here."""

    def __init__(self, kubeconfig, namespace):
        super().__init__(name="pod-recorder", daemon=True)
        from kubernetes import client as k8s_client  # pylint: disable=import-outside-toplevel
        self.core = k8s_client.CoreV1Api(kube.api_client(kubeconfig))
        self.namespace = namespace
        self.seen = {}
        self.deleted = set()
        self._halt = threading.Event()

    def run(self):
        from kubernetes import watch  # pylint: disable=import-outside-toplevel
        version = self.core.list_namespaced_pod(self.namespace).metadata.resource_version
        while not self._halt.is_set():
            for event in watch.Watch().stream(self.core.list_namespaced_pod, self.namespace, timeout_seconds=2,
                                              resource_version=version):
                pod = event["object"]
                version = pod.metadata.resource_version
                for cond in pod.status.conditions or []:
                    if cond.type == "DisruptionTarget" and cond.status == "True":
                        self.seen[pod.metadata.name] = cond.reason
                if event["type"] == "DELETED":
                    self.deleted.add(pod.metadata.name)

    def stop(self):
        self._halt.set()
        self.join(timeout=10)


@pytest.fixture(scope="module")
def relayout(rehearsal_bin, tmp_path_factory):
    directory = tmp_path_factory.mktemp("mig-relayout")
    info = rc.start(str(directory / "cluster"), kueue_configuration=KUEUE_CONFIGURATION,
                    bin_dir=rehearsal_bin["bin_dir"])
    standin = None
    try:
        world = world_lib.build_world(PLANS[0], simulated_annotation=info["kwok_node_annotation"])
        api = kube.api_client(info["kubeconfig"])
        kube.apply_world(api, world)
        # The previous layout was applied: MIG Manager's state of it is on the nodes.
        for name in NODES:
            rc.api_request(info, "PATCH", "/api/v1/nodes/" + name, {"metadata": {"labels": {MIG_STATE: "success"}}},
                           content_type="application/merge-patch+json")
        objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
        for plan in PLANS:
            objects += [o for o in plan["objects"] if o["kind"] in ("Namespace", "DeviceClass", "ResourceClaimTemplate")
                        and o not in objects]
        rc.apply_objects(info, objects)
        wait_until("the simulated nodes Ready", lambda: all(
            any(c["type"] == "Ready" and c["status"] == "True"
                for c in _node(info, n)["status"].get("conditions") or [])
            for n in NODES), 60, 1)
        standin = MigManagerStandIn(info["kubeconfig"], PLANS, NODES, namespace=NAMESPACE)
        standin.start_state()
        standin.start()
        yield {"info": info, "standin": standin, "cluster": DayTwo(info, directory)}
    finally:
        if standin is not None:
            standin.stop()
        rc.stop(str(directory / "cluster"))


def _mig_pod(name, node):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "production"}, "spec": {
        "nodeSelector": {"kubernetes.io/hostname": node}, "restartPolicy": "Never",
        "resourceClaims": [{"name": "mig", "resourceClaimTemplateName": "mig-rtx-pro-6000-1g.24gb"}],
        "containers": [{"name": "serve", "image": "busybox", "resources": {"claims": [{"name": "mig"}]}}]}}


def _relabel(relayout, plan):
    return relayout["cluster"].apply(plan, "-e", json.dumps(ROLE_VARS), playbook=RELABEL)


def test_pods_holding_mig_devices_are_evicted_and_the_nodes_relaid_one_at_a_time(relayout):
    info, standin = relayout["info"], relayout["standin"]
    for name, node in PODS.items():
        status, body = rc.api_request(info, "POST", "/api/v1/namespaces/production/pods", _mig_pod(name, node))
        assert status == 201, body

    def running():
        status, body = rc.api_request(info, "GET", "/api/v1/namespaces/production/pods")
        pods = {p["metadata"]["name"]: p for p in body["items"]} if status == 200 else {}
        return pods if all(p["status"].get("phase") == "Running" for p in pods.values()) and len(pods) == len(PODS) \
            else None

    pods = wait_until("the MIG pods Running", running, 90, 1)
    claims = {}
    for name, pod in pods.items():
        assert pod["spec"]["nodeName"] == PODS[name]
        claim = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        status, body = rc.api_request(info, "GET", "/apis/resource.k8s.io/v1/namespaces/production/resourceclaims/"
                                      + claim)
        assert status == 200, body
        results = body["status"]["allocation"]["devices"]["results"]
        # the scheduler gave each pod one of its node's 1g.24gb MIG devices
        assert [(r["pool"], r["device"].split("-mig-")[1].split("-")[0]) for r in results] == [(PODS[name], "1g24gb")]
        claims[name] = claim

    recorder = PodRecorder(info["kubeconfig"], "production")
    recorder.start()
    try:
        result = _relabel(relayout, PLANS[1])
    finally:
        recorder.stop()
    assert result.returncode == 0, result.stdout[-6000:]
    assert _recap(result.stdout, "apply")["failed"] == 0

    # evicted through the Eviction API (the API server's DisruptionTarget condition), then gone
    assert recorder.seen == {name: "EvictionByEvictionAPI" for name in PODS}, recorder.seen
    assert recorder.deleted == set(PODS)
    for name, claim in claims.items():
        status, _body = rc.api_request(info, "GET", "/apis/resource.k8s.io/v1/namespaces/production/resourceclaims/"
                                       + claim)
        assert status == 404, "%s's claim %s outlived the pod" % (name, claim)

    config = PLANS[1]["nodes"]["gpu-a"]["labels"][MIG_CONFIG]
    assert not standin.errors, standin.errors
    assert standin.outcomes() == [("gpu-a", config, "seen", "label changed"), ("gpu-a", config, "pending"),
                                  ("gpu-a", config, "success"),
                                  ("gpu-b", config, "seen", "label changed"), ("gpu-b", config, "pending"),
                                  ("gpu-b", config, "success")]
    seen = {e["node"]: e for e in standin.events if e["what"] == "seen"}
    # each node was cordoned and emptied of its MIG pods before its label changed; the other
    # node was in service meanwhile
    assert seen["gpu-a"]["cordoned"] == {"gpu-a": True, "gpu-b": False}
    assert seen["gpu-b"]["cordoned"] == {"gpu-a": False, "gpu-b": True}
    assert seen["gpu-a"]["pods"] == [] and seen["gpu-b"]["pods"] == []
    for name in NODES:
        node = _node(info, name)
        assert node["metadata"]["labels"][MIG_CONFIG] == config
        assert node["metadata"]["labels"][MIG_STATE] == "success"
        assert not node["spec"].get("unschedulable")
        assert UNFINISHED not in (node["metadata"].get("annotations") or {})
        assert _profiles(info, name) == _wanted_profiles(PLANS[1], name) == ["2g.48gb", "2g.48gb"]


def test_a_failed_layout_stops_the_run_on_its_node_and_a_rerun_finishes_it(relayout):
    info, standin, cluster = relayout["info"], relayout["standin"], relayout["cluster"]
    assert standin.outcomes(), "the first re-layout did not run"
    before = PLANS[1]["nodes"]["gpu-a"]["labels"][MIG_CONFIG]
    config = PLANS[2]["nodes"]["gpu-a"]["labels"][MIG_CONFIG]
    for name in NODES:  # the previous layout's success is on both nodes
        assert _node(info, name)["metadata"]["labels"][MIG_STATE] == "success"
    standin.fail = {config}
    standin.notice_delay = 3.0  # slower than the role's first look at the state
    start = len(standin.events)

    failed = _relabel(relayout, PLANS[2])
    assert failed.returncode != 0
    text = " ".join(failed.stdout.split())
    assert ("MIG configuration '%s' on node gpu-a: nvidia.com/mig.config.state is 'failed'" % config) in text, \
        text[-4000:]
    assert "(timed out)" not in text
    assert "The node stays cordoned. The run stopped at gpu-a; nodes not relabelled yet, left untouched: gpu-b." \
        in text
    assert "did not come back" not in text
    assert "(no nvidia-mig-manager pod found on the node)" in text
    assert standin.outcomes()[start:] == [("gpu-a", config, "seen", "label changed"), ("gpu-a", config, "pending"),
                                          ("gpu-a", config, "failed")]
    node_a, node_b = _node(info, "gpu-a"), _node(info, "gpu-b")
    assert node_a["spec"].get("unschedulable") is True
    assert node_a["metadata"]["annotations"].get(UNFINISHED) == "true"
    assert node_a["metadata"]["labels"][MIG_STATE] == "failed"
    # gpu-b untouched: its labels, state, slice and schedulability of the layout before
    assert node_b["metadata"]["labels"][MIG_CONFIG] == before
    assert node_b["metadata"]["labels"][MIG_STATE] == "success"
    assert not node_b["spec"].get("unschedulable")
    assert UNFINISHED not in (node_b["metadata"].get("annotations") or {})
    assert _profiles(info, "gpu-b") == ["2g.48gb", "2g.48gb"]

    # A MIG Manager pod on gpu-a (its DaemonSet, which recreates a deleted pod); at its start it
    # applies the current label, which still fails.
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                 "metadata": {"name": "nvidia-mig-manager", "namespace": NAMESPACE},
                 "spec": {"selector": {"matchLabels": {"app": "nvidia-mig-manager"}},
                          "template": {"metadata": {"labels": {"app": "nvidia-mig-manager"}}, "spec": {
                              "nodeSelector": {"kubernetes.io/hostname": "gpu-a"},
                              "containers": [{"name": "mig-manager", "image": "nvidia-mig-manager"}]}}}}
    status, body = rc.api_request(info, "POST", "/apis/apps/v1/namespaces/%s/daemonsets" % NAMESPACE, daemonset)
    assert status == 201, body
    wait_until("MIG Manager's start on gpu-a applied", lambda: standin.outcomes()[-1:] == [
        ("gpu-a", config, "failed")] and len(standin.events) > start + 3, 60, 1)
    assert standin.outcomes()[start + 3] == ("gpu-a", config, "seen", "MIG Manager pod started")
    first_pod = standin.pods["gpu-a"]
    # nothing changes a failed node by itself: no label change, no new pod
    time.sleep(2)
    assert len(standin.events) == start + 6

    # A run while the cause is still there: the node is resumed (state cleared, pod restarted) and
    # fails again, cordoned; the pod's log cannot be read (kwok) and the message says so.
    still = _relabel(relayout, PLANS[2])
    assert still.returncode != 0
    text = " ".join(still.stdout.split())
    assert ("MIG configuration '%s' on node gpu-a: nvidia.com/mig.config.state is 'failed'" % config) in text, \
        text[-4000:]
    assert "left untouched: gpu-b." in text and "(timed out)" not in text
    assert "(the log of pod nvidia-mig-manager-" in text and " could not be read: " in text
    assert standin.outcomes()[start + 6:] == [("gpu-a", config, "seen", "MIG Manager pod started"),
                                              ("gpu-a", config, "pending"), ("gpu-a", config, "failed")]
    assert standin.pods["gpu-a"] not in (None, first_pod)  # the role restarted MIG Manager's pod
    assert _node(info, "gpu-a")["spec"].get("unschedulable") is True
    assert _node(info, "gpu-b")["metadata"]["labels"][MIG_CONFIG] == before
    second_pod = standin.pods["gpu-a"]
    start += 3

    standin.fail = set()
    standin.notice_delay = 0.0
    again = _relabel(relayout, PLANS[2])
    assert again.returncode == 0, again.stdout[-6000:]
    assert not standin.errors, standin.errors
    assert standin.outcomes()[start + 6:] == [
        ("gpu-a", config, "seen", "MIG Manager pod started"), ("gpu-a", config, "pending"),
        ("gpu-a", config, "success"),
        ("gpu-b", config, "seen", "label changed"), ("gpu-b", config, "pending"), ("gpu-b", config, "success")]
    assert standin.pods["gpu-a"] not in (None, first_pod, second_pod)  # restarted again
    resumed = [e for e in standin.events[start + 6:] if e["what"] == "seen"]
    assert resumed[1]["cordoned"] == {"gpu-a": False, "gpu-b": True}  # gpu-b after gpu-a is back
    for name in NODES:
        node = _node(info, name)
        assert node["metadata"]["labels"][MIG_CONFIG] == config
        assert node["metadata"]["labels"][MIG_STATE] == "success"
        assert not node["spec"].get("unschedulable")
        assert UNFINISHED not in (node["metadata"].get("annotations") or {})
        assert _profiles(info, name) == ["4g.96gb"]
