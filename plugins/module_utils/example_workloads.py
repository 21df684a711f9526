# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Example workloads that ask for exactly what a plan promises.

From a ``gpushare_plan`` (docs/plan.md) this builds the workloads of the worked day:

- a vLLM Deployment on a whole GPU of the highest-priority team that owns one;
- one Deployment per named MIG instance (the small models) on the first MIG GPU;
- as many notebook Pods as the first time-sliced GPU has replicas;
- a fine-tune Job that needs two whole GPUs, in the lowest-priority team owning one.

Each goes to its team's namespace with that namespace's Kueue LocalQueue label, and asks
for the GPU the way the plan's backend makes it available: with ``device_plugin`` the
extended resource the plan counts (``nvidia.com/gpu``, ``nvidia.com/mig-1g.24gb`` ...),
with ``dra`` the team's ResourceClaimTemplate for the device class Kueue maps to that
resource, or, for a time-sliced GPU, the shared ResourceClaim. Everything is looked up in
the plan, never rebuilt, so a workload that cannot be expressed is a plan defect and
raises ``ValueError``.

Pure Python, no I/O, no Ansible import.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils import names, sharing

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
EXAMPLE_LABEL = "gpushare.io/example"

VLLM_IMAGE = "vllm/vllm-openai:v0.11.0"
SERVING_IMAGE = "nvcr.io/nvidia/tritonserver:25.09-py3"
NOTEBOOK_IMAGE = "quay.io/jupyter/pytorch-notebook:cuda12-2025-09-30"
TRAINING_IMAGE = "nvcr.io/nvidia/pytorch:25.09-py3"


def _dns(text: str) -> str:
    """A DNS-1123 label made from free text (instance names, hosts)."""
    return names.dns_label(text)


class _Plan:
    """Look-ups into a plan dict, with errors that say what the plan lacks."""

    def __init__(self, plan: Dict[str, Any]):
        if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), dict):
            raise ValueError("plan: field 'nodes' is missing")
        self.plan = plan
        self.backend = plan.get("backend")
        if self.backend not in ("dra", "device_plugin"):
            raise ValueError("plan: field 'backend' must be dra or device_plugin, got %r" % self.backend)
        self.teams = plan.get("teams") or {}
        self.objects = [obj for obj in plan.get("objects") or [] if isinstance(obj, dict)]

    def gpus(self) -> List[Tuple[str, Dict[str, Any]]]:
        return [(host, gpu) for host in sorted(self.plan["nodes"])
                for gpu in sorted(self.plan["nodes"][host].get("gpus") or [], key=lambda g: g.get("index", 0))]

    def priority(self, team: str) -> int:
        return int((self.teams.get(team) or {}).get("priority", 0))

    def namespace(self, team: str) -> str:
        namespaces = (self.teams.get(team) or {}).get("namespaces") or []
        if not namespaces:
            raise ValueError("plan: team %s: field 'namespaces' is empty" % team)
        return namespaces[0]

    def _in_namespace(self, kind: str, namespace: str) -> List[Dict[str, Any]]:
        return [obj for obj in self.objects
                if obj.get("kind") == kind and (obj.get("metadata") or {}).get("namespace") == namespace]

    def queue(self, namespace: str) -> str:
        queues = self._in_namespace("LocalQueue", namespace)
        if not queues:
            raise ValueError("plan: namespace %s: no LocalQueue in 'objects'" % namespace)
        return queues[0]["metadata"]["name"]

    def priority_class(self, team: str) -> Optional[str]:
        """The WorkloadPriorityClass carrying the team's priority, when the plan has exactly one."""
        matches = [obj["metadata"]["name"] for obj in self.objects
                   if obj.get("kind") == "WorkloadPriorityClass" and obj.get("value") == self.priority(team)]
        return matches[0] if len(matches) == 1 else None

    def device_classes(self, resource: str) -> List[str]:
        mappings = ((self.plan.get("kueue_configuration") or {}).get("resources") or {}).get("deviceClassMappings") or []
        for mapping in mappings:
            if mapping.get("name") == resource:
                return list(mapping.get("deviceClassNames") or [])
        return []

    def claim_template(self, namespace: str, resource: str, where: str) -> str:
        """The team's ResourceClaimTemplate whose request uses a device class counted as resource."""
        classes = set(self.device_classes(resource))
        for template in self._in_namespace("ResourceClaimTemplate", namespace):
            requests = (((template.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
            for request in requests:
                if (request.get("exactly") or {}).get("deviceClassName") in classes:
                    return template["metadata"]["name"]
        raise ValueError("%s: no ResourceClaimTemplate in namespace %s requests a device class counted as %s"
                         % (where, namespace, resource))

    def shared_claim(self, namespace: str, host: str, gpu: Dict[str, Any], where: str) -> str:
        """The standalone ResourceClaim of a time-sliced GPU (dra)."""
        claims = self._in_namespace("ResourceClaim", namespace)
        if not claims:
            raise ValueError("%s: no shared ResourceClaim in namespace %s" % (where, namespace))
        named = [c for c in claims if c["metadata"]["name"] == sharing.shared_claim_name(host, gpu["index"])]
        return (named or claims)[0]["metadata"]["name"]


def _gpu_resource(plan: _Plan, host: str, gpu: Dict[str, Any], profile: Optional[str] = None) -> str:
    """The quota resource one unit of this GPU (or MIG profile) is counted in."""
    where = "host %s GPU %s" % (host, gpu.get("index"))
    resources = gpu.get("resources") or {}
    if profile is not None:
        matches = [name for name in resources if name.endswith("mig-" + profile.replace("+", ".").lower())
                   or name.endswith("mig-" + profile.replace("+", ".").lower() + ".shared")]
    else:
        matches = list(resources)
    if len(matches) != 1:
        raise ValueError("%s: field 'resources' should name one resource%s, got %s"
                         % (where, " for MIG profile %s" % profile if profile else "", sorted(resources)))
    return matches[0]


def _labels(plan: _Plan, team: str, namespace: str, example: str) -> Dict[str, str]:
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


def _pod_spec(container: Dict[str, Any], claims: List[Dict[str, Any]], restart: Optional[str] = None) -> Dict[str, Any]:
    spec: Dict[str, Any] = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = claims
    if restart:
        spec["restartPolicy"] = restart
    return spec


def _deployment(name: str, namespace: str, labels: Dict[str, str], pod_spec: Dict[str, Any]) -> Dict[str, Any]:
    selector = {"app.kubernetes.io/name": name}
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
        for number in range(1, int(gpu.get("replicas") or 1) + 1):
            resources, claims = _gpu_request(plan, host, gpu, namespace, 1, shared=True)
            container = {"name": "notebook", "image": NOTEBOOK_IMAGE,
                         "ports": [{"containerPort": 8888, "name": "jupyter"}], "resources": resources}
            objects.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "notebook-%d" % number, "namespace": namespace,
                             "labels": _labels(plan, gpu["team"], namespace, "notebook")},
                "spec": _pod_spec(container, claims, restart="Never"),
            })

    training = _first(gpus, "whole", key=lambda item: plan.priority(item[1]["team"]))
    if training:
        host, gpu = training
        namespace = plan.namespace(gpu["team"])
        resources, claims = _gpu_request(plan, host, gpu, namespace, 2)
        container = {"name": "trainer", "image": TRAINING_IMAGE,
                     "command": ["torchrun", "--nproc-per-node=2", "/workspace/finetune.py"],
                     "resources": resources}
        labels = _labels(plan, gpu["team"], namespace, "fine-tune")
        objects.append({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "fine-tune", "namespace": namespace, "labels": labels},
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
