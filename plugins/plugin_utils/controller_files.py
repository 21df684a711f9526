# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files the collection's action plugins write on the controller, in the Ansible process.

A ``template`` or ``copy`` task delegated to localhost runs two modules per file (``stat``,
then ``copy``), each a Python start-up; the render entry points write tens of files per host,
so they write through here instead: only a file whose bytes differ is replaced, through a
rename, and check and diff mode are honoured as by ``copy``.
"""

from __future__ import annotations

import os
import tempfile

from ansible import constants as C


def read(path):
    """The bytes at path, None when there is no file."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write(path, content):
    """Replace path by content through a rename, so a reader never sees half a file."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(scratch, 0o644)
        os.rename(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def diff(relative, before, after):
    """One entry of a task's diff list, the way ``copy`` shows a file."""
    def shown(content):
        if content is None:
            return ""
        if len(content) > C.MAX_FILE_SIZE_FOR_DIFF:
            return "(%d bytes; larger than the diff limit, MAX_FILE_SIZE_FOR_DIFF)\n" % len(content)
        return content.decode("utf-8")
    return {"before_header": relative, "after_header": relative, "before": shown(before), "after": shown(after)}


def write_tree(dest, files, check_mode=False, with_diff=False):
    """Write {relative path: text} under dest. Returns (changed relative paths, diff entries)."""
    changed, diffs = [], []
    for relative, text in files.items():
        path = os.path.join(dest, relative)
        content = text.encode("utf-8")
        before = read(path)
        if before == content:
            continue
        changed.append(relative)
        if with_diff:
            diffs.append(diff(relative, before, content))
        if not check_mode:
            write(path, content)
    return changed, diffs


def write_result(result, dest, files, task):
    """Write {relative path: text} under dest for an action's task (its check and diff mode), and
    record changed, dest, files, changed_files and the diff in the action's result."""
    changed, diffs = write_tree(dest, files, task.check_mode, task.diff)
    result.update(changed=bool(changed), dest=dest, files=list(files), changed_files=changed)
    if diffs:
        result["diff"] = diffs
    return result
