# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time the MIG planner on a fleet: NODES nodes x 8 GPUs with mixed requests.

Every node gets 8 GPUs of one model (H100-80GB, A100-80GB, H200, B200, RTX-PRO-6000 or
A30) drawn at random, each GPU whole, shared, MIG by needs (1-4 instances of random
sizes, some with compute or media needs, fill on or off) or MIG by explicit profiles
(one of NVIDIA's all-balanced shapes). Requests repeat across the fleet as they do in
real inventories, so the memo of (model, request) does most of the work after the first
nodes. Prints the total time, the first (cold) node and the distinct requests solved.

    .venv/bin/python benchmarks/mig_layout.py [--nodes 1000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import time

from _collection import module_util


def _import_planner():
    return module_util("gpu.mig_solver")


BALANCED = {
    "H100-80GB": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "A100-80GB": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "H200": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    "B200": {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
    "RTX-PRO-6000": {"1g.24gb": 2, "2g.48gb": 1},
    "A30": {"1g.6gb": 2, "2g.12gb": 1},
}


def _gpu(rng, index, model):
    use = rng.choice(["whole", "whole", "shared", "mig", "mig", "mig"])
    entry = {"index": index, "model": model, "use": use, "team": rng.choice(["production", "data", "training"])}
    if use == "mig":
        if rng.random() < 0.3:
            entry["mig"] = {"profiles": dict(BALANCED[model])}
        else:
            needs = []
            for number in range(rng.randint(1, 4 if model not in ("A30", "RTX-PRO-6000") else 2)):
                need = {"name": "model-%d" % number, "memory": "%dGi" % rng.choice([4, 5, 8, 10, 12, 16, 20])}
                if rng.random() < 0.15:
                    need["compute"] = 2
                needs.append(need)
            entry["mig"] = {"instances": needs, "fill": rng.random() < 0.8}
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    nodes = []
    for number in range(args.nodes):
        model = rng.choice(sorted(BALANCED))
        nodes.append(("node%04d" % number, [_gpu(rng, index, model) for index in range(8)]))

    mig_solver = _import_planner()
    failures = 0
    instances = 0
    started = time.perf_counter()
    first = None
    for host, gpus in nodes:
        try:
            result = mig_solver.plan_node_layout(gpus, "gpushare-" + host, host=host)
            instances += sum(len(g["instances"]) for g in result["gpus"])
        except ValueError:
            failures += 1
        if first is None:
            first = time.perf_counter() - started
    total = time.perf_counter() - started
    memo = mig_solver.memo_info()
    print("MIG planner: %d nodes x 8 GPUs = %d GPUs in %.3f s (%.1f us per GPU)"
          % (args.nodes, args.nodes * 8, total, total / (args.nodes * 8) * 1e6))
    print("first node (cold caches): %.3f s; distinct GPU requests solved: %d; memo hits: %d"
          % (first or 0.0, memo["solved"], memo["reused"]))
    print("instances planned: %d; nodes rejected: %d" % (instances, failures))


if __name__ == "__main__":
    main()
