# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The busiest recorded day as rehearsal steps: every session of that day a workload of its team.

The day is the one of the busiest hour (the capacity answer's). Each process's sessions on that
day (figures.py: a process absent a few intervals starts a new one) are cut to slots, an hour by
default, so a day has at most 25 steps: a workload is submitted at the slot its session began in
and deleted at the slot boundary after it ended; a session still running at midnight runs to the
end of the day. What a workload asks for follows the proposal, as its team would ask on the
shared cluster:

* a steady small process given a MIG instance of its own: that instance's profile;
* a session or small process of a team with a shared GPU in the proposal: the shared GPU;
* anything else (serving, training, a card kept whole): one whole GPU, through the team's queue.

Processes of no team (``unassigned``) are left out and named, as is a workload the proposal has
nothing for. The rehearsal then reports how long each workload waited before Kueue admitted it
(rehearsal.json ``waits``). Pure Python, no I/O.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.assess.figures import (
    UNASSIGNED, WEEKDAYS, Card, Thresholds, weekday)
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.proposal import (
    busiest_hour, gpu_equivalents_by_hour, mig_instances)

DAY = 24 * 3600
SLOT_MINUTES = 60


def _name(user: str, pid: int, taken: Dict[str, int]) -> str:
    """A workload name (a DNS label) from the process's user and pid, unique in the day."""
    base = "%s-%d" % ((re.sub(r"[^a-z0-9]+", "-", user.lower()).strip("-") or "process")[:40], pid)
    taken[base] = taken.get(base, 0) + 1
    return base if taken[base] == 1 else "%s-%d" % (base, taken[base])


def _asks(card: Card, process, entry: Mapping[str, Any], profiles: Dict[Tuple[str, int, int], str],
          shared_teams: set, whole: bool) -> Tuple[Dict[str, Any], str]:
    """(the workload's request, or {} when the proposal has nothing for it; why, when left out)."""
    profile = profiles.get((card.host, card.index, process.pid))
    if entry.get("use") == "mig" and profile:
        return {"mig": profile}, ""
    if process.kind in ("session", "small") and process.team in shared_teams:
        return {"shared": True}, ""
    if whole:
        return {"gpus": 1}, ""
    return {}, "the proposal has no whole GPU for its %s process" % process.kind


def replay(cards: Sequence[Card], entries: Sequence[Mapping[str, Any]], demand: Mapping[int, Mapping[str, float]],
           limits: Thresholds = Thresholds(), slot_minutes: int = SLOT_MINUTES) -> Dict[str, Any]:
    """{day, slot_minutes, workloads[], left_out[], steps[]}: steps as gpushare_rehearsal_steps takes them.

    ``entries`` are assessment.json's ``gpus`` (each with its ``proposed`` entry and ``mig_layout``).
    """
    result: Dict[str, Any] = {"day": None, "slot_minutes": slot_minutes, "workloads": [], "left_out": [], "steps": []}
    if not demand:
        result["why"] = "no process was seen: nothing to replay"
        return result
    # The day of the capacity answer's busiest hour.
    day = busiest_hour(gpu_equivalents_by_hour(demand)) // 24
    result["day"] = "%s %s" % (WEEKDAYS[weekday(day * 24)], time.strftime("%Y-%m-%d", time.gmtime(day * DAY)))
    proposed = {(e["host"], e["index"]): e for e in entries}
    shared_teams = {e["proposed"]["team"] for e in entries if e["proposed"].get("use") == "shared"}
    whole = any(e["proposed"].get("use") == "whole" for e in entries)
    profiles: Dict[Tuple[str, int, int], str] = {}
    for card in cards:
        entry = proposed.get((card.host, card.index))
        if entry is None or entry["proposed"].get("use") != "mig":
            continue
        by_name = {i.get("name"): i.get("profile") for i in entry.get("mig_layout") or []}
        for process, instance in mig_instances(card, limits):
            if by_name.get(instance["name"]):
                profiles[(card.host, card.index, process.pid)] = by_name[instance["name"]]
    slot = slot_minutes * 60
    last = int(math.ceil(DAY / float(slot)))
    start_of_day = day * DAY
    taken: Dict[str, int] = {}
    events: Dict[int, Dict[str, List]] = {}
    for card in sorted(cards, key=lambda c: (c.host, c.index)):
        entry = proposed.get((card.host, card.index))
        for process in sorted(card.processes, key=lambda p: (p.sessions[0][0] if p.sessions else 0, p.pid)):
            for start, end in process.sessions:
                if end <= start_of_day or start >= start_of_day + DAY:
                    continue
                where = "host %s, GPU %d, process %d (user %s)" % (card.host, card.index, process.pid, process.user)
                if process.team == UNASSIGNED:
                    result["left_out"].append("%s: no team (map the user in gpushare_assess_users)" % where)
                    continue
                asks, why = _asks(card, process, (entry or {}).get("proposed") or {}, profiles, shared_teams, whole)
                if not asks:
                    result["left_out"].append("%s: %s" % (where, why))
                    continue
                first = int((max(start, start_of_day) - start_of_day) // slot)
                # A session that ends within a minute after a boundary (the samples' own jitter) ends there.
                until = int(math.ceil((min(end, start_of_day + DAY) - start_of_day - 60) / float(slot)))
                until = max(until, first + 1)
                workload = dict({"team": process.team, "name": _name(process.user, process.pid, taken)}, **asks)
                result["workloads"].append(dict(workload, kind=process.kind, host=card.host, gpu_index=card.index,
                                                submit=_clock(first, slot),
                                                delete=_clock(until, slot) if until < last else None))
                events.setdefault(first, {"submit": [], "delete": []})["submit"].append(workload)
                if until < last:
                    events.setdefault(until, {"submit": [], "delete": []})["delete"].append(workload["name"])
    for number in sorted(events):
        step: Dict[str, Any] = {"at": _clock(number, slot)}
        if events[number]["delete"]:
            step["delete"] = sorted(events[number]["delete"])
        if events[number]["submit"]:
            step["submit"] = events[number]["submit"]
        result["steps"].append(step)
    if not result["steps"]:
        result["why"] = ("read without per-process data (Prometheus): there are no sessions to replay"
                         if cards and not any(card.process_data for card in cards)
                         else "no session of a team on the busiest day: nothing to replay")
    return result


def _clock(number: int, slot: int) -> str:
    seconds = number * slot
    return "%02d:%02d" % (seconds // 3600, seconds % 3600 // 60)
