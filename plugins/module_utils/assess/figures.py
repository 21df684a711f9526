# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From samples to figures: who used which card, when, how much, and in what way.

A process belongs to a team by its user (``gpushare_assess_users``), else to the card's current
team in ``gpushare_gpus``, else to ``unassigned`` (shown, never dropped). Each process gets a
kind from how it behaved:

* ``serving``: present most of the window (steady) and heavy (much memory or a busy card);
* ``small``: steady and small, a candidate for a MIG instance of its own;
* ``batch``: comes and goes and keeps the card busy while it runs (training, fine-tunes);
* ``session``: comes and goes at low duty (notebooks, interactive work).

Demand is counted in GPU-equivalents per sample: a serving or batch process wants a whole
card, a small one its memory with headroom, sessions together their memory or the card's
utilisation, whichever is more. Pure Python, no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.assess.samples import (
    HostSamples, ProcessSeries, sample_interval)

UNASSIGNED = "unassigned"
KINDS = ("serving", "small", "batch", "session")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class Thresholds:
    """What the figures call busy, steady and heavy; the assessment states them in its output."""

    busy_utilization: int = 10  # % GPU utilisation from which a sample counts as busy
    steady_presence: float = 0.7  # share of the card's window a steady process is present
    heavy_memory: float = 0.5  # share of the card's memory from which a steady process is heavy
    heavy_utilization: int = 50  # mean % utilisation while present: heavy (steady) or batch (not steady)
    headroom: float = 0.2  # added to a process's peak memory for its MIG instance
    session_gap_samples: int = 3  # a process absent this many intervals starts a new session


@dataclass
class Process:
    """One process with its figures."""

    host: str
    gpu_uuid: str
    pid: int
    user: str
    team: str
    team_source: str  # "user", "gpu" or "none"
    kind: str
    peak_mib: int
    typical_mib: int
    presence: float
    mean_utilization: float
    sessions: List[Tuple[float, float]]
    times: Sequence[float] = field(repr=False, default=())
    memory: Sequence[int] = field(repr=False, default=())

    def figures(self) -> Dict[str, object]:
        lengths = [end - start for start, end in self.sessions]
        return {"pid": self.pid, "user": self.user, "team": self.team, "team_from": self.team_source,
                "kind": self.kind, "peak_memory_mib": self.peak_mib, "typical_memory_mib": self.typical_mib,
                "presence": round(self.presence, 3), "mean_utilization_while_running": round(self.mean_utilization, 1),
                "sessions": len(self.sessions), "longest_session_minutes": round(max(lengths) / 60.0, 1)}


@dataclass
class Card:
    """One GPU (host, index) over the window, with every UUID seen at that index."""

    host: str
    index: int
    uuids: List[str]
    name: str
    model: Optional[str]
    mig_capable: bool
    memory_total_mib: int
    team_today: Optional[str]
    interval: float
    times: List[float]
    utilization: List[int]
    memory_used: List[int]
    processes: List[Process] = field(default_factory=list)
    # False: the source has no per-process data, so ``processes`` is empty by necessity.
    process_data: bool = True
    # The card's gpushare_gpus entry today (use, mig, replicas), kept when nothing contradicts it.
    entry_today: Dict[str, object] = field(default_factory=dict)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0


def _sessions(times: Sequence[float], interval: float, gap_samples: int) -> List[Tuple[float, float]]:
    sessions = []
    start = previous = times[0]
    for when in times[1:]:
        if when - previous > gap_samples * interval:
            sessions.append((start, previous + interval))
            start = when
        previous = when
    sessions.append((start, previous + interval))
    return sessions


