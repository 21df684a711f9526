# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What applying a new plan would change: the ``changes.json`` of docs/plan.md.

The old side is either a previous plan (its ``plan.json``: :func:`plan_state`) or the live
cluster as ``kubernetes.core.k8s_info`` returns it (:func:`cluster_state`); :func:`compare`
sets it against the new plan and says which objects are created, updated (with the paths of
the fields that differ) and deleted, which nodes change labels (a new MIG layout or sharing
config drains the node), how each team's quota, borrowing and lending limits move, and, when
the live Workloads are known, which workloads a drain evicts or the change leaves without a
queue. ``disruptive`` lists every reason the change needs ``gpushare_confirm_disruptive``.

Pure Python, no I/O, no Ansible import; the output is sorted so ``changes.json`` is
byte-stable. Malformed input raises ``ValueError`` naming the field.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import prune
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    DEVICE_PLUGIN_CONFIG_LABEL, GPU_NODE_LABEL_PREFIX, KUEUE_GROUP, MIG_CONFIG_LABEL, TEAM_LABEL)

CHANGES_VERSION = 1
CLUSTER = "cluster"

# apiVersion of every kind a plan holds (helm_values.KINDS_BY_ROLE is the home of the kinds,
# prune.API_VERSIONS of their versions). The live cluster is read kind by kind with these.
API_VERSIONS = {kind: prune.API_VERSIONS[kind] for kinds in helm_values.KINDS_BY_ROLE.values() for kind in kinds}
WORKLOAD_API_VERSION = prune.WORKLOAD_API_VERSION
# Node labels whose change repartitions or re-advertises a node's GPUs: the gpu_operator role
# drains the node before it sets them (helm_values.relabel_steps decides the same way).
DRAINING_LABELS = (MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL)
# Which layer applies what: a refusal concerns only the layers a run applies.
DRAIN_LAYER = "gpu_stack"
QUEUE_LAYER = "queues"
# The tags that run a layer: its play's and its roles' (a role's tasks are tagged <role> or
# <role>_<part>), as prepare_hosts.yml selects the host layer.
LAYER_TAGS = {DRAIN_LAYER: ("gpu_stack", "gpu_operator", "dra_driver"), QUEUE_LAYER: ("queues", "kueue", "tenancy")}
# Metadata the collection writes; the rest (uid, resourceVersion, managedFields, ...) is the server's.
_OWN_METADATA = ("name", "namespace", "labels", "annotations")


def _key(obj: Mapping[str, Any], where: str) -> Tuple[str, str, str, str]:
    """(API group, kind, namespace, name) of an object; the group is "" for the core API."""
    if not isinstance(obj, Mapping):
        raise ValueError("%s: must be a mapping, got %s" % (where, type(obj).__name__))
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        raise ValueError("%s: field 'metadata.name' is missing" % where)
    api_version = str(obj.get("apiVersion") or API_VERSIONS.get(str(obj.get("kind")), ""))
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    if not obj.get("kind"):
        raise ValueError("%s %s: field 'kind' is missing" % (where, metadata["name"]))
    return group, str(obj["kind"]), str(metadata.get("namespace") or ""), str(metadata["name"])


def _key_dict(key: Tuple[str, str, str, str]) -> Dict[str, str]:
    return {"group": key[0], "kind": key[1], "namespace": key[2], "name": key[3]}


def _comparable(obj: Mapping[str, Any], live: bool) -> Dict[str, Any]:
    """The object without what a comparison must not see: the plan generation label and,
    for an object read from the cluster, its status and the server's metadata."""
    copied = copy.deepcopy(dict(obj))
    if live:
        copied.pop("status", None)
    metadata = dict(copied.get("metadata") or {})
    if live:
        metadata = {name: value for name, value in metadata.items() if name in _OWN_METADATA}
    labels = dict(metadata.get("labels") or {})
    labels.pop(ownership.GENERATION_LABEL, None)
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    copied["metadata"] = metadata
    return copied


