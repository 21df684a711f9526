# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time playbooks/plan.yml on a large generated inventory against a no-op play.

Generates an inventory of HOSTS GPU hosts (default 1,000) with 8 GPUs each in mixed
uses (whole, MIG by needs, MIG by profiles, time-sliced) and 40 teams, in two layouts
users keep: each host's GPUs in its own host_vars file, and everything in one
inventory file. Then runs, on each layout:

- a no-op play (every host, no fact gathering, no task): what Ansible costs anyway to
  load the inventory and start. With host_vars files this does not even read them
  (Ansible reads a host's variable files only when a task needs them), so there the
  no-op leaves out the parsing of the GPU inventory that any play using it pays;
- a play that reads every host's ``gpushare_gpus`` on the controller and does nothing
  else: the inventory parsing any use of the GPU inventory pays;
- plan.yml as shipped: plan, report, summary, examples and every add-on role's values
  and manifests;
- plan.yml with ``-e gpushare_plan_render_addons=false`` (plan, report and examples).

Prints the wall time of each (median of RUNS), the ratios, the CPU time (independent of
other load on the machine) and the size of what plan.yml wrote. Usage:

    .venv/bin/python benchmarks/plan_playbook.py [--hosts 1000] [--runs 3] [--layout both] [--keep DIR]
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

from _collection import collections_path

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


def generate_inventory(root, hosts, layout):
    """Write hosts.yml and group_vars/all/gpushare.yml; with layout "host_vars" the GPUs
    of each host go in host_vars/<host>.yml, with "inline" in hosts.yml."""
    (root / "group_vars" / "all").mkdir(parents=True)
    names = ["gpu%04d" % number for number in range(hosts)]
    workers = {name: {"ansible_host": "10.%d.%d.%d" % (n // 65536, n // 256 % 256, n % 256)}
               for n, name in enumerate(names)}
    if layout == "inline":
        for number, name in enumerate(names):
            workers[name]["gpushare_gpus"] = _host_gpus(number)
    inventory = {"all": {"children": {
        "control_plane": {"hosts": {"cp%d" % n: {"ansible_host": "192.0.2.%d" % n} for n in (1, 2, 3)}},
        "workers": {"hosts": workers},
    }}}
    (root / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    teams = [{"name": "team-%02d" % n, "namespaces": ["team-%02d" % n], "group": "group-%02d" % n,
              "priority": 1000 - n * 10} for n in range(TEAMS)]
    settings = {"gpushare_kubernetes_distribution": "kubeadm", "gpushare_kubernetes_version": "1.35",
                "gpushare_gpu_backend": "dra", "gpushare_teams": teams}
    (root / "group_vars" / "all" / "gpushare.yml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    if layout == "inline":
        return names
    (root / "host_vars").mkdir()
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

# What any play that uses the GPU inventory pays before planning: every host's variables
# (with host_vars files, Ansible parses them here), on the controller.
READ_PLAY = """---
- name: Read every host's GPUs and do nothing else
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Count the GPU entries of the inventory
      ansible.builtin.debug:
        msg: "{{ groups['all'] | map('extract', hostvars) | selectattr('gpushare_gpus', 'defined')
                 | map(attribute='gpushare_gpus') | map('length') | sum }}"
"""


def _run(args, env):
    """(wall time, CPU time of all its processes) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-3000:] + result.stderr[-3000:])
        raise SystemExit("%s failed with exit code %d" % (" ".join(args[:4]), result.returncode))
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _median(runs):
    return statistics.median(wall for wall, _cpu in runs), statistics.median(cpu for _wall, cpu in runs)


def bench_layout(work, layout, hosts, runs, env):
    """Print the figures of one inventory layout."""
    inventory = work / layout
    names = generate_inventory(inventory, hosts, layout)
    noop, read = work / "noop.yml", work / "read.yml"
    noop.write_text(NOOP_PLAY, encoding="utf-8")
    read.write_text(READ_PLAY, encoding="utf-8")
    playbook = str(Path(sys.executable).parent / "ansible-playbook")
    plan_dir = work / ("plan-%s" % layout)
    plan = [playbook, "-i", str(inventory), str(REPO_ROOT / "playbooks" / "plan.yml"),
            "-e", "gpushare_plan_dir=%s" % plan_dir]
    timings = {"noop": [], "read": [], "report": [], "plan": []}
    for _number in range(runs):
        timings["noop"].append(_run([playbook, "-i", str(inventory), str(noop)], env))
        timings["read"].append(_run([playbook, "-i", str(inventory), str(read)], env))
        timings["report"].append(_run(plan + ["-e", "gpushare_plan_render_addons=false"], env))
        timings["plan"].append(_run(plan, env))
    noop_wall, noop_cpu = _median(timings["noop"])
    print("layout %s: %d GPU hosts (+3 control plane), %d GPUs, %d teams"
          % (layout, len(names), 8 * len(names), TEAMS))
    for key, label in (("noop", "no-op play"), ("read", "play reading the GPUs"), ("plan", "plan.yml as shipped"),
                       ("report", "plan.yml, no add-ons")):
        wall, cpu = _median(timings[key])
        ratio = "" if key == "noop" else "  %.2fx wall, %.2fx CPU" % (wall / noop_wall, cpu / noop_cpu)
        print("  %-21s: median %.2f s wall (%s), %.2f s CPU%s"
              % (label, wall, ", ".join("%.2f" % run[0] for run in timings[key]), cpu, ratio))
    wall = _median(timings["plan"])[0]
    print("  plan.yml's own share : %.2fx the play reading the GPUs" % (wall / _median(timings["read"])[0]))
    print("  target               : plan.yml under 30 s (%s) and at most 3x the no-op play (%s)"
          % ("met" if wall < 30 else "NOT met", "met" if wall <= 3 * noop_wall else "NOT met"))
    written = [path for path in plan_dir.rglob("*") if path.is_file()]
    print("  written              : %d files, %.1f MiB (plan.json %.1f MiB, index.html %.1f MiB)"
          % (len(written), sum(path.stat().st_size for path in written) / 2 ** 20,
             (plan_dir / "plan.json").stat().st_size / 2 ** 20, (plan_dir / "index.html").stat().st_size / 2 ** 20))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each playbook; the median is reported")
    parser.add_argument("--layout", choices=["host_vars", "inline", "both"], default="both")
    parser.add_argument("--keep", type=Path, help="keep the inventories and plans in this directory")
    options = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="gpushare-bench-"))
    try:
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path()), ANSIBLE_NOCOLOR="1")
        for layout in (("host_vars", "inline") if options.layout == "both" else (options.layout,)):
            bench_layout(work, layout, options.hosts, options.runs, env)
        if options.keep:
            if options.keep.exists():
                shutil.rmtree(options.keep)
            shutil.copytree(work, options.keep, symlinks=True)
            print("kept in                : %s" % options.keep)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
