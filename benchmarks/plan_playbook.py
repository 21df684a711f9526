# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time playbooks/plan.yml on a large generated inventory against a no-op play.

Generates an inventory of HOSTS GPU hosts (default 1,000) with 8 GPUs each in mixed
uses (whole, MIG by needs, MIG by profiles, time-sliced) and 40 teams, as host_vars
files the way users keep them. Then runs, on that same inventory:

- a no-op play (every host, no fact gathering, no task): what Ansible costs anyway to
  load the inventory and start;
- plan.yml writing the plan, the report, the summary and the example workloads
  (``-e gpushare_plan_render_addons=false``): the planner and the report;
- with ``--with-addons``, plan.yml as shipped, which also runs the add-on roles' render
  steps. Those roles take the plan as an Ansible variable, and Ansible copies a fact of
  megabytes into the context of every task, so this part grows with plan size times the
  roles' task count (minutes at 1,000 hosts).

Prints the wall time of each, the ratio and the size of what plan.yml wrote. Usage:

    .venv/bin/python benchmarks/plan_playbook.py [--hosts 1000] [--runs 3] [--with-addons] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
TEAMS = 40


def _host_gpus(number):
    """Eight GPUs per host; the mix rotates so every use and several models appear."""
    def team(offset):
        return "team-%02d" % ((number + offset) % TEAMS)

    shape = number % 5
    if shape == 0:
        return [{"count": 8, "model": "H100-80GB", "team": team(0), "use": "whole"}]
    if shape == 1:
        return [
            {"count": 4, "model": "H100-80GB", "team": team(0), "use": "whole"},
            {"index": 4, "model": "H100-80GB", "team": team(1), "use": "mig",
             "mig": {"instances": [{"name": "embed", "memory": "10GiB"}, {"name": "rank", "memory": "20GiB"}]}},
            {"index": 5, "model": "H100-80GB", "team": team(1), "use": "mig", "mig": {"profiles": {"3g.40gb": 2}}},
            {"index": 6, "model": "H100-80GB", "team": team(2), "use": "shared", "replicas": 4},
            {"index": 7, "model": "H100-80GB", "team": team(2), "use": "shared", "replicas": 6},
        ]
    if shape == 2:
        return [{"count": 8, "model": "A100-40GB", "team": team(3), "use": "mig", "mig": {"profiles": {"1g.5gb": 7}}}]
    if shape == 3:
        return [
            {"count": 6, "model": "L40S", "team": team(4), "use": "whole"},
            {"index": 6, "model": "L40S", "team": team(5), "use": "shared", "replicas": 8},
            {"index": 7, "model": "L40S", "team": team(5), "use": "shared", "replicas": 8},
        ]
    return [{"count": 8, "model": "H200", "team": team(6), "use": "whole"}]


def generate_inventory(root, hosts):
    """Write hosts.yml, group_vars/all/gpushare.yml and one host_vars file per host."""
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "host_vars").mkdir()
    names = ["gpu%04d" % number for number in range(hosts)]
    inventory = {"all": {"children": {
        "control_plane": {"hosts": {"cp%d" % n: {"ansible_host": "192.0.2.%d" % n} for n in (1, 2, 3)}},
        "workers": {"hosts": {name: {"ansible_host": "10.%d.%d.%d" % (n // 65536, n // 256 % 256, n % 256)}
                              for n, name in enumerate(names)}},
    }}}
    (root / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    teams = [{"name": "team-%02d" % n, "namespaces": ["team-%02d" % n], "group": "group-%02d" % n,
              "priority": 1000 - n * 10} for n in range(TEAMS)]
    settings = {"gpushare_kubernetes_distribution": "kubeadm", "gpushare_kubernetes_version": "1.35",
                "gpushare_gpu_backend": "dra", "gpushare_teams": teams}
    (root / "group_vars" / "all" / "gpushare.yml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    for number, name in enumerate(names):
        (root / "host_vars" / ("%s.yml" % name)).write_text(
            yaml.safe_dump({"gpushare_gpus": _host_gpus(number)}), encoding="utf-8")
    return names


NOOP_PLAY = """---
- name: No-op on every host of the inventory
  hosts: all
  gather_facts: false
  tasks: []
"""


def _collections_path(work):
    link = work / "collections" / "ansible_collections" / "gpushare" / "cluster"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO_ROOT, target_is_directory=True)
    return work / "collections"


CPU_TIMES = {}


def _run(args, env):
    """Wall time of one run; its CPU time (user + system, all processes) goes to CPU_TIMES."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-3000:] + result.stderr[-3000:])
        raise SystemExit("%s failed with exit code %d" % (" ".join(args[:4]), result.returncode))
    CPU_TIMES.setdefault(args[-1] if "noop" in args[-1] else "plan" + ("" if "false" in args[-1] else "+addons"),
                         []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each playbook; the median is reported")
    parser.add_argument("--keep", type=Path, help="keep the inventory and plan in this directory")
    parser.add_argument("--with-addons", action="store_true",
                        help="also time plan.yml with the add-on roles' render steps (slow on large plans)")
    options = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="gpushare-bench-"))
    try:
        inventory = work / "inventory"
        names = generate_inventory(inventory, options.hosts)
        noop = work / "noop.yml"
        noop.write_text(NOOP_PLAY, encoding="utf-8")
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(_collections_path(work)), ANSIBLE_NOCOLOR="1")
        playbook = str(Path(sys.executable).parent / "ansible-playbook")
        plan_dir = work / "plan"

        plan_args = [playbook, "-i", str(inventory), str(REPO_ROOT / "playbooks" / "plan.yml"),
                     "-e", "gpushare_plan_dir=%s" % plan_dir]
        noop_times, plan_times, addon_times = [], [], []
        for _run_number in range(options.runs):
            noop_times.append(_run([playbook, "-i", str(inventory), str(noop)], env))
            plan_times.append(_run(plan_args + ["-e", "gpushare_plan_render_addons=false"], env))
        if options.with_addons:
            addon_times.append(_run(plan_args, env))
        noop_time, plan_time = statistics.median(noop_times), statistics.median(plan_times)

        sizes = {name: (plan_dir / name).stat().st_size for name in ("plan.json", "index.html", "summary.txt")}
        gpus = 8 * len(names)
        print("inventory: %d GPU hosts (+3 control plane), %d GPUs, %d teams" % (len(names), gpus, TEAMS))
        print("no-op play          : median %.2f s  (runs: %s)" % (noop_time, ", ".join("%.2f" % t for t in noop_times)))
        print("plan.yml (report)   : median %.2f s  (runs: %s)" % (plan_time, ", ".join("%.2f" % t for t in plan_times)))
        print("ratio               : %.2fx the no-op play (target <= 3x); %s 30 s"
              % (plan_time / noop_time, "under" if plan_time < 30 else "OVER"))
        noop_cpu = statistics.median(CPU_TIMES[str(noop)])
        plan_cpu = statistics.median(CPU_TIMES["plan"])
        print("CPU time (user+sys) : no-op %.2f s, plan.yml %.2f s, ratio %.2fx (independent of machine load)"
              % (noop_cpu, plan_cpu, plan_cpu / noop_cpu))
        if addon_times:
            print("plan.yml (+add-ons) : %.2f s (one run; add-on roles render from the plan fact)" % addon_times[0])
        print("written             : " + ", ".join("%s %.1f MiB" % (name, size / 2 ** 20) for name, size in sizes.items()))
        if options.keep:
            if options.keep.exists():
                shutil.rmtree(options.keep)
            shutil.copytree(work, options.keep, symlinks=True)
            print("kept in             : %s" % options.keep)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
