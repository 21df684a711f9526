# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pods a team member submits in the isolation tests, built one way for both suites.

The unit tests run the admission policies' CEL on these pods (tests/unit/.../test_isolation.py);
the rehearsal sends the same pods to a real API server (tests/integration/rehearsal/
test_isolation_admission.py), so what one suite proves of a pod the other proves of the same pod.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


def pod(namespace: str, resources: Optional[Mapping[str, Any]] = None, *, name: str = "p",
        queue: Optional[str] = None, templates: Sequence[str] = (), claims: Sequence[str] = (),
        labels: Optional[Mapping[str, str]] = None, annotations: Optional[Mapping[str, str]] = None,
        env: Any = None, envFrom: Any = None, security: Any = None, volumes: Any = None,
        **spec: Any) -> Dict[str, Any]:
    """A one-container Pod; ``templates``/``claims`` become its resource claims, each used by the container.

    ``resources`` are both the container's limits and its requests; ``volumes`` are mounted at
    /host; ``spec`` holds further Pod spec fields (``ownerReferences`` goes to the metadata).
    """
    container: Dict[str, Any] = {"name": "main", "image": "registry.example/app:1"}
    if resources:
        container["resources"] = {"limits": dict(resources), "requests": dict(resources)}
    if env:
        container["env"] = env
    if envFrom:
        container["envFrom"] = envFrom
    if security:
        container["securityContext"] = security
    metadata: Dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if queue:
        metadata["labels"][QUEUE_NAME_LABEL] = queue
    if annotations:
        metadata["annotations"] = dict(annotations)
    if "ownerReferences" in spec:
        metadata["ownerReferences"] = spec.pop("ownerReferences")
    pod_spec = dict(spec, containers=[container])
    if volumes:
        pod_spec["volumes"] = volumes
        container["volumeMounts"] = [{"name": volume["name"], "mountPath": "/host"} for volume in volumes]
    refs = [{"name": "gpu%d" % i, "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    refs += [{"name": "shared%d" % i, "resourceClaimName": c} for i, c in enumerate(claims)]
    if refs:
        pod_spec["resourceClaims"] = refs
        container.setdefault("resources", {})["claims"] = [{"name": ref["name"]} for ref in refs]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
