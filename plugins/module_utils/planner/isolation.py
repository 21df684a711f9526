# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team isolation: labelled Namespaces, RBAC per team namespace, admission policies and the
per-namespace boundaries (NetworkPolicy, ResourceQuota, LimitRange).

Kueue counts only what passes through a team's queue, so the admission policies close the
ways around it. The threat model, and which object enforces which rule, is docs/security.md;
in short:

- Pod Security ``baseline`` (version pinned) on every team namespace: no privileged, hostPath,
  host namespaces or added capabilities, so no pod reaches the node's /dev/nvidia* directly.
- ``gpushare-workload-security``: no NVIDIA runtime class, no ``NVIDIA_*`` environment (the
  container toolkit would inject GPUs from it), no Kueue pod-group or prebuilt-workload keys
  (Kueue trusts them as given), no system-critical Kubernetes priority.
- ``gpushare-queue-required``: a GPU workload names the team's queue and only the team's
  priority classes; under dra GPUs come only from the plan's templates and shared claims.
  Pods that the Job, ReplicaSet and StatefulSet controllers create are checked through the
  workload they come from, recognised by the creating identity (never by ownerReferences,
  which a user writes).
- ``gpushare-nvidia-keys``: ConfigMaps and Secrets hold no ``NVIDIA_*`` key (envFrom).
- ``gpushare-claims-<team>`` (dra): claims and templates are guarded on CREATE only; their
  spec is immutable, so updates (scheduler finalizer, claim controller, kubelet plugin) pass.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import Team
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import (
    KUEUE_GROUP, NVIDIA_RESOURCE_PREFIX, POD_SECURITY_ENFORCE_LABEL, POD_SECURITY_LABEL_PREFIX, PRIORITY_LABEL,
    QUEUE_LABEL, RESOURCE_GROUP, TEAM_LABEL)

RBAC_API = "rbac.authorization.k8s.io/v1"
ADMISSION_API = "admissionregistration.k8s.io/v1"
QUEUE_POLICY = "gpushare-queue-required"
SECURITY_POLICY = "gpushare-workload-security"
KEYS_POLICY = "gpushare-nvidia-keys"
TEAM_ROLE = "gpushare-team"
NETWORK_POLICY = "gpushare-team-ingress"
RESOURCE_QUOTA = "gpushare-team"
LIMIT_RANGE = "gpushare-team-defaults"

# Pod Security Admission on team namespaces. baseline is what the GPU boundary needs (no
# privileged, hostPath, host namespaces, added capabilities); restricted is warned about and
# audited. The version is pinned to the oldest supported minor, so an upgrade within
# 1.34-1.36 never changes what is admitted (pod-security-admission v0.35.4 only relaxes
# procMount and runAsNonRoot checks for user-namespaced pods in 1.35).
POD_SECURITY_ENFORCE = "baseline"
POD_SECURITY_WARN = "restricted"
POD_SECURITY_VERSION = "v1.34"
POD_SECURITY_LABELS = {
    POD_SECURITY_ENFORCE_LABEL: POD_SECURITY_ENFORCE,
    POD_SECURITY_ENFORCE_LABEL + "-version": POD_SECURITY_VERSION,
    POD_SECURITY_LABEL_PREFIX + "warn": POD_SECURITY_WARN,
    POD_SECURITY_LABEL_PREFIX + "warn-version": POD_SECURITY_VERSION,
    POD_SECURITY_LABEL_PREFIX + "audit": POD_SECURITY_WARN,
    POD_SECURITY_LABEL_PREFIX + "audit-version": POD_SECURITY_VERSION,
}

# ResourceQuota of every team namespace where the inventory's namespace_quota leaves a key
# out: it bounds CPU-only pods (outside Kueue) so they cannot fill the GPU nodes.
NAMESPACE_QUOTA_DEFAULTS = {"pods": 100, "cpu": "32", "memory": "128Gi"}
# Requests given to containers that set none, so every pod counts against the quota.
CONTAINER_DEFAULT_REQUEST = {"cpu": "100m", "memory": "128Mi"}