def _step(path: str, key: Any) -> str:
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    text = str(key)
    if text.replace("_", "").isalnum():
        return "%s.%s" % (path, text) if path else text
    return '%s["%s"]' % (path, text.replace("\\", "\\\\").replace('"', '\\"'))


def _same_scalar(old: Any, new: Any) -> bool:
    # The API server returns quantities as strings where a plan may hold numbers ("4" and 4).
    if isinstance(old, bool) or isinstance(new, bool):
        return old is new
    if isinstance(old, (int, float, str)) and isinstance(new, (int, float, str)):
        return str(old) == str(new)
    return old == new


def field_paths(old: Any, new: Any, subset: bool = False, path: str = "") -> List[str]:
    """Paths of the fields that differ between ``old`` and ``new``.

    ``subset``: only the fields ``new`` sets count (``old`` is a live object, which carries
    defaults the server filled in); lists of different lengths differ as a whole.
    """
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: List[str] = []
        keys = set(new) if subset else set(new) | set(old)
        for key in sorted(keys, key=str):
            if key not in old or key not in new:
                found.append(_step(path, key))
            else:
                found += field_paths(old[key], new[key], subset, _step(path, key))
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for position, (old_item, new_item) in enumerate(zip(old, new)):
            found += field_paths(old_item, new_item, subset, _step(path, position))
        return found
    return [] if _same_scalar(old, new) else [path or "."]


