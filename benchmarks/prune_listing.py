# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time the prune's listing of a role's kinds: a loop of kubernetes.core.k8s_info against one
gpushare.cluster.k8s_list call, on the rehearsal's real control plane.

Starts a control plane (the binaries are built first if the cache lacks them), then runs a
playbook that lists ROLE's kinds (default tenancy, twelve kinds) RUNS times each way and prints,
per way, the median wall time and CPU seconds (user + system of ansible-playbook and every
module process it started). Usage:

    .venv/bin/python benchmarks/prune_listing.py [--role tenancy] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _collection import REPO, collections_path, module_util

PLAYBOOK = """
- name: List the role's kinds
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One k8s_info process per kind
      kubernetes.core.k8s_info:
        kubeconfig: "{{ kubeconfig }}"
        api_version: "{{ item.api_version }}"
        kind: "{{ item.kind }}"
        label_selectors: "{{ item.label_selectors }}"
      loop: "{{ role | gpushare.cluster.prune_kinds }}"
      when: way == 'loop'

    - name: One k8s_list process for every kind
      gpushare.cluster.k8s_list:
        kubeconfig: "{{ kubeconfig }}"
        queries: "{{ role | gpushare.cluster.prune_kinds }}"
      when: way == 'one'
"""


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", default="tenancy", choices=["dra_driver", "kueue", "tenancy"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    rc = module_util("rehearsal.cluster")
    kinds = module_util("changes.prune").list_kinds(args.role)
    cache = os.environ.get("GPUSHARE_REHEARSAL_CACHE") or rc.DEFAULT_CACHE_ROOT
    built = rc.build(str(REPO / "roles" / "rehearsal" / "files" / "go"), cache)
    work = Path(tempfile.mkdtemp(prefix="gpushare-prune-bench-"))
    playbook = work / "list.yml"
    playbook.write_text(PLAYBOOK)
    info = rc.start(str(work / "cluster"), bin_dir=built["bin_dir"])
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path()), ANSIBLE_NOCOLOR="1")
    try:
        figures = {}
        for way in ("loop", "one"):
            walls, cpus = [], []
            for _run in range(args.runs):
                cpu, begin = _children_cpu(), time.monotonic()
                result = subprocess.run(
                    [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook),
                     "-e", json.dumps({"kubeconfig": info["kubeconfig"], "role": args.role, "way": way})],
                    env=env, capture_output=True, text=True, check=False)
                walls.append(time.monotonic() - begin)
                cpus.append(_children_cpu() - cpu)
                if result.returncode != 0:
                    print("%s FAILED (rc %d): %s" % (way, result.returncode, result.stdout[-1500:]))
                    return 1
            figures[way] = (statistics.median(walls), statistics.median(cpus))
        print("%s: %d kinds, median of %d runs each" % (args.role, len(kinds), args.runs))
        print("  k8s_info loop: %5.1f s wall, %5.1f CPU s" % figures["loop"])
        print("  k8s_list once: %5.1f s wall, %5.1f CPU s" % figures["one"])
    finally:
        rc.stop(str(work / "cluster"))
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
