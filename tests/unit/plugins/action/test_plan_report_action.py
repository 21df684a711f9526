# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan_report action: its helpers (files, atomic publish, comparison, names, failures) and
the run paths that need no inventory (a plan given), driven without a playbook."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.vault import AnsibleVaultError

from action_harness import example_plan, make_action
from ansible_collections.gpushare.cluster.plugins.action import plan_report
from ansible_collections.gpushare.cluster.plugins.module_utils.changes import plan_changes
from ansible_collections.gpushare.cluster.plugins.module_utils.preflight import layer_checks

STAMP = {"inventory": "inventory.yml", "version": "0.1.0", "date": "2026-01-02 03:04 UTC"}


@pytest.fixture(scope="module")
def plan():
    return example_plan()


def _run(args, task_vars=None, check_mode=False):
    task_vars = dict(task_vars or {})
    return make_action(plan_report.ActionModule, args, task_vars, check_mode=check_mode).run(task_vars=task_vars)


# generated_files, read_tree, publish


def test_generated_files_hold_the_plan_the_report_and_the_examples(plan):
    files = plan_report.generated_files(plan, "Title", examples=True, stamp=STAMP)
    assert {"plan.json", "index.html", "summary.txt"} <= set(files)
    assert json.loads(files["plan.json"]) == plan
    assert files["plan.json"].endswith(b"\n")
    assert b"Title" in files["index.html"]
    assert 'data-stamp-date="2026-01-02 03:04 UTC"' in files["index.html"].decode("utf-8")
    assert "changes.json" not in files
    examples = [name for name in files if name.startswith("manifests/examples/")]
    assert examples and all(name.endswith(".yaml") for name in examples)


def test_generated_files_without_examples_and_with_changes(plan):
    changes = plan_changes.compare(plan_changes.plan_state(plan, "the same plan"), plan)
    files = plan_report.generated_files(plan, "Title", examples=False, stamp=STAMP, changes=changes)
    assert not [name for name in files if name.startswith("manifests/")]
    assert json.loads(files["changes.json"]) == changes


def test_read_tree_is_empty_for_no_directory_and_reads_nested_files(tmp_path):
    assert plan_report.read_tree(None) == {}
    assert plan_report.read_tree(str(tmp_path / "absent")) == {}
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c.txt").write_bytes(b"c")
    (tmp_path / "top").write_bytes(b"t")
    assert plan_report.read_tree(str(tmp_path)) == {os.path.join("a", "b", "c.txt"): b"c", "top": b"t"}


def test_publish_replaces_the_directory_by_exactly_the_tree(tmp_path):
    dest = tmp_path / "plan"
    plan_report.publish(str(dest), {"plan.json": b"{}\n", "manifests/examples/x.yaml": b"x\n"})
    assert plan_report.read_tree(str(dest)) == {"plan.json": b"{}\n", os.path.join("manifests", "examples", "x.yaml"): b"x\n"}
    assert oct(dest.stat().st_mode & 0o777) == oct(0o755)
    (dest / "stale.txt").write_bytes(b"left by an earlier plan")
    plan_report.publish(str(dest), {"plan.json": b"[]\n"})
    assert plan_report.read_tree(str(dest)) == {"plan.json": b"[]\n"}
    assert sorted(os.listdir(tmp_path)) == ["plan"]  # no scratch or retired directory is left


def test_publish_that_fails_leaves_no_scratch_or_retired_directory(tmp_path, monkeypatch):
    dest = tmp_path / "plan"
    plan_report.publish(str(dest), {"plan.json": b"old\n"})
    real_rename = os.rename

    def fail_switch(source, target):
        if str(target) == str(dest):
            raise OSError("disk gone")
        return real_rename(source, target)

    monkeypatch.setattr(plan_report.os, "rename", fail_switch)
    with pytest.raises(OSError, match="disk gone"):
        plan_report.publish(str(dest), {"plan.json": b"new\n"})
    assert os.listdir(tmp_path) == []


# old_plan_state, inventory_names, previous_date, dated_tree


def test_old_plan_state_reads_the_plan_json_of_a_directory(tmp_path, plan):
    plan_report.publish(str(tmp_path / "old"), {"plan.json": json.dumps(plan).encode("utf-8")})
    state = plan_report.old_plan_state(str(tmp_path / "old"))
    assert state == plan_changes.plan_state(plan, "plan directory %s" % (tmp_path / "old"))


@pytest.mark.parametrize("content", [None, b"not json"])
def test_old_plan_state_refuses_a_directory_without_a_plan(tmp_path, content):
    if content is not None:
        (tmp_path / "plan.json").write_bytes(content)
    with pytest.raises(ValueError, match=r"gpushare_plan_compare: .* is neither `cluster` nor a plan directory"):
        plan_report.old_plan_state(str(tmp_path))


