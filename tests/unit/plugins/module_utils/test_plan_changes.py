# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_changes: what applying plan B changes, against plan A or against the live cluster.

Plans A and B are built by plan.build_plan from the four-GPU example inventory and variants
of it, one per case of a running cluster's life."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership, vocabulary
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import plan_changes
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
EXAMPLE = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
RESEARCH = {"name": "research", "namespaces": ["research"], "priority": 50, "group": "researchers"}
WHOLE = "gpushare.io/rtx-pro-6000"
SHARED = "gpushare.io/rtx-pro-6000-shared"


def inventory(teams=None, nodes=None):
    return copy.deepcopy(teams or EXAMPLE["gpushare_teams"]), copy.deepcopy(nodes or EXAMPLE["nodes"])


def plan_of(teams, nodes, backend="dra"):
    return build_plan(teams, nodes, backend=backend)


def changes_between(a, b):
    return plan_changes.compare(plan_changes.plan_state(plan_of(*a), "plan A"), plan_of(*b))


def keys(items, kind=None):
    return sorted((item["kind"], item["namespace"], item["name"]) for item in items if kind in (None, item["kind"]))


def reasons(changes, kind=None):
    return [reason["reason"] for reason in changes["disruptive"] if kind in (None, reason["kind"])]


def team(changes, name):
    (entry,) = [entry for entry in changes["teams"] if entry["team"] == name]
    return entry


def test_the_same_plan_changes_nothing():
    changes = changes_between(inventory(), inventory())
    assert changes["objects"] == {"create": [], "update": [], "delete": []}
    assert changes["nodes"] == [] and changes["teams"] == [] and changes["disruptive"] == []


def test_the_generation_label_is_not_a_change():
    plan = plan_of(*inventory())
    old = dict(plan, objects=ownership.stamp(plan["objects"], "aaaaaaaaaaaa"))
    new = dict(plan, objects=ownership.stamp(plan["objects"], "bbbbbbbbbbbb"))
    changes = plan_changes.compare(plan_changes.plan_state(old, "plan A"), new)
    assert changes["objects"] == {"create": [], "update": [], "delete": []}


def test_a_team_removed():
    teams, nodes = inventory()
    teams = [entry for entry in teams if entry["name"] != "training"]
    nodes["gpu1"][3]["team"] = "data"
    changes = changes_between(inventory(), (teams, nodes))
    deleted = keys(changes["objects"]["delete"])
    for kind, namespace, name in [("ClusterQueue", "", "training"), ("LocalQueue", "training", "training"),
                                  ("Namespace", "", "training"), ("WorkloadPriorityClass", "", "training"),
                                  ("RoleBinding", "training", "gpushare-team")]:
        assert (kind, namespace, name) in deleted
    assert all(item["namespace"] != "training" for item in changes["objects"]["create"])
    assert team(changes, "training")["change"] == "removed"
    assert team(changes, "training")["quota"] == {WHOLE: [1, None]}
    assert team(changes, "data")["quota"] == {WHOLE: [None, 1]}
    assert reasons(changes, "team_removed") == ["team training is removed"]


def test_a_team_added():
    teams, nodes = inventory()
    teams.append(RESEARCH)
    nodes["gpu2"] = [{"index": 0, "model": "RTX-PRO-6000", "team": "research", "use": "whole"}]
    changes = changes_between(inventory(), (teams, nodes))
    created = keys(changes["objects"]["create"])
    assert ("ClusterQueue", "", "research") in created and ("LocalQueue", "research", "research") in created
    assert ("Namespace", "", "research") in created
    assert changes["objects"]["delete"] == []
    assert team(changes, "research") == {"team": "research", "queue": "research", "change": "added",
                                         "quota": {WHOLE: [None, 1]}, "borrowing_limit": {}, "lending_limit": {}}
    (node,) = changes["nodes"]
    assert (node["node"], node["change"], node["drain"]) == ("gpu2", "added", False)
    assert changes["disruptive"] == []


def test_a_mig_layout_changed_drains_the_node():
    teams, nodes = inventory()
    nodes["gpu1"][1]["mig"] = {"profiles": {"2g.48gb": 2}}
    changes = changes_between(inventory(), (teams, nodes))
    (node,) = changes["nodes"]
    old_config = plan_of(*inventory())["nodes"]["gpu1"]["mig_config"]
    new_config = plan_of(teams, nodes)["nodes"]["gpu1"]["mig_config"]
    assert node["change"] == "drain" and node["drain"] is True
    assert node["labels"] == {vocabulary.MIG_CONFIG_LABEL: [old_config, new_config]}
    assert [gpu["index"] for gpu in node["gpus"]] == [1]
    assert reasons(changes, "drain") == ["node gpu1 drains (nvidia.com/mig.config %s -> %s)" % (old_config, new_config)]
    production = team(changes, "production")
    assert production["quota"]["gpushare.io/rtx-pro-6000-mig-2g.48gb"] == [None, 2]