# Who creates the ResourceClaims of ResourceClaimTemplates: kube-controller-manager's
# resource-claim-controller, with per-controller service accounts
# (--use-service-account-credentials, as kubeadm and MicroK8s run it; kubernetes v1.35.4
# cmd/kube-controller-manager/app/core.go NewClient("resource-claim-controller"); MicroK8s
# default-args/kube-controller-manager) or as the controller manager itself without them.
CLAIM_CONTROLLER_USERS = (
    "system:serviceaccount:kube-system:resource-claim-controller",
    "system:kube-controller-manager",
)
# Who creates the pods of the workloads a team may create (Job, Deployment through its
# ReplicaSet, StatefulSet): kubernetes v1.35.4 cmd/kube-controller-manager/app/batch.go and
# apps.go NewClient("job-controller" / "replicaset-controller" / "statefulset-controller").
# Their pods are checked through the workload, which the policies see on CREATE and UPDATE.
POD_CREATING_CONTROLLERS = (
    "system:serviceaccount:kube-system:job-controller",
    "system:serviceaccount:kube-system:replicaset-controller",
    "system:serviceaccount:kube-system:statefulset-controller",
    "system:kube-controller-manager",
)
# Kueue's pod-group and prebuilt-workload keys (sigs.k8s.io/kueue v0.19.2
# pkg/controller/jobs/pod/constants/constants.go, pkg/controller/constants). Kueue takes a
# group's kueue.x-k8s.io/role-hash as written (pod_controller.go getRoleHash), so a user-made
# group of one small and N-1 large pods is admitted as N small ones; a prebuilt-workload name
# attaches an object to an existing Workload. Only Kueue sets them (on pods it updates).
# role-hash itself is written by Kueue's pod webhook on every queued pod and only matters
# inside a group, so it is denied in workload templates but not on pods.
POD_GROUP_KEYS = (
    "kueue.x-k8s.io/pod-group-name",
    "kueue.x-k8s.io/pod-group-total-count",
    "kueue.x-k8s.io/pod-group-fast-admission",
    "kueue.x-k8s.io/pod-group-serving",
    "kueue.x-k8s.io/retriable-in-group",
    "kueue.x-k8s.io/prebuilt-workload-name",
)
ROLE_HASH_KEY = "kueue.x-k8s.io/role-hash"
# The container toolkit's runtimes (nvidia, nvidia-cdi, nvidia-legacy) and every name the
# operator may give them; with them a container's NVIDIA_VISIBLE_DEVICES selects GPUs.
NVIDIA_RUNTIME_PREFIX = "nvidia"
NVIDIA_ENV_PREFIX = "NVIDIA_"
# Kubernetes priorities that preempt any pod on a node (built into every cluster; the
# Priority admission plugin of kubernetes v1.35.4 does not restrict them to kube-system).
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
# Extended resources that stand for GPUs under dra without a claim: the device plugin's
# names and DRA extended resources (KEP-5004: deviceclass.resource.kubernetes.io/<class>, and
# the chart's extendedResourceName nvidia.com/gpu on gpu.nvidia.com).
DRA_FORBIDDEN_RESOURCE_PREFIXES = (NVIDIA_RESOURCE_PREFIX, "deviceclass.resource.kubernetes.io/")

# Metadata of a workload and of the pod template inside it, per kind the policies cover.
_METADATA_PATHS = {
    "Pod": ("object.metadata",),
    "Job": ("object.metadata", "object.spec.template.metadata"),
    "Deployment": ("object.metadata", "object.spec.template.metadata"),
    "StatefulSet": ("object.metadata", "object.spec.template.metadata"),
    "CronJob": ("object.metadata", "object.spec.jobTemplate.metadata", "object.spec.jobTemplate.spec.template.metadata"),
}
# Where Kueue reads the queue of each kind: a CronJob's Jobs take their labels from jobTemplate.
_QUEUE_METADATA = {"CronJob": "object.spec.jobTemplate.metadata"}


def _cel_string(item: str) -> str:
    return "'%s'" % item.replace("\\", "\\\\").replace("'", "\\'")


def _cel_list(items: Sequence[str]) -> str:
    return "[%s]" % ", ".join(_cel_string(item) for item in items)


def _cel_map_of_lists(mapping: Mapping[str, Sequence[str]]) -> str:
    return "{%s}" % ", ".join("%s: %s" % (_cel_string(key), _cel_list(sorted(values)))
                              for key, values in sorted(mapping.items()))


