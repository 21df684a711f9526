# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render_addon action: every file of one add-on written in one task, idempotent, check and diff mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleActionFail

from action_harness import example_plan, make_action
from ansible_collections.gpushare.cluster.plugins.action import render_addon


@pytest.fixture(scope="module")
def plan():
    return example_plan()


def _run(args, check_mode=False, diff=False):
    return make_action(render_addon.ActionModule, args, check_mode=check_mode, diff=diff).run(task_vars={})


def _tree(root):
    return sorted(str(path.relative_to(root)) for path in Path(root).rglob("*") if path.is_file())


def test_run_writes_every_file_of_the_addon_then_changes_nothing(tmp_path, plan):
    result = _run({"addon": "kueue", "plan": plan, "dest": str(tmp_path)})
    assert result["changed"] is True
    assert result["dest"] == str(tmp_path)
    assert sorted(result["files"]) == ["manifests/kueue/queues.yaml", "values/kueue.yaml"]
    assert sorted(result["changed_files"]) == sorted(result["files"])
    assert _tree(tmp_path) == sorted(result["files"])
    assert "diff" not in result
    queues = list(yaml.safe_load_all((tmp_path / "manifests/kueue/queues.yaml").read_text(encoding="utf-8")))
    assert {"ClusterQueue", "LocalQueue"} <= {document["kind"] for document in queues if document}

    again = _run({"addon": "kueue", "plan": plan, "dest": str(tmp_path)})
    assert again["changed"] is False
    assert again["changed_files"] == []


def test_run_rewrites_only_the_file_that_differs_and_diffs_it(tmp_path, plan):
    _run({"addon": "kueue", "plan": plan, "dest": str(tmp_path)})
    values = tmp_path / "values" / "kueue.yaml"
    wanted = values.read_text(encoding="utf-8")
    values.write_text("edited: by hand\n", encoding="utf-8")
    result = _run({"addon": "kueue", "plan": plan, "dest": str(tmp_path)}, diff=True)
    assert result["changed"] is True
    assert result["changed_files"] == ["values/kueue.yaml"]
    assert result["diff"] == [{"before_header": "values/kueue.yaml", "after_header": "values/kueue.yaml",
                               "before": "edited: by hand\n", "after": wanted}]
    assert values.read_text(encoding="utf-8") == wanted


def test_check_mode_reports_the_changes_and_writes_nothing(tmp_path, plan):
    dest = tmp_path / "rendered"
    result = _run({"addon": "tenancy", "plan": plan, "dest": str(dest)}, check_mode=True, diff=True)
    assert result["changed"] is True
    assert sorted(result["changed_files"]) == sorted(result["files"])
    assert [entry["before"] for entry in result["diff"]] == [""] * len(result["files"])
    assert not dest.exists()


def test_an_unknown_addon_is_refused_by_the_argument_spec(tmp_path, plan):
    with pytest.raises(AnsibleActionFail, match="addon"):
        _run({"addon": "nope", "plan": plan, "dest": str(tmp_path)})
    assert os.listdir(tmp_path) == []