def test_a_gpu_moved_between_teams():
    teams, nodes = inventory()
    nodes["gpu1"][0]["team"] = "training"
    changes = changes_between(inventory(), (teams, nodes))
    assert team(changes, "production")["quota"] == {WHOLE: [1, None]}
    assert team(changes, "training")["quota"] == {WHOLE: [1, 2]}
    assert [entry["name"] for entry in changes["objects"]["update"] if entry["kind"] == "ClusterQueue"] == [
        "production", "training"]
    (update,) = [entry for entry in changes["objects"]["update"] if entry["name"] == "training"
                 and entry["kind"] == "ClusterQueue"]
    assert any(path.endswith("nominalQuota") for path in update["fields"]), update
    # Nothing drains: under dra the GPU's node labels do not change.
    assert [node["drain"] for node in changes["nodes"]] == [False]
    # Against a plan directory nothing says what production runs: lowering its quota is disruptive.
    assert reasons(changes, "quota_lowered") == [
        "team production: quota of %s lowered 1 -> 0 (what is in use is not known when comparing with a plan "
        "directory)" % WHOLE]


def test_a_shared_gpu_made_whole():
    teams, nodes = inventory()
    nodes["gpu1"][2] = {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "whole"}
    changes = changes_between(inventory(), (teams, nodes))
    assert ("ResourceClaim", "data", "shared-gpu1-gpu2") in keys(changes["objects"]["delete"])
    assert ("ResourceFlavor", "", "rtx-pro-6000-shared") in keys(changes["objects"]["delete"])
    assert team(changes, "data")["quota"] == {WHOLE: [None, 1], SHARED: [1, None]}
    (node,) = changes["nodes"]
    assert node["gpus"] == [{"index": 2, "old": "shared data x5", "new": "whole data"}]


def test_a_shared_gpu_made_whole_under_device_plugin_drains():
    teams, nodes = inventory()
    nodes["gpu1"][2] = {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "whole"}
    old = plan_of(*inventory(), backend="device_plugin")
    changes = plan_changes.compare(plan_changes.plan_state(old, "plan A"), plan_of(teams, nodes, "device_plugin"))
    (node,) = changes["nodes"]
    assert node["drain"] and vocabulary.DEVICE_PLUGIN_CONFIG_LABEL in node["labels"]


def test_a_node_removed():
    teams, nodes = inventory()
    with_gpu2 = copy.deepcopy(nodes)
    with_gpu2["gpu2"] = [{"index": 0, "model": "RTX-PRO-6000", "team": "training", "use": "whole"}]
    changes = changes_between((teams, with_gpu2), (teams, nodes))
    (node,) = changes["nodes"]
    assert (node["node"], node["change"]) == ("gpu2", "removed")
    assert node["gpus"] == [{"index": 0, "old": "whole training", "new": None}]
    assert team(changes, "training")["quota"] == {WHOLE: [2, 1]}
    assert len(reasons(changes, "quota_lowered")) == 1


def test_changes_are_byte_stable():
    teams, nodes = inventory()
    teams = [entry for entry in teams if entry["name"] != "training"]
    nodes["gpu1"][3]["team"] = "data"
    nodes["gpu1"][1]["mig"] = {"profiles": {"2g.48gb": 2}}
    first = changes_between(inventory(), (teams, nodes))
    shuffled = plan_of(*inventory())
    shuffled["objects"] = list(reversed(shuffled["objects"]))
    second = plan_changes.compare(plan_changes.plan_state(shuffled, "plan A"), plan_of(teams, nodes))
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert first["objects"]["delete"] == sorted(first["objects"]["delete"],
                                                key=lambda k: (k["group"], k["kind"], k["namespace"], k["name"]))


def test_field_paths():
    old = {"spec": {"a": [1, {"b": "4"}], "labels": {"gpushare.io/team": "x"}, "gone": 1}}
    new = {"spec": {"a": [1, {"b": 4}], "labels": {"gpushare.io/team": "y"}, "new": 2}}
    assert plan_changes.field_paths(old, new) == ['spec.gone', 'spec.labels["gpushare.io/team"]', "spec.new"]
    assert plan_changes.field_paths(old, new, subset=True) == ['spec.labels["gpushare.io/team"]', "spec.new"]
    assert plan_changes.field_paths({"a": [1, 2]}, {"a": [1]}) == ["a"]


