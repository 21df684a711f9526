# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What applying a plan deletes: the collection's objects (``ownership.is_owned``) that the
plan no longer holds, in a safe order, and what it refuses to delete without
``gpushare_confirm_disruptive``.

Pure logic: the roles list the live objects with kubernetes.core.k8s_info (label selector
``app.kubernetes.io/managed-by=gpushare.cluster``), the filter gpushare.cluster.prune_plan calls
:func:`prune_plan`, and kubernetes.core.k8s deletes what it returns. An object without the
ownership label is never returned, whatever its name.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract
from ansible_collections.gpushare.cluster.plugins.module_utils.render.helm_values import KINDS_BY_ROLE
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import KUEUE_API, RESOURCE_API, TEAM_LABEL

# kind -> apiVersion of every kind the collection applies from a plan (and prunes).
API_VERSIONS: Dict[str, str] = {
    "Namespace": "v1",
    "ResourceQuota": "v1",
    "LimitRange": "v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "ValidatingAdmissionPolicy": "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io/v1",
    "DeviceClass": RESOURCE_API,
    "ResourceClaimTemplate": RESOURCE_API,
    "ResourceClaim": RESOURCE_API,
    "WorkloadPriorityClass": KUEUE_API,
    "ResourceFlavor": KUEUE_API,
    "Cohort": KUEUE_API,
    "ClusterQueue": KUEUE_API,
    "LocalQueue": KUEUE_API,
}
WORKLOAD_API_VERSION = KUEUE_API
# The tenancy role also applies each team namespace's boundaries (addon_files.boundary_objects).
PRUNED_KINDS: Dict[str, Tuple[str, ...]] = {
    "dra_driver": KINDS_BY_ROLE["dra_driver"],
    "kueue": KINDS_BY_ROLE["kueue"],
    "tenancy": KINDS_BY_ROLE["tenancy"] + ("NetworkPolicy", "ResourceQuota", "LimitRange"),
}
# Kinds every role lists, whatever it prunes, to judge what a deletion would disrupt: a team
# whose queue goes away is refused by every role, so the first role to run (site.yml: dra_driver)
# stops before anything of that team is deleted.
CONTEXT_KINDS = ("ClusterQueue", "LocalQueue")

# Deletion order (the roles run in site.yml's order, dra_driver, kueue, tenancy, each deleting
# its own kinds in this order):
# - access and admission first (bindings before what they bind), so nothing new is let in
#   through a team's RBAC or a policy while its devices and queues are going;
# - the team namespace boundaries, then claims before templates before DeviceClasses (a claim
#   names a class; a shared claim in use is refused, below);
# - Kueue: a ClusterQueue before the Cohort and ResourceFlavors it names (Kueue keeps a flavor in
#   use by a ClusterQueue with its resource-in-use finalizer), priority classes after;
# - LocalQueues last of the queues: a LocalQueue is what a workload names
#   (kueue.x-k8s.io/queue-name), so a workload submitted meanwhile finds its queue and waits as
#   inadmissible instead of being taken for a workload of no queue;
# - Namespaces at the very end: deleting one deletes everything still in it, so everything the
#   collection put there is deleted by name first, and a namespace with pods or workloads is refused.
DELETE_ORDER: Tuple[str, ...] = (
    "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy",
    "ClusterRoleBinding", "ClusterRole", "RoleBinding", "Role",
    "NetworkPolicy", "LimitRange", "ResourceQuota",
    "ResourceClaim", "ResourceClaimTemplate", "DeviceClass",
    "ClusterQueue", "Cohort", "ResourceFlavor", "WorkloadPriorityClass",
    "LocalQueue",
    "Namespace",
)
CONFIRM_VARIABLE = "gpushare_confirm_disruptive"


def list_kinds(role: str) -> List[Dict[str, str]]:
    """The ``{api_version, kind, label_selectors}`` a role lists before it prunes: its own kinds, then the
    queues every role needs to judge a deletion (owned objects only; Workloads separately)."""
    if role not in PRUNED_KINDS:
        raise ValueError("role: %r prunes nothing (known: %s)" % (role, ", ".join(sorted(PRUNED_KINDS))))
    kinds = list(PRUNED_KINDS[role]) + [kind for kind in CONTEXT_KINDS if kind not in PRUNED_KINDS[role]]
    selector = ["%s=%s" % (ownership.MANAGED_BY_LABEL, ownership.MANAGED_BY)]
    return [{"api_version": API_VERSIONS[kind], "kind": kind, "label_selectors": list(selector)} for kind in kinds]


