# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Usage figures from Prometheus query results (pure; no I/O).

The PromQL that defines "allocated", "busy", "borrowed" ... lives in the monitoring role's
recording rules; this file only names those recorded series (``RANGE_SERIES``) and the few
raw Kueue/DCGM series no rule records (``instant_queries``), and turns the answers into
GPU-hours, shares and percentiles. A series Prometheus does not have is reported in
``missing`` and its figures are ``None``: no data is never turned into zero.
"""

from __future__ import annotations

import math
import re
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import SHARED_SUFFIX
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

# Recorded series (monitoring role), queried as range queries over the window.
TEAM_SERIES = {
    "allocated": "gpushare:team_gpus_allocated",
    "busy": "gpushare:team_gpus_busy",
    "idle_allocated": "gpushare:team_gpus_idle_allocated",
    "borrowed": "gpushare:team_gpus_borrowed",
    "lent": "gpushare:team_gpus_lent",
    "pending": "gpushare:team_workloads_pending",
}
GPU_SERIES = {
    "gpu_allocated": "gpushare:gpu_allocated",
    "gpu_busy": "gpushare:gpu_busy_ratio",
}
RANGE_SERIES = dict(TEAM_SERIES, **GPU_SERIES)

# Where each series comes from, for the "missing" explanations.
SOURCES = {
    "allocated": "Kueue or DCGM pod attribution",
    "busy": "DCGM profiling metrics with pod attribution",
    "idle_allocated": "DCGM profiling metrics with pod attribution",
    "borrowed": "Kueue metrics (enableClusterQueueResources)",
    "lent": "Kueue metrics (enableClusterQueueResources)",
    "pending": "Kueue metrics",
    "gpu_allocated": "DCGM exporter with Kubernetes attribution",
    "gpu_busy": "DCGM profiling metrics (DCGM_FI_PROF_GR_ENGINE_ACTIVE)",
    "nominal_quota": "Kueue metrics (enableClusterQueueResources)",
    "borrowing_limit": "Kueue metrics (enableClusterQueueResources)",
    "borrowed_by_resource": "recording rule gpushare:cluster_queue_gpus_borrowed (Kueue metrics)",
    "gpu_data": "DCGM exporter on the node (no series with its hostname)",
    "team_gpu_data": "DCGM exporter on the nodes of the team's GPUs",
    "wait_p95": "Kueue histogram kueue_admission_wait_time_seconds",
    "wait_mean": "Kueue histogram kueue_admission_wait_time_seconds",
    "admitted": "Kueue histogram kueue_admission_wait_time_seconds",
    "mig_memory_used": "DCGM_FI_DEV_FB_USED on MIG instances",
    "mig_memory_total": "DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE of one sample, on MIG instances",
}

# A GPU counts as idle while allocated below this engine-active ratio.
DEFAULT_IDLE_BELOW = 0.05
# Share of the cluster's GPUs allocated at which a step counts as saturated.
DEFAULT_SATURATED_AT = 0.95
# Steps chosen so a window gives at most this many points per series (the API caps
# a range query at 11,000 points).
MAX_POINTS = 5000
NICE_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)

NOT_DEVICES = r"cpu|memory|ephemeral-storage|pods|.*" + re.escape(SHARED_SUFFIX)
GPU_KEY_LABELS = ("hostname", "Hostname", "gpu", "UUID", "GPU_I_PROFILE", "GPU_I_ID")


class UsageDataError(GpushareError):
    """The query results cannot produce the figures asked for."""


def choose_step(window_seconds: float, step_seconds: Optional[float] = None) -> int:
    """The range-query step: the given one, else the smallest nice step within MAX_POINTS."""
    if window_seconds <= 0:
        raise UsageDataError(f"window: must be positive, got {window_seconds:g} s")
    if step_seconds is not None:
        if step_seconds <= 0:
            raise UsageDataError(f"step: must be positive, got {step_seconds:g} s")
        if window_seconds < step_seconds:
            raise UsageDataError(
                f"window: {format_duration(window_seconds)} is shorter than the step "
                f"{format_duration(step_seconds)}; widen the window or shorten the step"
            )
        return int(step_seconds)
    wanted = window_seconds / MAX_POINTS
    for step in NICE_STEPS:
        if step >= wanted:
            return step
    return int(math.ceil(wanted / 86400.0) * 86400)


def parse_duration(value: Any, field: str = "window") -> int:
    """Seconds from Prometheus-style durations (``14d``, ``36h``, ``1d12h``, ``90m``) or numbers."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = str(value).strip()
        parts = re.findall(r"(\d+(?:\.\d+)?)(w|d|h|m|s)", text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise UsageDataError(
                f"{field}: {value!r} is not a duration such as 14d, 36h, 1d12h, 90m or 600s"
            )
        size = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
        seconds = sum(float(n) * size[u] for n, u in parts)
    if seconds <= 0:
        raise UsageDataError(f"{field}: must be longer than zero, got {value!r}")
    return int(seconds)


def format_duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def instant_queries(window_seconds: int, gpu_resource_regex: str) -> Dict[str, str]:
    """Raw-series queries evaluated once at the end of the window.

    No recording rule keeps these: quotas are configuration (the current value is what
    advice changes) and the wait histogram and memory peaks need the whole window.
    """
    window = format_duration(window_seconds)
    if "`" in gpu_resource_regex:
        raise UsageDataError(f"gpu_resource_regex: {gpu_resource_regex!r} must not contain a backtick")
    # Device resources only, in devices (a whole GPU or a MIG instance, like the recording
    # rules); time-sliced replicas (`.shared`) are not devices. A PromQL raw string: the
    # regex's backslashes need no escaping.
    resource = f"resource!~`{NOT_DEVICES}`, resource=~`{gpu_resource_regex}`"
    wait = "kueue_admission_wait_time_seconds"
    mig_by = "hostname, Hostname, gpu, UUID, GPU_I_PROFILE, GPU_I_ID"
    return {
        "nominal_quota": f"sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{{resource}}})",
        # Per flavor and resource, as Kueue enforces it: a limit is never summed across them.
        "borrowing_limit": (
            f"max by (cluster_queue, flavor, resource) (kueue_cluster_queue_borrowing_limit{{{resource}}})"
        ),
        "borrowed_by_resource": (
            f"max by (cluster_queue, flavor, resource) "
            f"(max_over_time(gpushare:cluster_queue_gpus_borrowed{{{resource}}}[{window}]))"
        ),
        "wait_p95": (
            f"histogram_quantile(0.95, sum by (le, cluster_queue) (increase({wait}_bucket[{window}])))"
        ),
        "wait_mean": (
            f"sum by (cluster_queue) (increase({wait}_sum[{window}]))"
            f" / sum by (cluster_queue) (increase({wait}_count[{window}]))"
        ),
        "admitted": f"sum by (cluster_queue) (increase({wait}_count[{window}]))",
        "mig_memory_used": (
            f'max by ({mig_by}) (max_over_time(DCGM_FI_DEV_FB_USED{{GPU_I_PROFILE!=""}}[{window}]))'
        ),
        # Used + free of one series (one pod on one device) at its last sample, so a redeploy
        # (a new pod, a new series) never adds one pod's used to another's free.
        "mig_memory_total": (
            f'max by ({mig_by}) (last_over_time(DCGM_FI_DEV_FB_USED{{GPU_I_PROFILE!=""}}[{window}])'
            f' + last_over_time(DCGM_FI_DEV_FB_FREE{{GPU_I_PROFILE!=""}}[{window}]))'
        ),
    }


def _value(raw: Any) -> Optional[float]:
    try:
        number = float(raw)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _samples(series: Mapping[str, Any]) -> Dict[int, float]:
    """Timestamp -> value of one matrix series, NaN samples dropped."""
    out: Dict[int, float] = {}
    for point in series.get("values") or []:
        value = _value(point[1])
        if value is not None:
            out[int(round(float(point[0])))] = value
    return out


def percentile(values: Sequence[float], share: float) -> Optional[float]:
    """Nearest-rank percentile (``share`` in 0..1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(math.ceil(share * len(ordered))))
    return ordered[rank - 1]


def _rounded(value: Optional[float], digits: int = 2) -> Optional[float]:
    return None if value is None else round(value, digits)


def _by_team(results: Optional[List[Mapping[str, Any]]]) -> Optional[Dict[str, Dict[int, float]]]:
    if results is None:
        return None
    teams: Dict[str, Dict[int, float]] = {}
    for series in results:
        team = (series.get("metric") or {}).get("team")
        if not team:
            continue
        merged = teams.setdefault(team, {})
        for stamp, value in _samples(series).items():
            merged[stamp] = merged.get(stamp, 0.0) + value
    return teams


def _by_queue(results: Optional[List[Mapping[str, Any]]]) -> Optional[Dict[str, float]]:
    if results is None:
        return None
    out: Dict[str, float] = {}
    for series in results:
        queue = (series.get("metric") or {}).get("cluster_queue")
        value = _value((series.get("value") or [None, None])[1])
        if queue and value is not None:
            out[queue] = value
    return out


def _by_queue_resource(results: Optional[List[Mapping[str, Any]]]) -> Optional[Dict[str, Dict[Tuple[str, str], float]]]:
    """cluster_queue -> (flavor, resource) -> value of an instant vector."""
    if results is None:
        return None
    out: Dict[str, Dict[Tuple[str, str], float]] = {}
    for series in results:
        labels = series.get("metric") or {}
        value = _value((series.get("value") or [None, None])[1])
        if labels.get("cluster_queue") and value is not None:
            out.setdefault(labels["cluster_queue"], {})[(labels.get("flavor", ""), labels.get("resource", ""))] = value
    return out


def _gpu_key(labels: Mapping[str, str]) -> Tuple[str, str, str, str]:
    host = labels.get("hostname") or labels.get("Hostname") or ""
    return (host, labels.get("gpu", ""), labels.get("GPU_I_PROFILE", ""), labels.get("GPU_I_ID", ""))


def _by_gpu(results: Optional[List[Mapping[str, Any]]]) -> Optional[Dict[Tuple[str, str, str, str], Dict[str, Any]]]:
    if results is None:
        return None
    out: Dict[Tuple[str, str, str, str], Dict[str, Any]] = {}
    for series in results:
        labels = series.get("metric") or {}
        key = _gpu_key(labels)
        entry = out.setdefault(key, {"uuid": labels.get("UUID"), "samples": {}})
        entry["samples"].update(_samples(series))
    return out


def _instant_by_gpu(results: Optional[List[Mapping[str, Any]]]) -> Dict[Tuple[str, str, str, str], float]:
    out: Dict[Tuple[str, str, str, str], float] = {}
    for series in results or []:
        value = _value((series.get("value") or [None, None])[1])
        if value is not None:
            out[_gpu_key(series.get("metric") or {})] = value
    return out


def _queue_series(range_results, instant_results, note_missing):
    """(team_data, instant, limits, borrowed): the per-team and per-queue series, None where absent.

    Each absent series is noted as missing; ``borrowed`` is ``{}`` (none borrowed) when
    Prometheus has borrowing limits but records no borrowing.
    """
    team_data: Dict[str, Optional[Dict[str, Dict[int, float]]]] = {}
    for key, name in TEAM_SERIES.items():
        data = _by_team(range_results.get(key))
        if not data:
            note_missing(key, name)
            data = None
        team_data[key] = data
    instant: Dict[str, Optional[Dict[str, float]]] = {}
    for key in ("nominal_quota", "wait_p95", "wait_mean", "admitted"):
        data = _by_queue(instant_results.get(key))
        if not data:
            note_missing(key, key)
            data = None
        instant[key] = data
    limits = _by_queue_resource(instant_results.get("borrowing_limit"))
    if not limits:
        note_missing("borrowing_limit", "borrowing_limit")
        limits = None
    # The rule records nothing for a queue that never borrowed: absent here is zero when
    # Prometheus has the series for some queue.
    borrowed = _by_queue_resource(instant_results.get("borrowed_by_resource"))
    if borrowed is None or (not borrowed and limits):
        borrowed = {} if borrowed is not None else None
    return team_data, instant, limits, borrowed


def _team_names(teams, team_data) -> List[str]:
    """The inventory's teams in their order, then the teams seen only in the data, sorted."""
    names = list(dict.fromkeys(list(teams)))
    for data in team_data.values():
        for team in sorted(data or {}):
            if team not in names:
                names.append(team)
    return names


def compute_figures(
    range_results: Mapping[str, Optional[List[Mapping[str, Any]]]],
    instant_results: Mapping[str, Optional[List[Mapping[str, Any]]]],
    start: float,
    end: float,
    step: int,
    teams: Iterable[str] = (),
    cluster_queues: Optional[Mapping[str, str]] = None,
    idle_below: float = DEFAULT_IDLE_BELOW,
    saturated_at: float = DEFAULT_SATURATED_AT,
    inventory_gpus: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None,
) -> Dict[str, Any]:
    """Figures per team, per GPU and for the cluster.

    ``range_results`` maps the keys of RANGE_SERIES to the matrix of a range query
    (``None`` or ``[]`` when Prometheus has no such series); ``instant_results`` maps the
    keys of ``instant_queries`` to instant vectors. ``teams`` are the inventory's team
    names (teams seen only in the data are reported too); ``cluster_queues`` maps a team
    to its ClusterQueue name when it is not the team name. ``inventory_gpus`` maps each
    inventory host to its GPUs (``index``, ``team``; ``node``, the Node name the exporter
    reports as ``hostname``, default the host): a node or GPU with no series is listed in
    ``missing``, and its figures and the exporter-based figures of its team are null.
    """
    if end - start < step:
        raise UsageDataError(
            f"window: {format_duration(end - start)} is shorter than the step {format_duration(step)}"
        )
    hours_per_sample = step / 3600.0
    steps_in_window = int((end - start) // step) + 1
    window_hours = (end - start) / 3600.0
    queues = dict(cluster_queues or {})

    missing: List[Dict[str, str]] = []

    def note_missing(key: str, query: str) -> None:
        missing.append({"figure": key, "series": query, "source": SOURCES.get(key, "")})

    team_data, instant, limits, borrowed = _queue_series(range_results, instant_results, note_missing)
    names = _team_names(teams, team_data)

    gpu_figures = _gpu_figures(range_results, instant_results, hours_per_sample, idle_below, note_missing)
    silent_by_team = _gpus_without_data(gpu_figures, inventory_gpus, missing)

    team_figures: Dict[str, Dict[str, Any]] = {}
    for team in names:
        queue = queues.get(team, team)
        team_figures[team] = _team_figures(
            team, queue, team_data, instant, hours_per_sample, steps_in_window
        )
        team_figures[team].update(_borrowing(limits, borrowed, queue))
        if team in silent_by_team:
            _null_exporter_figures(team_figures[team], silent_by_team[team])
            missing.append({"figure": "team_gpu_data", "team": team, "gpus": silent_by_team[team],
                            "series": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "source": SOURCES["team_gpu_data"]})
    cluster = _cluster_figures(team_data, instant, gpu_figures, team_figures, hours_per_sample,
                               window_hours, saturated_at, queues)
    if any(not g.get("has_data", True) for g in gpu_figures):
        # Exporter-based cluster totals would leave the silent GPUs out: unknown, not smaller.
        for key in ("gpu_hours_allocated", "gpu_hours_busy", "allocated_share", "busy_share", "saturated_hours",
                    "saturated_with_waiting_hours"):
            cluster[key] = None
    return {
        "window": {
            "start": start, "end": end, "step_seconds": step,
            "hours": round(window_hours, 2), "samples": steps_in_window,
        },
        "teams": team_figures,
        "gpus": gpu_figures,
        "cluster": cluster,
        "missing": missing,
        "teams_without_data": [t for t, f in team_figures.items() if not f["has_data"]],
    }


def _team_figures(team, queue, team_data, instant, hours_per_sample, steps_in_window) -> Dict[str, Any]:
    has_data = any((team_data.get(key) or {}).get(team) for key in TEAM_SERIES)

    def series(key: str) -> Optional[Dict[int, float]]:
        data = team_data.get(key)
        if data is None or not has_data:
            # A team absent from every series is unknown, not idle.
            return None
        # Present elsewhere but not here: the rules record nothing when a count is
        # empty (no device held, nothing borrowed), so no sample here means zero.
        return data.get(team, {})

    def gpu_hours(key: str) -> Optional[float]:
        data = series(key)
        return None if data is None else sum(data.values()) * hours_per_sample

    def hours_above_zero(key: str) -> Optional[float]:
        data = series(key)
        return None if data is None else sum(1 for v in data.values() if v > 0) * hours_per_sample

    def queue_value(key: str) -> Optional[float]:
        data = instant.get(key)
        return None if data is None else data.get(queue)

    allocated = series("allocated")
    allocated_values = list(allocated.values()) if allocated else []
    allocated_hours = gpu_hours("allocated")
    busy_hours = gpu_hours("busy")
    efficiency = None
    if allocated_hours and busy_hours is not None:
        efficiency = busy_hours / allocated_hours
    pending = series("pending")
    return {
        "cluster_queue": queue,
        "has_data": has_data,
        "coverage": _rounded(len(allocated_values) / steps_in_window if allocated is not None else None, 3),
        "gpu_hours_allocated": _rounded(allocated_hours),
        "gpu_hours_busy": _rounded(busy_hours),
        "efficiency": _rounded(efficiency, 3),
        "allocated_peak": _rounded(max(allocated_values) if allocated_values else None),
        "allocated_p95": _rounded(percentile(allocated_values, 0.95)),
        "idle_allocated_gpu_hours": _rounded(gpu_hours("idle_allocated")),
        "borrowing_hours": _rounded(hours_above_zero("borrowed")),
        "borrowed_gpu_hours": _rounded(gpu_hours("borrowed")),
        "borrowed_peak": _rounded(max(series("borrowed").values(), default=0.0) if series("borrowed") is not None else None),
        "lending_hours": _rounded(hours_above_zero("lent")),
        "lent_gpu_hours": _rounded(gpu_hours("lent")),
        "pending_hours": _rounded(hours_above_zero("pending")),
        "pending_peak": _rounded(max(pending.values(), default=0.0) if pending is not None else None),
        "pending_p95": _rounded(percentile(list(pending.values()), 0.95) if pending else (0.0 if pending is not None else None)),
        "wait_p95_seconds": _rounded(queue_value("wait_p95"), 1),
        "wait_mean_seconds": _rounded(queue_value("wait_mean"), 1),
        "admitted_workloads": _rounded(queue_value("admitted"), 1),
        "nominal_quota": _rounded(queue_value("nominal_quota")),
        "series": {
            "allocated": _timeline(allocated),
            "busy": _timeline(series("busy")),
        },
    }


# Team figures that come from the DCGM exporter's pod attribution: incomplete, hence null,
# when a GPU of the team has no series.
EXPORTER_TEAM_FIGURES = ("gpu_hours_allocated", "gpu_hours_busy", "efficiency", "allocated_peak", "allocated_p95",
                         "idle_allocated_gpu_hours", "coverage")


def _borrowing(limits, borrowed, queue) -> Dict[str, Any]:
    """The borrowing limit per flavor and resource, as Kueue enforces it, and whether it was reached.

    Kueue keeps one limit per flavor and resource of a ClusterQueue (Kueue v0.19.2,
    apis/kueue/v1beta2 ResourceQuota.borrowingLimit) and reports an unset one as +Inf; a
    team is held back when its borrowing reaches the limit of the resource it asks for.
    """
    if limits is None:
        return {"borrowing_limits": None, "borrowing_limit": None, "borrowing_unlimited": None,
                "borrowing_limit_reached": None}
    rows = []
    for (flavor, resource), limit in sorted((limits.get(queue) or {}).items()):
        peak = None if borrowed is None else (borrowed.get(queue) or {}).get((flavor, resource), 0.0)
        finite = not math.isinf(limit)
        rows.append({"flavor": flavor, "resource": resource,
                     "limit": _rounded(limit) if finite else None, "unlimited": not finite,
                     "borrowed_peak": _rounded(peak),
                     "reached": None if peak is None else bool(finite and peak >= limit)})
    if not rows:
        return {"borrowing_limits": [], "borrowing_limit": None, "borrowing_unlimited": None,
                "borrowing_limit_reached": None}
    reached = [row for row in rows if row["reached"]]
    finite = [row for row in rows if not row["unlimited"]]
    # The limit shown for the team: the one it ran into, else the tightest one.
    shown = min(reached or finite, key=lambda row: row["limit"]) if (reached or finite) else None
    return {
        "borrowing_limits": rows,
        "borrowing_limit": shown["limit"] if shown else None,
        "borrowing_unlimited": not finite,
        "borrowing_limit_reached": None if any(row["reached"] is None for row in rows) else bool(reached),
    }


def _gpus_without_data(gpu_figures: List[Dict[str, Any]], inventory_gpus, missing: List[Dict[str, Any]]
                       ) -> Dict[str, List[str]]:
    """Inventory GPUs with no exporter series: added to ``gpu_figures`` with null figures and listed
    in ``missing``, per node and per GPU. Returns team -> "host GPU n" of its silent GPUs."""
    silent: Dict[str, List[str]] = {}
    if not inventory_gpus:
        return silent
    seen = {(g["host"], g["gpu"]) for g in gpu_figures}
    seen_hosts = {g["host"] for g in gpu_figures}
    for host in sorted(inventory_gpus):
        gpus = list(inventory_gpus[host] or [])
        node = next((str(g["node"]) for g in gpus if g.get("node")), str(host))
        absent = [g for g in gpus if (node, g.get("index")) not in seen]
        if not absent:
            continue
        if node not in seen_hosts:
            missing.append({"figure": "gpu_data", "host": host, "node": node, "gpus": [g.get("index") for g in gpus],
                            "series": "DCGM_FI_PROF_GR_ENGINE_ACTIVE{hostname=%s}" % node, "source": SOURCES["gpu_data"]})
        for gpu in absent:
            if node in seen_hosts:
                missing.append({"figure": "gpu_data", "host": host, "node": node, "gpus": [gpu.get("index")],
                                "series": "DCGM_FI_PROF_GR_ENGINE_ACTIVE{hostname=%s,gpu=%s}" % (node, gpu.get("index")),
                                "source": SOURCES["gpu_data"]})
            gpu_figures.append({
                "host": node, "gpu": gpu.get("index"), "uuid": None, "mig_profile": None, "mig_instance_id": None,
                "has_data": False, "allocated_hours": None, "busy_gpu_hours": None, "idle_allocated_hours": None,
                "busy_ratio_when_allocated": None, "memory_used_peak_mib": None, "memory_total_mib": None,
            })
            if gpu.get("team"):
                silent.setdefault(str(gpu["team"]), []).append("%s GPU %s" % (host, gpu.get("index")))
    return silent


def _null_exporter_figures(team_figure: Dict[str, Any], gpus: List[str]) -> None:
    for key in EXPORTER_TEAM_FIGURES:
        team_figure[key] = None
    team_figure["gpus_without_data"] = gpus


def _timeline(data: Optional[Dict[int, float]]) -> Optional[List[List[float]]]:
    if data is None:
        return None
    return [[stamp, round(value, 3)] for stamp, value in sorted(data.items())]


def _gpu_figures(range_results, instant_results, hours_per_sample, idle_below, note_missing) -> List[Dict[str, Any]]:
    allocated = _by_gpu(range_results.get("gpu_allocated"))
    busy = _by_gpu(range_results.get("gpu_busy"))
    if not allocated:
        note_missing("gpu_allocated", GPU_SERIES["gpu_allocated"])
        allocated = None
    if not busy:
        note_missing("gpu_busy", GPU_SERIES["gpu_busy"])
        busy = None
    used = _instant_by_gpu(instant_results.get("mig_memory_used"))
    total = _instant_by_gpu(instant_results.get("mig_memory_total"))
    keys = sorted(set(allocated or {}) | set(busy or {}) | set(used),
                  key=lambda k: (k[0], int(k[1]) if k[1].isdigit() else k[1], k[2], k[3]))
    gpus: List[Dict[str, Any]] = []
    for key in keys:
        alloc = (allocated or {}).get(key, {}).get("samples") if allocated is not None else None
        ratio = (busy or {}).get(key, {}).get("samples") if busy is not None else None
        uuid = ((allocated or {}).get(key) or (busy or {}).get(key) or {}).get("uuid")
        allocated_hours = idle_hours = busy_when_allocated = busy_hours = None
        if alloc is not None:
            allocated_steps = [t for t, v in alloc.items() if v > 0]
            allocated_hours = len(allocated_steps) * hours_per_sample
            if ratio is not None:
                with_ratio = [ratio[t] for t in allocated_steps if t in ratio]
                idle_hours = sum(1 for v in with_ratio if v < idle_below) * hours_per_sample
                busy_when_allocated = sum(with_ratio) / len(with_ratio) if with_ratio else None
        if ratio is not None:
            busy_hours = sum(ratio.values()) * hours_per_sample
        gpus.append({
            "host": key[0],
            "gpu": int(key[1]) if key[1].isdigit() else key[1],
            "uuid": uuid,
            "mig_profile": key[2] or None,
            "mig_instance_id": key[3] or None,
            "allocated_hours": _rounded(allocated_hours),
            "busy_gpu_hours": _rounded(busy_hours),
            "idle_allocated_hours": _rounded(idle_hours),
            "busy_ratio_when_allocated": _rounded(busy_when_allocated, 3),
            "has_data": True,
            "memory_used_peak_mib": _rounded(used.get(key), 0) if key[2] else None,
            "memory_total_mib": _rounded(total.get(key), 0) if key[2] else None,
        })
    if any(g["mig_profile"] for g in gpus) and not used:
        note_missing("mig_memory_used", "DCGM_FI_DEV_FB_USED")
    return gpus


def _cluster_figures(team_data, instant, gpu_figures, team_figures, hours_per_sample, window_hours,
                     saturated_at, queues) -> Dict[str, Any]:
    # The recording rules count devices (a whole GPU or one MIG instance), so capacity,
    # shares and saturation are in devices; `gpus` is the physical count.
    gpu_count = len({(g["host"], g["gpu"]) for g in gpu_figures})
    device_count = len(gpu_figures)
    allocated = team_data.get("allocated")
    busy = team_data.get("busy")
    pending = team_data.get("pending")

    def total(data: Optional[Dict[str, Dict[int, float]]]) -> Optional[Dict[int, float]]:
        if data is None:
            return None
        out: Dict[int, float] = {}
        for samples in data.values():
            for stamp, value in samples.items():
                out[stamp] = out.get(stamp, 0.0) + value
        return out

    allocated_total = total(allocated)
    busy_total = total(busy)
    pending_total = total(pending)
    capacity_hours = device_count * window_hours if device_count else None
    allocated_hours = sum(allocated_total.values()) * hours_per_sample if allocated_total is not None else None
    busy_hours = sum(busy_total.values()) * hours_per_sample if busy_total is not None else None
    saturated = saturated_waiting = None
    if allocated_total is not None and device_count:
        saturated_steps = [t for t, v in allocated_total.items() if v >= saturated_at * device_count]
        saturated = len(saturated_steps) * hours_per_sample
        if pending_total is not None:
            saturated_waiting = sum(1 for t in saturated_steps if pending_total.get(t, 0) > 0) * hours_per_sample
    waits = {t: f["wait_p95_seconds"] for t, f in team_figures.items() if f["wait_p95_seconds"] is not None}
    longest_wait_team = max(waits, key=waits.get) if waits else None
    pending_by_team = {t: f["pending_hours"] for t, f in team_figures.items() if f["pending_hours"]}
    return {
        "gpus": gpu_count,
        "devices": device_count,
        "gpu_hours_capacity": _rounded(capacity_hours),
        "gpu_hours_allocated": _rounded(allocated_hours),
        "gpu_hours_busy": _rounded(busy_hours),
        "allocated_share": _rounded(allocated_hours / capacity_hours if capacity_hours and allocated_hours is not None else None, 3),
        "busy_share": _rounded(busy_hours / capacity_hours if capacity_hours and busy_hours is not None else None, 3),
        "saturated_hours": _rounded(saturated),
        "saturated_with_waiting_hours": _rounded(saturated_waiting),
        "pending_hours": _rounded(sum(1 for v in pending_total.values() if v > 0) * hours_per_sample
                                  if pending_total is not None else None),
        "wait_p95_seconds_max": waits.get(longest_wait_team) if longest_wait_team else None,
        "team_waiting_longest": longest_wait_team,
        "team_pending_most": max(pending_by_team, key=pending_by_team.get) if pending_by_team else None,
    }
