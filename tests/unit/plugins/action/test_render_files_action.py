# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render_files action: role templates and given content written on the controller, in one task."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.loader import lookup_loader

from action_harness import make_action
from ansible_collections.gpushare.cluster.plugins.action import render_files


@pytest.fixture(autouse=True)
def builtin_lookups(monkeypatch):
    """Resolve ansible.builtin.* lookups as a playbook run does: this process has no collection
    finder installed (ansible-playbook installs one), so the fully qualified name is mapped to
    the same builtin plugin by its short name."""
    get = lookup_loader.get

    def builtin(name, *args, **kwargs):
        return get(name.removeprefix("ansible.builtin."), *args, **kwargs)

    monkeypatch.setattr(render_files.lookup_loader, "get", builtin)


@pytest.fixture
def role(tmp_path):
    """A role directory with two templates; the search path a role's task has."""
    templates = tmp_path / "role" / "templates"
    templates.mkdir(parents=True)
    (templates / "greeting.j2").write_text("{{ ansible_managed | comment }}\nhello {{ name }}\n", encoding="utf-8")
    (templates / "plain.j2").write_text("no newline at the end", encoding="utf-8")
    return tmp_path / "role"


def _run(role, args, check_mode=False, diff=False, **variables):
    task_vars = {"ansible_search_path": [str(role)], "name": "world", **variables}
    return make_action(render_files.ActionModule, args, task_vars=task_vars, check_mode=check_mode,
                       diff=diff).run(task_vars=task_vars)


def test_templates_and_content_are_written_then_nothing_changes(tmp_path, role):
    dest = tmp_path / "out"
    args = {"dest": str(dest), "files": [
        {"path": "greeting.txt", "template": "greeting.j2"},
        {"path": "plain.txt", "template": "plain.j2"},
        {"path": "deep/given.yaml", "content": "a: 1\n"},
    ]}
    result = _run(role, args)
    assert result["changed"] is True
    assert result["files"] == ["greeting.txt", "plain.txt", "deep/given.yaml"]
    assert result["changed_files"] == result["files"]
    greeting = (dest / "greeting.txt").read_text(encoding="utf-8")
    # ansible_managed as the template action sets it, the trailing newline kept.
    assert greeting.startswith("#\n# Ansible managed\n#\n")
    assert greeting.endswith("\nhello world\n")
    assert (dest / "plain.txt").read_text(encoding="utf-8") == "no newline at the end"
    assert (dest / "deep" / "given.yaml").read_text(encoding="utf-8") == "a: 1\n"

    again = _run(role, args)
    assert (again["changed"], again["changed_files"]) == (False, [])


def test_an_entry_whose_when_is_false_is_neither_rendered_nor_written(tmp_path, role):
    (role / "templates" / "broken.j2").write_text("{{ undefined_variable }}\n", encoding="utf-8")
    result = _run(role, {"dest": str(tmp_path / "out"), "files": [
        {"path": "broken.txt", "template": "broken.j2", "when": False},
        {"path": "greeting.txt", "template": "greeting.j2", "when": True},
    ]})
    assert result["files"] == ["greeting.txt"]
    assert os.listdir(tmp_path / "out") == ["greeting.txt"]


def test_a_template_variable_changes_the_file_and_diff_mode_shows_it(tmp_path, role):
    args = {"dest": str(tmp_path), "files": [{"path": "greeting.txt", "template": "greeting.j2"}]}
    _run(role, args)
    result = _run(role, args, diff=True, name="cluster")
    assert result["changed_files"] == ["greeting.txt"]
    [entry] = result["diff"]
    assert entry["before"].endswith("hello world\n") and entry["after"].endswith("hello cluster\n")


def test_check_mode_writes_nothing(tmp_path, role):
    result = _run(role, {"dest": str(tmp_path / "out"), "files": [{"path": "x", "content": "x\n"}]}, check_mode=True)
    assert (result["changed"], result["changed_files"]) == (True, ["x"])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside", "a/../../outside", ".", "a/.."])
def test_a_path_that_leaves_dest_is_refused_before_anything_is_written(tmp_path, role, path):
    with pytest.raises(AnsibleActionFail, match="must name a file under dest"):
        _run(role, {"dest": str(tmp_path / "out"), "files": [{"path": "first", "content": ""}, {"path": path, "content": ""}]})
    assert not (tmp_path / "out").exists()


def test_a_path_listed_twice_is_refused(tmp_path, role):
    with pytest.raises(AnsibleActionFail, match="listed twice"):
        _run(role, {"dest": str(tmp_path), "files": [{"path": "a", "content": "1"}, {"path": "./a", "content": "2"}]})
    assert os.listdir(tmp_path) == ["role"]


@pytest.mark.parametrize("entry, message", [
    ({"path": "a", "content": "1", "template": "greeting.j2"}, "mutually exclusive"),
    ({"path": "a"}, "one of the following is required"),
    ({"content": "1"}, "path"),
])
def test_an_entry_without_exactly_one_source_is_refused(tmp_path, role, entry, message):
    with pytest.raises(AnsibleActionFail, match=message):
        _run(role, {"dest": str(tmp_path / "out"), "files": [entry]})


def test_a_missing_template_is_named(tmp_path, role):
    with pytest.raises(Exception, match="absent.j2"):
        _run(role, {"dest": str(tmp_path / "out"), "files": [{"path": "a", "template": "absent.j2"}]})
    assert not (tmp_path / "out").exists()
