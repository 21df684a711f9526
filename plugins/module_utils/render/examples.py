# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Example workloads that ask for exactly what a plan promises.

From a ``gpushare_plan`` (docs/plan.md) this builds the workloads of the worked day:

- a vLLM Deployment on a whole GPU of the highest-priority team that owns one;
- one Deployment per named MIG instance (the small models) on the first MIG GPU;
- as many notebook Pods as the first time-sliced GPU has replicas;
- a fine-tune Job in the lowest-priority team owning a whole GPU, asking for two GPUs when
  its queue can ever be given two (its own, then a lendable time-shared GPU of the same
  model and node under dra, then whole GPUs other teams lend), else for one.

Each goes to its team's namespace and asks for the GPU the way the plan's backend makes it
available: with ``device_plugin`` the extended resource the plan counts
(``nvidia.com/gpu``, ``nvidia.com/mig-1g.24gb`` ...), with ``dra`` the team's
ResourceClaimTemplate for the device class Kueue maps to that resource. Queue-managed
workloads carry their namespace's LocalQueue label. The notebooks of a time-sliced GPU
under ``dra`` reference the team's shared ResourceClaim and carry NO queue label: Kueue
v0.19 refuses every workload that uses a ResourceClaim directly (workload_controller.go,
"KueueDRAIntegration feature does not support use of resource claims"), so they run
outside Kueue, which the team's admission policy allows for exactly such pods.

Every queue-managed example fits its queue: for each resource, no more than the queue's
nominal quota plus what it may borrow (its borrowing limit, and what the other queues of
the cohort may lend), and no more devices than one node has. Everything is looked up in
the plan, never rebuilt, so a workload that cannot be expressed is a plan defect and
raises ``ValueError``.

Pure Python, no I/O, no Ansible import.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils._common import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract, sharing
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import APP_NAME_LABEL, DESCRIPTION_ANNOTATION, PRIORITY_LABEL, QUEUE_LABEL

_UNLIMITED = 1 << 30

EXAMPLE_LABEL = "gpushare.io/example"

VLLM_IMAGE = "vllm/vllm-openai:v0.11.0"
SERVING_IMAGE = "nvcr.io/nvidia/tritonserver:25.09-py3"
NOTEBOOK_IMAGE = "quay.io/jupyter/pytorch-notebook:cuda12-2025-09-30"
TRAINING_IMAGE = "nvcr.io/nvidia/pytorch:25.09-py3"


def _dns(text: str) -> str:
    """A DNS-1123 label made from free text (instance names, hosts)."""
    return names.dns_label(text)


