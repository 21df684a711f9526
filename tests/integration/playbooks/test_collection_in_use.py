# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A checkout runs its own gpushare.cluster, and says which copy is in use when there are several.

Each run starts from an empty environment (no ANSIBLE_COLLECTIONS_PATH, no ANSIBLE_CONFIG)
with a temporary HOME, as a fresh shell of a new user would; a stale copy of the
collection (version 0.0.9) is put in that HOME's ~/.ansible/collections where a test needs it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = REPO_ROOT / "inventories" / "example"
PLAN = REPO_ROOT / "playbooks" / "plan.yml"


@pytest.fixture(scope="module", autouse=True)
def collection_link():
    """What `make collection-link` does (the documented first step from a checkout)."""
    subprocess.run(["make", "-s", "-C", str(REPO_ROOT), "collection-link"], check=True, capture_output=True)


def _fresh_run(home: Path, cwd: Path, plan_dir: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "%s:/usr/bin:/bin" % Path(sys.executable).parent, "HOME": str(home), "LANG": "C.UTF-8",
           "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(EXAMPLE), str(PLAN),
                           "-e", "gpushare_plan_dir=%s" % plan_dir, "-e", "gpushare_plan_render_addons=false"],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600, check=False)


def _stale_copy(home: Path) -> Path:
    """An installed gpushare.cluster 0.0.9 (the current code; only the version differs)."""
    root = home / ".ansible" / "collections" / "ansible_collections" / "gpushare" / "cluster"
    for part in ("plugins", "roles", "meta", "playbooks"):
        shutil.copytree(REPO_ROOT / part, root / part, symlinks=False,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (root / "MANIFEST.json").write_text(json.dumps({"collection_info": {"namespace": "gpushare", "name": "cluster",
                                                                        "version": "0.0.9"}}))
    return root


def test_a_checkout_plans_without_any_collection_setting(tmp_path):
    result = _fresh_run(tmp_path / "home", REPO_ROOT, tmp_path / "plan")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "plan" / "plan.json").is_file()
    assert "WARNING: this playbook comes from" not in result.stdout
    assert "also found, not used" not in result.stdout


def test_the_checkout_wins_over_a_stale_copy_and_says_so(tmp_path):
    stale = _stale_copy(tmp_path / "home")
    result = _fresh_run(tmp_path / "home", REPO_ROOT, tmp_path / "plan")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert ("gpushare.cluster in use: %s (version %s); also found, not used: %s" % (REPO_ROOT.resolve(), _checkout_version(), stale.resolve())
            in result.stdout.replace("\n", " ")), result.stdout
    assert "WARNING: this playbook comes from" not in result.stdout


def test_a_stale_copy_in_use_is_named_before_the_plan(tmp_path):
    # From another directory the checkout's ansible.cfg is not read: the stale copy is loaded.
    stale = _stale_copy(tmp_path / "home")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _fresh_run(tmp_path / "home", elsewhere, tmp_path / "plan")
    out = " ".join(result.stdout.split())
    warning = ("WARNING: this playbook comes from %s (version %s), but gpushare.cluster is loaded from %s (version 0.0.9)"
               % (REPO_ROOT.resolve(), _checkout_version(), stale.resolve()))
    assert warning in out, result.stdout[-3000:]
    assert out.index(warning) < out.index("TASK [Validate the inventory, plan, and write the plan directory]")
    assert "ANSIBLE_COLLECTIONS_PATH=%s/build/collections" % REPO_ROOT.resolve() in out


def _checkout_version() -> str:
    for line in (REPO_ROOT / "galaxy.yml").read_text().splitlines():
        if line.startswith("version:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("galaxy.yml has no version")