def _each_metadata(check: str, paths: Optional[Mapping[str, Tuple[str, ...]]] = None) -> str:
    """``check`` (a format string of ``{meta}``, a metadata path) holds on every metadata of the object."""
    parts = []
    for kind, kind_paths in (_METADATA_PATHS if paths is None else paths).items():
        checks = " && ".join("(!has(%s) || %s)" % (path, check.format(meta=path)) for path in kind_paths)
        parts.append("(object.kind != '%s' || (%s))" % (kind, checks))
    return " && ".join(parts)


def _label_absent_or(key: str, condition: str) -> str:
    return "(!has({meta}.labels) || !(%s in {meta}.labels) || %s)" % (_cel_string(key), condition)


def _keys_absent(keys: Sequence[str]) -> str:
    keys_cel = _cel_list(keys)
    return ("((!has({meta}.labels) || !{meta}.labels.exists(k, k in %s)) && "
            "(!has({meta}.annotations) || !{meta}.annotations.exists(k, k in %s)))" % (keys_cel, keys_cel))


def _any_resource(condition: str) -> str:
    """Some container requests or limits a resource whose name ``r`` meets ``condition``."""
    return ("variables.containers.exists(c, has(c.resources) && ("
            "(has(c.resources.limits) && c.resources.limits.exists(r, %s)) || "
            "(has(c.resources.requests) && c.resources.requests.exists(r, %s))))" % (condition, condition))


# The pod spec of a Pod, or of the template of a Job, Deployment, StatefulSet or CronJob.
POD_SPEC_EXPRESSION = (
    "object.kind == 'Pod' ? object.spec : "
    "(object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template.spec : object.spec.template.spec)"
)
CONTAINERS_EXPRESSION = (
    "variables.podSpec.containers + "
    "(has(variables.podSpec.initContainers) ? variables.podSpec.initContainers : [])"
)
# An extended resource (a name with a domain: nvidia.com/gpu, deviceclass.resource.kubernetes.io/x,
# or any DeviceClass extendedResourceName) may stand for a GPU: it is a GPU request here.
EXTENDED_RESOURCES_EXPRESSION = _any_resource("r.contains('/')")
CLAIM_REFS_EXPRESSION = "has(variables.podSpec.resourceClaims) ? variables.podSpec.resourceClaims : []"
TEMPLATE_CLAIMS_EXPRESSION = "variables.claimRefs.exists(c, has(c.resourceClaimTemplateName))"
NAMED_CLAIMS_EXPRESSION = "variables.claimRefs.exists(c, has(c.resourceClaimName))"
QUEUE_MATCHES_EXPRESSION = (
    "!variables.needsQueue || ('%s' in variables.queueLabels && "
    "variables.queueLabels['%s'] == namespaceObject.metadata.labels['%s'])" % (QUEUE_LABEL, QUEUE_LABEL, TEAM_LABEL)
)
# The labels Kueue reads the queue from: the object's, or a CronJob's jobTemplate (its Jobs' labels).
QUEUE_LABELS_EXPRESSION = (
    "object.kind == 'CronJob' ? (has(object.spec.jobTemplate.metadata) && has(object.spec.jobTemplate.metadata.labels) ? "
    "object.spec.jobTemplate.metadata.labels : {}) : (has(object.metadata.labels) ? object.metadata.labels : {})"
)
# Pods made by the workload controllers are checked through their workload.
NOT_CONTROLLER_POD_EXPRESSION = "object.kind != 'Pod' || !(request.userInfo.username in %s)" % _cel_list(
    POD_CREATING_CONTROLLERS)
# Updates of an object being deleted (finalizers, garbage collector) are never refused.
NOT_DELETING_EXPRESSION = "request.operation != 'UPDATE' || !has(object.metadata.deletionTimestamp)"


def namespaces(teams: Sequence[Team]) -> List[Dict[str, Any]]:
    labels = dict(POD_SECURITY_LABELS)
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": namespace, "labels": {TEAM_LABEL: team.name, **labels}}}
        for team in teams for namespace in team.namespaces
    ]


