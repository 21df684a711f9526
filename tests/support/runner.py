# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the collection's playbooks from the checkout, as `make demo` does."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO_ROOT / "playbooks"


def collections_path() -> Path:
    """The directory holding ansible_collections/gpushare/cluster (set up by tests/conftest.py)."""
    return Path(os.environ["GPUSHARE_COLLECTIONS_PATH"])


# The sample inventories' secrets are vaulted with this published demo password; a run that
# decrypts them (the roles' argument specs do) passes it, plan.yml needs none.
DEMO_VAULT_ARGS = ("--vault-password-file", str(REPO_ROOT / "inventories" / "multinode" / "vault-password.txt"))


def ansible_env(**extra: str) -> dict:
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path()),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCAL_TEMP": str(Path(tempfile.gettempdir()) / ("gpushare-ansible-tmp-%d" % os.getuid())),
    })
    env.update(extra)
    return env


def ansible_playbook(*args: str, cwd: Path = REPO_ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "ansible-playbook")] + list(args)
    return subprocess.run(command, cwd=str(cwd), env=ansible_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def run_plan_playbook(inventory: Path, plan_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return ansible_playbook("-i", str(inventory), str(PLAYBOOKS / "plan.yml"),
                            "-e", "gpushare_plan_dir=%s" % plan_dir, *extra)


def run_locally_with_recorded_become(inventory: Path, tmp_path: Path) -> Path:
    """Make the inventory's one host, gpu1, run locally with a become that records every call
    and fails (another user than the test's, so become is not skipped); returns the log."""
    log = tmp_path / "become.log"
    become = tmp_path / "become"
    become.write_text("#!/bin/sh\necho \"$*\" >> %s\nexit 1\n" % log)
    become.chmod(0o755)
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "children": {"control_plane": {"hosts": {"gpu1": None}}, "workers": {"hosts": {"gpu1": None}}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "ansible_become_user": "nobody", "ansible_become_exe": str(become)}}}))
    return log
