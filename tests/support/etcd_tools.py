# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""etcdctl and etcdutl of the rehearsal's etcd release, and the kubeadm role's snapshot script,
for the tests that snapshot and restore a real etcd (tests/integration/etcd_backup and the
rehearsal's restore test).

The two tools are built from the published Go modules of tests/integration/etcd_backup/go into
``GPUSHARE_ETCD_TOOLS`` (default ``~/.cache/gpushare/etcd-tools/v3.6.16``) when absent; without
them and without ``go`` the caller's test is skipped with the reason.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict

import jinja2
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
GO_DIR = REPO_ROOT / "tests" / "integration" / "etcd_backup" / "go"
TOOLS_DIR = Path(os.path.expanduser(os.environ.get("GPUSHARE_ETCD_TOOLS", "~/.cache/gpushare/etcd-tools/v3.6.16")))
ROLE = REPO_ROOT / "roles" / "kubeadm"


def _built() -> bool:
    return all(os.access(TOOLS_DIR / name, os.X_OK) for name in ("etcdctl", "etcdutl"))


def tools() -> Dict[str, str]:
    """{"etcdctl": path, "etcdutl": path}, built once into :data:`TOOLS_DIR` (a lock keeps two
    pytest-xdist workers from building them at once); skips without go."""
    if not _built():
        if shutil.which("go") is None:
            pytest.skip("etcdctl/etcdutl are not built and there is no go to build them")
        TOOLS_DIR.mkdir(parents=True, exist_ok=True)
        with open(TOOLS_DIR / "build.lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _built():
                subprocess.run(["go", "build", "-trimpath", "-o", str(TOOLS_DIR) + "/", "go.etcd.io/etcd/etcdctl/v3",
                                "go.etcd.io/etcd/etcdutl/v3"], cwd=GO_DIR, check=True)
    return {"etcdctl": str(TOOLS_DIR / "etcdctl"), "etcdutl": str(TOOLS_DIR / "etcdutl")}


def snapshot_script(directory: Path) -> Path:
    """The kubeadm role's ``gpushare-etcd-snapshot`` rendered with the role's defaults into ``directory``."""
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text(encoding="utf-8"))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLE / "templates")), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    text = env.get_template("gpushare-etcd-snapshot.sh.j2").render(**defaults)
    path = Path(directory) / "gpushare-etcd-snapshot"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path