# What a team member may do in each of the team's namespaces. Left out on purpose (each is a
# way around the queue or the boundary; docs/security.md): namespaces (relabelling the own
# namespace), update/patch of pods (removing Kueue's scheduling gate starts a pod Kueue has
# not admitted) and of Jobs (unsuspending a queued Job starts its pods before admission:
# Kueue v0.19.2's Job webhook does not forbid it, pkg/controller/jobs/job/job_webhook.go),
# creating ResourceClaims/templates, ReplicaSets, DaemonSets, Kueue objects, NetworkPolicies,
# ResourceQuotas and LimitRanges.
_ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]
_READ = ["get", "list", "watch"]
TEAM_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": _READ + ["create", "delete"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": _READ},
    {"apiGroups": [""], "resources": ["pods/exec", "pods/portforward"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["services", "configmaps", "secrets", "persistentvolumeclaims"], "verbs": _ALL},
    {"apiGroups": [""], "resources": ["events", "resourcequotas", "limitranges"], "verbs": _READ},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _READ + ["create", "delete"]},
    {"apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": _ALL},
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": _ALL},
    {"apiGroups": ["apps"], "resources": ["deployments/scale", "statefulsets/scale"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": _READ},
    # Claims and templates come from the plan; the team uses them, it does not make new ones.
    {"apiGroups": [RESOURCE_GROUP], "resources": ["resourceclaims", "resourceclaimtemplates"], "verbs": _READ},
    {"apiGroups": [KUEUE_GROUP], "resources": ["localqueues", "workloads"], "verbs": _READ},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": _READ},
]


def rbac(teams: Sequence[Team], group_prefix: str = "") -> Tuple[List[Dict[str, Any]], List[str]]:
    """A Role per team namespace and a RoleBinding for the team's group (when it has one).

    ``group_prefix``: what the API server puts before an identity provider's group names
    (``gpushare_oidc.groups_prefix``, team_access.py), so the binding names the group as
    Kubernetes sees it.
    """
    objects: List[Dict[str, Any]] = []
    warnings: List[str] = []
    for team in teams:
        if not team.group:
            warnings.append("team %s has no group: its Role is created but bound to nobody" % team.name)
        for namespace in team.namespaces:
            objects.append({"apiVersion": RBAC_API, "kind": "Role",
                            "metadata": {"name": TEAM_ROLE, "namespace": namespace, "labels": {TEAM_LABEL: team.name}},
                            "rules": [dict(rule, verbs=list(rule["verbs"])) for rule in TEAM_RULES]})
            if team.group:
                objects.append({
                    "apiVersion": RBAC_API, "kind": "RoleBinding",
                    "metadata": {"name": TEAM_ROLE, "namespace": namespace, "labels": {TEAM_LABEL: team.name}},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TEAM_ROLE},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                  "name": group_prefix + team.group}],
                })
    return objects, warnings


def _rule(group: str, resources: List[str], operations: Sequence[str] = ("CREATE", "UPDATE")) -> Dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": ["v1"], "operations": list(operations), "resources": resources}


def _binding(name: str, namespace_selector: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": namespace_selector}},
    }


_TEAM_NAMESPACES = {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}
# Pods on CREATE only: their spec is immutable, and the team Role cannot update them.
_WORKLOAD_RULES = [_rule("", ["pods"], ("CREATE",)), _rule("batch", ["jobs", "cronjobs"]),
                   _rule("apps", ["deployments", "statefulsets"])]


def _policy(name: str, rules: List[Dict[str, Any]], conditions: List[Dict[str, str]],
            variables: List[Dict[str, str]], validations: List[Dict[str, str]]) -> List[Dict[str, Any]]:
    spec: Dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": rules, "namespaceSelector": _TEAM_NAMESPACES},
    }
    if conditions:
        spec["matchConditions"] = conditions
    if variables:
        spec["variables"] = variables
    spec["validations"] = [dict(v, reason="Forbidden") for v in validations]
    policy = {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}
    return [policy, _binding(name, _TEAM_NAMESPACES)]


def _workload_variables() -> List[Dict[str, str]]:
    return [
        {"name": "podSpec", "expression": POD_SPEC_EXPRESSION},
        {"name": "containers", "expression": CONTAINERS_EXPRESSION},
    ]


