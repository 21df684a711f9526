# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's rules and dashboards: promtool check and unit tests (each
recording rule's value, each alert firing and not firing) on the recording rules and the
alerts rendered with the role's default thresholds, and dashboards that only query
recorded or exported series."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from addon_checks import render_alerts

ROLE = Path(__file__).resolve().parents[3] / "roles" / "monitoring"
RULES = ROLE / "files" / "rules" / "gpushare.rules.yml"
# Where tests/gpushare.rules.test.yml expects the rendered alerts (see rule_layout).
RENDERED_ALERTS = Path("rendered") / "gpushare.alerts.yml"
RULE_TESTS = ROLE / "tests" / "gpushare.rules.test.yml"
DASHBOARDS = sorted((ROLE / "files" / "dashboards").glob("*.json"))
DCGM_CSV = ROLE.parent / "gpu_operator" / "files" / "dcgm-metrics.csv"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

# Names the collection's conventions fix (usage reports read them).
AGREED = {"gpushare:team_gpus_allocated", "gpushare:team_gpus_busy", "gpushare:team_gpus_idle_allocated",
          "gpushare:team_gpus_borrowed", "gpushare:team_gpus_lent", "gpushare:team_workloads_pending",
          "gpushare:gpu_allocated", "gpushare:gpu_busy_ratio"}