def test_every_kind_of_a_plan_has_an_api_version():
    kinds = set(kind for role_kinds in helm_values.KINDS_BY_ROLE.values() for kind in role_kinds)
    assert kinds == set(plan_changes.API_VERSIONS)
    for backend in ("dra", "device_plugin"):
        for obj in plan_of(*inventory(), backend=backend)["objects"]:
            assert plan_changes.API_VERSIONS[obj["kind"]] == obj["apiVersion"]


# --- against the live cluster -----------------------------------------------------------

def live(obj, uid):
    """The object as the API server returns it: server metadata, defaults, status."""
    copied = copy.deepcopy(obj)
    copied["metadata"].update(uid=uid, resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z",
                              managedFields=[{"manager": "kubectl"}])
    copied["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    copied.setdefault("spec", {})["stopPolicy"] = "None"
    copied["status"] = {"conditions": [{"type": "Active", "status": "True"}]}
    return copied


def unstamped(obj):
    """``obj`` as applied before the collection labelled its objects."""
    copied = copy.deepcopy(obj)
    labels = copied.get("metadata", {}).get("labels") or {}
    for label in (ownership.MANAGED_BY_LABEL, ownership.GENERATION_LABEL):
        labels.pop(label, None)
    return copied


def cluster_of(plan, stamp=True, usage=None, workloads=(), pods=(), extra_nodes=()):
    objects = (ownership.stamp(plan["objects"], ownership.generation(plan["objects"])) if stamp
               else [unstamped(obj) for obj in plan["objects"]])
    objects = [live(obj, "uid-%d" % position) for position, obj in enumerate(objects)]
    for obj in objects:
        if obj["kind"] == "ClusterQueue" and usage and obj["metadata"]["name"] in usage:
            obj["status"]["flavorsUsage"] = [{"name": "rtx-pro-6000-whole", "resources": [
                {"name": resource, "total": str(total), "borrowed": "0"}
                for resource, total in usage[obj["metadata"]["name"]].items()]}]
    nodes = [{"metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/hostname": name})}}
             for name, labels in helm_values.node_labels(plan).items()] + list(extra_nodes)
    return plan_changes.cluster_state(objects, nodes, list(workloads), list(pods))


def test_a_cluster_that_runs_the_plan_changes_nothing():
    plan = plan_of(*inventory())
    stamped = dict(plan, objects=ownership.stamp(plan["objects"], "bbbbbbbbbbbb"))
    changes = plan_changes.compare(cluster_of(plan), stamped)
    assert changes["objects"] == {"create": [], "update": [], "delete": []}
    assert changes["nodes"] == [] and changes["disruptive"] == []
    assert changes["workloads"]["known"] is True


def test_only_owned_objects_are_deleted_and_unowned_ones_are_taken_over():
    plan = plan_of(*inventory())
    teams, nodes = inventory()
    teams = [entry for entry in teams if entry["name"] != "training"]
    nodes["gpu1"][3]["team"] = "data"
    new = dict(plan_of(teams, nodes))
    new["objects"] = ownership.stamp(new["objects"], "bbbbbbbbbbbb")
    # Applied before the objects carried the ownership labels: nothing is owned, nothing deleted.
    changes = plan_changes.compare(cluster_of(plan, stamp=False), new)
    assert changes["objects"]["delete"] == []
    assert all('metadata.labels["%s"]' % ownership.MANAGED_BY_LABEL in entry["fields"]
               for entry in changes["objects"]["update"])
    changes = plan_changes.compare(cluster_of(plan), new)
    assert ("ClusterQueue", "", "training") in keys(changes["objects"]["delete"])


def test_workloads_without_a_queue_and_quota_below_use():
    plan = plan_of(*inventory())
    teams, nodes = inventory()
    teams = [entry for entry in teams if entry["name"] != "training"]
    nodes["gpu1"][3]["team"] = "data"
    nodes["gpu1"][0]["team"] = "data"
    workloads = [
        {"metadata": {"name": "job-fine-tune-1", "namespace": "training", "ownerReferences": [{"uid": "job-1"}]},
         "spec": {"queueName": "training"}, "status": {"admission": {"clusterQueue": "training"}}},
        {"metadata": {"name": "job-other", "namespace": "data"}, "spec": {"queueName": "data"}},
    ]
    changes = plan_changes.compare(cluster_of(plan, usage={"production": {WHOLE: 1}}, workloads=workloads),
                                   plan_of(teams, nodes))
    assert changes["workloads"]["without_queue"] == [
        {"namespace": "training", "name": "job-fine-tune-1", "queue": "training", "admitted": True,
         "cluster_queue": "training"}]
    assert reasons(changes, "team_removed") == ["team training is removed; 1 workload(s) lose their queue"]
    assert reasons(changes, "quota_below_use") == [
        "team production: quota of %s lowered 1 -> 0, below the 1 in use" % WHOLE]
    assert team(changes, "production")["in_use"] == {WHOLE: 1}