def security_policy() -> List[Dict[str, Any]]:
    """What no workload in a team namespace may carry, whoever creates it."""
    nvidia_env = _cel_string(NVIDIA_ENV_PREFIX)
    validations = [
        {"expression": "!has(variables.podSpec.runtimeClassName) || !variables.podSpec.runtimeClassName.startsWith(%s)"
                       % _cel_string(NVIDIA_RUNTIME_PREFIX),
         "message": "NVIDIA runtime classes are not allowed in team namespaces: GPUs come from the team's queue and "
                    "claims"},
        {"expression": "!variables.containers.exists(c, has(c.env) && c.env.exists(e, e.name.startsWith(%s)))" % nvidia_env,
         "message": "NVIDIA_* environment variables are not allowed in team namespaces (the container toolkit would "
                    "select GPUs from them)"},
        {"expression": "!variables.containers.exists(c, has(c.envFrom) && c.envFrom.exists(f, has(f.prefix) && "
                       "f.prefix != '' && (f.prefix.startsWith(%s) || %s.startsWith(f.prefix))))" % (nvidia_env, nvidia_env),
         "message": "an envFrom prefix may not make NVIDIA_* variables"},
        {"expression": _each_metadata(_keys_absent(POD_GROUP_KEYS)),
         "message": "Kueue pod-group and prebuilt-workload labels and annotations are set by Kueue only: use a Job, "
                    "Deployment or StatefulSet"},
        {"expression": _each_metadata(_keys_absent([ROLE_HASH_KEY]),
                                      {kind: paths[1:] for kind, paths in _METADATA_PATHS.items() if kind != "Pod"}),
         "message": "the Kueue role-hash annotation is set by Kueue only"},
        {"expression": "!has(variables.podSpec.priorityClassName) || !(variables.podSpec.priorityClassName in %s)"
                       % _cel_list(SYSTEM_PRIORITY_CLASSES),
         "message": "system-critical priority classes are not allowed in team namespaces"},
    ]
    return _policy(SECURITY_POLICY, _WORKLOAD_RULES, [{"name": "not-deleting", "expression": NOT_DELETING_EXPRESSION}],
                   _workload_variables(), validations)


def nvidia_keys_policy() -> List[Dict[str, Any]]:
    """ConfigMaps and Secrets hold no NVIDIA_* key, so envFrom cannot make NVIDIA_* variables."""
    nvidia_env = _cel_string(NVIDIA_ENV_PREFIX)
    # A Secret's stringData is already merged into data when admission sees it (v1 -> internal conversion).
    checks = " && ".join("(!has(object.%s) || !object.%s.exists(k, k.startsWith(%s)))" % (field, field, nvidia_env)
                         for field in ("data", "binaryData"))
    return _policy(KEYS_POLICY, [_rule("", ["configmaps", "secrets"])],
                   [{"name": "not-deleting", "expression": NOT_DELETING_EXPRESSION}], [],
                   [{"expression": checks,
                     "message": "NVIDIA_* keys are not allowed in ConfigMaps and Secrets of team namespaces (envFrom "
                                "would make them variables the container toolkit selects GPUs from)"}])


def team_priority_classes(teams: Sequence[Team], objects: Sequence[Mapping[str, Any]]) -> Dict[str, List[str]]:
    """The WorkloadPriorityClasses of each team: labelled with the team, or named after it."""
    result: Dict[str, List[str]] = {team.name: [] for team in teams}
    for obj in objects:
        if obj.get("kind") != "WorkloadPriorityClass":
            continue
        metadata = obj.get("metadata") or {}
        owner = (metadata.get("labels") or {}).get(TEAM_LABEL) or metadata.get("name")
        if owner in result:
            result[owner].append(metadata["name"])
    return {team: sorted(set(names)) for team, names in result.items()}


