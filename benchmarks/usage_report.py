# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long the usage report takes for many teams over two weeks against a real Prometheus.

Builds a TSDB with the example server repeated until there are --teams teams (three per
server: production, data, training), backfills the monitoring role's recording rules,
starts /usr/bin/prometheus on 127.0.0.1 and times the gpu_usage module's work (queries,
figures, proposals, HTML) a few times. Prints the figures; asserts nothing.

    .venv/bin/python benchmarks/usage_report.py --teams 40 --days 14
"""
from __future__ import annotations

import argparse
import importlib
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]


def _import_modules():
    """The collection's module_utils and the test data generator, from this checkout."""
    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "tests" / "integration" / "usage"))
    importlib.import_module("conftest")  # puts ansible_collections/gpushare/cluster on sys.path
    base = "ansible_collections.gpushare.cluster.plugins.module_utils."
    return SimpleNamespace(
        series=importlib.import_module("usage_series"),
        client=importlib.import_module(base + "usage.prometheus"),
        figures=importlib.import_module(base + "usage.figures"),
        advice=importlib.import_module(base + "usage.advice"),
        html=importlib.import_module(base + "usage.report_html"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=40)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the TSDB directory")
    args = parser.parse_args()
    lib = _import_modules()
    usage_series = lib.series

    servers = math.ceil(args.teams / 3)
    work = Path(tempfile.mkdtemp(prefix="gpushare-usage-bench-"))
    end = int(time.time()) // 3600 * 3600 - 3 * 3600
    start = end - args.days * 86400
    print(f"{servers * 3} teams on {servers} servers ({servers * 4} GPUs, {servers * 7} devices), "
          f"{args.days} days, samples every {usage_series.STEP} s")
    server = None
    try:
        began = time.monotonic()
        timings = usage_series.build_tsdb(work, start, end, usage_series.monitoring_rules(REPO), teams_scale=servers)
        print(f"setup: {timings['samples']:,} raw samples generated in {timings['generate']:.1f} s, "
              f"openmetrics blocks {timings['openmetrics']:.1f} s, recording rules {timings['rules']:.1f} s "
              f"(total {time.monotonic() - began:.1f} s)")
        server = usage_series.LocalPrometheus("/usr/bin/prometheus", work / "data", work)
        server.start()
        client = lib.client.PrometheusClient(server.url, timeout=120)
        window = end - start
        step = lib.figures.choose_step(window)
        teams = [{"name": f"{t}{'' if n == 0 else f'-{n}'}", "priority": p}
                 for n in range(servers) for t, p in (("production", 1000), ("data", 100), ("training", 10))]
        nodes = {f"gpu1{'' if n == 0 else f'-{n}'}": [{"index": i, "model": "RTX-PRO-6000", "team": t, "use": u}
                                                      for i, (t, u) in enumerate((("production", "whole"),
                                                                                  ("production", "mig"),
                                                                                  ("data", "shared"),
                                                                                  ("training", "whole")))]
                 for n in range(servers)}
        query_times, compute_times, totals = [], [], []
        for run in range(args.runs):
            t0 = time.monotonic()
            ranges = {k: client.query_range(q, start, end, step) for k, q in lib.figures.RANGE_SERIES.items()}
            instants = {k: client.query(q, end) for k, q in lib.figures.instant_queries(window, ".*").items()}
            t1 = time.monotonic()
            figures = lib.figures.compute_figures(ranges, instants, start, end, step, teams=[t["name"] for t in teams])
            proposals = lib.advice.propose(figures, teams, nodes)
            html = lib.html.render_page(figures, proposals)
            t2 = time.monotonic()
            query_times.append(t1 - t0)
            compute_times.append(t2 - t1)
            totals.append(t2 - t0)
            print(f"run {run + 1}: {t2 - t0:.2f} s")
        print(f"report over {window // 86400} days at {step} s steps ({figures['window']['samples']} samples "
              f"per series), {len(figures['teams'])} teams, {len(figures['gpus'])} devices, "
              f"{len(proposals)} proposals, HTML {len(html) / 1e6:.1f} MB")
        print(f"queries:  median {statistics.median(query_times):.2f} s  (runs: "
              + ", ".join(f"{t:.2f}" for t in query_times) + ")")
        print(f"figures+advice+html: median {statistics.median(compute_times):.2f} s")
        print(f"total:    median {statistics.median(totals):.2f} s")
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            print(f"TSDB kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
