# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test helpers shared by the planner tests: upstream schema checks and CEL evaluation.

- Kueue objects: the openAPIV3Schema of the v1beta2 version of the upstream CRDs
  (jsonschema) and their x-kubernetes-validations CEL rules (cel-python).
- Core objects: kubernetes-validate, strict schemas of Kubernetes 1.34, 1.35 and 1.36.
- CEL: cel-python with the Kubernetes ``quantity()``/``compareTo()`` library functions
  added (quantities become exact numbers of bytes, so comparisons are exact).
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import jsonschema
import pytest
import yaml

KUBERNETES_VERSIONS = ("1.34.0", "1.35.0", "1.36.0")
KUEUE_CRDS = {
    "ResourceFlavor": "kueue.x-k8s.io_resourceflavors.yaml",
    "Cohort": "kueue.x-k8s.io_cohorts.yaml",
    "ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
    "LocalQueue": "kueue.x-k8s.io_localqueues.yaml",
    "WorkloadPriorityClass": "kueue.x-k8s.io_workloadpriorityclasses.yaml",
}

try:
    import celpy
    from celpy import celtypes
except ImportError:  # only the CEL checks need it; they skip and say why
    celpy = celtypes = None


def require_cel() -> None:
    if celpy is None:
        pytest.skip("the PyPI package cel-python is needed to evaluate CEL expressions (pip install cel-python)")


_SUFFIX = {
    "": 1, "m": Fraction(1, 1000), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
    "E": 10 ** 18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
}


def quantity_value(text: str) -> Fraction:
    match = re.match(r"^([0-9.]+)([a-zA-Z]*)$", str(text))
    assert match, "not a quantity: %r" % text
    return Fraction(match.group(1)) * _SUFFIX[match.group(2)]


if celpy is not None:
    class Quantity(celtypes.DoubleType):
        """Stand-in for the Kubernetes CEL Quantity type (bytes as a number; exact below 2**53)."""
else:
    Quantity = float


def _quantity(text):
    return Quantity(float(quantity_value(str(text))))


def _compare_to(left, right):
    return celtypes.IntType((left > right) - (left < right))


CEL_FUNCTIONS = {"quantity": _quantity, "compareTo": _compare_to}
_PROGRAMS: Dict[str, Any] = {}


def cel_program(expression: str) -> Any:
    require_cel()
    program = _PROGRAMS.get(expression)
    if program is None:
        env = celpy.Environment()
        program = env.program(env.compile(expression), functions=CEL_FUNCTIONS)
        _PROGRAMS[expression] = program
    return program


def cel_eval(expression: str, activation: Mapping[str, Any]) -> Any:
    """Evaluate ``expression`` with the given top-level variables (plain Python values)."""
    program = cel_program(expression)
    result = program.evaluate({name: to_cel(value) for name, value in activation.items()})
    if isinstance(result, Exception):
        raise result
    return result


def to_cel(value: Any) -> Any:
    if isinstance(value, Quantity):
        return value
    return celpy.json_to_cel(value)


def device(model_product: str, kind: str = "gpu", memory: str = "96Gi", profile: Optional[str] = None,
           uuid: str = "GPU-00000000-0000-0000-0000-000000000000", driver: str = "gpu.nvidia.com") -> Dict[str, Any]:
    """A device as CEL selectors see it (attributes and capacity of the NVIDIA DRA driver)."""
    require_cel()
    attributes: Dict[str, Any] = {"type": kind, "productName": model_product, "uuid": uuid,
                                  "architecture": "Blackwell"}
    if profile:
        attributes["profile"] = profile
    return {"driver": driver, "attributes": {driver: attributes},
            "capacity": {driver: {"memory": Quantity(float(quantity_value(memory)))}}}


def device_matches(expression: str, dev: Dict[str, Any]) -> bool:
    program = cel_program(expression)
    activation = {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(dev["driver"]),
        celtypes.StringType("attributes"): celpy.json_to_cel(dev["attributes"]),
        celtypes.StringType("capacity"): celtypes.MapType({
            celtypes.StringType(drv): celtypes.MapType({celtypes.StringType(k): v for k, v in caps.items()})
            for drv, caps in dev["capacity"].items()}),
    })}
    result = program.evaluate(activation)
    if isinstance(result, Exception):
        raise result
    return bool(result)


# --- Kueue CRDs ---------------------------------------------------------------------------

_CRD_CACHE: Dict[str, Dict[str, Any]] = {}


def kueue_schema(reference_dir: Path, kind: str) -> Dict[str, Any]:
    if kind not in _CRD_CACHE:
        crd = yaml.safe_load((reference_dir / "crds" / "kueue" / KUEUE_CRDS[kind]).read_text())
        assert crd["spec"]["names"]["kind"] == kind
        versions = {v["name"]: v for v in crd["spec"]["versions"]}
        assert versions["v1beta2"]["served"], "v1beta2 must be served by the reference CRD"
        _CRD_CACHE[kind] = versions["v1beta2"]["schema"]["openAPIV3Schema"]
    return _CRD_CACHE[kind]


