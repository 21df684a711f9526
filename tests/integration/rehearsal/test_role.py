"""The rehearsal role and modules as a playbook uses them (include_role tasks_from start/stop)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

from rehearsal_env import cache_root, collection_path

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "role.yml"


def test_role_starts_and_stops_the_control_plane(rehearsal_bin, tmp_path):
    directory = tmp_path / "through-the-role"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collection_path()), ANSIBLE_NOCOLOR="1")
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"rehearsal_test_dir={directory}",
         "-e", f"rehearsal_cache_dir={cache_root()}", str(PLAYBOOK)],
        capture_output=True, text=True, env=env, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "cached, nothing built" in result.stdout
    assert not any(rc.running(str(directory)).values())
