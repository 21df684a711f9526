# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Talking to the rehearsal's API server: create the simulated world, run and observe a day.

This is the I/O half of the rehearsal (the pure half is rehearsal_world and rehearsal_steps).
It uses the Kubernetes Python client (``kubernetes``), the same library kubernetes.core uses.
``run_day`` submits each step's workloads as the team's own user, waits for a steady state
(bounded), records what every workload, queue and claim looks like, and judges the step.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.rest import ApiException
    HAS_KUBERNETES = True
except ImportError:  # reported by the modules
    HAS_KUBERNETES = False
    ApiException = Exception

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import steps as steps_lib
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as world_lib
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    KUEUE_GROUP, KUEUE_VERSION, NVIDIA_RESOURCE_PREFIX, RESOURCE_GROUP, RESOURCE_VERSION, TEAM_LABEL)

NON_GPU_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")


def api_client(kubeconfig: str) -> Any:
    return k8s_config.new_client_from_config(config_file=kubeconfig)


def _message(exc: Any) -> str:
    try:
        body = json.loads(exc.body)
        return "%s (%s)" % (body.get("message") or exc.reason, body.get("reason") or exc.status)
    except (TypeError, ValueError, AttributeError):
        return str(exc)


# --- the simulated world ----------------------------------------------------------------


