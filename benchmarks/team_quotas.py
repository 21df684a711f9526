# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time the whole plan (sharing, quotas, DRA and isolation objects) on a large fleet.

NODES nodes x 8 GPUs and TEAMS teams. Node kinds repeat as in real fleets: whole-GPU
H100 servers, H100 servers mixing whole GPUs and MIG (needs and explicit profiles),
RTX PRO 6000 servers with whole, MIG and time-sliced GPUs side by side, and L40S
servers of time-sliced GPUs. Every GPU goes to a random team. Prints the time of
``build_plan`` for both backends (target: under 1 s each) and the size of the result.

    .venv/bin/python benchmarks/team_quotas.py [--nodes 1000] [--teams 40] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from _collection import module_util


def _import_planner():
    return module_util("planner.plan")


def fleet(rng, nodes, teams):
    names = ["team-%02d" % number for number in range(teams)]
    team_list = [{"name": name, "namespaces": [name, name + "-batch"], "priority": 1000 - 10 * number,
                  "group": name + "-members"} for number, name in enumerate(names)]
    inventory = {}
    for host in range(nodes):
        kind = rng.choice(["whole", "whole", "mig", "mixed", "shared"])
        gpus = []
        for index in range(8):
            team = rng.choice(names)
            if kind == "whole":
                gpus.append({"index": index, "model": "H100-80GB", "team": team, "use": "whole"})
            elif kind == "mig":
                if index < 4:
                    gpus.append({"index": index, "model": "H100-80GB", "team": team, "use": "whole"})
                elif index < 6:
                    gpus.append({"index": index, "model": "H100-80GB", "team": team, "use": "mig",
                                 "mig": {"profiles": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}})
                else:
                    gpus.append({"index": index, "model": "H100-80GB", "team": team, "use": "mig",
                                 "mig": {"instances": [{"name": "embed", "memory": "10GiB"},
                                                       {"name": "asr", "memory": "20GiB"}]}})
            elif kind == "mixed":
                use = ["whole", "whole", "whole", "mig", "mig", "shared", "whole", "whole"][index]
                entry = {"index": index, "model": "RTX-PRO-6000", "team": team, "use": use}
                if use == "mig":
                    entry["mig"] = {"profiles": {"1g.24gb": 4}}
                if use == "shared":
                    entry["replicas"] = 4
                gpus.append(entry)
            else:
                gpus.append({"index": index, "model": "L40S", "team": team, "use": "shared", "replicas": 6})
        inventory["gpu-%04d" % host] = gpus
    return team_list, inventory


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--teams", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    plan_module = _import_planner()
    teams, nodes = fleet(random.Random(args.seed), args.nodes, args.teams)
    print("fleet: %d nodes, %d GPUs, %d teams" % (len(nodes), sum(len(g) for g in nodes.values()), len(teams)))
    for backend in ("dra", "device_plugin"):
        started = time.perf_counter()
        plan = plan_module.build_plan(teams, nodes, backend=backend)
        elapsed = time.perf_counter() - started
        size = len(json.dumps(plan))
        print("%-13s build_plan %.3f s  (%d objects, %d mig-parted configs, %d device-plugin configs, "
              "%d warnings, plan.json %.1f MB)" % (
                  backend, elapsed, len(plan["objects"]), len(plan["mig_parted"]["mig-configs"]),
                  len(plan["device_plugin_configs"]), len(plan["warnings"]), size / 1e6))


if __name__ == "__main__":
    main()
