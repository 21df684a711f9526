# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proposed split of each card, and whether the cards are enough.

Rules, per card, first match wins (the figures behind each are in its ``why``):

1. a steady heavy process (serving) -> ``whole`` for its team;
2. two or more steady small processes -> ``mig`` with one instance per process of at least its
   peak memory plus the headroom, solved on the card's real geometry by the MIG planner
   (``gpu/mig_solver.py``); a card without MIG is never ``mig``: it is ``shared`` and the
   proposal says why; a layout the planner cannot place falls back to ``whole``, with its reason;
3. interactive sessions -> ``shared``, replicas at least the peak number of sessions at once;
4. batch work (training, fine-tunes) -> ``whole`` in the team's queue, borrowing idle cards;
5. a card nobody used -> ``whole`` for its current team, lendable to the others.

A card read without per-process data (dcgm-exporter through Prometheus) is proposed from its
own figures only: ``whole`` when it held half its memory or was half busy most of the window,
else its entry today (``use``, ``mig``, ``replicas`` of ``gpushare_gpus``), else ``whole``; its
entry lists in ``cannot_decide`` what per-process data would have decided (CANNOT_DECIDE).

Capacity: the demand of the busiest hour, in GPU-equivalents counted with sharing (sessions by
their memory or the card's utilisation, small processes by their MIG share, idle cards lent),
against one GPU-equivalent per card. Pure Python, no I/O.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.assess.figures import (
    UNASSIGNED, WEEKDAYS, Card, Process, Thresholds, weekday)
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.mig_solver import plan_node_layout

GIB = 1024
# Demand above the cards by less than this is noise of the sampling, not a missing card.
CAPACITY_TOLERANCE = 0.05
# A shared GPU needs at least two replicas (planner/inventory.py refuses fewer).
MIN_REPLICAS = 2
# What a proposal without per-process data cannot decide, stated for every such card.
CANNOT_DECIDE = (
    "whether to cut it with MIG, and into which instances: that needs each process's peak memory",
    "whether to time-share it, and with how many replicas: that needs the number of sessions at once",
    "which teams used it: that needs each process's owner, so its GPU-hours count for its team today "
    "(gpushare_gpus[].team)",
)


def _gib(mib: float) -> str:
    return "%.1f GiB" % (mib / float(GIB))


def instance_name(user: str, taken: Dict[str, int]) -> str:
    """A MIG instance name from a process's user: lower case, dashes, unique on the card."""
    base = re.sub(r"[^a-z0-9]+", "-", user.lower()).strip("-") or "process"
    taken[base] = taken.get(base, 0) + 1
    return base if taken[base] == 1 else "%s-%d" % (base, taken[base])


def card_team(card: Card, demand: Dict[str, float], errors: List[str]) -> Optional[str]:
    """The team a card is proposed for: the one that used it most, else its team today."""
    assigned = {team: value for team, value in demand.items() if team != UNASSIGNED and value > 0}
    if assigned:
        return max(sorted(assigned), key=lambda team: assigned[team])
    if card.team_today:
        return card.team_today
    if not card.process_data:
        errors.append("host %s, GPU %d: no team today, and the Prometheus source has no process owners to tell who "
                      "used it; set the GPU's team in gpushare_gpus" % (card.host, card.index))
        return None
    who = sorted({p.user for p in card.processes})
    errors.append("host %s, GPU %d: no team today and used only by %s; map the users in gpushare_assess_users or "
                  "set the GPU's team in gpushare_gpus"
                  % (card.host, card.index, ", ".join(who) if who else "nobody"))
    return None


def mig_instances(card: Card, limits: Thresholds) -> List[Tuple[Process, Dict[str, str]]]:
    """(process, instance asked for it) of each steady small process of the card, largest first."""
    small = sorted((p for p in card.processes if p.kind == "small"), key=lambda p: (-p.peak_mib, p.pid))
    taken: Dict[str, int] = {}
    return [(p, {"name": instance_name(p.user, taken),
                 "memory": "%dGiB" % max(1, math.ceil(p.peak_mib * (1 + limits.headroom) / GIB))}) for p in small]


def _mig_entry(card: Card, team: str, limits: Thresholds) -> Tuple[Optional[Dict[str, Any]], str, List[Dict[str, Any]]]:
    """(entry, why, placed instances) for a card of steady small processes; entry None when MIG cannot be used."""
    pairs = mig_instances(card, limits)
    small = [p for p, _instance in pairs]
    instances = [instance for _p, instance in pairs]
    peaks = ", ".join("%s peak %s" % (i["name"], _gib(p.peak_mib)) for i, p in zip(instances, small))
    if not card.mig_capable:
        return None, ("%d steady small processes (%s), but %s cannot be cut with MIG (the model has no MIG): "
                      "time-shared instead, without memory isolation" % (len(small), peaks, card.model)), []
    entry = {"index": card.index, "model": card.model, "team": team, "use": "mig", "mig": {"instances": instances}}
    try:
        layout = plan_node_layout([entry], "assess", host=card.host)
    except ValueError as error:
        return None, ("%d steady small processes (%s) do not fit as MIG instances with %d %% headroom: %s"
                      % (len(small), peaks, round(limits.headroom * 100), error)), []
    placed = [dict(i) for i in layout["gpus"][0]["instances"] if i["name"]]
    profiles = ", ".join(i["profile"] for i in placed)
    return entry, ("%d steady small processes (%s): one MIG instance each with %d %% headroom, placed by the MIG "
                   "planner as %s" % (len(small), peaks, round(limits.headroom * 100), profiles)), placed


def propose_card(card: Card, team: str, figures: Dict[str, Any],
                 limits: Thresholds) -> Tuple[Dict[str, Any], str, List[Dict[str, Any]]]:
    """(inventory entry, why, MIG instances as the planner places them: profile, start, size, memory, name)."""
    kinds = figures["kinds"]
    base = {"index": card.index, "model": card.model, "team": team}
    busy = "busy %d %% of the time" % round(figures["busy_fraction"] * 100)
    serving = [p for p in card.processes if p.kind == "serving"]
    if serving:
        top = max(serving, key=lambda p: p.peak_mib)
        return dict(base, use="whole"), ("steady heavy serving: process %s (user %s) present %d %% of the window, peak %s of "
                                         "%s, card %s" % (top.pid, top.user, round(top.presence * 100),
                                                          _gib(top.peak_mib), _gib(card.memory_total_mib), busy)), []
    if kinds["small"] >= 2:
        entry, why, placed = _mig_entry(card, team, limits)
        if entry is not None:
            return entry, why, placed
        if not card.mig_capable:
            replicas = max(MIN_REPLICAS, kinds["small"] + figures["peak_concurrent_sessions"])
            return dict(base, use="shared", replicas=replicas), why + "; replicas %d" % replicas, []
        return dict(base, use="whole"), why, []
    if kinds["session"]:
        sessions = figures["peak_concurrent_sessions"]
        replicas = max(MIN_REPLICAS, sessions)
        return dict(base, use="shared", replicas=replicas), (
            "%d interactive session(s), at most %d at once, median %.0f min, card %s: time-shared, replicas %d "
            "(at least the peak of sessions at once%s)"
            % (kinds["session"], sessions, figures["median_session_minutes"], busy, replicas,
               "; 2 is the least a shared GPU takes" if sessions < 2 else "")), []
    if kinds["batch"]:
        return dict(base, use="whole"), ("bursty batch work: %d run(s), longest %.0f min, card %s: whole, in %s's "
                                         "queue, borrowing idle GPUs of the cohort"
                                         % (kinds["batch"], figures["longest_session_minutes"], busy, team)), []
    if kinds["small"]:
        return dict(base, use="whole"), ("one steady small process: whole (MIG would leave most of the card "
                                         "unused), card %s" % busy), []
    return dict(base, use="whole"), ("no process seen in the window (card %s): kept whole for %s, lent to the other "
                                     "teams when idle" % (busy, team)), []


def _steady_share(values: Sequence[float], threshold: float) -> float:
    """The share of samples at or above ``threshold``."""
    return sum(1 for value in values if value >= threshold) / float(len(values)) if values else 0.0


def propose_card_without_processes(card: Card, team: str, figures: Dict[str, Any],
                                   limits: Thresholds) -> Tuple[Dict[str, Any], str, List[Dict[str, Any]]]:
    """(entry, why, MIG instances placed) of a card whose source has no per-process data.

    Only the card's own figures decide: steady heavy use makes it ``whole``; otherwise it keeps
    its entry today, since what would change it (MIG instances, replicas, teams) needs processes.
    """
    base = {"index": card.index, "model": card.model, "team": team}
    busy = "busy %d %% of the time" % round(figures["busy_fraction"] * 100)
    total = float(card.memory_total_mib)
    held = _steady_share(card.memory_used, limits.heavy_memory * total)
    working = _steady_share(card.utilization, limits.heavy_utilization)
    unknown = ("; without per-process data it cannot tell whether MIG instances or time-shared replicas would "
               "serve better, nor which teams used it")
    if max(held, working) >= limits.steady_presence:
        if held >= working:
            what = "held %d %% of its memory or more in %d %% of the window" % (
                round(limits.heavy_memory * 100), round(held * 100))
        else:
            what = "was %d %% busy or more in %d %% of the window" % (limits.heavy_utilization, round(working * 100))
        return dict(base, use="whole"), ("steady heavy use: the card %s (peak %s of %s), %s: whole for %s%s"
                                         % (what, _gib(figures["peak_memory_used_mib"]), _gib(total), busy, team,
                                            unknown)), []
    use = card.entry_today.get("use")
    if use == "mig" and card.entry_today.get("mig"):
        entry = dict(base, use="mig", mig=card.entry_today["mig"])
        try:
            layout = plan_node_layout([entry], "assess", host=card.host)
        except ValueError as error:
            return dict(base, use="whole"), ("its MIG entry today cannot be placed (%s), card %s: whole for %s%s"
                                             % (error, busy, team, unknown)), []
        # Instances named in the inventory are the ones placed; profiles given by count have no name.
        named = isinstance(entry["mig"], dict) and "instances" in entry["mig"]
        placed = [dict(i) for i in layout["gpus"][0]["instances"] if i["name"] or not named]
        return entry, ("no steady heavy use, card %s, peak %s of %s: keeps its MIG instances of today (%s)%s"
                       % (busy, _gib(figures["peak_memory_used_mib"]), _gib(total),
                          ", ".join(i["profile"] for i in placed), unknown)), placed
    if use == "shared" and card.entry_today.get("replicas"):
        replicas = max(MIN_REPLICAS, int(card.entry_today["replicas"]))
        return dict(base, use="shared", replicas=replicas), (
            "no steady heavy use, card %s, peak %s of %s: keeps its time-sharing of today, replicas %d%s"
            % (busy, _gib(figures["peak_memory_used_mib"]), _gib(total), replicas, unknown)), []
    return dict(base, use="whole"), ("no steady heavy use, card %s, peak %s of %s: kept whole for %s, lent to the "
                                     "other teams when idle%s"
                                     % (busy, _gib(figures["peak_memory_used_mib"]), _gib(total), team, unknown)), []


# --- demand and capacity ----------------------------------------------------------------

def _card_demand_without_processes(card: Card) -> Dict[int, Dict[str, float]]:
    """GPU-seconds of a card without per-process data, by hour, all for its team today: each
    sample asks its utilisation or the share of memory held, whichever is more."""
    hours: Dict[int, Dict[str, float]] = {}
    step = max(card.interval, 1.0)
    total = float(card.memory_total_mib) or 1.0
    team = card.team_today or UNASSIGNED
    for when, util, used in zip(card.times, card.utilization, card.memory_used):
        need = min(1.0, max(util / 100.0, used / total))
        if need > 0:
            team_hours = hours.setdefault(int(when // 3600), {})
            team_hours[team] = team_hours.get(team, 0.0) + need * step
    return hours


def card_demand(card: Card, limits: Thresholds) -> Dict[int, Dict[str, float]]:
    """GPU-seconds each team asked of the card, by hour (hours since the epoch, host clock)."""
    if not card.process_data:
        return _card_demand_without_processes(card)
    hours: Dict[int, Dict[str, float]] = {}
    step = max(card.interval, 1.0)
    total = float(card.memory_total_mib)
    only_sessions = all(p.kind == "session" for p in card.processes)
    utilization = {int(when // step): util for when, util in zip(card.times, card.utilization)}
    sessions: Dict[int, Dict[str, float]] = {}
    for process in card.processes:
        if process.kind == "session":
            for when, mib in zip(process.times, process.memory):
                held = sessions.setdefault(int(when // step), {})
                held[process.team] = held.get(process.team, 0.0) + mib
            continue
        if process.kind == "small":
            share = min(1.0, process.peak_mib * (1 + limits.headroom) / total)
        else:
            share = 1.0
        for hour, count in Counter([int(when // 3600) for when in process.times]).items():
            team_hours = hours.setdefault(hour, {})
            team_hours[process.team] = team_hours.get(process.team, 0.0) + share * step * count
    for bucket, held in sessions.items():
        memory = sum(held.values())
        need = memory / total
        if only_sessions:
            need = max(need, utilization.get(bucket, 0) / 100.0)
        need = min(need, 1.0)
        team_hours = hours.setdefault(int(bucket * step // 3600), {})
        for team, mib in held.items():
            team_hours[team] = team_hours.get(team, 0.0) + need * step * (mib / memory if memory else 1.0 / len(held))
    return hours


def _hour_text(hour: int) -> str:
    return "%s %s" % (WEEKDAYS[weekday(hour)], time.strftime("%Y-%m-%d %H:00", time.gmtime(hour * 3600)))


def gpu_equivalents_by_hour(demand: Dict[int, Dict[str, float]]) -> Dict[int, float]:
    """Each hour's demand of every team together, in GPU-equivalents (GPU-seconds over the hour)."""
    return {hour: sum(teams.values()) / 3600.0 for hour, teams in demand.items()}


def busiest_hour(totals: Dict[int, float]) -> int:
    """The hour of the most demand, the earliest of equals (totals non-empty)."""
    return max(sorted(totals), key=lambda hour: totals[hour])


def capacity(demand: Dict[int, Dict[str, float]], cards: Sequence[Card], proposed: Dict[str, int]) -> Dict[str, Any]:
    """The capacity answer: the busiest hour's demand against the cards of the proposal."""
    supply = len(cards)
    if not demand:
        return {"busiest_hour": None, "demand_gpu_equivalents": 0.0, "gpus": supply, "another_gpu_advised": False,
                "why": "no process was seen: no demand to compare with the %d GPU(s)" % supply,
                "spare_gpu_equivalents": float(supply), "hours_over": [], "teams_waiting": [], "model": None,
                "cards_to_add": 0}
    totals = gpu_equivalents_by_hour(demand)
    busiest = busiest_hour(totals)
    peak = round(totals[busiest], 2)
    over = sorted(hour for hour, value in totals.items() if value > supply + CAPACITY_TOLERANCE)
    result: Dict[str, Any] = {"busiest_hour": _hour_text(busiest), "demand_gpu_equivalents": peak, "gpus": supply,
                              "another_gpu_advised": bool(over), "hours_over": [_hour_text(h) for h in over],
                              "spare_gpu_equivalents": round(max(supply - peak, 0.0), 2)}
    counted = ("counted with sharing: sessions by their memory or the card's utilisation, small steady processes by "
               "their MIG share, idle GPUs lent to the busy teams")
    if any(not card.process_data for card in cards):
        counted = ("counted without per-process data: each card by its utilisation or the memory it held, "
                   "whichever is more, for its team today; idle GPUs lent to the busy teams")
    if not over:
        result.update(teams_waiting=[], model=None, cards_to_add=0,
                      why="no card to add: the busiest hour (%s) asks %.2f GPU-equivalents of the %d GPU(s), %.2f "
                          "spare (%s)" % (result["busiest_hour"], peak, supply, result["spare_gpu_equivalents"],
                                          counted))
        return result
    waiting: Dict[str, float] = {}
    for hour in over:
        for team, seconds in demand[hour].items():
            excess = seconds / 3600.0 - proposed.get(team, 0)
            if excess > CAPACITY_TOLERANCE:
                waiting[team] = max(waiting.get(team, 0.0), excess)
    teams = sorted(waiting, key=lambda team: (-waiting[team], team))
    models: Dict[str, int] = {}
    for card in cards:
        if card.model and (not teams or any(p.team in teams for p in card.processes)
                           or (not card.process_data and card.team_today in teams)):
            models[card.model] = models.get(card.model, 0) + 1
    model = max(sorted(models), key=lambda key: models[key]) if models else None
    add = int(math.ceil(peak - supply - 1e-9))
    result.update(teams_waiting=teams, model=model, cards_to_add=add,
                  why="another card: in %d hour(s) the demand exceeds the %d GPU(s) even %s; the busiest (%s) asks "
                      "%.2f GPU-equivalents. %s would wait; %d more %s would hold the busiest hour"
                      % (len(over), supply, counted, result["busiest_hour"], peak,
                         ", ".join(teams) if teams else "every team", add, model or "GPU(s) of the same model"))
    return result
