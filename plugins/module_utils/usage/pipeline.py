# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage pipeline of gpushare.cluster.gpu_usage: Prometheus answers -> figures.

The Prometheus client (usage/prometheus.py) is the only I/O; this file turns the module's
options into queries and the answers into figures (usage/figures.py), which usage/advice.py
turns into proposals. The module itself only maps options and errors to Ansible.
"""

from __future__ import annotations

import time
from datetime import datetime

from ansible_collections.gpushare.cluster.plugins.module_utils._common import names
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.advice import expand_gpus
from ansible_collections.gpushare.cluster.plugins.module_utils.usage.figures import (
    RANGE_SERIES,
    UsageDataError,
    compute_figures,
    instant_queries,
)


def parse_end(value):
    if value is None or value == "":
        return time.time()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise UsageDataError(f"end: {value!r} is neither a Unix timestamp nor an RFC 3339 time") from None


def team_names(teams):
    names = []
    for number, team in enumerate(teams):
        name = team.get("name") if isinstance(team, dict) else team
        if not isinstance(name, str) or not name:
            raise UsageDataError(f"teams[{number}]: needs a name, got {team!r}")
        names.append(name)
    return names


def inventory_gpus(nodes, plan):
    """Host -> [{index, team, node}] of the inventory, with the planner's count rule and Node names."""
    out = {}
    for host, entries in (nodes or {}).items():
        node = ((plan or {}).get("nodes") or {}).get(host, {}).get("node_name") or names.node_name(host)
        out[host] = [{"index": index, "team": entry.get("team"), "node": node}
                     for index, entry in sorted(expand_gpus(host, entries or []).items())]
    return out


def collect(client, window_seconds, step, end, gpu_resource_regex):
    start = end - window_seconds
    # Align to the step so repeated runs over the same data give the same figures.
    start = start - start % step
    end = start + (window_seconds // step) * step
    range_results = {key: client.query_range(name, start, end, step) for key, name in RANGE_SERIES.items()}
    instant_results = {key: client.query(expression, end)
                       for key, expression in instant_queries(window_seconds, gpu_resource_regex).items()}
    return range_results, instant_results, start, end


def measure(client, teams, window_seconds, step, end, gpu_resource_regex, cluster_queues, nodes, plan):
    """Query ``client`` over the window ending at ``end`` and return the figures of ``teams``."""
    range_results, instant_results, start, end = collect(client, window_seconds, step, end, gpu_resource_regex)
    return compute_figures(range_results, instant_results, start, end, step, teams=teams,
                           cluster_queues=cluster_queues, inventory_gpus=inventory_gpus(nodes, plan))
