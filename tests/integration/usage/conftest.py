# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Prometheus the suites of this directory share: two weeks of the example cluster.

The TSDB is filled with ``promtool tsdb create-blocks-from openmetrics`` (raw exporter and
Kueue series, see usage_series.py); the monitoring role's recording rules are then evaluated
over the two weeks and stored the same way. Prometheus (Debian package ``prometheus``)
listens on 127.0.0.1 on a free port; it is built once for the directory (the usage report and
the assessment read it alike) and stopped after its last test.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

import usage_series

DAY = 86400


def _running_on(data_dir: Path) -> list:
    """PIDs of prometheus processes using ``data_dir`` (none may survive the test)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"prometheus") and f"--storage.tsdb.path={data_dir}".encode() in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="package")
def prometheus(tmp_path_factory, repo_root):
    """``url``, ``start``, ``end`` (Unix seconds) and ``server`` of the example's two weeks."""
    promtool = usage_series.promtool_or_skip()
    work = tmp_path_factory.mktemp("usage-prometheus")
    end = int(time.time()) // 3600 * 3600 - 3 * 3600
    start = end - 14 * DAY
    usage_series.build_tsdb(work, start, end, usage_series.monitoring_rules(repo_root), promtool=promtool)
    server = usage_series.LocalPrometheus(usage_series.PROMETHEUS, work / "data", work)
    server.start()
    try:
        yield {"url": server.url, "start": start, "end": end, "server": server}
    finally:
        server.stop()
        assert _running_on(work / "data") == [], "a prometheus process outlived the test"