def _count(value: Any) -> Any:
    """A quota value as a number where it is one ("4" -> 4), else as given."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _team_quotas(objects: Mapping[Tuple[str, str, str, str], Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Team -> {queue, quota, borrowing_limit, lending_limit} from its ClusterQueue (resource -> value)."""
    teams: Dict[str, Dict[str, Any]] = {}
    for key, obj in objects.items():
        if key[1] != "ClusterQueue":
            continue
        team = ((obj.get("metadata") or {}).get("labels") or {}).get(TEAM_LABEL) or key[3]
        entry = teams.setdefault(str(team), {"queue": key[3], "quota": {}, "borrowing_limit": {},
                                             "lending_limit": {}})
        for group in (obj.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for resource in flavor.get("resources") or []:
                    name = str(resource.get("name"))
                    for field, target in (("nominalQuota", "quota"), ("borrowingLimit", "borrowing_limit"),
                                          ("lendingLimit", "lending_limit")):
                        if resource.get(field) is not None:
                            value = _count(resource[field])
                            if target == "quota" and value == 0:
                                # A nominal quota of 0 is no quota (every team lists every resource).
                                continue
                            previous = entry[target].get(name, 0)
                            entry[target][name] = previous + value if isinstance(value, (int, float)) else value
    return teams


def _queue_usage(queues: Iterable[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """ClusterQueue name -> resource -> what its admitted workloads use (status.flavorsUsage, Kueue v1beta2)."""
    usage: Dict[str, Dict[str, Any]] = {}
    for queue in queues:
        name = str((queue.get("metadata") or {}).get("name"))
        used = usage.setdefault(name, {})
        for flavor in (queue.get("status") or {}).get("flavorsUsage") or []:
            for resource in flavor.get("resources") or []:
                value = _count(resource.get("total", 0))
                # Kueue lists every resource of the queue, used or not.
                if isinstance(value, (int, float)) and value:
                    used[str(resource.get("name"))] = used.get(str(resource.get("name")), 0) + value
    return usage


def _index(objects: Iterable[Mapping[str, Any]], where: str, live: bool) -> Dict[Tuple[str, str, str, str], Dict[str, Any]]:
    indexed: Dict[Tuple[str, str, str, str], Dict[str, Any]] = {}
    for position, obj in enumerate(objects):
        indexed[_key(obj, "%s[%d]" % (where, position))] = _comparable(obj, live)
    return indexed


def _plan_nodes(plan: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Node name -> {host, labels, gpus} as the plan wants them."""
    labels = helm_values.node_labels(plan)
    return {str(plan["nodes"][host].get("node_name") or host): {
        "host": host, "labels": labels[host], "gpus": list(plan["nodes"][host].get("gpus") or [])}
        for host in sorted(plan["nodes"])}


def plan_state(plan: Mapping[str, Any], source: str) -> Dict[str, Any]:
    """The state a previous plan (its plan.json) describes; ``source`` names where it came from."""
    if not isinstance(plan, Mapping) or not isinstance(plan.get("objects"), list) or not isinstance(plan.get("nodes"), Mapping):
        raise ValueError("%s: not a plan.json written by plan.yml (fields 'objects' and 'nodes' are needed)" % source)
    objects = _index(plan["objects"], "%s: objects" % source, live=False)
    return {"source": source, "live": False, "objects": objects, "owned": set(objects),
            "nodes": _plan_nodes(plan), "teams": _team_quotas(objects), "usage": None,
            "workloads": None, "pods": None}


def cluster_state(objects: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                  workloads: Optional[Sequence[Mapping[str, Any]]] = None,
                  pods: Optional[Sequence[Mapping[str, Any]]] = None) -> Dict[str, Any]:
    """The state of the live cluster from what ``kubernetes.core.k8s_info`` read.

    ``objects``: every object of the kinds in ``API_VERSIONS`` (the collection's and others';
    only those carrying ``ownership.MANAGED_BY_LABEL`` are ever deleted); ``nodes``: the Nodes;
    ``workloads``: Kueue Workloads; ``pods``: the pods that may hold GPUs (None: not read).
    """
    indexed = _index(objects, "cluster objects", live=True)
    owned = set(key for key, obj in indexed.items() if ownership.is_owned(obj))
    node_state = {}
    for position, node in enumerate(nodes):
        name = (node.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("cluster nodes[%d]: field 'metadata.name' is missing" % position)
        node_state[str(name)] = {"host": None, "labels": {str(k): str(v) for k, v in
                                                          ((node.get("metadata") or {}).get("labels") or {}).items()},
                                 "gpus": None}
    queues = [obj for obj in objects if obj.get("kind") == "ClusterQueue"]
    return {"source": CLUSTER, "live": True, "objects": indexed, "owned": owned, "nodes": node_state,
            "teams": _team_quotas(indexed), "usage": _queue_usage(queues),
            "workloads": list(workloads) if workloads is not None else None,
            "pods": list(pods) if pods is not None else None}


def _gpu_text(gpu: Mapping[str, Any]) -> str:
    use = gpu.get("use")
    text = "%s %s" % (use, gpu.get("team") or "-")
    if use == "shared":
        text += " x%s" % gpu.get("replicas")
    if gpu.get("instances"):
        text += " " + " ".join("%s@%s" % (inst.get("profile"), inst.get("start")) for inst in gpu["instances"])
    return text


def _gpu_changes(old: Optional[List[Mapping[str, Any]]], new: Optional[List[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    if old is None or new is None:
        return []
    before = {gpu.get("index"): _gpu_text(gpu) for gpu in old}
    after = {gpu.get("index"): _gpu_text(gpu) for gpu in new}
    return [{"index": index, "old": before.get(index), "new": after.get(index)}
            for index in sorted(set(before) | set(after), key=str) if before.get(index) != after.get(index)]


def _node_changes(old: Mapping[str, Any], new_nodes: Mapping[str, Any]) -> List[Dict[str, Any]]:
    changes = []
    old_nodes = old["nodes"]
    for name in sorted(set(old_nodes) | set(new_nodes)):
        before, after = old_nodes.get(name), new_nodes.get(name)
        if after is None:
            # A live node the plan never labelled is not the plan's: only GPU nodes count, known
            # by their GPU_NODE_LABEL_PREFIX label (sharing.model_label).
            if old["live"] and not any(label.startswith(GPU_NODE_LABEL_PREFIX) for label in before["labels"]):
                continue
            changes.append({"node": name, "host": before["host"], "change": "removed", "drain": False,
                            "labels": {}, "gpus": _gpu_changes(before["gpus"], [])})
            continue
        if before is None:
            changes.append({"node": name, "host": after["host"], "change": "added", "drain": False,
                            "labels": {label: [None, value] for label, value in sorted(after["labels"].items())},
                            "gpus": []})
            continue
        labels = {label: [before["labels"].get(label), value] for label, value in sorted(after["labels"].items())
                  if before["labels"].get(label) != value}
        if not old["live"]:
            labels.update({label: [value, None] for label, value in sorted(before["labels"].items())
                           if label not in after["labels"]})
        gpus = _gpu_changes(before["gpus"], after["gpus"])
        if not labels and not gpus:
            continue
        drain = any(label in labels for label in DRAINING_LABELS)
        changes.append({"node": name, "host": after["host"], "change": "drain" if drain else "relabel" if labels else "gpus",
                        "drain": drain, "labels": dict(sorted(labels.items())), "gpus": gpus})
    return changes


def _moves(before: Mapping[str, Any], after: Mapping[str, Any]) -> Dict[str, List[Any]]:
    return {resource: [before.get(resource), after.get(resource)]
            for resource in sorted(set(before) | set(after)) if before.get(resource) != after.get(resource)}


def _team_changes(old: Mapping[str, Any], new_teams: Mapping[str, Any]) -> List[Dict[str, Any]]:
    changes = []
    for team in sorted(set(old["teams"]) | set(new_teams)):
        before = old["teams"].get(team) or {"quota": {}, "borrowing_limit": {}, "lending_limit": {}}
        after = new_teams.get(team) or {"quota": {}, "borrowing_limit": {}, "lending_limit": {}}
        entry = {"team": team, "queue": (old["teams"].get(team) or new_teams.get(team))["queue"],
                 "change": "added" if team not in old["teams"] else "removed" if team not in new_teams else "changed",
                 "quota": _moves(before["quota"], after["quota"]),
                 "borrowing_limit": _moves(before["borrowing_limit"], after["borrowing_limit"]),
                 "lending_limit": _moves(before["lending_limit"], after["lending_limit"])}
        if old["usage"] is not None:
            entry["in_use"] = dict(sorted(old["usage"].get(before.get("queue", team), {}).items()))
        if entry["change"] != "changed" or entry["quota"] or entry["borrowing_limit"] or entry["lending_limit"]:
            changes.append(entry)
    return changes


def _owner_uids(metadata: Mapping[str, Any]) -> List[str]:
    return [str(owner.get("uid")) for owner in metadata.get("ownerReferences") or [] if owner.get("uid")]


def _workload_changes(old: Mapping[str, Any], deleted: Iterable[Tuple[str, str, str, str]],
                      drained: Sequence[str]) -> Dict[str, Any]:
    """Workloads left without a queue (their LocalQueue is deleted) and GPU pods a drain evicts."""
    if old["workloads"] is None:
        return {"known": False, "evicted": [], "without_queue": [], "losing_claim": []}
    gone = set((key[2], key[3]) for key in deleted if key[1] == "LocalQueue")
    gone_namespaces = set(key[3] for key in deleted if key[1] == "Namespace")
    by_owner: Dict[str, str] = {}
    without_queue = []
    for workload in old["workloads"]:
        metadata = workload.get("metadata") or {}
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name"))
        for uid in _owner_uids(metadata):
            by_owner[uid] = name
        queue = str((workload.get("spec") or {}).get("queueName") or "")
        if (namespace, queue) in gone or namespace in gone_namespaces:
            admission = (workload.get("status") or {}).get("admission") or {}
            local_queue = old["objects"].get((KUEUE_GROUP, "LocalQueue", namespace, queue)) or {}
            without_queue.append({"namespace": namespace, "name": name, "queue": queue,
                                  "admitted": bool(admission.get("clusterQueue")),
                                  "cluster_queue": admission.get("clusterQueue")
                                  or (local_queue.get("spec") or {}).get("clusterQueue")})
    evicted = []
    for node in drained:
        pods = [pod for pod in old["pods"] or [] if (pod.get("spec") or {}).get("nodeName") == node]
        holding = set((pod["namespace"], pod["name"]) for pod in helm_values.gpu_pods(pods))
        for pod in pods:
            metadata = pod.get("metadata") or {}
            namespace, name = str(metadata.get("namespace", "default")), str(metadata.get("name"))
            if (namespace, name) not in holding:
                continue
            uids = [str(metadata.get("uid"))] + _owner_uids(metadata)
            evicted.append({"namespace": namespace, "pod": name, "node": node,
                            "workload": next((by_owner[uid] for uid in uids if uid in by_owner), None)})
    claims = set((key[2], key[3]) for key in deleted if key[1] == "ResourceClaim")
    losing_claim = []
    for pod in old["pods"] or []:
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace", "default"))
        for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            if (namespace, claim.get("resourceClaimName")) in claims:
                losing_claim.append({"namespace": namespace, "pod": str(metadata.get("name")),
                                     "claim": claim["resourceClaimName"]})
    return {"known": True, "evicted": sorted(evicted, key=lambda e: (e["node"], e["namespace"], e["pod"])),
            "without_queue": sorted(without_queue, key=lambda w: (w["namespace"], w["name"])),
            "losing_claim": sorted(losing_claim, key=lambda p: (p["namespace"], p["claim"], p["pod"]))}


def _disruptive(nodes: List[Dict[str, Any]], teams: List[Dict[str, Any]], workloads: Mapping[str, Any],
                usage_known: bool) -> List[Dict[str, str]]:
    reasons = []
    for node in nodes:
        if node["drain"]:
            what = ", ".join("%s %s -> %s" % (label, old, new) for label, (old, new) in node["labels"].items()
                             if label in DRAINING_LABELS)
            pods = [pod for pod in workloads["evicted"] if pod["node"] == node["node"]]
            evicts = "; evicts %d GPU pod(s)" % len(pods) if workloads["known"] else ""
            reasons.append({"kind": "drain", "layer": DRAIN_LAYER,
                            "reason": "node %s drains (%s)%s" % (node["node"], what, evicts)})
    for claim in sorted(set((pod["namespace"], pod["claim"]) for pod in workloads["losing_claim"])):
        users = [pod["pod"] for pod in workloads["losing_claim"] if (pod["namespace"], pod["claim"]) == claim]
        reasons.append({"kind": "claim_in_use", "layer": DRAIN_LAYER,
                        "reason": "shared ResourceClaim %s/%s is deleted while %d pod(s) use it (%s)"
                        % (claim[0], claim[1], len(users), ", ".join(users))})
    for team in teams:
        if team["change"] == "removed":
            lost = [w for w in workloads["without_queue"] if w["cluster_queue"] == team["queue"]]
            reasons.append({"kind": "team_removed", "layer": QUEUE_LAYER,
                            "reason": "team %s is removed%s" % (team["team"], "; %d workload(s) lose their queue"
                                                                % len(lost) if workloads["known"] else "")})
            continue
        for resource, (old, new) in team["quota"].items():
            old_value = old if isinstance(old, (int, float)) else 0
            new_value = new if isinstance(new, (int, float)) else 0
            if new_value >= old_value:
                continue
            if usage_known:
                used = team.get("in_use", {}).get(resource, 0)
                if used > new_value:
                    reasons.append({"kind": "quota_below_use", "layer": QUEUE_LAYER,
                                    "reason": "team %s: quota of %s lowered %s -> %s, below the %s in use"
                                    % (team["team"], resource, old_value, new_value, used)})
            else:
                reasons.append({"kind": "quota_lowered", "layer": QUEUE_LAYER,
                                "reason": "team %s: quota of %s lowered %s -> %s (what is in use is not known when "
                                "comparing with a plan directory)" % (team["team"], resource, old_value, new_value)})
    return sorted(reasons, key=lambda r: (r["layer"], r["kind"], r["reason"]))


def compare(old: Mapping[str, Any], new_plan: Mapping[str, Any]) -> Dict[str, Any]:
    """What applying ``new_plan`` changes, from ``old`` (:func:`plan_state` or :func:`cluster_state`)."""
    new = plan_state(new_plan, "new plan")
    created, updated = [], []
    for key, obj in sorted(new["objects"].items()):
        before = old["objects"].get(key)
        if before is None:
            created.append(_key_dict(key))
            continue
        paths = field_paths(before, obj, subset=old["live"])
        if paths:
            updated.append(dict(_key_dict(key), fields=paths))
    deleted_keys = sorted(key for key in old["owned"] if key not in new["objects"])
    nodes = _node_changes(old, new["nodes"])
    teams = _team_changes(old, new["teams"])
    workloads = _workload_changes(old, deleted_keys, [node["node"] for node in nodes if node["drain"]])
    return {
        "version": CHANGES_VERSION,
        "compared_with": old["source"],
        "objects": {"create": created, "update": updated, "delete": [_key_dict(key) for key in deleted_keys]},
        "nodes": nodes,
        "teams": teams,
        "workloads": workloads,
        "disruptive": _disruptive(nodes, teams, workloads, old["usage"] is not None),
    }


def _limits(moves: Mapping[str, List[Any]]) -> str:
    return ", ".join("%s %s -> %s" % (resource, "-" if old is None else old, "-" if new is None else new)
                     for resource, (old, new) in moves.items())


def summary_lines(changes: Mapping[str, Any]) -> List[str]:
    """The changes as short lines for a terminal (plan.yml and the preflight print them)."""
    objects = changes["objects"]
    lines = ["Changes against %s: %d object(s) to create, %d to update, %d to delete"
             % (changes["compared_with"], len(objects["create"]), len(objects["update"]), len(objects["delete"]))]
    for verb in ("create", "update", "delete"):
        for item in objects[verb]:
            where = "%s/%s" % (item["namespace"], item["name"]) if item["namespace"] else item["name"]
            lines.append("  %s %s %s" % (verb, item["kind"], where))
    for node in changes["nodes"]:
        detail = "; ".join(["%s %s -> %s" % (label, old, new) for label, (old, new) in node["labels"].items()]
                           + ["GPU %s: %s -> %s" % (gpu["index"], gpu["old"], gpu["new"]) for gpu in node["gpus"]])
        lines.append("  node %s: %s%s" % (node["node"], node["change"], " (%s)" % detail if detail else ""))
    for team in changes["teams"]:
        parts = ["%s %s" % (name.replace("_", " "), _limits(team[name]))
                 for name in ("quota", "borrowing_limit", "lending_limit") if team[name]]
        lines.append("  team %s: %s%s" % (team["team"], team["change"], " (%s)" % "; ".join(parts) if parts else ""))
    workloads = changes["workloads"]
    for pod in workloads["evicted"]:
        lines.append("  evicted: pod %s/%s on %s%s" % (pod["namespace"], pod["pod"], pod["node"],
                                                       " (workload %s)" % pod["workload"] if pod["workload"] else ""))
    for pod in workloads["losing_claim"]:
        lines.append("  loses its claim: pod %s/%s (ResourceClaim %s)" % (pod["namespace"], pod["pod"], pod["claim"]))
    for workload in workloads["without_queue"]:
        lines.append("  without a queue: workload %s/%s (LocalQueue %s%s)" % (
            workload["namespace"], workload["name"], workload["queue"], ", admitted" if workload["admitted"] else ""))
    if changes["disruptive"]:
        lines.append("Disruptive (needs -e gpushare_confirm_disruptive=true):")
        lines += ["  - %s" % reason["reason"] for reason in changes["disruptive"]]
    else:
        lines.append("Nothing disruptive.")
    return lines


def layer_runs(layer: str, run_tags: Sequence[str], skip_tags: Sequence[str] = ()) -> bool:
    """Whether a run with ``--tags run_tags --skip-tags skip_tags`` applies ``layer``."""
    tags = LAYER_TAGS[layer]
    if any(tag in skip_tags for tag in tags):
        return False
    return any(tag in ("all", "tagged") or tag in tags or any(tag.startswith(own + "_") for own in tags)
               for tag in run_tags)


def refusals(changes: Mapping[str, Any], run_tags: Sequence[str] = ("all",), skip_tags: Sequence[str] = ()) -> List[str]:
    """The disruptive reasons of ``changes`` that concern a layer this run applies."""
    return [reason["reason"] for reason in changes.get("disruptive") or []
            if layer_runs(reason["layer"], run_tags, skip_tags)]