def test_inventory_names_are_relative_inside_the_working_directory():
    cwd = os.path.join(os.sep, "work", "site")
    sources = [os.path.join(cwd, "inventory", "hosts.yml"), os.path.join(os.sep, "etc", "ansible", "hosts"),
               os.path.join(os.sep, "work", "site-other", "hosts"), "relative.yml"]
    assert plan_report.inventory_names(sources, cwd) == ", ".join(
        [os.path.join("inventory", "hosts.yml"), os.path.join(os.sep, "etc", "ansible", "hosts"),
         os.path.join(os.sep, "work", "site-other", "hosts"), "relative.yml"])
    assert plan_report.inventory_names([], cwd) == "none"
    assert plan_report.inventory_names(None, cwd) == "none"


def test_previous_date_is_read_from_the_report():
    assert plan_report.previous_date({"index.html": b'<p data-stamp-date="2026-05-06 07:08 UTC">'}) == \
        "2026-05-06 07:08 UTC"
    assert plan_report.previous_date({}) is None


def _dated_build(body):
    def build(date):
        return {"index.html": ('<p data-stamp-date="%s">%s</p>' % (date, body)).encode("utf-8")}
    return build


def test_an_unchanged_plan_keeps_its_date(monkeypatch):
    monkeypatch.setattr(plan_report, "now_stamp_date", lambda: "2026-12-04 10:00 UTC")
    existing = _dated_build("same")("2026-05-06 07:08 UTC")
    assert plan_report.dated_tree(_dated_build("same"), existing) == (existing, False)


@pytest.mark.parametrize("existing", [{}, {"index.html": b"<p>no stamp</p>"},
                                      {"index.html": b'<p data-stamp-date="2026-05-06 07:08 UTC">old</p>'}])
def test_a_new_or_changed_plan_is_dated_now(monkeypatch, existing):
    monkeypatch.setattr(plan_report, "now_stamp_date", lambda: "2026-12-04 10:00 UTC")
    tree, changed = plan_report.dated_tree(_dated_build("new"), existing)
    assert changed is True
    assert tree == _dated_build("new")("2026-12-04 10:00 UTC")


# failure, _vaulted


def test_failure_lists_each_problem_once_and_points_to_them():
    result = plan_report.failure({"x": 1}, ("first", "second"))
    assert result == {"x": 1, "failed": True, "changed": False, "errors": ["first", "second"],
                      "msg": "the plan cannot be made: 2 problems, listed under errors"}
    assert plan_report.failure({}, ["only"])["msg"] == "the plan cannot be made: 1 problem, listed under errors"


class UndecryptableVaultError(Exception):
    """Named as ansible-core 2.19's internal class is."""


def _raised(outer, cause):
    try:
        try:
            raise cause
        except Exception as inner:
            raise outer from inner
    except Exception as error:
        return error


def test_vaulted_follows_causes_to_a_vault_error():
    assert plan_report._vaulted(AnsibleVaultError("no vault secrets")) is True
    assert plan_report._vaulted(_raised(AnsibleError("template failed"), AnsibleVaultError("locked"))) is True
    assert plan_report._vaulted(_raised(AnsibleError("template failed"), UndecryptableVaultError())) is True
    wrapped = AnsibleError("wrapped")
    wrapped.orig_exc = AnsibleVaultError("locked")
    assert plan_report._vaulted(wrapped) is True
    assert plan_report._vaulted(_raised(AnsibleError("template failed"), KeyError("undefined"))) is False
    assert plan_report._vaulted(None) is False


def test_vaulted_ends_on_a_cycle_of_causes():
    first, second = AnsibleError("a"), AnsibleError("b")
    first.__cause__, second.__cause__ = second, first
    assert plan_report._vaulted(first) is False


# _layer_values: secrets are only ever "set" or not


class _HostVars(dict):
    def raw_get(self, host):
        return self.get(host)


class _Templar:
    """Templates a value by looking it up in ``failures`` (name of an exception factory) or returns it."""

    def __init__(self, failures):
        self.failures = failures

    def copy_with_new_env(self, available_variables):
        del available_variables
        return self

    def template(self, value):
        if isinstance(value, str) and value in self.failures:
            raise self.failures[value]()
        return value


def _layer_values(raw, failures):
    action = make_action(plan_report.ActionModule, {})
    action._templar = _Templar(failures)
    errors = []
    values = action._layer_values(_HostVars(cp1=raw, gpu1=None), {"control_plane": ["cp1"], "workers": ["gpu1"]},
                                  errors)
    return values, errors


