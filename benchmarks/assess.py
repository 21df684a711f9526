# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The assessment of 4 weeks of 1-minute samples of 64 GPUs (8 hosts of 8), target under 30 s.

Generates the CSV files into a temporary directory (not timed), then times what the
gpu_assessment module does: read every file, classify every process, propose, answer capacity.
Each card has a steady serving process, or two small steady ones, or a weekday batch run, or
notebook sessions, so every rule of the proposal runs.

    .venv/bin/python benchmarks/assess.py            # ASSESS_DAYS=3 for a shorter window
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _collection import module_util

HOSTS, CARDS, DAYS, STEP = 8, 8, int(os.environ.get("ASSESS_DAYS", "28")), 60
START = 1772409600  # Monday 2 March 2026, 00:00
TEAMS = [{"name": name, "namespaces": [name], "priority": priority}
         for name, priority in (("production", 1000), ("data", 100), ("training", 10))]
GPU_HEADER = "timestamp, uuid, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
APP_HEADER = "timestamp, gpu_uuid, pid, used_gpu_memory [MiB], user"
NAME, TOTAL = "NVIDIA H100 80GB HBM3", 81559


def _running(kind, step):
    """(pid, user, MiB, utilisation) of the processes of a card of this kind at this step."""
    day, minute = divmod(step // STEP, 1440)
    weekday = day % 7 < 5
    if kind == 0:
        return [(1000, "serve", 70000, 70)]
    if kind == 1:
        return [(1100, "embed", 9000, 8), (1200, "rank", 15000, 10)]
    if kind == 2:
        return [(3000 + day, "trainer", 60000, 95)] if weekday and 13 * 60 <= minute < 22 * 60 else []
    return [(20000 + day * 10 + user, "nb%d" % user, 6000, 4) for user in range(4)
            if weekday and (10 + user) * 60 <= minute < (14 + user) * 60]


def write(root):
    """Every host's files, one pair a day; returns the inventory's gpushare_gpus by host."""
    today = {}
    for host_number in range(HOSTS):
        host = "gpu%02d" % host_number
        folder = root / host
        folder.mkdir(parents=True)
        today[host] = [{"index": i, "model": "H100-80GB", "team": TEAMS[i % 3]["name"]} for i in range(CARDS)]
        uuids = ["GPU-%08d-0000-4000-8000-%012d" % (host_number, i) for i in range(CARDS)]
        for day in range(DAYS):
            gpus, apps = [GPU_HEADER], [APP_HEADER]
            for step in range(day * 86400, (day + 1) * 86400, STEP):
                stamp = time.strftime("%Y/%m/%d %H:%M:%S.000", time.gmtime(START + step))
                for index in range(CARDS):
                    running = _running(index % 4, step)
                    util = min(100, sum(p[3] for p in running))
                    used = sum(p[2] for p in running)
                    gpus.append("%s, %s, %d, %s, %d, %d, %d" % (stamp, uuids[index], index, NAME, util, used, TOTAL))
                    apps.extend("%s, %s, %d, %d, %s" % (stamp, uuids[index], pid, mib, user)
                                for pid, user, mib, _util in running)
            (folder / ("gpus-%02d.csv" % day)).write_text("\n".join(gpus) + "\n")
            (folder / ("apps-%02d.csv" % day)).write_text("\n".join(apps) + "\n")
    return today


def main():
    files = module_util("assess.files")
    analysis = module_util("assess.analysis")
    root = Path(tempfile.mkdtemp(prefix="gpushare-assess-bench-"))
    try:
        started = time.perf_counter()
        today = write(root)
        generated = time.perf_counter() - started
        lines = sum(1 for path in root.rglob("*.csv") for _line in path.open())
        started, cpu = time.perf_counter(), time.process_time()
        problems = []
        found = files.read_samples(str(root), sorted(today), problems)
        assessment = analysis.assess(found, today, TEAMS, {"serve": "production", "embed": "production",
                                                           "rank": "production", "trainer": "training"},
                                     problems=problems)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        shutil.rmtree(str(root), ignore_errors=True)
    uses = {}
    for gpu in assessment["gpus"]:
        uses[gpu["proposed"]["use"]] = uses.get(gpu["proposed"]["use"], 0) + 1
    print("assess: %d GPUs x %d days of %d s samples = %d CSV lines (generated in %.1f s)"
          % (HOSTS * CARDS, DAYS, STEP, lines, generated))
    print("assess: proposal %s; %s" % (uses, assessment["capacity"]["why"][:60]))
    # On a machine other processes share, the CPU time is the steadier figure.
    print("assess: analysis %.1f s wall, %.1f s CPU (target < 30 s)" % (elapsed, cpu))
    return 0 if elapsed < 30 else 1


if __name__ == "__main__":
    sys.exit(main())
