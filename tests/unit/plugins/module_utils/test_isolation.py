# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils import isolation
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import Team
from ansible_collections.gpushare.cluster.plugins.module_utils.plan import build_plan

import gpushare_checks
from gpushare_checks import require_cel, validate_core

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "inventories"
USER = "alice"


def example_plan(backend="dra"):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    return build_plan(data["gpushare_teams"], data["nodes"], backend=backend)


def policy(plan, name):
    return next(o for o in plan["objects"] if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == name)


def _run(expression, activation):
    result = gpushare_checks.cel_program(expression).evaluate(activation)
    if isinstance(result, Exception):
        raise result
    return result


def admit(vap, obj, namespace_team, username=USER):
    """Evaluate a ValidatingAdmissionPolicy as the API server does: None = not matched, else failed messages."""
    require_cel()
    celpy, celtypes = gpushare_checks.celpy, gpushare_checks.celtypes
    namespace = {"metadata": {"name": obj["metadata"].get("namespace", "x"), "labels": {"gpushare.io/team": namespace_team}}}
    activation = {
        "object": celpy.json_to_cel(obj),
        "namespaceObject": celpy.json_to_cel(namespace),
        "request": celpy.json_to_cel({"operation": "CREATE", "userInfo": {"username": username}}),
    }
    for condition in vap["spec"].get("matchConditions", []):
        if not _run(condition["expression"], activation):
            return None
    variables = {}
    for variable in vap["spec"].get("variables", []):
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = _run(variable["expression"], activation)
    activation["variables"] = celtypes.MapType(variables)
    return [v.get("message") or v["messageExpression"] for v in vap["spec"]["validations"]
            if not _run(v["expression"], activation)]


def pod(namespace, resources=None, queue=None, claims=None, owned=False):
    container = {"name": "main", "image": "vllm/vllm-openai"}
    if resources:
        container["resources"] = {"limits": resources}
    metadata = {"name": "p", "namespace": namespace}
    if queue:
        metadata["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    if owned:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1"}]
    spec = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claims}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def job(namespace, resources, queue=None):
    template = pod(namespace, resources)
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": namespace, "labels": labels},
            "spec": {"template": {"spec": template["spec"]}}}


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_queue_policy_on_sample_admission_requests(backend):
    vap = policy(example_plan(backend), isolation.QUEUE_POLICY)
    gpu = {"nvidia.com/mig-1g.24gb": 1}
    # device_plugin: extended resources are the way to ask for GPUs.
    if backend == "device_plugin":
        assert admit(vap, pod("training", gpu, queue="training"), "training") == []
    assert admit(vap, pod("training", gpu), "training") == [
        "'GPU workloads in namespace ' + namespaceObject.metadata.name + ' must carry the label "
        "kueue.x-k8s.io/queue-name: ' + namespaceObject.metadata.labels['gpushare.io/team']"] + (
        ["request GPUs through the team's ResourceClaimTemplates, not nvidia.com/* resources"]
        if backend == "dra" else [])
    assert admit(vap, pod("training", gpu, queue="production"), "training")  # another team's queue
    assert admit(vap, pod("training", {"cpu": "2"}), "training") == []  # CPU-only pods need no queue
    assert admit(vap, pod("training", gpu, owned=True), "training") is None  # checked through its owner
    assert admit(vap, job("training", gpu), "training")
    assert admit(vap, pod("data", None, claims="gpu-rtx-pro-6000"), "data")  # a claim without queue
    assert admit(vap, pod("data", None, queue="data", claims="gpu-rtx-pro-6000"), "data") == []
    assert admit(vap, job("data", {"memory": "1Gi"}), "data") == []
    if backend == "dra":
        assert admit(vap, job("training", gpu, queue="training"), "training") == [
            "request GPUs through the team's ResourceClaimTemplates, not nvidia.com/* resources"]
    else:
        assert admit(vap, job("training", gpu, queue="training"), "training") == []


def test_claim_policy_on_sample_admission_requests():
    plan = example_plan("dra")
    data_policy = policy(plan, "gpushare-claims-data")
    training_policy = policy(plan, "gpushare-claims-training")

    def template(namespace, device_class):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": namespace},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}}}

    def claim(namespace, name, device_class):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}}

    assert admit(training_policy, template("training", "rtx-pro-6000.gpushare.io"), "training") == []
    assert admit(training_policy, template("training", "1g.24gb.rtx-pro-6000.gpushare.io"), "training") == []
    assert admit(training_policy, template("training", "gpu.nvidia.com"), "training")  # uncounted driver class
    assert admit(training_policy, template("training", "data.rtx-pro-6000.shared.gpushare.io"), "training")
    shared = "data.rtx-pro-6000.shared.gpushare.io"
    assert admit(data_policy, claim("data", "shared-gpu1-gpu2", shared), "data") == []
    assert admit(data_policy, claim("data", "my-own-gpu", shared), "data")  # not a planned claim
    assert admit(data_policy, claim("data", "shared-gpu1-gpu2", "rtx-pro-6000.gpushare.io"), "data")
    assert admit(training_policy, claim("training", "shared-gpu1-gpu2", shared), "training")  # data's GPU
    # Claims generated from templates are made by kube-controller-manager.
    generated = claim("training", "p-gpu-x7k2", "rtx-pro-6000.gpushare.io")
    assert admit(training_policy, generated, "training",
                 username="system:serviceaccount:kube-system:resource-claim-controller") == []
    assert admit(training_policy, generated, "training")


def test_namespaces_rbac_and_policies_validate_for_kubernetes_1_34_to_1_36():
    checked = set()
    for backend in ("dra", "device_plugin"):
        for obj in example_plan(backend)["objects"]:
            if obj["apiVersion"] in ("v1", isolation.RBAC_API, isolation.ADMISSION_API):
                validate_core(obj)
                checked.add(obj["kind"])
    assert checked == {"Namespace", "Role", "RoleBinding", "ValidatingAdmissionPolicy",
                       "ValidatingAdmissionPolicyBinding"}


def test_rbac_binds_the_team_group_in_each_namespace_and_warns_without_group():
    teams = [Team(name="a", namespaces=("a1", "a2"), priority=2, group="team-a"),
             Team(name="b", namespaces=("b1",), priority=1)]
    objects, warnings = isolation.rbac(teams)
    bindings = [(o["metadata"]["namespace"], o["subjects"][0]["name"]) for o in objects if o["kind"] == "RoleBinding"]
    assert bindings == [("a1", "team-a"), ("a2", "team-a")]
    assert sorted(o["metadata"]["namespace"] for o in objects if o["kind"] == "Role") == ["a1", "a2", "b1"]
    assert warnings == ["team b has no group: its Role is created but bound to nobody"]
    role = next(o for o in objects if o["kind"] == "Role")
    claim_rule = next(r for r in role["rules"] if r["apiGroups"] == ["resource.k8s.io"])
    assert claim_rule["verbs"] == ["get", "list", "watch"]


def test_policy_bindings_select_team_namespaces():
    plan = example_plan("dra")
    bindings = {o["metadata"]["name"]: o["spec"] for o in plan["objects"]
                if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert bindings["gpushare-claims-data"]["matchResources"]["namespaceSelector"] == {
        "matchLabels": {"gpushare.io/team": "data"}}
    assert all(b["validationActions"] == ["Deny"] and b["policyName"] == name for name, b in bindings.items())
    assert set(bindings) == {"gpushare-queue-required", "gpushare-claims-production", "gpushare-claims-data",
                             "gpushare-claims-training"}
    assert "gpushare-claims-data" not in {o["metadata"]["name"] for o in example_plan("device_plugin")["objects"]}