def queue_policy(backend: str, priority_classes: Optional[Mapping[str, Sequence[str]]] = None,
                 shared_claims: Optional[Mapping[str, Sequence[Tuple[str, str, str]]]] = None) -> List[Dict[str, Any]]:
    """GPU workloads in a team namespace go through the team's queue, with the team's priorities.

    ``priority_classes``: team -> WorkloadPriorityClass names it may use; ``shared_claims``
    (dra): team -> (namespace, claim name, DeviceClass) of the plan's shared-GPU claims.
    """
    claims_by_namespace: Dict[str, List[str]] = {}
    for claims in (shared_claims or {}).values():
        for namespace, name, _device_class in claims:
            claims_by_namespace.setdefault(namespace, []).append(name)
    variables = _workload_variables() + [
        {"name": "queueLabels", "expression": QUEUE_LABELS_EXPRESSION},
        {"name": "claimRefs", "expression": CLAIM_REFS_EXPRESSION},
        {"name": "allowedPriorities",
         "expression": "namespaceObject.metadata.labels['%s'] in %s ? %s[namespaceObject.metadata.labels['%s']] : []"
                       % (TEAM_LABEL, _cel_map_of_lists(priority_classes or {}), _cel_map_of_lists(priority_classes or {}),
                          TEAM_LABEL)},
    ]
    if backend == "dra":
        variables += [
            {"name": "sharedClaims",
             "expression": "namespaceObject.metadata.name in %s ? %s[namespaceObject.metadata.name] : []"
                           % (_cel_map_of_lists(claims_by_namespace), _cel_map_of_lists(claims_by_namespace))},
            # Kueue v0.19.2 does not count a claim a pod names directly (workload_controller.go:
            # "KueueDRAIntegration feature does not support use of resource claims"): pods on the
            # team's shared GPU claims are outside the queue, by design; templates are queued.
            {"name": "needsQueue",
             "expression": "(%s) || (%s)" % (EXTENDED_RESOURCES_EXPRESSION, TEMPLATE_CLAIMS_EXPRESSION)},
        ]
    else:
        variables.append({"name": "needsQueue", "expression": "(%s) || size(variables.claimRefs) > 0"
                                                              % EXTENDED_RESOURCES_EXPRESSION})
    validations = [{
        "expression": QUEUE_MATCHES_EXPRESSION,
        "messageExpression": (
            "'GPU workloads in namespace ' + namespaceObject.metadata.name + ' must carry the label %s: ' + "
            "namespaceObject.metadata.labels['%s']" % (QUEUE_LABEL, TEAM_LABEL)),
    }, {
        "expression": _each_metadata(_label_absent_or(
            PRIORITY_LABEL, "{meta}.labels[%s] in variables.allowedPriorities" % _cel_string(PRIORITY_LABEL))),
        "message": "the label %s may only name the team's own WorkloadPriorityClasses" % PRIORITY_LABEL,
    }]
    if backend == "dra":
        validations += [{
            # Under dra the quota counts claims from templates; these would be uncounted.
            "expression": "!" + _any_resource(" || ".join("r.startsWith(%s)" % _cel_string(prefix)
                                                          for prefix in DRA_FORBIDDEN_RESOURCE_PREFIXES)),
            "message": "request GPUs through the team's ResourceClaimTemplates, not nvidia.com/* or "
                       "deviceclass.resource.kubernetes.io/* resources",
        }, {
            "expression": "variables.claimRefs.all(c, !has(c.resourceClaimName) || "
                          "c.resourceClaimName in variables.sharedClaims)",
            "message": "a pod may name only its namespace's shared-GPU ResourceClaims from the plan (resourceClaimName); "
                       "other GPUs come from the team's ResourceClaimTemplates",
        }, {
            "expression": "!(%s) || !('%s' in variables.queueLabels)" % (NAMED_CLAIMS_EXPRESSION, QUEUE_LABEL),
            "message": "workloads on the team's shared GPU are not queued (Kueue cannot admit a pod that names a "
                       "ResourceClaim): remove the label %s" % QUEUE_LABEL,
        }]
    return _policy(QUEUE_POLICY, _WORKLOAD_RULES,
                   [{"name": "not-controller-pod", "expression": NOT_CONTROLLER_POD_EXPRESSION},
                    {"name": "not-deleting", "expression": NOT_DELETING_EXPRESSION}],
                   variables, validations)


def _requests_allowed(requests: str, classes: Sequence[str]) -> str:
    """Every request names one counted class, without admin access and with ExactCount."""
    return ("%s.all(r, has(r.exactly) && r.exactly.deviceClassName in %s && "
            "(!has(r.exactly.adminAccess) || !r.exactly.adminAccess) && "
            "(!has(r.exactly.allocationMode) || r.exactly.allocationMode == 'ExactCount'))" % (requests, _cel_list(classes)))


def template_classes_expression(classes: Sequence[str]) -> str:
    return ("object.kind != 'ResourceClaimTemplate' || !has(object.spec.spec.devices) || "
            "!has(object.spec.spec.devices.requests) || %s" % _requests_allowed("object.spec.spec.devices.requests", classes))


