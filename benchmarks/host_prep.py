# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time host_prep on one GPU-worker container: first converge, then a re-run.

Starts one systemd container from the Molecule image (``make images``), runs the
host_prep role for a GPU worker through the podman connection twice, and prints for
each run the wall time, how many tasks ran (ok, of which changed) and how many were
skipped. The re-run must change nothing. Needs root podman and CONTAINERS_CONF like
``make molecule``; the container is removed at the end.

    .venv/bin/python benchmarks/host_prep.py [--image localhost/gpushare-molecule-debian12:latest]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _collection import collections_path

REPO = Path(__file__).resolve().parents[1]
NAME = "gpushare-bench-host-prep"
RECAP = re.compile(r"^\S+\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)

PLAYBOOK = """
- name: host_prep on a GPU worker
  hosts: all
  gather_facts: false
  roles:
    - role: gpushare.cluster.host_prep
"""


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)


def converge(tmp: Path, env: dict[str, str]) -> dict[str, float | int]:
    start = time.monotonic()
    result = run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "inventory.json"),
                  str(tmp / "converge.yml")], env)
    elapsed = time.monotonic() - start
    match = RECAP.search(result.stdout)
    if result.returncode != 0 or not match:
        sys.exit(f"converge failed:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}")
    ok, changed, _unreachable, failed, skipped = (int(x) for x in match.groups())
    return {"seconds": round(elapsed, 1), "ran": ok + failed, "changed": changed, "skipped": skipped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="localhost/gpushare-molecule-debian12:latest")
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(REPO / "molecule" / "_shared" / "containers.conf"))
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        env.update(ANSIBLE_COLLECTIONS_PATH=str(collections_path()), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3")
        inventory = {"workers": {"hosts": {NAME: {
            "ansible_connection": "containers.podman.podman",
            "gpushare_kubernetes_distribution": "kubeadm",
            "host_prep_kubernetes_repo_enabled": False,  # pkgs.k8s.io is out of reach in tests
            "host_prep_kernel_params": ["iommu=pt"],
            "gpushare_gpus": [{"index": 0, "model": "L40S", "team": "production", "use": "whole"}],
        }}}}
        (tmp / "inventory.json").write_text(json.dumps(inventory))
        (tmp / "converge.yml").write_text(PLAYBOOK)
        run(["podman", "rm", "-f", NAME], env)
        started = run(["podman", "run", "-d", "--name", NAME, "--hostname", NAME, "--systemd=always",
                       args.image, "/sbin/init"], env)
        if started.returncode != 0:
            sys.exit(f"cannot start {args.image} (run `make images` first): {started.stderr.strip()}")
        try:
            run(["podman", "exec", NAME, "systemctl", "is-system-running", "--wait"], env)
            first = converge(tmp, env)
            second = converge(tmp, env)
        finally:
            run(["podman", "rm", "-f", NAME], env)
    print(f"host_prep GPU worker, first converge: {first['seconds']} s, {first['ran']} tasks ran "
          f"({first['changed']} changed), {first['skipped']} skipped")
    print(f"host_prep GPU worker, re-run:         {second['seconds']} s, {second['ran']} tasks ran "
          f"({second['changed']} changed), {second['skipped']} skipped")
    print(f"re-run changes: {second['changed']} (must be 0); re-run under 60 s: {second['seconds'] < 60}")


if __name__ == "__main__":
    main()
