# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team isolation: labelled Namespaces, RBAC per team namespace, and admission policies.

Kueue counts only what passes through a team's queue, so the admission policies close
the ways around it: a GPU workload in a team namespace must name the team's queue, and
under dra a claim may only use the classes the team's quota covers (templates) or the
team's own shared GPUs (standalone claims, created by the plan).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import Team

TEAM_LABEL = "gpushare.io/team"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RBAC_API = "rbac.authorization.k8s.io/v1"
ADMISSION_API = "admissionregistration.k8s.io/v1"
QUEUE_POLICY = "gpushare-queue-required"
TEAM_ROLE = "gpushare-team"
# Who creates the ResourceClaims of ResourceClaimTemplates: kube-controller-manager, with
# per-controller service accounts (kubeadm) or its own identity (MicroK8s).
CLAIM_CONTROLLER_USERS = (
    "system:serviceaccount:kube-system:resource-claim-controller",
    "system:kube-controller-manager",
)


def _cel_list(items: Sequence[str]) -> str:
    return "[%s]" % ", ".join("'%s'" % item.replace("'", "\\'") for item in items)


# The pod spec of a Pod, or of the template of a Job, Deployment or StatefulSet.
POD_SPEC_EXPRESSION = "object.kind == 'Pod' ? object.spec : object.spec.template.spec"
CONTAINERS_EXPRESSION = (
    "variables.podSpec.containers + "
    "(has(variables.podSpec.initContainers) ? variables.podSpec.initContainers : [])"
)
NVIDIA_RESOURCES_EXPRESSION = (
    "variables.containers.exists(c, has(c.resources) && ("
    "(has(c.resources.limits) && c.resources.limits.exists(r, r.startsWith('nvidia.com/'))) || "
    "(has(c.resources.requests) && c.resources.requests.exists(r, r.startsWith('nvidia.com/')))))"
)
CLAIMS_EXPRESSION = "has(variables.podSpec.resourceClaims) && size(variables.podSpec.resourceClaims) > 0"
QUEUE_MATCHES_EXPRESSION = (
    "!variables.usesGpu || (has(object.metadata.labels) && '%s' in object.metadata.labels && "
    "object.metadata.labels['%s'] == namespaceObject.metadata.labels['%s'])" % (QUEUE_LABEL, QUEUE_LABEL, TEAM_LABEL)
)
# Pods made by a controller (Job, ReplicaSet ...) are checked through their owner.
NOT_CONTROLLED_EXPRESSION = (
    "object.kind != 'Pod' || !has(object.metadata.ownerReferences) || size(object.metadata.ownerReferences) == 0"
)


def namespaces(teams: Sequence[Team]) -> List[Dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {TEAM_LABEL: team.name}}}
        for team in teams for namespace in team.namespaces
    ]


def rbac(teams: Sequence[Team]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """A Role per team namespace and a RoleBinding for the team's group (when it has one)."""
    objects: List[Dict[str, Any]] = []
    warnings: List[str] = []
    rules = [
        {"apiGroups": [""], "resources": ["pods", "pods/log", "pods/exec", "services", "configmaps", "secrets",
                                          "persistentvolumeclaims"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        # Claims and templates come from the plan; the team uses them, it does not make new ones.
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims", "resourceclaimtemplates"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues", "workloads"],
         "verbs": ["get", "list", "watch"]},
    ]
    for team in teams:
        if not team.group:
            warnings.append("team %s has no group: its Role is created but bound to nobody" % team.name)
        for namespace in team.namespaces:
            objects.append({"apiVersion": RBAC_API, "kind": "Role",
                            "metadata": {"name": TEAM_ROLE, "namespace": namespace, "labels": {TEAM_LABEL: team.name}},
                            "rules": rules})
            if team.group:
                objects.append({
                    "apiVersion": RBAC_API, "kind": "RoleBinding",
                    "metadata": {"name": TEAM_ROLE, "namespace": namespace, "labels": {TEAM_LABEL: team.name}},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TEAM_ROLE},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": team.group}],
                })
    return objects, warnings


def _rule(group: str, resources: List[str]) -> Dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": resources}


def _binding(name: str, namespace_selector: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": namespace_selector}},
    }


def queue_policy(backend: str) -> List[Dict[str, Any]]:
    """GPU workloads in a team namespace must name the team's queue (one policy for all teams)."""
    validations = [{
        "expression": QUEUE_MATCHES_EXPRESSION,
        "messageExpression": (
            "'GPU workloads in namespace ' + namespaceObject.metadata.name + ' must carry the label %s: ' + "
            "namespaceObject.metadata.labels['%s']" % (QUEUE_LABEL, TEAM_LABEL)),
        "reason": "Forbidden",
    }]
    if backend == "dra":
        # Under dra the quota counts claims; nvidia.com/* extended resources would be uncounted.
        validations.append({
            "expression": "!variables.usesNvidiaResources",
            "message": "request GPUs through the team's ResourceClaimTemplates, not nvidia.com/* resources",
            "reason": "Forbidden",
        })
    policy = {
        "apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": QUEUE_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [_rule("", ["pods"]), _rule("batch", ["jobs"]),
                                  _rule("apps", ["deployments", "statefulsets"])],
                "namespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]},
            },
            "matchConditions": [{"name": "not-controlled-pod", "expression": NOT_CONTROLLED_EXPRESSION}],
            "variables": [
                {"name": "podSpec", "expression": POD_SPEC_EXPRESSION},
                {"name": "containers", "expression": CONTAINERS_EXPRESSION},
                {"name": "usesNvidiaResources", "expression": NVIDIA_RESOURCES_EXPRESSION},
                {"name": "usesGpu", "expression": "variables.usesNvidiaResources || (%s)" % CLAIMS_EXPRESSION},
            ],
            "validations": validations,
        },
    }
    return [policy, _binding(QUEUE_POLICY, policy["spec"]["matchConstraints"]["namespaceSelector"])]


def template_classes_expression(classes: Sequence[str]) -> str:
    return ("object.kind != 'ResourceClaimTemplate' || !has(object.spec.spec.devices) || "
            "!has(object.spec.spec.devices.requests) || object.spec.spec.devices.requests.all(r, "
            "has(r.exactly) && r.exactly.deviceClassName in %s)" % _cel_list(classes))


def claim_expression(claim_names: Sequence[str], classes: Sequence[str]) -> str:
    return ("object.kind != 'ResourceClaim' || request.userInfo.username in %s || "
            "(object.metadata.name in %s && has(object.spec.devices) && has(object.spec.devices.requests) && "
            "object.spec.devices.requests.all(r, has(r.exactly) && r.exactly.deviceClassName in %s))"
            % (_cel_list(CLAIM_CONTROLLER_USERS), _cel_list(claim_names), _cel_list(classes)))


def claim_policies(teams: Sequence[Team], template_classes: Mapping[str, Sequence[str]],
                   shared_claims: Mapping[str, Sequence[Tuple[str, str, str]]]) -> List[Dict[str, Any]]:
    """dra only: per team, which DeviceClasses its templates and claims may name."""
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
                    "resourceRules": [_rule("resource.k8s.io", ["resourceclaims", "resourceclaimtemplates"])],
                    "namespaceSelector": selector,
                },
                "validations": [
                    {"expression": template_classes_expression(template_classes.get(team.name, [])),
                     "message": "a ResourceClaimTemplate of team %s may only use the DeviceClasses Kueue counts "
                                "for the team (exactly one class per request)" % team.name,
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