def test_a_set_secret_is_only_reported_as_set():
    secret = "correct-horse-battery-staple"
    values, errors = _layer_values({"monitoring_grafana_admin_password": secret, "host_prep_ciq_token": ""}, {})
    assert values["cp1"]["monitoring_grafana_admin_password"] == layer_checks.SET
    assert values["cp1"]["host_prep_ciq_token"] == ""
    assert errors == []
    assert secret not in repr(values)
    assert "gpu1" not in values  # a host the inventory does not have is left to the topology check


def test_a_vaulted_secret_counts_as_set_and_a_vaulted_setting_is_refused_without_its_value():
    vaulted = "VAULTED-CIPHERTEXT"
    values, errors = _layer_values(
        {"monitoring_grafana_admin_password": vaulted, "monitoring_storage_class": vaulted},
        {vaulted: lambda: _raised(AnsibleError("cannot template"), AnsibleVaultError("no vault secrets"))})
    assert values["cp1"]["monitoring_grafana_admin_password"] == layer_checks.SET
    assert "monitoring_storage_class" not in values["cp1"]
    assert errors == ["host cp1, field monitoring_storage_class: vaulted, and no vault password was given"]
    assert vaulted not in " ".join(errors)


def test_a_secret_that_cannot_be_evaluated_is_named_with_the_error_not_the_value():
    broken = "{{ undefined_variable }}-p4ssw0rd"
    values, errors = _layer_values({"monitoring_grafana_admin_password": broken},
                                   {broken: lambda: AnsibleError("'undefined_variable' is undefined")})
    assert "monitoring_grafana_admin_password" not in values["cp1"]
    assert errors == ["host cp1, field monitoring_grafana_admin_password: cannot be evaluated on the controller: "
                      "'undefined_variable' is undefined"]
    assert "p4ssw0rd" not in errors[0]


# run with a plan given


def test_run_writes_the_plan_directory_and_a_second_run_changes_nothing(tmp_path, plan):
    dest = tmp_path / "plan"
    args = {"plan": plan, "dest": str(dest), "examples": False, "title": "Lab"}
    task_vars = {"ansible_inventory_sources": [str(tmp_path / "hosts.yml")]}
    result = _run(args, task_vars)
    assert result["changed"] is True
    assert result["html"] == str(dest / "index.html")
    assert result["files"] == ["index.html", "plan.json", "summary.txt"]
    assert sorted(plan_report.read_tree(str(dest))) == result["files"]
    assert json.loads((dest / "plan.json").read_text(encoding="utf-8")) == plan
    assert result["warnings_count"] == len(plan["warnings"])
    assert "plan" not in result
    written = plan_report.read_tree(str(dest))

    again = _run(dict(args, return_plan=True), task_vars)
    assert again["changed"] is False
    assert plan_report.read_tree(str(dest)) == written  # the date is kept when nothing else changed
    assert again["plan"] == plan


def test_run_in_check_mode_writes_nothing(tmp_path, plan):
    result = _run({"plan": plan, "dest": str(tmp_path / "plan")}, check_mode=True)
    assert result["changed"] is True
    assert "plan.json" in result["files"]
    assert not (tmp_path / "plan").exists()


def test_run_without_write_hands_the_plan_to_later_tasks(plan):
    result = _run({"plan": plan, "write": False})
    assert result == {"changed": False, "ansible_facts": {"gpushare_plan": plan},
                      "warnings_count": len(plan["warnings"])}


def test_run_refuses_a_destination_that_is_a_file(tmp_path, plan):
    dest = tmp_path / "plan"
    dest.write_text("a file", encoding="utf-8")
    result = _run({"plan": plan, "dest": str(dest)})
    assert result["failed"] is True
    assert result["errors"] == ["gpushare_plan_dir: %s exists and is not a directory; the plan directory would "
                                "replace it (move that file away or choose another gpushare_plan_dir)" % dest]
    assert dest.read_text(encoding="utf-8") == "a file"


def test_run_compares_with_an_earlier_plan_directory(tmp_path, plan):
    old = tmp_path / "old"
    _run({"plan": plan, "dest": str(old), "examples": False})
    result = _run({"plan": plan, "dest": str(tmp_path / "new"), "examples": False, "compare": str(old)})
    assert "changes" in result and result["changes_summary"]
    assert "changes.json" in result["files"]
    assert json.loads((tmp_path / "new" / "changes.json").read_text(encoding="utf-8")) == result["changes"]


def test_run_fails_when_the_compared_directory_holds_no_plan(tmp_path, plan):
    result = _run({"plan": plan, "dest": str(tmp_path / "new"), "compare": str(tmp_path)})
    assert result["failed"] is True
    assert len(result["errors"]) == 1 and "is neither `cluster` nor a plan directory" in result["errors"][0]
    assert not (tmp_path / "new").exists()
