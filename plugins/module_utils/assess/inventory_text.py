# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proposal as inventory text: a host_vars file whose gpushare_gpus is the proposed split.

Everything else the user wrote in that file (other variables, comments, vaulted values) is
kept as written; only the ``gpushare_gpus`` block is replaced, each GPU with the evidence for
its proposal as a comment above it. Pure Python, no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Sequence

KEY = "gpushare_gpus"
_TOP_LEVEL = re.compile(r"^[^\s#-]|^---|^\.\.\.")


def without_key(text: str, key: str = KEY) -> str:
    """``text`` of a YAML mapping without the top-level ``key`` and its block."""
    kept: List[str] = []
    inside = False
    for line in text.splitlines():
        if re.match(r"^%s\s*:" % re.escape(key), line):
            inside = True
            continue
        if inside and (_TOP_LEVEL.match(line) or (line.startswith("#") and not line.startswith("# GPU"))):
            inside = False
        if not inside:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept) + "\n" if kept else ""


def _flow(value: Any) -> str:
    """A value in YAML flow style (JSON strings are valid YAML; plain keys read better)."""
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (key, _flow(item)) for key, item in value.items())
    if isinstance(value, list):
        return "[%s]" % ", ".join(_flow(item) for item in value)
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", value) and value.lower() not in (
            "yes", "no", "true", "false", "null", "on", "off", "y", "n"):
        return value
    return json.dumps(value)


def _comment(text: str, indent: str = "  ", width: int = 110) -> List[str]:
    words, lines, line = text.split(), [], indent + "#"
    for word in words:
        if len(line) + 1 + len(word) > width and line != indent + "#":
            lines.append(line)
            line = indent + "#"
        line += " " + word
    lines.append(line)
    return lines


def gpus_block(gpus: Sequence[Dict[str, Any]]) -> str:
    """``gpushare_gpus:`` with one flow entry per GPU, its evidence as a comment above it."""
    lines = ["%s:" % KEY]
    for gpu in gpus:
        lines += _comment("GPU %s (%s, %s): %s"
                          % (gpu["index"], gpu.get("model"), gpu.get("uuid") or "no samples", gpu["why"]))
        lines.append("  - %s" % _flow(gpu["proposed"]))
    return "\n".join(lines) + "\n"


def host_vars_text(existing: Optional[str], gpus: Sequence[Dict[str, Any]], header: str) -> str:
    """The proposed host_vars file: the user's other settings kept, gpushare_gpus replaced."""
    kept = without_key(existing or "---\n")
    if not kept.startswith("---"):
        kept = "---\n" + kept
    return "%s%s\n%s" % (kept, "\n".join(_comment(header, indent="")), gpus_block(gpus))


def replay_text(replay: Dict[str, Any]) -> str:
    """replay.yml: the busiest day's steps as a vars file for playbooks/rehearse.yml, one step a line."""
    lines = _comment("The busiest recorded day (%s) as rehearsal steps: each session a workload of its team, asking "
                     "for what the proposal gives it, in %d-minute slots. Replay it on the rehearsal against the "
                     "proposal: ansible-playbook -i <this directory>/proposal playbooks/rehearse.yml -e "
                     "@<this directory>/replay.yml; its rehearsal.json then says under waits how long each team's "
                     "work waited." % (replay["day"], replay["slot_minutes"]), indent="")
    lines.append("gpushare_rehearsal_steps:")
    lines.extend("  - %s" % _flow(step) for step in replay["steps"])
    return "\n".join(lines) + "\n"
