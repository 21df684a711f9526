# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day of a rehearsal: steps, the workloads they submit, and how they are judged.

``gpushare_rehearsal_steps`` (docs/rehearsal.md) is a list of steps::

    - at: "13:00"                       # a label, shown in the report
      submit:                           # workloads created as the team's user
        - {team: training, name: fine-tune, gpus: 2}
      delete: [notebook-1]              # names submitted earlier
      expect:
        admitted: [vllm]                # running on a simulated node
        pending: [fine-tune]            # waiting (Kueue has not admitted it)
        preempted: [fine-tune]          # evicted by Kueue during this step
        denied: [sneaky]                # refused by the API server (RBAC, admission policy)
        borrowing: {training: 1}        # quota units the team uses above its nominal quota

A workload asks for exactly one of ``gpus: N`` (whole GPUs; optional ``model`` and
``memory``), ``mig: PROFILE`` or ``shared: true`` (the team's time-sliced GPU). ``priority``,
``queue`` and ``claim`` try another team's WorkloadPriorityClass, LocalQueue or shared claim.

Everything a workload uses is looked up in the plan (its LocalQueue, its
ResourceClaimTemplates or extended resources, its shared claims, its priority class), never
invented, so what the rehearsal shows is what the plan promises. ``default_steps`` derives
the worked day (docs/rehearsal.md) from a plan; ``judge`` compares what a step observed with
its expectations. Pure Python, no I/O, no Ansible import.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.render import examples as example_workloads
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils._common import quantities
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import dra_objects
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as rehearsal_world
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    GPU_PRODUCT_LABEL, PRIORITY_LABEL, QUEUE_LABEL, SHARED_SUFFIX, TEAM_LABEL)
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract

WORKLOAD_LABEL = "gpushare.io/rehearsal-workload"
# kwok's general pod-complete stage ends a Job's pod after this delay (sigs.k8s.io/kwok v0.8.0,
# kustomize/stage/pod/general/pod-complete.yaml); a day's workloads run until deleted.
KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
RUN_FOREVER = "87600h"
IMAGE = "registry.k8s.io/pause:3.10"
EXPECT_KEYS = ("admitted", "pending", "preempted", "denied")
STEP_KEYS = ("at", "submit", "delete", "expect")
WORKLOAD_KEYS = ("team", "name", "gpus", "model", "memory", "mig", "shared", "priority", "queue", "claim")
STATES = ("admitted", "pending", "denied")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class StepsError(GpushareError):
    """gpushare_rehearsal_steps is malformed, or asks for something the plan cannot express."""


# --- plan look-ups ------------------------------------------------------------------


class PlanView(contract.PlanLookups):
    """What the plan gives each team, with errors that say what is missing."""

    error = StepsError

    def team(self, name: str, where: str) -> Mapping[str, Any]:
        if name not in self.teams:
            raise StepsError("%s: team %r is not in the plan (teams: %s)" % (where, name, ", ".join(sorted(self.teams))))
        return self.teams[name]

    def namespace(self, team: str) -> str:
        return (self.team(team, "plan")["namespaces"] or [team])[0]

    def local_queue(self, team: str) -> str:
        queues = self.by_kind("LocalQueue", self.namespace(team))
        if not queues:
            raise StepsError("plan: team %s has no LocalQueue in namespace %s" % (team, self.namespace(team)))
        return queues[0]["metadata"]["name"]

    def queue_names(self) -> List[str]:
        return sorted({q["metadata"]["name"] for q in self.by_kind("LocalQueue")})

    def priority_classes(self) -> List[str]:
        return sorted(o["metadata"]["name"] for o in self.by_kind("WorkloadPriorityClass"))

    def shared_claims(self, team: str) -> List[str]:
        return [entry.split("/", 1)[1] for entry in self.teams.get(team, {}).get("shared_claims") or []]

    def claim(self, name: str) -> Optional[Mapping[str, Any]]:
        for claim in self.by_kind("ResourceClaim"):
            if claim["metadata"]["name"] == name:
                return claim
        return None

    def template_for(self, namespace: str, resource: str) -> Optional[str]:
        classes = set(self.device_classes(resource))
        for template in self.by_kind("ResourceClaimTemplate", namespace):
            requests = template["spec"]["spec"]["devices"]["requests"]
            if requests and all((r.get("exactly") or {}).get("deviceClassName") in classes for r in requests):
                return template["metadata"]["name"]
        return None

    def units(self, use: str, model: Optional[str] = None, profile: Optional[str] = None) -> List[Tuple[str, str, str]]:
        """(resource, model, profile-or-'') of every GPU unit of this kind in the plan, one per unit."""
        out = []
        for _host, gpu in self.gpus():
            if gpu.get("use") != use or (model and gpu.get("model") != model):
                continue
            for resource, count in sorted((gpu.get("resources") or {}).items()):
                if profile and not rehearsal_world.sharing.counts_profile(resource, profile):
                    continue
                gpu_profile = ""
                for instance in gpu.get("instances") or []:
                    if rehearsal_world.sharing.counts_profile(resource, instance["profile"]):
                        gpu_profile = instance["profile"]
                out.extend([(resource, gpu["model"], gpu_profile)] * int(count))
        return out