def apply_world(api: Any, world: Mapping[str, Any]) -> List[str]:
    """Create the Nodes and ResourceSlices that are missing, fix their labels; return what changed."""
    core = k8s_client.CoreV1Api(api)
    custom = k8s_client.CustomObjectsApi(api)
    changed = []
    for node in world["nodes"]:
        name = node["metadata"]["name"]
        try:
            existing = core.read_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            core.create_node(body=node)
            changed.append("Node/%s created" % name)
            continue
        labels = existing.metadata.labels or {}
        wanted = node["metadata"]["labels"]
        capacity = {k: str(v) for k, v in (existing.status.capacity or {}).items()}
        if any(labels.get(k) != v for k, v in wanted.items()):
            core.patch_node(name, {"metadata": {"labels": wanted, "annotations": node["metadata"]["annotations"]}})
            changed.append("Node/%s labels" % name)
        if any(capacity.get(k) != v for k, v in node["status"]["capacity"].items()):
            core.patch_node_status(name, {"status": {"capacity": node["status"]["capacity"],
                                                     "allocatable": node["status"]["allocatable"]}})
            changed.append("Node/%s capacity" % name)
    for slice_object in world["resource_slices"]:
        name = slice_object["metadata"]["name"]
        try:
            existing = custom.get_cluster_custom_object(RESOURCE_GROUP, RESOURCE_VERSION, "resourceslices", name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            custom.create_cluster_custom_object(RESOURCE_GROUP, RESOURCE_VERSION, "resourceslices", slice_object)
            changed.append("ResourceSlice/%s created" % name)
            continue
        if _slice_devices(existing) != _slice_devices(slice_object):
            body = dict(slice_object)
            body["metadata"] = dict(slice_object["metadata"], resourceVersion=existing["metadata"]["resourceVersion"])
            spec = dict(slice_object["spec"])
            spec["pool"] = dict(spec["pool"], generation=int(existing["spec"]["pool"]["generation"]) + 1)
            body["spec"] = spec
            custom.replace_cluster_custom_object(RESOURCE_GROUP, RESOURCE_VERSION, "resourceslices", name, body)
            changed.append("ResourceSlice/%s devices" % name)
    return changed


def _slice_devices(obj: Mapping[str, Any]) -> List[Tuple[str, str, str]]:
    out = []
    for device in (obj.get("spec") or {}).get("devices") or []:
        attrs = device.get("attributes") or {}
        out.append((device["name"], json.dumps(attrs, sort_keys=True),
                    str(((device.get("capacity") or {}).get("memory") or {}).get("value"))))
    return sorted(out)


# --- observing ---------------------------------------------------------------------------


def _condition(obj: Mapping[str, Any], kind: str) -> Optional[Mapping[str, Any]]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    cond = _condition(obj, kind)
    return bool(cond) and cond.get("status") == "True"


def _preemptions(workload: Optional[Mapping[str, Any]]) -> int:
    """How often Kueue preempted a Workload (status.schedulingStats.evictions, else its conditions)."""
    if not workload:
        return 0
    stats = ((workload.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []
    counted = sum(int(e.get("count") or 0) for e in stats if e.get("reason") == "Preempted")
    if counted:
        return counted
    return 1 if _true(workload, "Preempted") else 0


class Observer:
    """Reads the cluster as admin and turns it into the rehearsal's terms."""

    def __init__(self, api: Any, plan: Mapping[str, Any], world: Mapping[str, Any]):
        self.core = k8s_client.CoreV1Api(api)
        self.custom = k8s_client.CustomObjectsApi(api)
        self.plan = plan
        self.world = world
        self.view = steps_lib.PlanView(plan)

    def _pods(self, namespace: str, name: str, kind: str) -> List[Any]:
        if kind == "Pod":
            try:
                return [self.core.read_namespaced_pod(name, namespace)]
            except ApiException as exc:
                if exc.status == 404:
                    return []
                raise
        return [p for p in self.core.list_namespaced_pod(namespace, label_selector="batch.kubernetes.io/job-name=%s" % name).items
                if not p.metadata.deletion_timestamp]

    def _workload(self, namespace: str, name: str, kind: str) -> Optional[Dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads")["items"]
        for item in items:
            for owner in item["metadata"].get("ownerReferences") or []:
                if owner.get("kind") == kind and owner.get("name") == name:
                    return item
        return None

    def workload(self, submitted: Mapping[str, Any]) -> Dict[str, Any]:
        """{state, reason, preemptions, pods, kueue} of one submitted (not denied) workload."""
        namespace, name, kind = submitted["namespace"], submitted["name"], submitted["kind"]
        pods = self._pods(namespace, name, kind)
        workload = self._workload(namespace, name, kind)
        running = [p for p in pods if p.status.phase == "Running" and p.spec.node_name]
        wanted = int(submitted.get("pods") or 1)
        admitted_by_kueue = workload is None or _true(workload, "Admitted")
        state = "admitted" if admitted_by_kueue and len(running) >= wanted else "pending"
        reason = ""
        if state == "pending":
            if workload is not None and not _true(workload, "QuotaReserved"):
                cond = _condition(workload, "QuotaReserved") or {}
                reason = "Kueue: %s" % (cond.get("message") or cond.get("reason") or "not admitted")
            else:
                for pod in pods:
                    for cond in pod.status.conditions or []:
                        if cond.type == "PodScheduled" and cond.status != "True" and cond.message:
                            reason = "scheduler: %s" % cond.message
                if not reason:
                    reason = "%d of %d pods running" % (len(running), wanted)
        return {"state": state, "reason": reason, "preemptions": _preemptions(workload),
                "running": running, "kueue": workload is not None}

    def queues(self) -> Dict[str, Dict[str, int]]:
        """team -> {in_use, borrowed} quota units of GPU resources, from the ClusterQueues' status."""
        out: Dict[str, Dict[str, int]] = {}
        for cq in self.custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues")["items"]:
            team = (cq["metadata"].get("labels") or {}).get(TEAM_LABEL) or cq["metadata"]["name"]
            total = borrowed = 0
            for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
                for res in flavor.get("resources") or []:
                    if res.get("name") in NON_GPU_RESOURCES:
                        continue
                    total += int(str(res.get("total") or 0))
                    borrowed += int(str(res.get("borrowed") or 0))
            out[team] = {"in_use": total, "borrowed": borrowed}
        return out

    def allocations(self, submitted: Mapping[str, Any], pods: Sequence[Any]) -> List[Dict[str, Any]]:
        """Which device each of the workload's pods got, and whether it is what the workload asked for."""
        out = []
        request = submitted["request"]
        for pod in pods:
            node = pod.spec.node_name
            if self.view.backend == "dra":
                for claim_name in self._claim_names(pod):
                    try:
                        claim = self.custom.get_namespaced_custom_object(
                            RESOURCE_GROUP, RESOURCE_VERSION, pod.metadata.namespace, "resourceclaims", claim_name)
                    except ApiException:
                        continue
                    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
                    classes = {r.get("name"): (r.get("exactly") or {}).get("deviceClassName")
                               for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []}
                    for result in results:
                        entry = world_lib.find_device(self.world, result["pool"], result["device"], pool=result["pool"]) or {}
                        alloc = self._allocation(submitted, pod, node, result["device"], claim_name, entry, request)
                        alloc["device_class"] = classes.get(result.get("request"))
                        out.append(alloc)
            else:
                for container in pod.spec.containers:
                    limits = (container.resources.limits or {}) if container.resources else {}
                    for resource in sorted(limits):
                        if not resource.startswith(NVIDIA_RESOURCE_PREFIX):
                            continue
                        entry = world_lib.find_device(self.world, node, resource) or {}
                        for _unit in range(int(str(limits[resource]))):
                            out.append(self._allocation(submitted, pod, node, resource, None, entry, request))
        return out

    @staticmethod
    def _claim_names(pod: Any) -> List[str]:
        names = [s.resource_claim_name for s in (pod.status.resource_claim_statuses or []) if s.resource_claim_name]
        for claim in pod.spec.resource_claims or []:
            if claim.resource_claim_name:
                names.append(claim.resource_claim_name)
        return sorted(set(names))

    @staticmethod
    def _allocation(submitted, pod, node, device, claim, entry, request) -> Dict[str, Any]:
        alloc = {"workload": submitted["name"], "team": submitted["team"], "pod": pod.metadata.name, "node": node,
                 "device": device, "claim": claim, "model": entry.get("model"), "profile": entry.get("profile"),
                 "gpu_index": entry.get("index"), "uuid": entry.get("uuid"), "gpu_team": entry.get("team"),
                 "gpu_use": entry.get("use")}
        problems = []
        if not entry:
            problems.append("device %s on %s is not a device of the simulated world" % (device, node))
        else:
            if request.get("model") and entry.get("model") != request["model"]:
                problems.append("asked for model %s" % request["model"])
            if request.get("profile") and entry.get("profile") != request["profile"]:
                problems.append("asked for MIG profile %s" % request["profile"])
            if not request.get("profile") and entry.get("profile") and submitted.get("kind") == "Job":
                problems.append("asked for a whole GPU")
        if problems:
            alloc["mismatch"] = "got %s (%s %s) on %s, but %s" % (
                device, entry.get("model"), entry.get("profile") or "whole", node, "; ".join(problems))
        return alloc


# --- running a day -----------------------------------------------------------------------


def _create(api: Any, obj: Mapping[str, Any]) -> None:
    kind, namespace = obj["kind"], obj["metadata"]["namespace"]
    if kind == "Pod":
        k8s_client.CoreV1Api(api).create_namespaced_pod(namespace, obj)
    elif kind == "Job":
        k8s_client.BatchV1Api(api).create_namespaced_job(namespace, obj)
    elif kind == "ResourceClaim":
        k8s_client.CustomObjectsApi(api).create_namespaced_custom_object(
            RESOURCE_GROUP, RESOURCE_VERSION, namespace, "resourceclaims", obj)
    else:
        raise ValueError("a rehearsal workload cannot be a %s" % kind)


def _delete(api: Any, submitted: Mapping[str, Any]) -> None:
    """Delete one submitted workload (its Pod or Job, then the claims it created), by name.

    An empty name would make the client's DELETE address the whole collection (every Job or Pod
    of the namespace), so it is refused here: the rehearsal must never change what it observes.
    """
    namespace, name = submitted.get("namespace"), submitted.get("name")
    if not name or not namespace:
        raise ValueError("rehearsal: refusing to delete a %s without a name and a namespace (name %r, namespace %r): "
                         "an empty name deletes every object of that kind in the namespace"
                         % (submitted.get("kind"), name, namespace))
    try:
        if submitted["kind"] == "Pod":
            k8s_client.CoreV1Api(api).delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        else:
            k8s_client.BatchV1Api(api).delete_namespaced_job(name, namespace, propagation_policy="Background",
                                                             grace_period_seconds=0)
    except ApiException as exc:
        if exc.status != 404:
            raise
    for claim in submitted.get("own_claims") or []:
        _delete_claim(api, namespace, claim)


def _delete_claim(api: Any, namespace: str, name: str) -> None:
    """Delete exactly one ResourceClaim (a claim the rehearsal itself created)."""
    if not name or not namespace:
        raise ValueError("rehearsal: refusing to delete a ResourceClaim without a name and a namespace (name %r, "
                         "namespace %r)" % (name, namespace))
    try:
        k8s_client.CustomObjectsApi(api).delete_namespaced_custom_object(
            RESOURCE_GROUP, RESOURCE_VERSION, namespace, "resourceclaims", name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _submit(api: Any, admin: Any, objects: Sequence[Mapping[str, Any]]) -> Optional[str]:
    """Create a workload's objects in order; None, or the API server's message when it refused one.

    When an object is refused after a claim of the workload was created, exactly the claims
    this call created are deleted again (as the admin: the team may not be allowed to); a claim
    that already existed (the API server answered AlreadyExists) is left alone.
    """
    created: List[Mapping[str, Any]] = []
    for obj in objects:
        try:
            _create(api, obj)
        except ApiException as exc:
            for done in created:
                if done["kind"] == "ResourceClaim":
                    _delete_claim(admin, done["metadata"]["namespace"], done["metadata"]["name"])
            return _message(exc)
        created.append(obj)
    return None


def _gone(observer: Observer, submitted: Mapping[str, Any]) -> bool:
    return not observer._pods(submitted["namespace"], submitted["name"], submitted["kind"])


class DayStopped(GpushareError):
    """The day could not go on; ``document`` is rehearsal.json of the steps that did run."""

    def __init__(self, message: str, document: Dict[str, Any]):
        super().__init__(message)
        self.document = document


def run_day(admin: Any, team_apis: Mapping[str, Any], plan: Mapping[str, Any], world: Mapping[str, Any],
            steps: Sequence[Mapping[str, Any]], timeout: float = 60.0, settle: float = 2.0,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
            before_the_day: Sequence[str] = ()) -> Dict[str, Any]:
    """Run the checked steps; return the rehearsal.json document (rehearsal_steps.result_document).

    ``before_the_day``: what the reader must know before the first step (e.g.
    ``rehearsal_steps.nobody_can_act_as``), kept in the document as it is.

    A step that cannot be carried out (the API server fails, a bug) raises ``DayStopped``
    carrying the document of the steps before it and of the step that stopped, never a bare
    exception, so the caller can still write what did run.
    """
    day = _Day(admin, team_apis, plan, world, timeout, settle, clock, sleep)
    started = clock()
    recorded: List[Dict[str, Any]] = []
    for step in steps:
        try:
            recorded.append(day.step(step))
        except Exception as exc:  # pylint: disable=broad-exception-caught  # reported with what did run
            what = "the rehearsal stopped at this step: %s: %s" % (
                type(exc).__name__, _message(exc) if isinstance(exc, ApiException) else exc)
            recorded.append({"at": step["at"], "teams": {}, "allocations": [], "reasons": {}, "not_running": {},
                             "unmet": [{"step": step["at"], "team": "", "workload": "", "what": what}],
                             "seconds": 0.0, "steady": False})
            ran = list(steps[:len(recorded)])
            raise DayStopped("step %s: %s" % (step["at"], what),
                             _document(plan, ran, recorded, round(clock() - started, 1), before_the_day)) from exc
    return _document(plan, steps, recorded, round(clock() - started, 1), before_the_day)


def _document(plan: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], recorded: Sequence[Mapping[str, Any]],
              seconds: float, before_the_day: Sequence[str]) -> Dict[str, Any]:
    doc = steps_lib.result_document(plan, steps, recorded, extra={"seconds": seconds,
                                                                  "before_the_day": list(before_the_day)})
    for entry, rec in zip(doc["steps"], recorded):
        entry["reasons"] = rec["reasons"]
        entry["seconds"] = rec["seconds"]
        entry["steady"] = rec["steady"]
        entry["not_running"] = rec["not_running"]
    return doc


class _Day:
    """What a day knows between its steps: the live workloads, the refused ones, every team."""

    def __init__(self, admin: Any, team_apis: Mapping[str, Any], plan: Mapping[str, Any], world: Mapping[str, Any],
                 timeout: float, settle: float, clock: Callable[[], float], sleep: Callable[[float], None]):
        self.admin, self.team_apis, self.plan = admin, team_apis, plan
        self.timeout, self.settle, self.clock, self.sleep = timeout, settle, clock, sleep
        self.observer = Observer(admin, plan, world)
        self.live: Dict[str, Dict[str, Any]] = {}
        self.team_of: Dict[str, str] = {}
        self.denied: Dict[str, str] = {}
        self.denied_at: Dict[str, str] = {}
        self.requests: Dict[str, int] = {}

    def _delete_step(self, step: Mapping[str, Any]) -> Dict[str, str]:
        """Delete the step's workloads; name -> why it was not running, for those that were not."""
        not_running: Dict[str, str] = {}
        for name in step["delete"]:
            submitted = self.live.pop(name, None)
            if submitted is not None:
                _delete(self.admin, submitted)
            elif name in self.denied:
                # Refused by the API server when submitted: nothing of it exists, nothing to delete.
                not_running[name] = "refused by the API server at %s, so there was nothing to delete: %s" % (
                    self.denied_at.get(name, "?"), self.denied.pop(name))
            else:
                not_running[name] = "not running (never created), so there was nothing to delete"
        return not_running

    def step(self, step: Mapping[str, Any]) -> Dict[str, Any]:
        clock, observer, live, denied = self.clock, self.observer, self.live, self.denied
        step_start = clock()
        not_running = self._delete_step(step)
        deadline = clock() + self.timeout
        # Deleted workloads' pods must be gone before the next workloads are judged.
        while any(not _gone(observer, s) for s in _deleted(step, self.team_of, self.plan)) and clock() < deadline:
            self.sleep(0.2)
        before = {name: observer.workload(s)["preemptions"] for name, s in live.items()}
        refused: Dict[str, str] = {}
        for workload in step["submit"]:
            name = workload["name"]
            self.team_of[name] = workload["team"]
            denied.pop(name, None)
            request = steps_lib.workload_request(self.plan, workload)
            self.requests[name] = int(request["units"])
            objects = steps_lib.workload_objects(self.plan, workload)
            message = _submit(self.team_apis.get(workload["team"], self.admin), self.admin, objects)
            if message is not None:
                refused[name] = denied[name] = message
                self.denied_at[name] = step["at"]
                continue
            main = objects[-1]
            live[name] = {"name": name, "team": workload["team"], "namespace": main["metadata"]["namespace"],
                          "kind": main["kind"], "pods": request["pods"], "request": request,
                          "own_claims": [o["metadata"]["name"] for o in objects if o["kind"] == "ResourceClaim"]}
        observed, now = _steady(observer, live, self.settle, deadline, clock, self.sleep)
        state = {name: o["state"] for name, o in observed.items()}
        state.update({name: "denied" for name in denied})
        reasons = {name: o["reason"] for name, o in observed.items() if o["reason"]}
        reasons.update(denied)
        preempted = sorted(n for n, o in observed.items() if o["preemptions"] > before.get(n, 0))
        allocations = []
        for name, o in sorted(observed.items()):
            allocations.extend(observer.allocations(live[name], o["running"]))
        queues = observer.queues()
        usage = _usage(self.plan, queues, allocations, live)
        result = {"state": state, "preempted": preempted, "borrowing": {t: u["borrowed"] for t, u in queues.items()},
                  "refused": refused, "allocations": allocations, "reasons": reasons}
        unmet = steps_lib.judge(step, result, self.team_of)
        teams = steps_lib.team_summary(self.plan, state, preempted,
                                       {n: t for n, t in self.team_of.items() if n in state}, usage, self.requests)
        return {"at": step["at"], "teams": teams, "allocations": allocations, "unmet": unmet,
                "reasons": reasons, "not_running": not_running, "seconds": round(clock() - step_start, 1),
                "steady": now < deadline}


def _steady(observer: Any, live: Mapping[str, Mapping[str, Any]], settle: float, deadline: float,
            clock: Callable[[], float], sleep: Callable[[float], None]) -> Tuple[Dict[str, Dict[str, Any]], float]:
    """Observe the live workloads until nothing changes for ``settle`` seconds, or until ``deadline``.

    Returns the last observation and the clock when it was taken (``now < deadline`` means steady).
    """
    last, stable_since = None, clock()
    while True:
        observed = {name: observer.workload(s) for name, s in live.items()}
        snapshot = json.dumps([{n: (o["state"], o["preemptions"], len(o["running"])) for n, o in sorted(observed.items())},
                               observer.queues()], sort_keys=True)
        now = clock()
        if snapshot != last:
            last, stable_since = snapshot, now
        elif now - stable_since >= settle:
            return observed, now
        if now >= deadline:
            return observed, now
        sleep(0.25)


def _deleted(step: Mapping[str, Any], team_of: Mapping[str, str], plan: Mapping[str, Any]) -> List[Dict[str, Any]]:
    view = steps_lib.PlanView(plan)
    out = []
    for name in step["delete"]:
        team = team_of.get(name)
        if team is None:
            continue
        for kind in ("Pod", "Job"):
            out.append({"namespace": view.namespace(team), "name": name, "kind": kind})
    return out


def _usage(plan: Mapping[str, Any], queues: Mapping[str, Mapping[str, int]], allocations: Sequence[Mapping[str, Any]],
           live: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, int]]:
    """team -> {in_use: GPUs (distinct devices its running pods hold), borrowed: quota units}."""
    held: Dict[str, set] = {}
    for number, alloc in enumerate(allocations):
        key = (alloc["node"], alloc["device"], alloc.get("claim") or alloc["pod"], number)
        if alloc.get("claim") is None and alloc.get("gpu_use") == "shared":
            key = (alloc["node"], alloc["device"])  # time-sliced units of one GPU
        elif alloc.get("claim") and not alloc["claim"].startswith(alloc["pod"]):
            key = (alloc["node"], alloc["device"])  # a shared claim: one device however many pods
        held.setdefault(alloc["team"], set()).add(key)
    out = {}
    for team in (plan.get("teams") or {}):
        out[team] = {"in_use": len(held.get(team, set())), "borrowed": int((queues.get(team) or {}).get("borrowed", 0))}
    return out
