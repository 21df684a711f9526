# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side writer of render_addon and render_files: through a rename, only what differs."""

from __future__ import annotations

import os
import stat

import pytest
from ansible import constants as C

from ansible_collections.gpushare.cluster.plugins.plugin_utils import controller_files


def test_write_replaces_the_file_through_a_rename_and_leaves_no_scratch_file(tmp_path):
    target = tmp_path / "deep" / "dir" / "file.yaml"
    controller_files.write(str(target), b"first\n")
    assert target.read_bytes() == b"first\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert stat.S_IMODE(target.parent.stat().st_mode) & 0o755 == 0o755
    inode = target.stat().st_ino
    controller_files.write(str(target), b"second\n")
    assert target.read_bytes() == b"second\n"
    assert target.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert os.listdir(target.parent) == ["file.yaml"]


def test_write_removes_its_scratch_file_when_the_rename_fails(tmp_path, monkeypatch):
    def refuse(_source, _dest):
        raise OSError("rename refused")

    monkeypatch.setattr(controller_files.os, "rename", refuse)
    with pytest.raises(OSError, match="rename refused"):
        controller_files.write(str(tmp_path / "file.yaml"), b"content\n")
    assert os.listdir(tmp_path) == []


def test_read_is_none_for_a_missing_file(tmp_path):
    assert controller_files.read(str(tmp_path / "absent")) is None
    (tmp_path / "present").write_bytes(b"x")
    assert controller_files.read(str(tmp_path / "present")) == b"x"


def test_diff_shows_both_sides_and_an_absent_file_as_empty():
    assert controller_files.diff("values/kueue.yaml", None, b"a: 1\n") == {
        "before_header": "values/kueue.yaml", "after_header": "values/kueue.yaml", "before": "", "after": "a: 1\n"}
    assert controller_files.diff("x", b"old\n", b"new\n")["before"] == "old\n"


def test_diff_replaces_a_file_over_the_diff_limit_by_its_size():
    big = b"x" * (C.MAX_FILE_SIZE_FOR_DIFF + 1)
    diff = controller_files.diff("big.yaml", b"small\n", big)
    assert diff["before"] == "small\n"
    assert diff["after"] == "(%d bytes; larger than the diff limit, MAX_FILE_SIZE_FOR_DIFF)\n" % len(big)


def test_write_tree_writes_what_differs_and_reports_it(tmp_path):
    (tmp_path / "same.txt").write_text("same\n", encoding="utf-8")
    changed, diffs = controller_files.write_tree(str(tmp_path), {"same.txt": "same\n", "sub/new.txt": "new\n"},
                                                 with_diff=True)
    assert changed == ["sub/new.txt"]
    assert diffs == [controller_files.diff("sub/new.txt", None, b"new\n")]
    assert (tmp_path / "sub" / "new.txt").read_text(encoding="utf-8") == "new\n"
    assert controller_files.write_tree(str(tmp_path), {"same.txt": "same\n", "sub/new.txt": "new\n"}) == ([], [])


def test_write_tree_in_check_mode_writes_nothing(tmp_path):
    changed, diffs = controller_files.write_tree(str(tmp_path / "out"), {"a.txt": "a\n"}, check_mode=True)
    assert (changed, diffs) == (["a.txt"], [])
    assert not (tmp_path / "out").exists()