def _key(obj: Mapping[str, Any]) -> Tuple[str, str, str, str]:
    """Group (not version: the cluster may answer in another), kind, namespace and name."""
    metadata = obj.get("metadata") or {}
    api_version = str(obj.get("apiVersion") or API_VERSIONS.get(str(obj.get("kind")), ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return (group, str(obj.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name")))


def _reference(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A deletion as the smallest object kubernetes.core.k8s deletes with ``state: absent``."""
    metadata = {"name": entry["name"]}
    if entry.get("namespace"):
        metadata["namespace"] = entry["namespace"]
    return {"apiVersion": entry["api_version"], "kind": entry["kind"], "metadata": metadata}


def _where(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    return "%s %s%s" % (obj.get("kind"), "%s/" % namespace if namespace else "", metadata.get("name"))


def _conditions(obj: Mapping[str, Any]) -> Set[str]:
    return {str(c.get("type")) for c in ((obj.get("status") or {}).get("conditions") or [])
            if str(c.get("status")) == "True"}


def _unfinished(workloads: Iterable[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    return [w for w in workloads if "Finished" not in _conditions(w) and not (w.get("metadata") or {}).get(
        "deletionTimestamp")]


def _state(workload: Mapping[str, Any]) -> str:
    return "admitted" if "Admitted" in _conditions(workload) else "pending"


def _named(workloads: Sequence[Mapping[str, Any]]) -> str:
    counts = {"admitted": 0, "pending": 0}
    for workload in workloads:
        counts[_state(workload)] += 1
    names = ", ".join("%s/%s" % ((w.get("metadata") or {}).get("namespace"), (w.get("metadata") or {}).get("name"))
                      for w in workloads[:5])
    more = " and %d more" % (len(workloads) - 5) if len(workloads) > 5 else ""
    return "%d admitted and %d pending Workload(s) (%s%s)" % (counts["admitted"], counts["pending"], names, more)


def _team(obj: Mapping[str, Any]) -> Optional[str]:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(TEAM_LABEL)


def prune_plan(wanted: Sequence[Mapping[str, Any]], live: Sequence[Mapping[str, Any]], kinds: Sequence[str],
               workloads: Sequence[Mapping[str, Any]] = (), pods: Sequence[Mapping[str, Any]] = (),
               confirm: bool = False) -> Dict[str, Any]:
    """What to delete of ``kinds``, in :data:`DELETE_ORDER`, and what is refused.

    ``wanted``: every object the plan holds (the stamped plan objects and boundaries);
    ``live``: the objects read from the cluster (any kinds; those without the ownership label are
    ignored); ``workloads``: the cluster's Kueue Workloads; ``pods``: the Pods of the namespaces in
    ``namespaces`` of an earlier call. Returns ``delete`` (objects ``{api_version, kind, name,
    namespace, generation}``), ``terminating`` (already being deleted: left alone, so a second
    run changes nothing), ``namespaces`` (the Namespaces to delete, whose Pods the caller lists)
    and ``refused`` (one sentence each). With ``confirm`` nothing is refused; the
    refusals are still returned as ``confirmed`` so the run can say what it disrupts.
    """
    unknown = [kind for kind in kinds if kind not in DELETE_ORDER]
    if unknown:
        raise ValueError("kinds: %s cannot be pruned (known: %s)" % (", ".join(unknown), ", ".join(DELETE_ORDER)))
    keep = {_key(obj) for obj in wanted}
    seen: Set[Tuple[str, str, str, str]] = set()
    stale: List[Mapping[str, Any]] = []
    terminating: List[str] = []
    for obj in live:
        if not ownership.is_owned(obj) or _key(obj) in keep or _key(obj) in seen:
            continue
        seen.add(_key(obj))
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            terminating.append(_where(obj))
        else:
            stale.append(obj)
    refused = _refusals(stale, live, _unfinished(workloads), pods)
    chosen = sorted((obj for obj in stale if obj.get("kind") in kinds),
                    key=lambda obj: (DELETE_ORDER.index(str(obj["kind"])), _key(obj)))
    delete = [{"api_version": str(obj.get("apiVersion") or API_VERSIONS[str(obj["kind"])]), "kind": str(obj["kind"]),
               "name": str(obj["metadata"]["name"]), "namespace": obj["metadata"].get("namespace"),
               "generation": ((obj["metadata"].get("labels") or {}).get(ownership.GENERATION_LABEL) or ""),
               "where": _where(obj)} for obj in chosen]
    return {
        "delete": delete,
        "delete_objects": [_reference(entry) for entry in delete],
        "terminating": sorted(t for t in terminating if t.split(" ", 1)[0] in kinds),
        "namespaces": [d["name"] for d in delete if d["kind"] == "Namespace"],
        "refused": [] if confirm else refused,
        "confirmed": refused if confirm else [],
    }


def _refusals(stale: Sequence[Mapping[str, Any]], live: Sequence[Mapping[str, Any]],
              workloads: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> List[str]:
    """Deletions that would take a queue, a claim or a namespace from under running work."""
    queues = {(str((q.get("metadata") or {}).get("namespace")), str((q.get("metadata") or {}).get("name"))): q
              for q in live if q.get("kind") == "LocalQueue"}
    refused: List[str] = []
    busy_teams: Set[str] = set()
    busy_namespaces: Set[str] = set()
    for obj in stale:
        metadata = obj.get("metadata") or {}
        name, namespace = str(metadata.get("name")), str(metadata.get("namespace") or "")
        kind = obj.get("kind")
        if kind == "LocalQueue":
            held = [w for w in workloads if (w.get("metadata") or {}).get("namespace") == namespace
                    and (w.get("spec") or {}).get("queueName") == name]
        elif kind == "ClusterQueue":
            held = [w for w in workloads if ((w.get("status") or {}).get("admission") or {}).get("clusterQueue") == name
                    or (queues.get((str((w.get("metadata") or {}).get("namespace")),
                                    str((w.get("spec") or {}).get("queueName")))) or {}).get("spec", {}).get(
                                        "clusterQueue") == name]
        else:
            continue
        if held:
            refused.append("%s%s: its queue %s holds %s; deleting it would leave them without a queue"
                           % ("team %s, " % _team(obj) if _team(obj) else "", _where(obj), _where(obj), _named(held)))
            if _team(obj):
                busy_teams.add(str(_team(obj)))
            busy_namespaces.update(str((w.get("metadata") or {}).get("namespace")) for w in held)
    for obj in stale:
        metadata = obj.get("metadata") or {}
        kind, name = obj.get("kind"), str(metadata.get("name"))
        if kind in ("LocalQueue", "ClusterQueue"):
            continue
        if kind == "Namespace":
            held = [w for w in workloads if (w.get("metadata") or {}).get("namespace") == name]
            running = [p for p in pods if (p.get("metadata") or {}).get("namespace") == name
                       and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
            if held or running:
                parts = ([_named(held)] if held else []) + (
                    ["%d running Pod(s) (%s)" % (len(running), ", ".join(
                        str((p.get("metadata") or {}).get("name")) for p in running[:5]))] if running else [])
                refused.append("%s: it still holds %s; deleting the namespace deletes them"
                               % (_where(obj), " and ".join(parts)))
                continue
        if kind == "ResourceClaim" and (obj.get("status") or {}).get("reservedFor"):
            users = [str(r.get("name")) for r in obj["status"]["reservedFor"]]
            refused.append("%s: in use by %s; deleting it takes the GPU from under them" % (_where(obj), ", ".join(users)))
            continue
        # Anything else of a team whose queues are refused stays until the team is confirmed gone.
        if _team(obj) in busy_teams or (metadata.get("namespace") in busy_namespaces):
            refused.append("%s: belongs to team %s, whose queues hold workloads"
                           % (_where(obj), _team(obj) or metadata.get("namespace")))
    return refused


def prune_role(plan: Mapping[str, Any], role: str, listed: Sequence[Mapping[str, Any]],
               workloads: Sequence[Mapping[str, Any]] = (), pods: Sequence[Mapping[str, Any]] = (),
               confirm: bool = False) -> Dict[str, Any]:
    """:func:`prune_plan` for one role: ``listed`` are k8s_info results (each with
    ``resources``), ``workloads``/``pods`` k8s_info results or objects. Adds ``message``: the
    failure to print when something is refused, empty otherwise."""
    if role not in PRUNED_KINDS:
        raise ValueError("role: %r prunes nothing (known: %s)" % (role, ", ".join(sorted(PRUNED_KINDS))))
    contract.check_plan(plan, ("objects",))
    wanted = list(plan["objects"]) + (addon_files.boundary_objects(plan) if role == "tenancy" else [])
    result = prune_plan(wanted, _resources(listed), PRUNED_KINDS[role], _resources(workloads), _resources(pods),
                        bool(confirm))
    result["message"] = refusal_message(result["refused"], role) if result["refused"] else ""
    return result


def _resources(listed: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """Objects from k8s_info results (``resources`` of each; a loop's ``results``) or objects.

    A list item read from the API server need not carry its kind (core types do not), so the
    kind and apiVersion asked for (the loop ``item``) are filled in where missing."""
    found: List[Mapping[str, Any]] = []
    for entry in listed or []:
        if not isinstance(entry, Mapping):
            continue
        if "results" in entry and "kind" not in entry:
            found += _resources(entry["results"])
        elif "resources" in entry and "kind" not in entry:
            asked = entry.get("item") if isinstance(entry.get("item"), Mapping) else {}
            for obj in entry.get("resources") or []:
                if asked.get("kind") and not obj.get("kind"):
                    obj = dict(obj, kind=asked["kind"], apiVersion=asked.get("api_version"))
                found.append(obj)
        elif "kind" in entry:
            found.append(entry)
    return found


def refusal_message(refused: Sequence[str], role: str) -> str:
    """The failure the roles print when a prune is refused."""
    return ("%s: the plan no longer holds these objects, but deleting them now would disrupt running work:\n- %s\n"
            "Nothing was deleted. Let the workloads finish or move them, or run again with -e %s=true to delete "
            "them anyway (their workloads are evicted or left without a queue)."
            % (role, "\n- ".join(refused), CONFIRM_VARIABLE))