def test_a_quota_lowered_but_unused_is_not_disruptive_against_the_cluster():
    plan = plan_of(*inventory())
    teams, nodes = inventory()
    nodes["gpu1"][0]["team"] = "training"
    changes = plan_changes.compare(cluster_of(plan, usage={"production": {WHOLE: 0}}), plan_of(teams, nodes))
    assert team(changes, "production")["quota"] == {WHOLE: [1, None]}
    assert changes["disruptive"] == []


def test_a_drain_evicts_the_gpu_pods_of_the_node():
    plan = plan_of(*inventory())
    teams, nodes = inventory()
    nodes["gpu1"][1]["mig"] = {"profiles": {"2g.48gb": 2}}
    pods = [
        {"metadata": {"name": "embeddings-0", "namespace": "production", "uid": "pod-1",
                      "ownerReferences": [{"kind": "ReplicaSet", "uid": "rs-1"}]},
         "spec": {"nodeName": "gpu1", "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "x"}],
                  "containers": [{"name": "c"}]}, "status": {"phase": "Running"}},
        {"metadata": {"name": "web", "namespace": "production", "uid": "pod-2"},
         "spec": {"nodeName": "gpu1", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}},
        {"metadata": {"name": "elsewhere", "namespace": "production", "uid": "pod-3"},
         "spec": {"nodeName": "cpu1", "resourceClaims": [{"name": "gpu"}], "containers": [{"name": "c"}]}},
    ]
    workloads = [{"metadata": {"name": "pod-embeddings-0-abc", "namespace": "production",
                               "ownerReferences": [{"kind": "Pod", "uid": "pod-1"}]}, "spec": {"queueName": "production"}}]
    changes = plan_changes.compare(cluster_of(plan, workloads=workloads, pods=pods), plan_of(teams, nodes))
    assert changes["workloads"]["evicted"] == [
        {"namespace": "production", "pod": "embeddings-0", "node": "gpu1", "workload": "pod-embeddings-0-abc"}]
    (reason,) = reasons(changes, "drain")
    assert reason.endswith("; evicts 1 GPU pod(s)")


def test_a_shared_claim_in_use_is_disruptive():
    plan = plan_of(*inventory())
    teams, nodes = inventory()
    nodes["gpu1"][2] = {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "whole"}
    pods = [{"metadata": {"name": "notebook-%d" % i, "namespace": "data", "uid": "nb-%d" % i},
             "spec": {"nodeName": "gpu1", "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu1-gpu2"}],
                      "containers": [{"name": "c"}]}} for i in range(2)]
    changes = plan_changes.compare(cluster_of(plan, pods=pods), plan_of(teams, nodes))
    assert reasons(changes, "claim_in_use") == [
        "shared ResourceClaim data/shared-gpu1-gpu2 is deleted while 2 pod(s) use it (notebook-0, notebook-1)"]


def test_a_live_gpu_node_the_plan_no_longer_holds_is_removed_and_others_are_ignored():
    plan = plan_of(*inventory())
    extra = [{"metadata": {"name": "gpu2", "labels": {"gpushare.io/gpu.rtx-pro-6000": "true"}}},
             {"metadata": {"name": "cpu1", "labels": {"kubernetes.io/hostname": "cpu1"}}}]
    changes = plan_changes.compare(cluster_of(plan, extra_nodes=extra), plan)
    assert [(node["node"], node["change"]) for node in changes["nodes"]] == [("gpu2", "removed")]


def test_summary_lines_name_every_change():
    teams, nodes = inventory()
    teams = [entry for entry in teams if entry["name"] != "training"]
    nodes["gpu1"][3]["team"] = "data"
    lines = plan_changes.summary_lines(changes_between(inventory(), (teams, nodes)))
    assert lines[0].startswith("Changes against plan A: 0 object(s) to create, ")
    assert "  delete ClusterQueue training" in lines
    assert "  team training: removed (quota %s 1 -> -)" % WHOLE in lines
    assert lines[-2:] == ["Disruptive (needs -e gpushare_confirm_disruptive=true):", "  - team training is removed"]


def test_a_malformed_old_plan_is_an_error():
    with pytest.raises(ValueError, match="old: not a plan.json"):
        plan_changes.plan_state({"nodes": {}}, "old")
    with pytest.raises(ValueError, match=r"objects\[0\]: field 'metadata.name' is missing"):
        plan_changes.plan_state({"nodes": {}, "objects": [{"kind": "Namespace", "metadata": {}}]}, "old")
