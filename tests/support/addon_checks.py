"""Checks shared by the add-on role tests: Helm values against the pinned charts'
upstream values.yaml, manifests against upstream CRDs and Kubernetes schemas, and the
plans of the bundled inventories built with the real planner."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

import jsonschema
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

# The schema and CRD helpers the planner's tests use (kubernetes-validate, Kueue CRDs + CEL).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "plugins" / "module_utils"))
_checks = importlib.import_module("gpushare_checks")
validate_core = _checks.validate_core
validate_kueue = _checks.validate_kueue

REPO = Path(__file__).resolve().parents[2]

# values file -> upstream values.yaml of the pinned chart (under the reference dir)
UPSTREAM_VALUES = {
    "gpu-operator": "gpu-operator/values.yaml",
    "dra-driver-nvidia-gpu": "dra-driver/values.yaml",
    "kueue": "kueue/values.yaml",
    "kube-prometheus-stack": "monitoring/kube-prometheus-stack-values.yaml",
}

# Keys the roles set that the upstream values.yaml documents only in a comment, or that
# belong to a subchart. Each carries evidence that must still be in the reference, so
# the exception disappears the day the upstream text stops supporting it.
DOCUMENTED_ELSEWHERE = {
    "gpu-operator": {
        # commented example block "# config:\n    # name: custom-dcgm-exporter-metrics"
        "dcgmExporter.config": ("gpu-operator/values.yaml", r"#\s*config:\s*\n\s*#\s*name: custom-dcgm-exporter-metrics"),
        "hostPaths.kubeletRootDir": ("gpu-operator/values.yaml", r"#\s*kubeletRootDir:"),
        # subchart value: the operator chart passes `node-feature-discovery:` through to NFD
        "node-feature-discovery.image": ("gpu-operator/values.yaml", r"\nnode-feature-discovery:\n"),
    },
    "kube-prometheus-stack": {
        "grafana.persistence": ("monitoring/kube-prometheus-stack-values.yaml", r"#\s*persistence:"),
        # subchart value (charts/kube-state-metrics/values.yaml), recorded in the notes
        "kube-state-metrics.metricLabelsAllowlist": ("monitoring/NOTES.md", r"kube-state-metrics\.metricLabelsAllowlist"),
    },
}


def _type_ok(ours: Any, theirs: Any) -> bool:
    if theirs is None:  # upstream leaves it unset (e.g. `priorityClassName:`)
        return True
    if isinstance(theirs, bool) or isinstance(ours, bool):
        return isinstance(ours, bool) and isinstance(theirs, bool)
    if isinstance(theirs, (int, float)):
        return isinstance(ours, (int, float))
    for kind in (dict, list, str):
        if isinstance(theirs, kind):
            return isinstance(ours, kind)
    return False


def values_problems(chart: str, ours: Dict[str, Any], reference_dir: Path) -> List[str]:
    """Keys of ``ours`` absent from the chart's upstream values.yaml, or of another type."""
    upstream = yaml.safe_load((reference_dir / UPSTREAM_VALUES[chart]).read_text())
    allowed = DOCUMENTED_ELSEWHERE.get(chart, {})
    for key, (path, pattern) in allowed.items():
        assert re.search(pattern, (reference_dir / path).read_text()), f"{chart}: evidence for {key} gone from {path}"
    problems: List[str] = []

    def walk(node: Dict[str, Any], theirs: Dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if path in allowed:
                continue
            if key not in theirs:
                problems.append(f"{chart}: {path} is not in the upstream values.yaml")
                continue
            if not _type_ok(value, theirs[key]):
                problems.append(f"{chart}: {path} is {type(value).__name__}, upstream {type(theirs[key]).__name__}")
            elif isinstance(value, dict) and theirs[key]:  # an empty upstream map is free-form
                walk(value, theirs[key], path + ".")

    walk(ours, upstream, "")
    return problems


_CRD_SCHEMAS: Dict[str, Dict[str, Any]] = {}


def _crd_schema(reference_dir: Path, path: str, version: str) -> Dict[str, Any]:
    key = f"{path}@{version}"
    if key not in _CRD_SCHEMAS:
        crd = yaml.safe_load((reference_dir / path).read_text())
        _CRD_SCHEMAS[key] = next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]
    return _CRD_SCHEMAS[key]