def _utilization_by_bucket(card: Card) -> Dict[int, int]:
    step = max(card.interval, 1.0)
    return {int(when // step): util for when, util in zip(card.times, card.utilization)}


def classify(card: Card, series: ProcessSeries, team: str, source: str, limits: Thresholds,
             utilization: Dict[int, int]) -> Process:
    """The figures and kind of one process on its card."""
    step = max(card.interval, 1.0)
    window = max(len(card.times), 1)
    found = [utilization.get(bucket, utilization.get(bucket - 1)) for bucket in
             [int(when // step) for when in series.times]]
    utils = [value for value in found if value is not None]
    mean_util = sum(utils) / len(utils) if utils else 0.0
    presence = min(len(series.times) / float(window), 1.0)
    peak = max(series.memory)
    steady = presence >= limits.steady_presence
    if steady:
        heavy = peak >= limits.heavy_memory * card.memory_total_mib or mean_util >= limits.heavy_utilization
        kind = "serving" if heavy else "small"
    else:
        kind = "batch" if mean_util >= limits.heavy_utilization else "session"
    return Process(series.host, series.gpu_uuid, series.pid, series.user, team, source, kind, peak,
                   int(_median(series.memory)), presence, mean_util,
                   _sessions(series.times, card.interval, limits.session_gap_samples), series.times, series.memory)


def team_of(user: str, users: Dict[str, str], card_team: Optional[str]) -> Tuple[str, str]:
    """(team, where it came from) of a process's user on a card."""
    if user in users:
        return users[user], "user"
    if card_team:
        return card_team, "gpu"
    return UNASSIGNED, "none"


def attach_processes(host: HostSamples, cards: Dict[str, Card], users: Dict[str, str], limits: Thresholds,
                     problems: List[str]) -> None:
    """Classify every process of a host onto its card (by UUID)."""
    utilization = {id(card): _utilization_by_bucket(card) for card in cards.values()}
    unknown_gpu: Dict[str, int] = {}
    unknown_users: Dict[Tuple[int, str], int] = {}
    for series in host.processes.values():
        card = cards.get(series.gpu_uuid)
        if card is None:
            unknown_gpu[series.gpu_uuid] = unknown_gpu.get(series.gpu_uuid, 0) + len(series.times)
            continue
        team, source = team_of(series.user, users, card.team_today)
        if source == "none":
            unknown_users[(card.index, series.user)] = unknown_users.get((card.index, series.user), 0) + 1
        card.processes.append(classify(card, series, team, source, limits, utilization[id(card)]))
    for uuid, count in sorted(unknown_gpu.items()):
        problems.append("host %s: %d process sample(s) on %s, a GPU no gpus*.csv file lists; not counted"
                        % (host.host, count, uuid))
    for (index, user), count in sorted(unknown_users.items()):
        problems.append("host %s, GPU %d: %d process(es) of user %r, who is in no team (gpushare_assess_users) on a "
                        "GPU with no team today: counted as %s" % (host.host, index, count, user, UNASSIGNED))


def weekday(hour: int) -> int:
    """The weekday (0 is Monday) of an hour counted since the epoch."""
    return (hour // 24 + 3) % 7  # 1970-01-01 was a Thursday


def heat_map(times: Sequence[float], values: Sequence[float]) -> List[List[float]]:
    """Mean of ``values`` by weekday (rows, Monday first) and hour of day (columns)."""
    sums = [[0.0] * 24 for _day in WEEKDAYS]
    counts = [[0] * 24 for _day in WEEKDAYS]
    hours = [int(when // 3600) for when in times]
    by_hour: Dict[int, float] = {}
    for hour, value in zip(hours, values):
        if value:
            by_hour[hour] = by_hour.get(hour, 0.0) + value
    for hour, count in Counter(hours).items():
        day = weekday(hour)
        sums[day][hour % 24] += by_hour.get(hour, 0.0)
        counts[day][hour % 24] += count
    return [[round(total / count, 2) if count else 0.0 for total, count in zip(row, number)]
            for row, number in zip(sums, counts)]


def hours_seen(times: Sequence[float]) -> List[List[int]]:
    """How many hours with a sample each weekday (rows) and hour of day (columns) holds: a
    heat map's 0 over no hour at all means "not seen", not "idle"."""
    seen = [[0] * 24 for _day in WEEKDAYS]
    for hour in {int(when // 3600) for when in times}:
        seen[weekday(hour)][hour % 24] += 1
    return seen


def _most_at_once(buckets_of: Dict[object, set]) -> int:
    """The most keys sharing one bucket, given each key's set of buckets."""
    counts: Counter = Counter()
    for buckets in buckets_of.values():
        counts.update(buckets)
    return max(counts.values()) if counts else 0


def peak_concurrency(processes: Sequence[Process], interval: float, kinds: Sequence[str] = KINDS,
                     key=lambda process: (process.host, process.pid, process.user)) -> Tuple[int, int]:
    """(processes, users) at once at the busiest sample, counting only ``kinds``."""
    step = max(interval, 1.0)
    by_process: Dict[object, set] = {}
    by_user: Dict[str, set] = {}
    for process in processes:
        if process.kind not in kinds:
            continue
        buckets = {int(when // step) for when in process.times}
        by_process.setdefault(key(process), set()).update(buckets)
        by_user.setdefault(process.user, set()).update(buckets)
    return _most_at_once(by_process), _most_at_once(by_user)


def card_figures(card: Card, limits: Thresholds) -> Dict[str, object]:
    """The figures of one card for assessment.json."""
    count = len(card.times)
    busy = [1.0 if util >= limits.busy_utilization else 0.0 for util in card.utilization]
    lengths = [end - start for process in card.processes for start, end in process.sessions
               if process.kind in ("session", "batch")]
    concurrent, users = peak_concurrency(card.processes, card.interval)
    sessions = peak_concurrency(card.processes, card.interval, ("session",))[0]
    return {
        "samples": count,
        "interval_seconds": card.interval,
        "from": card.times[0] if count else None,
        "busy_fraction": round(sum(busy) / count, 3) if count else 0.0,
        "mean_utilization": round(sum(card.utilization) / float(count), 1) if count else 0.0,
        "peak_memory_used_mib": max(card.memory_used) if count else 0,
        "busy_by_weekday_hour": heat_map(card.times, busy),
        "sampled_hours_by_weekday_hour": hours_seen(card.times),
        "processes": len(card.processes),
        "peak_concurrent_processes": concurrent,
        "peak_concurrent_users": users,
        "peak_concurrent_sessions": sessions,
        "median_session_minutes": round(_median(lengths) / 60.0, 1) if lengths else 0.0,
        "longest_session_minutes": round(max(lengths) / 60.0, 1) if lengths else 0.0,
        "kinds": {kind: sum(1 for p in card.processes if p.kind == kind) for kind in KINDS},
        "by_process": [p.figures() for p in sorted(card.processes, key=lambda p: (-p.peak_mib, p.pid))],
    }


def card_interval(times: Sequence[float]) -> float:
    return sample_interval(times)