def claim_expression(claim_names: Sequence[str], classes: Sequence[str]) -> str:
    # Claims the claim controller makes are copies of a template (checked on its CREATE).
    return ("object.kind != 'ResourceClaim' || request.userInfo.username in %s || "
            "(object.metadata.name in %s && has(object.spec.devices) && has(object.spec.devices.requests) && %s)"
            % (_cel_list(CLAIM_CONTROLLER_USERS), _cel_list(claim_names),
               _requests_allowed("object.spec.devices.requests", classes)))


def claim_policies(teams: Sequence[Team], template_classes: Mapping[str, Sequence[str]],
                   shared_claims: Mapping[str, Sequence[Tuple[str, str, str]]]) -> List[Dict[str, Any]]:
    """dra only: per team, which DeviceClasses its templates and claims may name.

    CREATE only: the spec of a ResourceClaim and of a ResourceClaimTemplate is immutable
    (kubernetes v1.35.4 pkg/apis/resource/validation ValidateResourceClaimUpdate,
    ValidateResourceClaimTemplateUpdate), so an update can change only metadata and status.
    kube-scheduler adds its finalizer with a plain Update (pkg/scheduler/framework/plugins/
    dynamicresources/dynamicresources.go, PreBind: "The finalizer needs to be added in a
    normal update"); the claim controller and the kubelet plugin update them too.
    """
    objects: List[Dict[str, Any]] = []
    for team in teams:
        name = "gpushare-claims-%s" % team.name
        claims = shared_claims.get(team.name, [])
        selector = {"matchLabels": {TEAM_LABEL: team.name}}
        objects.append({
            "apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [_rule(RESOURCE_GROUP, ["resourceclaims", "resourceclaimtemplates"], ("CREATE",))],
                    "namespaceSelector": selector,
                },
                "validations": [
                    {"expression": template_classes_expression(template_classes.get(team.name, [])),
                     "message": "a ResourceClaimTemplate of team %s may only use the DeviceClasses Kueue counts "
                                "for the team (exactly one class per request, ExactCount, no adminAccess)" % team.name,
                     "reason": "Forbidden"},
                    {"expression": claim_expression(sorted({c[1] for c in claims}), sorted({c[2] for c in claims})),
                     "message": "team %s may only hold the shared-GPU claims the plan made for it; ask for GPUs "
                                "through a ResourceClaimTemplate" % team.name,
                     "reason": "Forbidden"},
                ],
            },
        })
        objects.append(_binding(name, selector))
    return objects


def namespace_quota(team: Team) -> Dict[str, Any]:
    """The ResourceQuota figures of each of the team's namespaces (inventory, else defaults)."""
    quota = dict(NAMESPACE_QUOTA_DEFAULTS)
    quota.update(dict(team.namespace_quota))
    return quota


def boundary_objects(teams: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """NetworkPolicy, ResourceQuota and LimitRange of every team namespace.

    ``teams`` is the plan's ``teams`` section (namespaces and namespace_quota per team).
    Ingress is allowed from the team's own namespaces and from namespaces that belong to no
    team (monitoring scrapes, ingress controllers, kube-system); other teams are refused.
    """
    objects: List[Dict[str, Any]] = []
    for team, entry in sorted(teams.items()):
        quota = entry.get("namespace_quota") or NAMESPACE_QUOTA_DEFAULTS
        for namespace in entry.get("namespaces") or []:
            metadata = {"namespace": namespace, "labels": {TEAM_LABEL: team}}
            objects.append({
                "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": dict(metadata, name=NETWORK_POLICY),
                "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
                    {"namespaceSelector": {"matchLabels": {TEAM_LABEL: team}}},
                    {"namespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "DoesNotExist"}]}},
                ]}]},
            })
            objects.append({
                "apiVersion": "v1", "kind": "ResourceQuota", "metadata": dict(metadata, name=RESOURCE_QUOTA),
                "spec": {"hard": {"pods": str(quota["pods"]), "requests.cpu": str(quota["cpu"]),
                                  "requests.memory": str(quota["memory"])}},
            })
            objects.append({
                "apiVersion": "v1", "kind": "LimitRange", "metadata": dict(metadata, name=LIMIT_RANGE),
                "spec": {"limits": [{"type": "Container", "defaultRequest": dict(CONTAINER_DEFAULT_REQUEST)}]},
            })
    return objects