def _cel_rules(schema: Dict[str, Any], value: Any, path: str, out: List[tuple]) -> None:
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" not in rule["rule"]:  # transition rules need an old object
            out.append((path, rule, value))
    if isinstance(value, dict):
        for key, child in (schema.get("properties") or {}).items():
            if key in value:
                _cel_rules(child, value[key], "%s.%s" % (path, key), out)
    elif isinstance(value, list) and "items" in schema:
        for position, item in enumerate(value):
            _cel_rules(schema["items"], item, "%s[%d]" % (path, position), out)


def kueue_cel_failures(reference_dir: Path, obj: Dict[str, Any]) -> List[str]:
    """Messages of every CRD CEL rule the object breaks (the API server would reject it)."""
    rules: List[tuple] = []
    _cel_rules(kueue_schema(reference_dir, obj["kind"]), obj, "", rules)
    failures = []
    for path, rule, value in rules:
        if not cel_eval(rule["rule"], {"self": value}):
            failures.append("%s: %s" % (path, rule.get("message", rule["rule"])))
    return failures


def validate_kueue(reference_dir: Path, obj: Dict[str, Any]) -> None:
    """Schema and CEL rules of the v0.19.2 CRD; raises AssertionError naming the object."""
    assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2", obj["apiVersion"]
    try:
        jsonschema.validate(obj, kueue_schema(reference_dir, obj["kind"]))
    except jsonschema.ValidationError as exc:
        raise AssertionError("%s %s: %s" % (obj["kind"], obj["metadata"]["name"], exc.message)) from exc
    failures = kueue_cel_failures(reference_dir, obj)
    assert not failures, "%s %s breaks CRD rules: %s" % (obj["kind"], obj["metadata"]["name"], failures)
    _reject_unknown_fields(kueue_schema(reference_dir, obj["kind"]), obj, obj["kind"])


def _reject_unknown_fields(schema: Dict[str, Any], value: Any, path: str) -> None:
    """The API server prunes/rejects unknown fields (e.g. v1beta1 ``cohort``): find them here."""
    if isinstance(value, dict) and "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        unknown = set(value) - set(schema["properties"])
        assert not unknown, "%s: fields unknown to the CRD: %s" % (path, sorted(unknown))
        for key, child in schema["properties"].items():
            if key in value:
                _reject_unknown_fields(child, value[key], "%s.%s" % (path, key))
    elif isinstance(value, list) and "items" in schema:
        for position, item in enumerate(value):
            _reject_unknown_fields(schema["items"], item, "%s[%d]" % (path, position))


def kueue_webhook_problems(cluster_queue: Dict[str, Any]) -> List[str]:
    """ClusterQueue webhook rules of Kueue (not in the CRD), re-implemented from the v0.19 notes."""
    spec = cluster_queue["spec"]
    problems = []
    seen_resources, seen_flavors = set(), set()
    for group in spec.get("resourceGroups", []):
        covered = group["coveredResources"]
        for resource in covered:
            if resource in seen_resources:
                problems.append("resource %s in two groups" % resource)
            seen_resources.add(resource)
        for flavor in group["flavors"]:
            if flavor["name"] in seen_flavors:
                problems.append("flavor %s in two groups" % flavor["name"])
            seen_flavors.add(flavor["name"])
            if [r["name"] for r in flavor["resources"]] != covered:
                problems.append("flavor %s resources not in coveredResources order" % flavor["name"])
            for quota in flavor["resources"]:
                nominal = quantity_value(quota["nominalQuota"])
                if nominal < 0:
                    problems.append("negative nominalQuota")
                if "lendingLimit" in quota:
                    if "cohortName" not in spec:
                        problems.append("lendingLimit without a cohort")
                    if quantity_value(quota["lendingLimit"]) > nominal:
                        problems.append("lendingLimit above nominalQuota for %s/%s" % (flavor["name"], quota["name"]))
                if "borrowingLimit" in quota and quantity_value(quota["borrowingLimit"]) < 0:
                    problems.append("negative borrowingLimit")
    return problems


# --- core objects ---------------------------------------------------------------------------

def validate_core(obj: Dict[str, Any]) -> None:
    """Strict schema of every supported Kubernetes version (kubernetes-validate)."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError("%s %s invalid for Kubernetes %s: %s"
                                 % (obj["kind"], obj["metadata"].get("name"), version, exc)) from exc


def quota_of(cq, flavor, resource):
    """The quota entry of a ClusterQueue for (flavor, resource), or None."""
    for group in cq["spec"]["resourceGroups"]:
        for item in group["flavors"]:
            if item["name"] == flavor:
                for quota in item["resources"]:
                    if quota["name"] == resource:
                        return quota
    return None