# kube-state-metrics series the rules read (the namespace and node label allowlists of
# the role's values make the label_* labels exist).
KUBE_STATE_METRICS = {"kube_namespace_labels", "kube_node_labels"}
PROMQL_WORDS = {"sum", "max", "min", "avg", "count", "by", "without", "on", "ignoring", "group_left", "group_right",
                "and", "or", "unless", "bool", "offset", "clamp_min", "clamp_max", "label_replace", "avg_over_time",
                "max_over_time", "min_over_time", "sum_over_time", "rate", "increase", "histogram_quantile",
                "topk", "bottomk", "label_values", "time", "vector", "abs", "le"}


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def rules() -> list:
    """Recording rules and the alerts rendered with the default thresholds."""
    return [rule for text in (RULES.read_text(), render_alerts())
            for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def rule_layout(directory: Path, rule_tests: str | None = None, **thresholds) -> Path:
    """A copy of the role's rule files as promtool reads them: the recording rules, the
    alerts rendered (defaults unless ``thresholds``) and the unit tests."""
    (directory / "files" / "rules").mkdir(parents=True)
    shutil.copy(RULES, directory / "files" / "rules" / RULES.name)
    (directory / RENDERED_ALERTS).parent.mkdir()
    (directory / RENDERED_ALERTS).write_text(render_alerts(**thresholds))
    (directory / "tests").mkdir()
    (directory / "tests" / RULE_TESTS.name).write_text(rule_tests or RULE_TESTS.read_text())
    return directory


def recorded() -> set:
    return {rule["record"] for rule in rules() if "record" in rule}


def exported_dcgm() -> set:
    names = set()
    for line in DCGM_CSV.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, kind = [part.strip() for part in line.split(",")[:2]]
            if kind != "label":
                names.add(name)
    return names


def kueue_metrics(reference_dir: Path) -> set:
    text = (reference_dir / "kueue" / "docs-v0.19.2" / "reference__metrics.md").read_text()
    return set(re.findall(r"`(kueue_[a-z_]+)`", text))


def series_in(expr: str) -> set:
    """Metric names an expression selects (identifiers that are not functions/keywords/labels)."""
    expr = re.sub(r'"[^"]*"', '""', expr)           # label values and regexes
    expr = re.sub(r"\{[^}]*\}", "{}", expr)         # label matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)          # range selectors
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
    return {n for n in names if n not in PROMQL_WORDS and not re.fullmatch(r"\d.*|e\d*", n)
            and not n.startswith("$") and (":" in n or "_" in n)}


def test_rules_pass_promtool_check(tmp_path):
    layout = rule_layout(tmp_path)
    result = promtool("check", "rules", str(RULES), str(layout / RENDERED_ALERTS), cwd=layout)
    assert result.returncode == 0, result.stdout + result.stderr
    recording = [r for r in rules() if "record" in r]
    assert f"SUCCESS: {len(recording)} rules found" in result.stdout
    assert f"SUCCESS: {len(rules()) - len(recording)} rules found" in result.stdout


def test_rules_pass_promtool_unit_tests(tmp_path):
    layout = rule_layout(tmp_path)
    result = promtool("test", "rules", f"tests/{RULE_TESTS.name}", cwd=layout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_alert_thresholds_come_from_the_role_variables(tmp_path):
    defaults = {a["alert"]: a["for"] for a in yaml.safe_load(render_alerts())["groups"][0]["rules"]}
    assert defaults == {"GpushareGPUAllocatedIdle": "3h", "GpushareGPUXidError": "0m", "GpushareGPURowRemapFailure": "0m",
                        "GpushareMIGConfigFailed": "5m", "GpushareWorkloadsPending": "2h"}
    text = render_alerts(monitoring_alert_gpu_idle_hours=6, monitoring_alert_workloads_pending_hours=12,
                         monitoring_alert_mig_config_failed_minutes=15)
    alerts = {a["alert"]: a for a in yaml.safe_load(text)["groups"][0]["rules"]}
    assert alerts["GpushareGPUAllocatedIdle"]["for"] == "6h"
    assert "for 6 h" in alerts["GpushareGPUAllocatedIdle"]["annotations"]["summary"]
    assert alerts["GpushareWorkloadsPending"]["for"] == "12h"
    assert "for 12 h" in alerts["GpushareWorkloadsPending"]["annotations"]["description"]
    assert alerts["GpushareMIGConfigFailed"]["for"] == "15m"
    # Prometheus' own templates pass through the role's templating untouched
    assert "{{ $labels.exported_namespace }}/{{ $labels.exported_pod }}" in alerts["GpushareGPUAllocatedIdle"][
        "annotations"]["summary"]
    # the unit tests expect the defaults: a 5 h idle threshold no longer fires at 4 h
    layout = rule_layout(tmp_path, monitoring_alert_gpu_idle_hours=5)
    result = promtool("test", "rules", f"tests/{RULE_TESTS.name}", cwd=layout)
    assert result.returncode != 0 and "GpushareGPUAllocatedIdle" in result.stdout + result.stderr


def test_unit_tests_cover_every_agreed_rule_and_every_alert():
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    exprs = {t["expr"] for case in tests for t in case.get("promql_expr_test", [])}
    assert AGREED <= recorded()
    assert AGREED <= exprs
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    firing = {t["alertname"] for case in tests for t in case.get("alert_rule_test", []) if t["exp_alerts"]}
    silent = {t["alertname"] for case in tests for t in case.get("alert_rule_test", []) if not t["exp_alerts"]}
    assert alerts == firing == silent
    assert {"GpushareGPUAllocatedIdle", "GpushareGPUXidError", "GpushareGPURowRemapFailure",
            "GpushareMIGConfigFailed", "GpushareWorkloadsPending"} <= alerts


def test_a_wrong_expectation_makes_promtool_fail(tmp_path):
    """The unit tests can fail: change one expected value and promtool must say so."""
    broken = RULE_TESTS.read_text().replace(
        "labels: 'gpushare:team_gpus_lent{team=\"data\"}'\n            value: 1",
        "labels: 'gpushare:team_gpus_lent{team=\"data\"}'\n            value: 2")
    assert broken != RULE_TESTS.read_text()
    rule_layout(tmp_path, broken)
    result = promtool("test", "rules", f"tests/{RULE_TESTS.name}", cwd=tmp_path)
    assert result.returncode != 0 and "gpushare:team_gpus_lent" in result.stdout + result.stderr


def test_rules_read_only_exported_or_recorded_series(reference_dir):
    known = recorded() | exported_dcgm() | kueue_metrics(reference_dir) | KUBE_STATE_METRICS
    for rule in rules():
        unknown = series_in(rule["expr"]) - known
        assert not unknown, f"{rule.get('record') or rule.get('alert')}: {sorted(unknown)}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def test_dashboards_query_only_recorded_or_exported_series(path, reference_dir):
    dashboard = json.loads(path.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["panels"]
    known = recorded() | exported_dcgm() | kueue_metrics(reference_dir)
    queries = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    queries += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert queries
    for query in queries:
        names = series_in(query)
        assert names, query
        assert names <= known, f"{path.name}: {query} uses {sorted(names - known)}"
        for target_ds in re.findall(r"\$\{?(\w+)", query):
            assert target_ds in {v["name"] for v in dashboard["templating"]["list"]}, query


def test_team_dashboard_shows_allocation_use_borrowing_and_idle():
    text = (ROLE / "files" / "dashboards" / "gpushare-teams.json").read_text()
    for name in ("gpushare:team_gpus_allocated", "gpushare:team_gpus_busy", "gpushare:team_gpus_borrowed",
                 "gpushare:team_gpus_lent", "gpushare:team_gpus_idle_allocated"):
        assert name in text
    gpus = (ROLE / "files" / "dashboards" / "gpushare-gpus.json").read_text()
    assert "GPU_I_PROFILE" in gpus and "hostname" in gpus and "Hostname" not in gpus


def test_dcgm_metrics_include_what_rules_and_dashboards_use():
    exported = exported_dcgm()
    used = set()
    for rule in rules():
        used |= {n for n in series_in(rule["expr"]) if n.startswith("DCGM_")}
    for path in DASHBOARDS:
        used |= set(re.findall(r"DCGM_[A-Z_]+", path.read_text()))
    assert used <= exported, sorted(used - exported)
    assert {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"} <= exported


def test_dcgm_csv_fields_exist_in_the_pinned_exporter(reference_dir):
    """Every field we ask dcgm-exporter for is one it knows (listed, maybe commented, upstream)."""
    upstream = ""
    for name in ("dcgm-exporter-dcp-metrics-included.csv", "dcgm-exporter-default-counters.csv"):
        upstream += (reference_dir / "monitoring" / name).read_text()
    known = set(re.findall(r"(DCGM_FI_[A-Z0-9_]+)\s*,", upstream))
    ours = {line.split(",")[0].strip() for line in DCGM_CSV.read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    assert ours <= known, sorted(ours - known)