def _dns(text: str) -> str:
    clean = re.sub(r"[^a-z0-9-]+", "-", str(text).lower()).strip("-")
    return clean[:63].rstrip("-") or "x"


# --- validation ---------------------------------------------------------------------


def _names(value: Any, where: str) -> List[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StepsError("%s must be a list of workload names" % where)
    return list(value)


def _check_workload(plan: PlanView, raw: Any, where: str) -> Dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise StepsError("%s must be a mapping with team, name and one of gpus, mig, shared" % where)
    unknown = sorted(set(raw) - set(WORKLOAD_KEYS))
    if unknown:
        raise StepsError("%s: unknown field(s) %s (allowed: %s)" % (where, ", ".join(unknown), ", ".join(WORKLOAD_KEYS)))
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise StepsError("%s: field 'name' must be a DNS-1123 label (lower case, digits, '-'), got %r" % (where, name))
    where = "%s (%s)" % (where, name)
    team = raw.get("team")
    if not isinstance(team, str):
        raise StepsError("%s: field 'team' is required" % where)
    plan.team(team, where)
    kinds = [k for k in ("gpus", "mig", "shared") if raw.get(k) is not None and raw.get(k) is not False]
    if len(kinds) != 1:
        raise StepsError("%s: exactly one of 'gpus', 'mig', 'shared' must be set, got %s" % (where, kinds or "none"))
    workload = dict(raw)
    if "gpus" in kinds:
        gpus = raw["gpus"]
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise StepsError("%s: field 'gpus' must be a positive integer, got %r" % (where, gpus))
        if raw.get("model") is not None:
            try:
                workload["model"] = gpu_catalog.lookup(str(raw["model"])).key
            except ValueError as exc:
                raise StepsError("%s: field 'model': %s" % (where, exc)) from exc
        if raw.get("memory") is not None:
            try:
                workload["memory_mib"] = quantities.parse_memory_mib(raw["memory"])
            except ValueError as exc:
                raise StepsError("%s: field 'memory': %s" % (where, exc)) from exc
    else:
        for field in ("model", "memory"):
            if raw.get(field) is not None:
                raise StepsError("%s: field '%s' only goes with 'gpus'" % (where, field))
    if "mig" in kinds and not isinstance(raw["mig"], str):
        raise StepsError("%s: field 'mig' must be a MIG profile name such as 1g.24gb, got %r" % (where, raw["mig"]))
    if "shared" in kinds and raw["shared"] is not True:
        raise StepsError("%s: field 'shared' must be true" % where)
    if raw.get("queue") is not None and raw["queue"] not in plan.queue_names():
        raise StepsError("%s: field 'queue': %r is not a LocalQueue of the plan (%s)"
                         % (where, raw["queue"], ", ".join(plan.queue_names())))
    if raw.get("priority") is not None and raw["priority"] not in plan.priority_classes():
        raise StepsError("%s: field 'priority': %r is not a WorkloadPriorityClass of the plan (%s)"
                         % (where, raw["priority"], ", ".join(plan.priority_classes())))
    if raw.get("claim") is not None:
        if plan.backend != "dra":
            raise StepsError("%s: field 'claim' needs the dra backend (the plan uses %s)" % (where, plan.backend))
        if plan.claim(str(raw["claim"])) is None:
            raise StepsError("%s: field 'claim': %r is not a ResourceClaim of the plan" % (where, raw["claim"]))
    return workload


def validate_steps(plan_dict: Mapping[str, Any], steps: Any) -> List[Dict[str, Any]]:
    """Checked, normalised steps; StepsError names the step, the workload and the field."""
    plan = PlanView(plan_dict)
    if not isinstance(steps, list) or not steps:
        raise StepsError("gpushare_rehearsal_steps must be a non-empty list of steps")
    live: Dict[str, str] = {}   # name -> team, submitted and not deleted
    known: Dict[str, str] = {}  # every name ever submitted
    out = []
    for number, raw in enumerate(steps):
        where = "gpushare_rehearsal_steps[%d]" % number
        if not isinstance(raw, Mapping):
            raise StepsError("%s must be a mapping with at, submit, delete, expect" % where)
        unknown = sorted(set(raw) - set(STEP_KEYS))
        if unknown:
            raise StepsError("%s: unknown field(s) %s (allowed: %s)" % (where, ", ".join(unknown), ", ".join(STEP_KEYS)))
        if not isinstance(raw.get("at"), str) or not raw["at"].strip():
            raise StepsError("%s: field 'at' must be a label such as \"13:00\"" % where)
        where = "%s (at %s)" % (where, raw["at"])
        deletes = _names(raw.get("delete"), where + ": field 'delete'")
        for name in deletes:
            if name not in live:
                raise StepsError("%s: field 'delete': %r is not running at this point (submitted earlier and not yet deleted)"
                                 % (where, name))
            del live[name]
        submits = raw.get("submit") or []
        if not isinstance(submits, list):
            raise StepsError("%s: field 'submit' must be a list of workloads" % where)
        workloads = []
        for index, item in enumerate(submits):
            workload = _check_workload(plan, item, "%s: submit[%d]" % (where, index))
            if workload["name"] in live:
                raise StepsError("%s: submit[%d]: %r is already submitted; delete it first" % (where, index, workload["name"]))
            live[workload["name"]] = workload["team"]
            known[workload["name"]] = workload["team"]
            workloads.append(workload)
        expect = raw.get("expect") or {}
        if not isinstance(expect, Mapping):
            raise StepsError("%s: field 'expect' must be a mapping" % where)
        unknown = sorted(set(expect) - set(EXPECT_KEYS + ("borrowing",)))
        if unknown:
            raise StepsError("%s: expect: unknown field(s) %s" % (where, ", ".join(unknown)))
        checked: Dict[str, Any] = {}
        for key in EXPECT_KEYS:
            names = _names(expect.get(key), "%s: expect.%s" % (where, key))
            for name in names:
                if name not in known:
                    raise StepsError("%s: expect.%s: %r is never submitted up to this step" % (where, key, name))
            checked[key] = names
        overlap = set(checked["admitted"]) & (set(checked["pending"]) | set(checked["denied"]))
        if overlap:
            raise StepsError("%s: expect: %s cannot be admitted and pending/denied at once" % (where, ", ".join(sorted(overlap))))
        borrowing = expect.get("borrowing") or {}
        if not isinstance(borrowing, Mapping):
            raise StepsError("%s: expect.borrowing must map team -> GPUs" % where)
        for team, value in borrowing.items():
            plan.team(str(team), "%s: expect.borrowing" % where)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise StepsError("%s: expect.borrowing.%s must be a non-negative integer, got %r" % (where, team, value))
        checked["borrowing"] = {str(k): int(v) for k, v in borrowing.items()}
        out.append({"at": raw["at"], "submit": workloads, "delete": deletes, "expect": checked})
    return out


# --- workload manifests ---------------------------------------------------------------


def _pick_whole(plan: PlanView, workload: Mapping[str, Any], where: str) -> Tuple[str, str]:
    """(resource, model) of the whole GPUs this workload asks for."""
    units = plan.units("whole", workload.get("model"))
    own = set(plan.teams[workload["team"]].get("capacity") or {})
    memory = workload.get("memory_mib")
    candidates = []
    for resource, model, _count in units:
        if memory and rehearsal_world.published_memory_mib(gpu_catalog.lookup(model)) < memory:
            continue
        candidates.append((resource not in own, resource, model))
    if not candidates:
        raise StepsError("%s: the plan has no whole GPU%s%s" % (
            where, " of model %s" % workload["model"] if workload.get("model") else "",
            " with at least %d MiB" % memory if memory else ""))
    _rank, resource, model = sorted(set(candidates))[0]
    return resource, model


def _pick_mig(plan: PlanView, workload: Mapping[str, Any], where: str) -> Tuple[str, str]:
    units = plan.units("mig", profile=workload["mig"])
    if not units:
        raise StepsError("%s: the plan has no MIG instance of profile %s" % (where, workload["mig"]))
    own = set(plan.teams[workload["team"]].get("capacity") or {})
    _rank, resource, model = sorted({(r not in own, r, m) for r, m, _count in units})[0]
    return resource, model


def _notebook_labels(plan: PlanView, namespace: str) -> Optional[Dict[str, str]]:
    """The labels the plan's own notebook example carries (how the plan reaches a shared GPU)."""
    for example in example_workloads.build_examples(dict(plan.plan)):
        meta = example.get("metadata") or {}
        if meta.get("namespace") == namespace and (meta.get("labels") or {}).get(example_workloads.EXAMPLE_LABEL) == "notebook":
            labels = dict(meta.get("labels") or {})
            labels.pop(example_workloads.EXAMPLE_LABEL, None)
            return labels
    return None


def workload_request(plan_dict: Mapping[str, Any], workload: Mapping[str, Any]) -> Dict[str, Any]:
    """What a workload asks for: kind, resource, model, profile, units, pods and claims per pod."""
    plan = PlanView(plan_dict)
    where = "workload %s (team %s)" % (workload["name"], workload["team"])
    if workload.get("gpus") is not None:
        resource, model = _pick_whole(plan, workload, where)
        count = int(workload["gpus"])
        per_node = max([sum(1 for h, g in plan.gpus() if h == host and g.get("use") == "whole" and g.get("model") == model)
                        for host in plan.plan["nodes"]] or [1])
        per_pod = count if count <= per_node else 1
        return {"kind": "Job", "resource": resource, "model": model, "profile": None, "units": count,
                "pods": int(math.ceil(count / float(per_pod))), "per_pod": per_pod}
    if workload.get("mig"):
        resource, model = _pick_mig(plan, workload, where)
        return {"kind": "Job", "resource": resource, "model": model,
                "profile": gpu_catalog.lookup(model).profile(workload["mig"]).name, "units": 1, "pods": 1, "per_pod": 1}
    team = workload["team"]
    shared = [(h, g) for h, g in plan.gpus() if g.get("use") == "shared" and g.get("team") == team]
    if not shared and not workload.get("claim"):
        raise StepsError("%s: the plan gives team %s no shared GPU" % (where, team))
    host, gpu = shared[0] if shared else (None, {})
    resource = None
    if plan.backend == "device_plugin":
        resource = sorted(gpu.get("resources") or {})[0] if gpu.get("resources") else None
        if resource is None:
            raise StepsError("%s: host %s GPU %s: the plan counts no resource for the shared GPU" % (where, host, gpu.get("index")))
    return {"kind": "Pod", "resource": resource, "model": gpu.get("model"), "profile": None, "units": 1, "pods": 1, "per_pod": 1}


def workload_objects(plan_dict: Mapping[str, Any], workload: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The objects a team's user creates for one workload, in order (a claim first, if any)."""
    plan = PlanView(plan_dict)
    team = workload["team"]
    where = "workload %s (team %s)" % (workload["name"], team)
    namespace = plan.namespace(team)
    request = workload_request(plan_dict, workload)
    labels = {WORKLOAD_LABEL: workload["name"]}
    objects: List[Dict[str, Any]] = []
    claims: List[Dict[str, Any]] = []
    resources: Dict[str, Any] = {}
    if request["kind"] == "Pod" and workload.get("shared"):
        plan_labels = _notebook_labels(plan, namespace)
        if plan_labels is None:
            plan_labels = {QUEUE_LABEL: plan.local_queue(team)}
            if plan.priority_class(team):
                plan_labels[PRIORITY_LABEL] = plan.priority_class(team)
        labels.update(plan_labels)
    else:
        labels[QUEUE_LABEL] = plan.local_queue(team)
        if plan.priority_class(team):
            labels[PRIORITY_LABEL] = plan.priority_class(team)
    if workload.get("queue"):
        labels[QUEUE_LABEL] = workload["queue"]
    if workload.get("priority"):
        labels[PRIORITY_LABEL] = workload["priority"]

    if workload.get("claim"):
        source = plan.claim(workload["claim"])
        claim = copy.deepcopy(dict(source))
        claim["metadata"] = {"name": workload["claim"], "namespace": namespace, "labels": {TEAM_LABEL: team, WORKLOAD_LABEL: workload["name"]}}
        objects.append(claim)
        claims = [{"name": "gpu", "resourceClaimName": workload["claim"]}]
        resources = {"claims": [{"name": "gpu"}]}
    elif plan.backend == "device_plugin":
        resources = {"limits": {request["resource"]: str(request["per_pod"])}}
    elif workload.get("shared"):
        names = plan.shared_claims(team)
        if not names:
            raise StepsError("%s: the plan gives team %s no shared claim" % (where, team))
        claims = [{"name": "gpu", "resourceClaimName": names[0]}]
        resources = {"claims": [{"name": "gpu"}]}
    else:
        template = plan.template_for(namespace, request["resource"])
        if template is None:
            raise StepsError("%s: namespace %s has no ResourceClaimTemplate counted as %s" % (where, namespace, request["resource"]))
        names = ["gpu"] if request["per_pod"] == 1 else ["gpu-%d" % n for n in range(request["per_pod"])]
        claims = [{"name": n, "resourceClaimTemplateName": template} for n in names]
        resources = {"claims": [{"name": n} for n in names]}

    # Pod Security "restricted" (the team namespaces warn at that level): nothing runs anyway.
    container = {"name": "work", "image": IMAGE, "resources": resources,
                 "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
    pod_spec: Dict[str, Any] = {"containers": [container], "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                                "securityContext": {"runAsNonRoot": True, "runAsUser": 65535,
                                                    "seccompProfile": {"type": "RuntimeDefault"}}}
    if claims:
        pod_spec["resourceClaims"] = claims
    if plan.backend == "device_plugin" and request.get("model") and workload.get("model"):
        pod_spec["nodeSelector"] = {GPU_PRODUCT_LABEL: rehearsal_world.sharing.gfd_product(request["model"])}
    annotations = {KWOK_COMPLETE_DELAY: RUN_FOREVER}
    if request["kind"] == "Pod":
        objects.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": workload["name"], "namespace": namespace, "labels": labels,
                                     "annotations": annotations},
                        "spec": pod_spec})
        return objects
    objects.append({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": workload["name"], "namespace": namespace, "labels": labels},
        # Kueue unsuspends the Job once the team's quota (and what it may borrow) fits.
        "spec": {"suspend": True, "parallelism": request["pods"], "completions": request["pods"], "backoffLimit": 0,
                 "template": {"metadata": {"labels": dict(labels), "annotations": annotations}, "spec": pod_spec}},
    })
    return objects