def unknown_fields(schema: Dict[str, Any], value: Any, path: str) -> List[str]:
    """Fields the API server would prune or reject (not in a structural schema)."""
    found: List[str] = []
    if isinstance(value, dict) and "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        found += [f"{path}.{key}" for key in sorted(set(value) - set(schema["properties"]))]
        for key, child in schema["properties"].items():
            if key in value:
                found += unknown_fields(child, value[key], f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for position, item in enumerate(value):
            found += unknown_fields(schema["items"], item, f"{path}[{position}]")
    return found


CRD_FILES = {
    ("monitoring.coreos.com/v1", "PrometheusRule"): "crds/prometheus-operator/crd-prometheusrules.yaml",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "crds/prometheus-operator/crd-servicemonitors.yaml",
    ("nvidia.com/v1", "ClusterPolicy"): "crds/nvidia/nvidia.com_clusterpolicies.yaml",
}


def validate_manifest(obj: Dict[str, Any], reference_dir: Path) -> str:
    """Validate one object; returns what it was validated against."""
    api = obj["apiVersion"]
    if api.startswith("kueue.x-k8s.io/"):
        validate_kueue(reference_dir, obj)
        return "kueue CRD"
    crd = CRD_FILES.get((api, obj["kind"]))
    if crd:
        schema = _crd_schema(reference_dir, crd, api.split("/")[1])
        # No schema self-check: the prometheus-operator CRDs carry Go regexes ("(?i)" in the
        # middle) that Python's re rejects although no object of ours uses those fields.
        try:
            jsonschema.Draft7Validator(schema).validate(obj)
        except jsonschema.ValidationError as exc:
            raise AssertionError(f"{obj['kind']} {obj['metadata']['name']}: {exc.message}") from exc
        unknown = unknown_fields(schema, obj, obj["kind"])
        assert not unknown, f"{obj['kind']} {obj['metadata']['name']}: fields unknown to the CRD: {unknown}"
        return "upstream CRD"
    validate_core(obj)
    return "kubernetes schema"


def inventory_plan(name: str, backend: str | None = None) -> Dict[str, Any]:
    """The plan of inventories/<name> built by the collection's planner (no GPU facts)."""
    root = REPO / "inventories" / name
    settings = yaml.safe_load((root / "group_vars" / "all" / "gpushare.yml").read_text())
    nodes = {path.stem: yaml.safe_load(path.read_text())["gpushare_gpus"]
             for path in sorted((root / "host_vars").glob("*.yml"))}
    return build_plan(settings["gpushare_teams"], nodes, backend=backend or settings["gpushare_gpu_backend"],
                      distribution=settings["gpushare_kubernetes_distribution"],
                      kubernetes_version=str(settings["gpushare_kubernetes_version"]))


# --- the monitoring role's alerts template -------------------------------------------

MONITORING = REPO / "roles" / "monitoring"
ALERTS_TEMPLATE = MONITORING / "templates" / "gpushare.alerts.yml.j2"


def render_alerts(**overrides: Any) -> str:
    """The monitoring role's alerts template rendered with the role defaults (plus
    ``overrides``) by Jinja2 with the delimiters of the template's ``#jinja2:`` line, as
    Ansible's template lookup reads it. test_render_addons checks that the role's own
    rendering gives the same groups."""
    import jinja2

    text = ALERTS_TEMPLATE.read_text(encoding="utf-8")
    first, _sep, body = text.partition("\n")
    assert first.startswith("#jinja2:"), first
    options = {}
    for pair in first[len("#jinja2:"):].split(","):
        key, _sep, value = pair.partition(":")
        options[key.strip()] = yaml.safe_load(value.strip())
    variables = yaml.safe_load((MONITORING / "defaults" / "main.yml").read_text(encoding="utf-8"))
    variables.update(overrides)
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, **options)
    return environment.from_string(body).render(variables)