class _Plan(contract.PlanLookups):
    """Look-ups into a plan dict, with errors that say what the plan lacks."""

    error = ValueError

    def namespace(self, team: str) -> str:
        namespaces = (self.teams.get(team) or {}).get("namespaces") or []
        if not namespaces:
            raise ValueError("plan: team %s: field 'namespaces' is empty" % team)
        return namespaces[0]

    def queue(self, namespace: str) -> str:
        queues = self.by_kind("LocalQueue", namespace)
        if not queues:
            raise ValueError("plan: namespace %s: no LocalQueue in 'objects'" % namespace)
        return queues[0]["metadata"]["name"]

    def claim_template(self, namespace: str, resource: str, where: str) -> str:
        """The team's ResourceClaimTemplate whose request uses a device class counted as resource."""
        classes = set(self.device_classes(resource))
        for template in self.by_kind("ResourceClaimTemplate", namespace):
            requests = (((template.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
            for request in requests:
                if (request.get("exactly") or {}).get("deviceClassName") in classes:
                    return template["metadata"]["name"]
        raise ValueError("%s: no ResourceClaimTemplate in namespace %s requests a device class counted as %s"
                         % (where, namespace, resource))

    def cluster_queue(self, namespace: str) -> Optional[Dict[str, Any]]:
        queue = self.queue(namespace)
        local = [obj for obj in self.by_kind("LocalQueue", namespace) if obj["metadata"]["name"] == queue][0]
        name = (local.get("spec") or {}).get("clusterQueue")
        queues = [obj for obj in self.objects if obj.get("kind") == "ClusterQueue"
                  and (obj.get("metadata") or {}).get("name") == name]
        return queues[0] if queues else None

    def reachable(self, namespace: str, flavor: str, resource: str) -> int:
        """Most units of (flavor, resource) the namespace's queue can ever be admitted with.

        Kueue semantics: the queue's nominal quota, plus at most its borrowing limit of what
        the other queues of its cohort may lend (their lending limit, else their nominal quota).
        """
        own = self.cluster_queue(namespace)
        if own is None:
            return 0
        nominal, borrowing, _lending = _quota(own, flavor, resource)
        cohort = (own.get("spec") or {}).get("cohortName")
        lendable = 0
        if cohort:
            for other in self.objects:
                if (other.get("kind") != "ClusterQueue" or other is own
                        or (other.get("spec") or {}).get("cohortName") != cohort):
                    continue
                other_nominal, _borrowing, other_lending = _quota(other, flavor, resource)
                lendable += other_nominal if other_lending is None else min(other_lending, other_nominal)
        return nominal + min(lendable, _UNLIMITED if borrowing is None else borrowing)

    def nominal(self, namespace: str, flavor: str, resource: str) -> int:
        own = self.cluster_queue(namespace)
        return _quota(own, flavor, resource)[0] if own is not None else 0

    def shared_claim(self, namespace: str, host: str, gpu: Dict[str, Any], where: str) -> str:
        """The standalone ResourceClaim of a time-sliced GPU (dra)."""
        claims = self.by_kind("ResourceClaim", namespace)
        if not claims:
            raise ValueError("%s: no shared ResourceClaim in namespace %s" % (where, namespace))
        named = [c for c in claims if c["metadata"]["name"] == sharing.shared_claim_name(host, gpu["index"])]
        return (named or claims)[0]["metadata"]["name"]


def _quota(cluster_queue: Dict[str, Any], flavor: str, resource: str) -> Tuple[int, Optional[int], Optional[int]]:
    """(nominalQuota, borrowingLimit, lendingLimit) of a ClusterQueue for (flavor, resource)."""
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for item in group.get("flavors") or []:
            if item.get("name") != flavor:
                continue
            for quota in item.get("resources") or []:
                if quota.get("name") == resource:
                    # Quantities are strings in the ClusterQueue (quotas._quantity); GPU units are whole.
                    borrowing, lending = quota.get("borrowingLimit"), quota.get("lendingLimit")
                    return (int(quota.get("nominalQuota") or 0), None if borrowing is None else int(borrowing),
                            None if lending is None else int(lending))
    return 0, 0, None


def _gpu_resource(plan: _Plan, host: str, gpu: Dict[str, Any], profile: Optional[str] = None) -> str:
    """The quota resource one unit of this GPU (or MIG profile) is counted in."""
    where = "host %s GPU %s" % (host, gpu.get("index"))
    resources = gpu.get("resources") or {}
    if profile is not None:
        matches = [name for name in resources if sharing.counts_profile(name, profile)]
    else:
        matches = list(resources)
    if len(matches) != 1:
        raise ValueError("%s: field 'resources' should name one resource%s, got %s"
                         % (where, " for MIG profile %s" % profile if profile else "", sorted(resources)))
    return matches[0]


def _labels(plan: _Plan, team: str, namespace: str, example: str, queued: bool = True) -> Dict[str, str]:
    if not queued:
        return {EXAMPLE_LABEL: example}
    labels = {QUEUE_LABEL: plan.queue(namespace), EXAMPLE_LABEL: example}
    priority_class = plan.priority_class(team)
    if priority_class:
        labels[PRIORITY_LABEL] = priority_class
    return labels


def _gpu_request(plan: _Plan, host: str, gpu: Dict[str, Any], namespace: str, count: int,
                 profile: Optional[str] = None, shared: bool = False) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(container resources, pod resourceClaims) asking for count units of this GPU."""
    where = "host %s GPU %s" % (host, gpu.get("index"))
    if plan.backend == "device_plugin":
        resource = _gpu_resource(plan, host, gpu, profile)
        return {"limits": {resource: count}}, []
    if shared:
        claim = plan.shared_claim(namespace, host, gpu, where)
        return ({"claims": [{"name": "gpu"}]}, [{"name": "gpu", "resourceClaimName": claim}])
    template = plan.claim_template(namespace, _gpu_resource(plan, host, gpu, profile), where)
    names = ["gpu"] if count == 1 else ["gpu-%d" % n for n in range(count)]
    return ({"claims": [{"name": name} for name in names]},
            [{"name": name, "resourceClaimTemplateName": template} for name in names])


def _fine_tune_request(plan: _Plan, host: str, gpu: Dict[str, Any], namespace: str,
                       wanted: int = 2) -> Tuple[Dict[str, Any], List[Dict[str, Any]], str]:
    """(container resources, pod claims, what it asks for) of a fine-tune its queue can be admitted with.

    Units in this order, each bounded by what the queue can ever get and by the devices of
    ``host`` (one pod, one node): the team's own whole GPUs of the model; under dra, the
    time-shared GPUs of that model on the node, which Kueue counts as whole devices and the
    scheduler hands out only while no pod holds their shared claim; then whole GPUs other
    teams lend.
    """
    model = gpu["model"]
    node_gpus = plan.plan["nodes"][host].get("gpus") or []
    whole = [g for g in node_gpus if g.get("use") == "whole" and g.get("model") == model]
    lendable = [g for g in node_gpus if g.get("use") == "shared" and g.get("model") == model
                and plan.backend == "dra" and g.get("flavor") and g.get("resources")]
    whole_resource = _gpu_resource(plan, host, gpu)
    whole_reach = plan.reachable(namespace, gpu["flavor"], whole_resource)
    whole_count = min(wanted, plan.nominal(namespace, gpu["flavor"], whole_resource), len(whole))
    shared_count = 0
    shared_gpu = lendable[0] if lendable else None
    if shared_gpu is not None:
        shared_resource = _gpu_resource(plan, host, shared_gpu)
        shared_count = min(wanted - whole_count, plan.reachable(namespace, shared_gpu["flavor"], shared_resource),
                           len(lendable))
    whole_count += max(0, min(wanted - whole_count - shared_count, whole_reach - whole_count, len(whole) - whole_count))
    if whole_count + shared_count < 1:
        raise ValueError("host %s GPU %s: the queue of namespace %s can never be admitted with one %s GPU"
                         % (host, gpu.get("index"), namespace, model))
    asks = "%d whole %s GPU%s" % (whole_count, model, "" if whole_count == 1 else "s")
    if plan.backend == "device_plugin":
        return {"limits": {whole_resource: whole_count}}, [], asks
    where = "host %s GPU %s" % (host, gpu.get("index"))
    claims: List[Dict[str, Any]] = []
    templates = [plan.claim_template(namespace, whole_resource, where)] * whole_count
    if shared_count:
        shared_where = "host %s GPU %s" % (host, shared_gpu.get("index"))
        templates += [plan.claim_template(namespace, _gpu_resource(plan, host, shared_gpu), shared_where)] * shared_count
        asks += (" and %d time-shared %s GPU%s of team %s, taken whole once no notebook holds it"
                 % (shared_count, model, "" if shared_count == 1 else "s", shared_gpu.get("team")))
    names = ["gpu"] if len(templates) == 1 else ["gpu-%d" % n for n in range(len(templates))]
    for name, template in zip(names, templates):
        claims.append({"name": name, "resourceClaimTemplateName": template})
    return {"claims": [{"name": name} for name in names]}, claims, asks


def _pod_spec(container: Dict[str, Any], claims: List[Dict[str, Any]], restart: Optional[str] = None) -> Dict[str, Any]:
    spec: Dict[str, Any] = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = claims
    if restart:
        spec["restartPolicy"] = restart
    return spec


def _deployment(name: str, namespace: str, labels: Dict[str, str], pod_spec: Dict[str, Any]) -> Dict[str, Any]:
    selector = {APP_NAME_LABEL: name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": dict(selector, **labels)}, "spec": pod_spec}},
    }


def _first(gpus: List[Tuple[str, Dict[str, Any]]], use: str, key=None) -> Optional[Tuple[str, Dict[str, Any]]]:
    candidates = [(host, gpu) for host, gpu in gpus if gpu.get("use") == use and gpu.get("team")]
    if key is not None:
        candidates.sort(key=key)
    return candidates[0] if candidates else None


def build_examples(plan_dict: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The worked day's workloads as Kubernetes objects, for whatever parts the plan has."""
    plan = _Plan(plan_dict)
    gpus = plan.gpus()
    objects: List[Dict[str, Any]] = []

    serving = _first(gpus, "whole", key=lambda item: -plan.priority(item[1]["team"]))
    if serving:
        host, gpu = serving
        namespace = plan.namespace(gpu["team"])
        resources, claims = _gpu_request(plan, host, gpu, namespace, 1)
        container = {"name": "vllm", "image": VLLM_IMAGE,
                     "args": ["--model", "Qwen/Qwen3-8B", "--port", "8000"],
                     "ports": [{"containerPort": 8000, "name": "http"}], "resources": resources}
        objects.append(_deployment("vllm", namespace, _labels(plan, gpu["team"], namespace, "serving"),
                                   _pod_spec(container, claims)))

    mig = _first(gpus, "mig")
    if mig:
        host, gpu = mig
        namespace = plan.namespace(gpu["team"])
        named = [inst for inst in gpu.get("instances") or [] if inst.get("name")]
        for inst in named or (gpu.get("instances") or [])[:3]:
            name = _dns(inst.get("name") or "model-%s-%d" % (inst["profile"], inst["start"]))
            resources, claims = _gpu_request(plan, host, gpu, namespace, 1, profile=inst["profile"])
            container = {"name": "model", "image": SERVING_IMAGE,
                         "args": ["tritonserver", "--model-repository=/models"], "resources": resources}
            objects.append(_deployment(name, namespace, _labels(plan, gpu["team"], namespace, "mig-model"),
                                       _pod_spec(container, claims)))

    shared = _first(gpus, "shared")
    if shared:
        host, gpu = shared
        namespace = plan.namespace(gpu["team"])
        # Under dra the notebooks share a standalone claim, which Kueue never admits: they are
        # not queue-managed. Under device_plugin each takes one counted slot through the queue.
        queued = plan.backend != "dra"
        for number in range(1, int(gpu.get("replicas") or 1) + 1):
            resources, claims = _gpu_request(plan, host, gpu, namespace, 1, shared=True)
            container = {"name": "notebook", "image": NOTEBOOK_IMAGE,
                         "ports": [{"containerPort": 8888, "name": "jupyter"}], "resources": resources}
            objects.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "notebook-%d" % number, "namespace": namespace,
                             "labels": _labels(plan, gpu["team"], namespace, "notebook", queued=queued)},
                "spec": _pod_spec(container, claims, restart="Never"),
            })

    training = _first(gpus, "whole", key=lambda item: plan.priority(item[1]["team"]))
    if training:
        host, gpu = training
        namespace = plan.namespace(gpu["team"])
        resources, claims, asks = _fine_tune_request(plan, host, gpu, namespace)
        count = len(claims) if claims else sum(resources["limits"].values())
        container = {"name": "trainer", "image": TRAINING_IMAGE,
                     "command": ["torchrun", "--nproc-per-node=%d" % count, "/workspace/finetune.py"],
                     "resources": resources}
        labels = _labels(plan, gpu["team"], namespace, "fine-tune")
        objects.append({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "fine-tune", "namespace": namespace, "labels": labels,
                         "annotations": {DESCRIPTION_ANNOTATION: "Asks for %s." % asks}},
            # Kueue unsuspends the Job when the team's quota (plus what it may borrow) fits.
            "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
                     "template": {"metadata": {"labels": dict(labels)},
                                  "spec": _pod_spec(container, claims, restart="Never")}},
        })
    return objects


def example_file_names(objects: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """Group the examples into files by what they show: serving, mig-models, notebooks, fine-tune."""
    files: Dict[str, List[Dict[str, Any]]] = {}
    order = {"serving": "10-serving.yaml", "mig-model": "20-mig-models.yaml",
             "notebook": "30-notebooks.yaml", "fine-tune": "40-fine-tune.yaml"}
    for obj in objects:
        files.setdefault(order[obj["metadata"]["labels"][EXAMPLE_LABEL]], []).append(obj)
    return files