# --- the worked day -------------------------------------------------------------------


def _whole_by_team(plan: PlanView) -> Dict[str, Dict[str, int]]:
    out: Dict[str, Dict[str, int]] = {}
    for _host, gpu in plan.gpus():
        if gpu.get("use") == "whole" and gpu.get("team"):
            out.setdefault(gpu["team"], {})
            out[gpu["team"]][gpu["model"]] = out[gpu["team"]].get(gpu["model"], 0) + 1
    return out


def default_steps(plan_dict: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The worked day of docs/rehearsal.md, derived from what the plan promises each team.

    Morning: the top team serves on a whole GPU and on MIG slices, a team's notebooks use its
    shared GPU. 13:00: the lowest-priority team owning whole GPUs asks for every whole GPU of
    that model the cohort has; the serving team holds one, so it waits. 19:00: serving and
    notebooks stop; the fine-tune borrows the idle GPUs. 07:00: serving comes back, reclaims
    its GPU first; the fine-tune is preempted and waits again. 07:30: attempts to use another
    team's queue, priority class and shared claim are denied.
    """
    plan = PlanView(plan_dict)
    order = sorted(plan.teams, key=lambda t: (-plan.priority(t), t))
    whole = _whole_by_team(plan)
    steps: List[Dict[str, Any]] = []
    serving_team = next((t for t in order if whole.get(t)), None)
    serving_model = sorted(whole[serving_team], key=lambda m: -whole[serving_team][m])[0] if serving_team else None
    morning: List[Dict[str, Any]] = []
    if serving_team:
        morning.append({"team": serving_team, "name": "vllm", "gpus": 1, "model": serving_model})
        steps.append({"at": "08:00", "submit": morning[:], "expect": {"admitted": ["vllm"]}})
    mig = next(((h, g) for h, g in plan.gpus() if g.get("use") == "mig" and g.get("team") and g.get("instances")), None)
    mig_names: List[str] = []
    if mig:
        _host, gpu = mig
        named = [i for i in gpu["instances"] if i.get("name")] or gpu["instances"][:3]
        submit = []
        for inst in named:
            name = _dns(inst.get("name") or "model-%s-%d" % (inst["profile"], inst["start"]))
            submit.append({"team": gpu["team"], "name": name, "mig": inst["profile"]})
            mig_names.append(name)
        steps.append({"at": "09:30", "submit": submit, "expect": {"admitted": mig_names}})
    shared = next(((h, g) for h, g in plan.gpus() if g.get("use") == "shared" and g.get("team")), None)
    notebooks: List[str] = []
    if shared:
        _host, gpu = shared
        notebooks = ["notebook-%d" % n for n in range(1, int(gpu.get("replicas") or 1) + 1)]
        steps.append({"at": "10:00", "submit": [{"team": gpu["team"], "name": n, "shared": True} for n in notebooks],
                      "expect": {"admitted": notebooks}})
    trainer = next((t for t in reversed(order) if whole.get(t) and t != serving_team), None)
    if trainer and serving_team:
        model = serving_model if serving_model in whole[trainer] else sorted(whole[trainer])[0]
        cohort_total = sum(counts.get(model, 0) for counts in whole.values())
        own = whole[trainer][model]
        serving_holds = 1 if model == serving_model else 0
        asks = cohort_total
        resource = _pick_whole(plan, {"team": trainer, "model": model}, "fine-tune")[0]
        limit = (plan.teams[trainer].get("borrowing_limit") or {}).get(resource)
        if limit is not None:
            asks = min(asks, own + int(limit))
        waits = asks > cohort_total - serving_holds
        steps.append({"at": "13:00", "submit": [{"team": trainer, "name": "fine-tune", "gpus": asks, "model": model}],
                      "expect": {"pending" if waits else "admitted": ["fine-tune"]}})
        night_delete = ["vllm"] + notebooks
        steps.append({"at": "19:00", "delete": night_delete,
                      "expect": {"admitted": ["fine-tune"], "borrowing": {trainer: asks - own}}})
        steps.append({"at": "07:00", "submit": [dict(morning[0])],
                      "expect": {"admitted": ["vllm"], "preempted": ["fine-tune"], "pending": ["fine-tune"],
                                 "borrowing": {trainer: 0}}})
    attempts = _cross_team_attempts(plan, order)
    if attempts:
        steps.append({"at": "07:30", "submit": attempts, "expect": {"denied": [a["name"] for a in attempts]}})
    return steps


def _cross_team_attempts(plan: PlanView, order: Sequence[str]) -> List[Dict[str, Any]]:
    """A lower team trying the top team's queue and priority class, and another team's shared claim."""
    if len(order) < 2:
        return []
    top, low = order[0], order[-1]
    attempts = []
    base = _attempt_base(plan, low)
    if base is None:
        return []
    attempts.append(dict(base, name="%s-uses-%s-queue" % (low, top), queue=plan.local_queue(top)))
    if plan.priority_class(top):
        attempts.append(dict(base, name="%s-uses-%s-priority" % (low, top), priority=plan.priority_class(top)))
    if plan.backend == "dra":
        owner = next((t for t in order if plan.shared_claims(t) and t != low), None)
        if owner:
            attempts.append({"team": low, "name": "%s-uses-%s-claim" % (low, owner), "shared": True,
                             "claim": plan.shared_claims(owner)[0]})
    return attempts


def _attempt_base(plan: PlanView, team: str) -> Optional[Dict[str, Any]]:
    if plan.units("whole"):
        return {"team": team, "gpus": 1}
    mig = plan.units("mig")
    if mig:
        return {"team": team, "mig": mig[0][2]}
    return None


def worked_day_story(plan_dict: Mapping[str, Any]) -> List[str]:
    """Where a backend cannot do what the story says, in words for the report (docs/backends.md)."""
    plan = PlanView(plan_dict)
    notes = []
    for _host, gpu in plan.gpus():
        if gpu.get("use") != "shared":
            continue
        owned = set((plan.teams.get(gpu.get("team")) or {}).get("capacity") or {})
        resources = sorted(gpu.get("resources") or {})
        lendable = [r for r in resources if r in owned and not r.endswith(SHARED_SUFFIX)]
        if lendable:
            notes.append("The notebooks' GPU is quota of team %s that Kueue counts whole (%s): another team may borrow it "
                         "once no notebook holds it, but closing notebooks is up to people (they are outside Kueue), and "
                         "this day's fine-tune borrows the serving team's idle GPU instead." % (gpu["team"], ", ".join(lendable)))
        elif plan.backend == "dra":
            notes.append("The fine-tune borrows the serving team's idle whole GPU at night, not the notebooks' GPU: "
                         "the notebooks reach their GPU through a standalone ResourceClaim that Kueue does not count, "
                         "so that GPU is not lendable quota.")
        else:
            notes.append("The fine-tune borrows the serving team's idle whole GPU at night, not the notebooks' GPU: "
                         "with the device plugin the shared GPU is advertised as time-sliced units (%s), "
                         "not as a whole GPU a fine-tune could use." % ", ".join(resources))
        break
    return notes


def claims_that_can_cross(plan_dict: Mapping[str, Any]) -> List[str]:
    """Where the plan pins no uuid, which claims can be allocated a card of the other use (dra only).

    rehearse.yml plans with the UUIDs its simulated GPUs publish, so its own plan pins them; a
    plan made without them (hosts not reachable, rehearsal_day given another plan) rehearses
    claims that can cross between whole and time-shared cards, and the document says which.
    """
    plan = PlanView(plan_dict)
    if plan.backend != "dra":
        return []
    return ["Not pinned by uuid: %s." % line for line in dra_objects.claims_that_can_cross(plan.gpus())]


def nobody_can_act_as(plan_dict: Mapping[str, Any], given: Sequence[str] = ()) -> List[str]:
    """One sentence per team without a ``group`` (and no kubeconfig ``given`` for it): nobody can act as it.

    Its Role is bound to nobody (isolation.rbac), and both ways a person gets into a team (an
    identity provider's groups claim, a team_access.yml certificate whose O is the group) need
    the group, so in the rehearsal every workload of that team is refused by RBAC.
    """
    out = []
    for team, info in sorted((plan_dict.get("teams") or {}).items()):
        if info.get("group") or team in given:
            continue
        out.append("team %s has no group: its Role in %s is bound to nobody, so nobody but a cluster admin can act "
                   "as it and the API server refuses every workload of the team today (RBAC). Fix the inventory: "
                   "set group: for team %s in gpushare_teams to the group its members log in with (the identity "
                   "provider's group, or the O of a team_access.yml certificate); docs/inventory.md."
                   % (team, ", ".join(info.get("namespaces") or []) or "its namespaces", team))
    return out


# --- judging and results ----------------------------------------------------------------


def judge(step: Mapping[str, Any], observed: Mapping[str, Any], team_of: Mapping[str, str]) -> List[Dict[str, str]]:
    """Each expectation of a step that did not hold: {step, team, workload, what}.

    ``observed`` = {"state": {name: admitted|pending|denied}, "preempted": [names],
    "borrowing": {team: units}, "refused": {name: message}, "allocations": [...]}.
    """
    unmet = []
    state = observed.get("state") or {}
    at = step["at"]

    def miss(name: str, what: str, team: Optional[str] = None) -> None:
        unmet.append({"step": at, "team": team or team_of.get(name, ""), "workload": name, "what": what})

    for key in ("admitted", "pending", "denied"):
        for name in step["expect"].get(key) or []:
            if state.get(name) != key:
                reason = (observed.get("reasons") or {}).get(name)
                miss(name, "expected %s, was %s%s" % (key, state.get(name, "absent"), ": " + reason if reason else ""))
    preempted = set(observed.get("preempted") or [])
    for name in step["expect"].get("preempted") or []:
        if name not in preempted:
            miss(name, "expected preempted during this step, was not")
    expected_denied = set(step["expect"].get("denied") or [])
    for name, message in sorted((observed.get("refused") or {}).items()):
        if name not in expected_denied:
            miss(name, "refused by the API server: %s" % message)
    for team, units in sorted((step["expect"].get("borrowing") or {}).items()):
        seen = int((observed.get("borrowing") or {}).get(team, 0))
        if seen != units:
            miss("", "expected team %s to borrow %d, borrowed %d" % (team, units, seen), team=team)
    for alloc in observed.get("allocations") or []:
        if alloc.get("mismatch"):
            miss(alloc["workload"], alloc["mismatch"])
    return unmet


def team_summary(plan_dict: Mapping[str, Any], state: Mapping[str, str], preempted: Sequence[str],
                 team_of: Mapping[str, str], usage: Mapping[str, Mapping[str, int]],
                 requests: Mapping[str, int]) -> Dict[str, Dict[str, Any]]:
    """teams{name: {admitted, pending, preempted, denied, borrowing, lent, gpus_in_use, gpus_pending}} of one step.

    ``usage`` is team -> {"in_use": units, "borrowed": units} (from the ClusterQueues, plus
    shared-GPU pods that no queue counts); ``requests`` workload -> units it asks for.
    """
    plan = PlanView(plan_dict)
    order = sorted(plan.teams, key=lambda t: (-plan.priority(t), t))
    teams: Dict[str, Dict[str, Any]] = {}
    for team in order:
        names = sorted(n for n, t in team_of.items() if t == team)
        teams[team] = {
            "admitted": [n for n in names if state.get(n) == "admitted"],
            "pending": [n for n in names if state.get(n) == "pending"],
            "preempted": [n for n in names if n in preempted],
            "denied": [n for n in names if state.get(n) == "denied"],
            "borrowing": int((usage.get(team) or {}).get("borrowed", 0)),
            "gpus_in_use": int((usage.get(team) or {}).get("in_use", 0)),
            "gpus_pending": sum(int(requests.get(n, 0)) for n in names if state.get(n) == "pending"),
            "lent": 0,
        }
    # Kueue does not say whose idle quota a borrower uses; attribute it to the teams with
    # idle nominal quota, highest priority first.
    to_attribute = sum(t["borrowing"] for t in teams.values())
    for team in order:
        nominal = sum(int(v) for v in (plan.teams[team].get("capacity") or {}).values())
        own_use = teams[team]["gpus_in_use"] - teams[team]["borrowing"]
        idle = max(0, nominal - max(0, own_use))
        lent = min(idle, to_attribute)
        teams[team]["lent"] = lent
        to_attribute -= lent
    return teams


def _minutes(label: str) -> Optional[int]:
    match = re.match(r"^([01]?[0-9]|2[0-4]):([0-5][0-9])$", label)
    return int(match.group(1)) * 60 + int(match.group(2)) if match else None


def waits(steps: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """How long each workload waited before Kueue first admitted it, from rehearsal.json's steps.

    Minutes come from the steps' ``at`` labels when every one is a clock time ("13:00"), else
    waits are counted in steps. A workload never admitted waited until it was deleted, or until
    the last step (to 24:00 on a clock); one the API server refused waited for nothing (denied).
    """
    clock = [_minutes(step["at"]) for step in steps]
    on_clock = all(value is not None for value in clock)

    def span(first: int, last: Optional[int]) -> int:
        if not on_clock:
            return (len(steps) if last is None else last) - first
        return (24 * 60 if last is None else clock[last]) - clock[first]

    workloads = []
    for first, step in enumerate(steps):
        for name in step.get("submitted") or []:
            team, state, until = None, "never admitted", None
            for number in range(first, len(steps)):
                found = [(t, info) for t, info in (steps[number].get("teams") or {}).items()
                         if name in (info.get("admitted") or []) + (info.get("pending") or []) + (info.get("denied") or [])]
                if found:
                    team, info = found[0]
                    if name in (info.get("denied") or []):
                        state, until = "denied", number
                        break
                    if name in (info.get("admitted") or []):
                        state, until = "admitted", number
                        break
                if number > first and name in (steps[number].get("deleted") or []):
                    until = number
                    break
            waited = 0 if state == "denied" else span(first, until)
            workloads.append({"workload": name, "team": team, "submitted": step["at"], "state": state,
                              "admitted": steps[until]["at"] if state == "admitted" else None, "waited": waited})
    teams: Dict[str, Dict[str, Any]] = {}
    for entry in workloads:
        if entry["team"] is None or entry["state"] == "denied":
            continue
        team = teams.setdefault(entry["team"], {"workloads": 0, "waited": 0, "never_admitted": [], "longest": 0, "total": 0})
        team["workloads"] += 1
        if entry["waited"] > 0 or entry["state"] != "admitted":
            team["waited"] += 1
        if entry["state"] != "admitted":
            team["never_admitted"].append(entry["workload"])
        team["longest"] = max(team["longest"], entry["waited"])
        team["total"] += entry["waited"]
    return {"unit": "minutes" if on_clock else "steps", "workloads": workloads, "teams": teams}


def result_document(plan_dict: Mapping[str, Any], steps: Sequence[Mapping[str, Any]],
                    recorded: Sequence[Mapping[str, Any]], extra: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """rehearsal.json: {backend, steps[], unmet[], notes[]} (docs/rehearsal.md)."""
    unmet = [u for r in recorded for u in r.get("unmet") or []]
    doc = {
        "version": 1,
        "backend": plan_dict.get("backend"),
        "steps": [{"at": r["at"], "teams": r["teams"], "allocations": r.get("allocations") or [],
                   "unmet": r.get("unmet") or [], "expect": s.get("expect") or {},
                   "submitted": [w["name"] for w in s.get("submit") or []], "deleted": list(s.get("delete") or [])}
                  for s, r in zip(steps, recorded)],
        "unmet": unmet,
        "notes": worked_day_story(plan_dict) + claims_that_can_cross(plan_dict),
        "passed": not unmet,
    }
    doc["waits"] = waits(doc["steps"])
    doc.update(extra or {})
    return doc
