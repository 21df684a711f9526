# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time the rehearsal of the worked day (playbooks/rehearse.yml) with the binaries cached.

Builds the rehearsal binaries first if the cache does not have them (and prints how long the
cold build took, as the build records it), then runs rehearse.yml on an inventory (default
inventories/example) RUNS times and prints, per run, the wall time of the whole playbook
(plan, start of the control plane, world, two applies, the day, stop) and of the day alone
(rehearsal.json ``seconds``), and each step's seconds. Usage:

    .venv/bin/python benchmarks/rehearsal.py [--inventory example] [--backend dra] [--runs 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _collection import REPO, collections_path, module_util


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="example")
    parser.add_argument("--backend", default=None, help="dra or device_plugin (default: the inventory's)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--keep", help="keep the plan directories under this directory")
    args = parser.parse_args()

    rc = module_util("rehearsal.cluster")
    cache = os.environ.get("GPUSHARE_REHEARSAL_CACHE") or rc.DEFAULT_CACHE_ROOT
    started = time.monotonic()
    built = rc.build(str(REPO / "roles" / "rehearsal" / "files" / "go"), cache)
    if built["built"]:
        print("cold build: %.0f s (%s)" % (time.monotonic() - started, built["seconds"]))
    else:
        print("binaries cached (%s); the cold build took %s" % (built["bin_dir"], built.get("cold_seconds")))

    work = Path(args.keep or tempfile.mkdtemp(prefix="gpushare-rehearsal-bench-"))
    walls, days = [], []
    for run in range(args.runs):
        plan_dir = work / ("plan-%d" % run)
        shutil.rmtree(plan_dir, ignore_errors=True)
        command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(REPO / "inventories" / args.inventory),
                   str(REPO / "playbooks" / "rehearse.yml"), "-e", "gpushare_plan_dir=%s" % plan_dir,
                   "-e", "rehearsal_bin_dir=%s" % built["bin_dir"]]
        if args.backend:
            command += ["-e", "gpushare_gpu_backend=%s" % args.backend]
        vault = REPO / "inventories" / args.inventory / "vault-password.txt"
        if vault.exists():
            command += ["--vault-password-file", str(vault)]
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path()), ANSIBLE_NOCOLOR="1")
        begin = time.monotonic()
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - begin
        document = json.loads((plan_dir / "rehearsal.json").read_text()) if (plan_dir / "rehearsal.json").exists() else {}
        walls.append(wall)
        days.append(document.get("seconds") or 0.0)
        print("run %d: rehearse.yml %.1f s, the day %.1f s, %s" % (
            run + 1, wall, document.get("seconds") or 0.0,
            "passed" if result.returncode == 0 else "FAILED (rc %d): %s" % (result.returncode, result.stdout[-1500:])))
        for step in document.get("steps") or []:
            print("  %-6s %5.1f s%s" % (step["at"], step.get("seconds", 0.0), "" if step.get("steady", True) else " (timeout)"))
    print("median: rehearse.yml %.1f s, the day %.1f s (%s, %s, %d run%s)" % (
        statistics.median(walls), statistics.median(days), args.inventory, args.backend or "inventory backend",
        args.runs, "" if args.runs == 1 else "s"))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
