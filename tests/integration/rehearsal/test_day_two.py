"""Day two on a real control plane: changing the plan of a running cluster through the roles'
own apply path (dra_driver, kueue, tenancy with their kubernetes.core tasks, Helm releases
skipped), kube-apiserver, the namespace controller and Kueue v0.19.2 for real.

One control plane for every case; each case is the plan before it with one change (a team
removed, a team added, a MIG layout changed, a GPU moved between teams, a shared GPU made whole,
a node removed; day_two_plans.py). After each: the live objects the collection owns are exactly
the new plan's (same names, same generation label, nothing stale), the ClusterQueues' nominal
quotas add up to the new plan's GPUs, and a second apply reports changed=0. Then a team with an
admitted workload is removed: refused without gpushare_confirm_disruptive (nothing deleted),
pruned with it. Objects made by hand without the ownership label survive all of it. Last, the
gpu_operator relabel on the same control plane leaves the driver manager's pause of a node's DRA
plugin label alone while it corrects a drifted plan label.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DRA_PLUGIN_LABEL, DRIVER_UPGRADE_PAUSED)
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import prune
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

import day_two_plans
from rehearsal_env import collection_path

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "day_two.yml"
RELABEL = Path(__file__).resolve().parent / "playbooks" / "relabel.yml"
SELECTOR = urllib.parse.quote("%s=%s" % (ownership.MANAGED_BY_LABEL, ownership.MANAGED_BY))
HAND_MADE = [
    ("kueue.x-k8s.io/v1beta2", "localqueues", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                               "metadata": {"name": "by-hand", "namespace": "production"},
                                               "spec": {"clusterQueue": "production"}}),
    ("kueue.x-k8s.io/v1beta2", "resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                                   "metadata": {"name": "by-hand"}}),
]


def _plural(kind):
    lower = kind.lower()
    return lower + "es" if lower.endswith("s") else lower[:-1] + "ies" if lower.endswith("y") else lower + "s"


def _path(api_version, plural, namespace=None, name=None):
    prefix = "/api/v1" if api_version == "v1" else "/apis/" + api_version
    return prefix + ("/namespaces/%s" % namespace if namespace else "") + "/" + plural + ("/" + name if name else "")


def live_owned(info):
    """(kind, namespace, name) -> the object, for every owned object of every pruned kind."""
    found = {}
    for kind, api_version in prune.API_VERSIONS.items():
        status, body = rc.api_request(info, "GET", _path(api_version, _plural(kind)) + "?labelSelector=" + SELECTOR)
        assert status == 200, (kind, status, body)
        for obj in body.get("items") or []:
            found[(kind, obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj
    return found


def wanted(plan):
    objects = plan["objects"] + addon_files.boundary_objects(plan)
    return {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}


def quotas(cluster_queues):
    """resource -> sum of the nominal quotas of the given ClusterQueue objects."""
    total = Counter()
    for queue in cluster_queues:
        for group in queue["spec"].get("resourceGroups") or []:
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    total[resource["name"]] += int(resource["nominalQuota"])
    return {k: v for k, v in total.items() if v}


def hardware(plan):
    """resource -> the plan's GPUs, counted from its nodes: a whole or shared GPU is one unit of
    its resource, a MIG GPU one unit per instance (the ClusterQueues must lend exactly these)."""
    total = Counter()
    for node in plan["nodes"].values():
        for gpu in node["gpus"]:
            for resource, count in (gpu.get("resources") or {}).items():
                total[resource] += int(count)
    return total


def _wait(what, check, timeout=120.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(1.0)


def _recap(stdout, host):
    match = re.search(r"^%s\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)" % re.escape(host),
                      stdout, re.M)
    return {"ok": int(match.group(1)), "changed": int(match.group(2)), "failed": int(match.group(4))} if match else None


class DayTwo:
    """The control plane and a way to apply a plan to it through the roles."""

    def __init__(self, info, directory):
        self.info = info
        self.directory = directory
        self.runs = 0

    def apply(self, plan, *extra, playbook=PLAYBOOK):
        self.runs += 1
        run_dir = self.directory / ("run-%02d" % self.runs)
        run_dir.mkdir()
        plan_file = run_dir / "plan.json"
        plan_file.write_text(json.dumps(plan))
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collection_path()), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
                   ANSIBLE_HOME=str(run_dir / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(run_dir / "ansible-local"))
        variables = {"plan_file": str(plan_file), "render_dir": str(run_dir / "rendered"),
                     "gpushare_kubeconfig": self.info["kubeconfig"],
                     "kwok_annotation": self.info["kwok_node_annotation"],
                     "ansible_python_interpreter": sys.executable}
        command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "apply,again,", "-c", "local",
                   "-e", json.dumps(variables), str(playbook), *extra]
        started = time.monotonic()
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
        (run_dir / "stdout.txt").write_text(result.stdout + result.stderr)
        print("day two: run %d (%s) %.1f s, rc %d" % (self.runs, " ".join(extra), time.monotonic() - started,
                                                      result.returncode), flush=True)
        return result

    def settled(self, plan, timeout=120.0):
        """The owned objects once nothing of an earlier plan is still being deleted."""
        expected = set(wanted(plan))
        _wait("owned objects equal the plan's", lambda: set(live_owned(self.info)) == expected, timeout)
        return live_owned(self.info)


@pytest.fixture(scope="module")
def day_two(rehearsal_bin, tmp_path_factory):
    base, cases, last = day_two_plans.chain()
    directory = tmp_path_factory.mktemp("day-two")
    # Kueue manages the namespaces of every plan of the chain.
    configuration = helm_values.kueue_configuration(base, {})
    info = rc.start(str(directory / "cluster"), kueue_configuration=configuration, bin_dir=rehearsal_bin["bin_dir"])
    try:
        cluster = DayTwo(info, directory)
        first = cluster.apply(base)
        assert first.returncode == 0, first.stdout[-6000:]
        for api_version, plural, obj in HAND_MADE:
            status, body = rc.api_request(info, "POST", _path(api_version, plural, obj["metadata"].get("namespace")), obj)
            assert status == 201, body
        results = {}
        for name, plan in cases:
            result = cluster.apply(plan)
            results[name] = {"plan": plan, "result": result, "live": cluster.settled(plan) if result.returncode == 0
                             else live_owned(info)}
            if result.returncode != 0:
                break
        yield {"cluster": cluster, "results": results, "last": last, "cases": [name for name, _plan in cases]}
    finally:
        rc.stop(str(directory / "cluster"))


@pytest.mark.parametrize("case", [name for name, _change in day_two_plans.CASES])
def test_after_each_change_the_live_objects_are_the_plan_s_and_a_second_apply_changes_nothing(day_two, case):
    assert case in day_two["results"], "an earlier case failed; see its own test"
    entry = day_two["results"][case]
    result, plan, live = entry["result"], entry["plan"], entry["live"]
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    expected = wanted(plan)
    stale = sorted(set(live) - set(expected), key=str)
    missing = sorted(set(expected) - set(live), key=str)
    assert not stale and not missing, "stale: %s\nmissing: %s" % (stale, missing)
    generation = ownership.generation_of(plan["objects"])
    assert {obj["metadata"]["labels"][ownership.GENERATION_LABEL] for obj in live.values()} == {generation}
    # the quotas the cluster lends are the new plan's, and add up to its GPUs
    live_queues = [obj for key, obj in live.items() if key[0] == "ClusterQueue"]
    assert quotas(live_queues) == quotas([o for o in plan["objects"] if o["kind"] == "ClusterQueue"])
    assert quotas(live_queues) == {k: v for k, v in hardware(plan).items() if v}
    # the change was applied (objects relabelled at least) and the second apply changed nothing
    assert _recap(result.stdout, "apply")["changed"] > 0
    again = _recap(result.stdout, "again")
    assert again == dict(again, changed=0, failed=0), result.stdout[-6000:]


def test_each_change_deleted_what_it_should(day_two):
    results = day_two["results"]
    assert set(results) == set(day_two["cases"]) and all(r["result"].returncode == 0 for r in results.values())
    removed = results["team-removed"]["result"].stdout
    # the prune says what it deletes, in order, naming the generation that wrote each object
    for where in ("ClusterQueue data", "LocalQueue data/data", "Namespace data", "ResourceClaim data/shared-gpu1-gpu2"):
        assert where + " (plan generation " in removed, where
    assert ("Namespace", None, "data") not in results["team-removed"]["live"]
    assert ("Namespace", None, "research") in results["team-added"]["live"]
    mig = results["mig-layout-changed"]["live"]
    assert ("ResourceClaimTemplate", "production", "mig-rtx-pro-6000-2g.48gb") in mig
    assert ("ResourceClaimTemplate", "production", "mig-rtx-pro-6000-1g.24gb") not in mig
    assert ("ResourceClaim", "training", "shared-gpu2-gpu0") in results["gpu-moved"]["live"]
    whole = results["shared-made-whole"]["live"]
    assert not [key for key in whole if key[0] == "ResourceClaim"]  # the shared claim went with the shared GPU
    node = results["node-removed"]["live"]
    assert not [key for key in node if "l40s" in key[2]]  # the L40S flavors, classes and templates went with gpu2


def test_a_team_with_an_admitted_workload_is_refused_unless_confirmed(day_two):
    cluster, last = day_two["cluster"], day_two["last"]
    info = cluster.info
    assert set(day_two["results"]) == set(day_two["cases"]), "the chain of changes did not finish"
    before = set(live_owned(info))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "fine-tune", "namespace": "training",
        "labels": {"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/priority-class": "training"}},
        "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
            "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "training"}},
            "spec": {"restartPolicy": "Never",
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-rtx-pro-6000"}],
                     "containers": [{"name": "work", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}}}}
    status, body = rc.api_request(info, "POST", "/apis/batch/v1/namespaces/training/jobs", job)
    assert status == 201, body

    def admitted():
        _status, listed = rc.api_request(info, "GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/workloads")
        return [w for w in (listed or {}).get("items") or []
                if any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions") or [])]

    assert _wait("fine-tune admitted", admitted, 120), "the training workload was never admitted"

    refused = cluster.apply(last, "--limit", "apply")
    assert refused.returncode != 0
    text = " ".join(refused.stdout.split())
    assert "dra_driver: the plan no longer holds these objects, but deleting them now would disrupt running work" in text
    assert "team training, ClusterQueue training: its queue ClusterQueue training holds 1 admitted and 0 pending" in text
    assert "gpushare_confirm_disruptive=true" in text and "Nothing was deleted." in text
    assert set(live_owned(info)) == before  # the first role stopped before deleting anything

    confirmed = cluster.apply(last, "-e", "gpushare_confirm_disruptive=true")
    assert confirmed.returncode == 0, confirmed.stdout[-8000:]
    assert "confirmed by gpushare_confirm_disruptive" in confirmed.stdout
    live = cluster.settled(last, timeout=180)
    assert set(live) == set(wanted(last)), sorted(set(live) ^ set(wanted(last)), key=str)
    assert quotas([o for k, o in live.items() if k[0] == "ClusterQueue"]) == {
        k: v for k, v in hardware(last).items() if v}
    # The same run's second apply (host "again", after the prune) changes nothing: nothing is left
    # that the confirmation would let it delete.
    again = _recap(confirmed.stdout, "again")
    assert again == dict(again, changed=0, failed=0), confirmed.stdout[-6000:]
    assert "confirmed by gpushare_confirm_disruptive" not in confirmed.stdout.split("PLAY [Apply the plan again")[1]


def test_objects_without_the_ownership_label_survive_every_prune(day_two):
    info = day_two["cluster"].info
    assert day_two["cluster"].runs > 1
    for api_version, plural, obj in HAND_MADE:
        namespace = obj["metadata"].get("namespace")
        status, _body = rc.api_request(info, "GET", _path(api_version, plural, namespace, obj["metadata"]["name"]))
        assert status == 200, "%s %s was deleted" % (obj["kind"], obj["metadata"]["name"])


def test_the_driver_manager_s_pause_survives_a_relabel(day_two):
    """While k8s-driver-manager reloads the driver it sets the DRA kubelet plugin's label to
    ``paused-for-driver-upgrade`` and puts ``true`` back afterwards (k8s-driver-manager v0.12.0,
    ``maybeSetPaused``; docs/operations.md): the relabel leaves that state alone on the real API
    server, while it does put back a plan label that drifted on the same node."""
    cluster, last = day_two["cluster"], day_two["last"]
    info = cluster.info
    node = next(host for host, entry in sorted(last["nodes"].items()) if entry.get("gpus"))
    wanted = helm_values.node_labels(last)[node]
    drifted = next(key for key in sorted(last["nodes"][node]["labels"]) if key.startswith("gpushare.io/"))
    patch = {"metadata": {"labels": dict(wanted, **{DRA_PLUGIN_LABEL: DRIVER_UPGRADE_PAUSED, drifted: "stale"})}}
    status, body = rc.api_request(info, "PATCH", "/api/v1/nodes/" + node, patch,
                                  content_type="application/merge-patch+json")
    assert status == 200, body
    try:
        relabelled = cluster.apply(last, playbook=RELABEL)
        assert relabelled.returncode == 0, relabelled.stdout[-6000:]
        assert _recap(relabelled.stdout, "apply")["changed"] > 0
        _status, labels = rc.api_request(info, "GET", "/api/v1/nodes/" + node)
        labels = labels["metadata"]["labels"]
        assert labels[drifted] == wanted[drifted]  # the drift was put back
        assert labels[DRA_PLUGIN_LABEL] == DRIVER_UPGRADE_PAUSED  # the driver manager's state was not
        again = cluster.apply(last, playbook=RELABEL)
        recap = _recap(again.stdout, "apply")
        assert recap == dict(recap, changed=0, failed=0), again.stdout[-4000:]
    finally:
        rc.api_request(info, "PATCH", "/api/v1/nodes/" + node, {"metadata": {"labels": wanted}},
                       content_type="application/merge-patch+json")
