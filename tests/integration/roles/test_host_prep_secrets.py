"""The Ubuntu Pro token reaches `pro` but never the output, even at -vvv.

Runs host_prep's real Ubuntu Pro tasks with ansible-playbook on the local machine against
a stand-in `pro` command (Canonical's service cannot be reached from tests) that records
what it was given.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

TOKEN = "C1pRoT0kEn-must-never-be-printed-7f3a"

STUB = """#!/bin/sh
state="{state}"
case "$1" in
  status)
    if [ -f "$state/attached" ]; then
      echo '{{"attached": true, "services": [{{"name": "esm-infra", "status": "enabled"}}, {{"name": "livepatch", "status": "disabled"}}]}}'
    else
      echo '{{"attached": false, "services": []}}'
    fi ;;
  attach)
    [ "$2" = "--attach-config" ] || exit 2
    cp "$3" "$state/attach-config.yaml" && touch "$state/attached"
    echo "This machine is now attached to 'Ubuntu Pro - free personal subscription'" ;;
  enable)
    echo "$3" >> "$state/enabled"; echo "$3 enabled" ;;
  *) exit 2 ;;
esac
"""


def run_pro_tasks(tmp_path: Path, services: list[str]) -> subprocess.CompletedProcess:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    pro = tmp_path / "pro"
    pro.write_text(STUB.format(state=state))
    pro.chmod(0o755)
    playbook = tmp_path / "pro.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Ubuntu Pro", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [{"name": "Attach", "ansible.builtin.include_role": {
            "name": "gpushare.cluster.host_prep", "tasks_from": "ubuntu_pro.yml"}}],
    }]))
    extra = {"host_prep_ubuntu_pro_token": TOKEN, "host_prep_ubuntu_pro_services": services,
             "__host_prep_pro_command": str(pro), "ansible_python_interpreter": sys.executable}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    collections = os.environ["GPUSHARE_COLLECTIONS_PATH"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR="1", TMPDIR=str(tmp_path / "tmp"),
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "home" / "tmp"),
               ANSIBLE_REMOTE_TMP=str(tmp_path / "home" / "remote"))
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-vvv", "-i", "localhost,", str(playbook),
         "-e", yaml.safe_dump(extra, default_flow_style=True).strip()],
        env=env, capture_output=True, text=True, check=False, timeout=300)


def test_token_is_used_but_never_printed(tmp_path):
    first = run_pro_tasks(tmp_path, ["esm-infra", "livepatch"])
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    # The attach really happened, with the token and the chosen services.
    config = yaml.safe_load((tmp_path / "state" / "attach-config.yaml").read_text())
    assert config == {"token": TOKEN, "enable_services": ["esm-infra", "livepatch"]}
    assert "changed=4" in first.stdout  # temp file, its content, attach, its removal
    # ... and the token is nowhere in a -vvv run, nor left on disk.
    assert TOKEN not in first.stdout + first.stderr
    assert "no_log: true" in first.stdout
    assert list((tmp_path / "tmp").glob("*.pro.yaml")) == []

    # Attached now: only the service that is still disabled gets enabled.
    second = run_pro_tasks(tmp_path, ["esm-infra", "livepatch"])
    assert second.returncode == 0, second.stdout[-3000:]
    assert (tmp_path / "state" / "enabled").read_text().split() == ["livepatch"]
    assert TOKEN not in second.stdout + second.stderr
