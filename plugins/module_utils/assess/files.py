# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The assessment's only I/O: read the fetched sample files, write the output directory.

The output is made in a new directory beside ``dest`` and swapped in by renames, so a run that
fails leaves the previous assessment as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpushare.cluster.plugins.module_utils.assess.inventory_text import (
    host_vars_text, replay_text, without_key)
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.page import render_page
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.samples import (
    AssessDataError, HostSamples, SampleFile, read_host)

PAGE = "assessment.html"
REPLAY = "replay.yml"
GPU_PATTERN = "gpus*.csv"
APP_PATTERN = "apps*.csv"


def _read(path: Path, root: Path) -> SampleFile:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise AssessDataError("file %s: cannot be read: %s" % (path, error))
    return SampleFile(str(path.relative_to(root)), text.splitlines())


def read_samples(samples_dir: str, hosts: Sequence[str], problems: List[str]) -> Dict[str, Optional[HostSamples]]:
    """Every host's samples under ``samples_dir/<host>/`` (None for a host without files)."""
    root = Path(samples_dir)
    if not root.is_dir():
        raise AssessDataError("gpushare_assess_samples_dir %s: not a directory" % samples_dir)
    found: Dict[str, Optional[HostSamples]] = {}
    for host in hosts:
        folder = root / host
        gpu_files = sorted(folder.glob(GPU_PATTERN)) if folder.is_dir() else []
        if not gpu_files:
            found[host] = None
            continue
        found[host] = read_host(host, [_read(path, folder) for path in gpu_files],
                                [_read(path, folder) for path in sorted(folder.glob(APP_PATTERN))])
    strays = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in hosts)
    if strays:
        problems.append("samples of %s: not GPU hosts of the inventory; ignored" % ", ".join(strays))
    return found


def _copy_inventory(source: Path, target: Path) -> Path:
    """Copy an inventory (directory, or file with its group_vars/host_vars) to target; its host_vars dir."""
    if source.is_dir():
        shutil.copytree(str(source), str(target), symlinks=True)
    else:
        target.mkdir(parents=True)
        shutil.copy2(str(source), str(target / source.name))
        for folder in ("group_vars", "host_vars"):
            if (source.parent / folder).is_dir():
                shutil.copytree(str(source.parent / folder), str(target / folder), symlinks=True)
    return target / "host_vars"


def _write_host_vars(host_vars: Path, host: str, gpus: Sequence[Dict[str, Any]], header: str) -> None:
    host_vars.mkdir(exist_ok=True)
    folder = host_vars / host
    if folder.is_dir():
        for path in sorted(folder.glob("*.y*ml")):
            path.write_text(without_key(path.read_text(encoding="utf-8")), encoding="utf-8")
        target = folder / "gpushare_gpus.yml"
    else:
        target = next((path for path in (host_vars / (host + ext) for ext in (".yml", ".yaml", ""))
                       if path.is_file()), host_vars / (host + ".yml"))
    existing = target.read_text(encoding="utf-8") if target.is_file() else None
    target.write_text(host_vars_text(existing, gpus, header), encoding="utf-8")


def render(assessment: Mapping[str, Any], inventory: str, tree: Path) -> None:
    """Write assessment.json, assessment.html, proposal/ and (when the busiest day had sessions)
    replay.yml into ``tree`` (a new directory)."""
    tree.mkdir(parents=True)
    (tree / "assessment.json").write_text(json.dumps(assessment, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (tree / PAGE).write_text(render_page(assessment), encoding="utf-8")
    if (assessment.get("replay") or {}).get("steps"):
        (tree / REPLAY).write_text(replay_text(assessment["replay"]), encoding="utf-8")
    source = Path(inventory)
    if not source.exists():
        raise AssessDataError("inventory %s: not found, so no proposal inventory can be written" % inventory)
    host_vars = _copy_inventory(source, tree / "proposal")
    window = assessment["window"]
    header = ("Proposed by playbooks/assess.yml from the samples of %s to %s; the evidence is beside each GPU. "
              "Review, then: ansible-playbook -i <this directory> playbooks/plan.yml" % (window["from"], window["to"]))
    by_host: Dict[str, List[Dict[str, Any]]] = {}
    for gpu in assessment["gpus"]:
        by_host.setdefault(gpu["host"], []).append(gpu)
    for host, gpus in sorted(by_host.items()):
        _write_host_vars(host_vars, host, gpus, header)


def publish(assessment: Mapping[str, Any], inventory: str, dest: str) -> None:
    """Write the assessment to ``dest`` in one swap: on failure ``dest`` is left as it was."""
    target = Path(dest)
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".%s-new-" % target.name, dir=str(target.parent)))
    try:
        render(assessment, inventory, fresh / "tree")
    except BaseException:
        shutil.rmtree(str(fresh), ignore_errors=True)
        raise
    retired = fresh / "old"
    if target.exists():
        os.rename(str(target), str(retired))
    os.rename(str(fresh / "tree"), str(target))
    shutil.rmtree(str(fresh), ignore_errors=True)


def unchanged(assessment: Mapping[str, Any], dest: str) -> bool:
    """True when ``dest`` already holds this assessment, and its page as this collection draws it."""
    path = Path(dest) / "assessment.json"
    try:
        return (json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(assessment, sort_keys=True))
                and (Path(dest) / PAGE).read_text(encoding="utf-8") == render_page(assessment))
    except (OSError, ValueError):
        return False
