# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The assessment: samples of every host and the inventory in, assessment.json's content out.

``assess()`` is what the gpu_assessment module calls: it builds one card per (host, index)
from the samples, names the card of every index the inventory lists but no sample shows,
classifies every process, proposes each card's use and answers whether the cards are enough.
Problems with the data that still allow an answer are listed in ``problems``; those that do
not raise one :class:`AssessDataError` listing them all. Pure Python, no I/O.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpushare.cluster.plugins.module_utils.assess.figures import (
    KINDS, UNASSIGNED, Card, Thresholds, attach_processes, card_figures, card_interval, heat_map, peak_concurrency)
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.proposal import (
    CANNOT_DECIDE, capacity, card_demand, card_team, propose_card, propose_card_without_processes)
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.replay import replay
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.samples import (
    AssessDataError, HostSamples, time_text, without_cycle_collection)
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import expand_entries


def _inventory_by_index(host: str, entries: Any, errors: List[str]) -> Dict[int, Mapping[str, Any]]:
    if entries is None:
        return {}
    return {index: raw for index, _position, raw in expand_entries(host, entries, errors)}


def build_cards(samples: HostSamples, today: Dict[int, Mapping[str, Any]], errors: List[str],
                problems: List[str]) -> Dict[str, Card]:
    """The cards of one host, by UUID (a replaced card's UUIDs all point to its index's card)."""
    by_index: Dict[int, List[Any]] = {}
    for series in samples.gpus.values():
        by_index.setdefault(series.index, []).append(series)
    cards: Dict[str, Card] = {}
    for index, seen in sorted(by_index.items()):
        seen.sort(key=lambda series: series.times[0])
        last = seen[-1]
        if len(seen) > 1:
            problems.append("host %s, GPU %d: card replaced during the window (%s); the figures join them, the "
                            "proposal is for the last one (%s)" % (
                                samples.host, index,
                                ", ".join("%s %s from %s" % (s.uuid, s.name, time_text(s.times[0])) for s in seen),
                                last.name))
        declared = today.get(index, {})
        model = catalog.find(last.name)
        if model is None and declared.get("model"):
            model = catalog.find(str(declared["model"]))
            if model is not None:
                problems.append("host %s, GPU %d: nvidia-smi names it %r, which the catalog does not know; using the "
                                "inventory's model %s" % (samples.host, index, last.name, model.key))
        if model is None:
            where = last.first_seen if last.first_seen.startswith("series ") else "file " + last.first_seen
            errors.append("host %s, %s, GPU %d: unknown GPU name %r; set its model in gpushare_gpus (a catalog "
                          "key such as %s)" % (samples.host, where, index, last.name,
                                               ", ".join(sorted(catalog.MODELS)[:4])))
            continue
        times: List[float] = []
        utilization: List[int] = []
        memory: List[int] = []
        for series in seen:
            times += series.times
            utilization += series.utilization
            memory += series.memory_used
        team = declared.get("team")
        card = Card(samples.host, index, [s.uuid for s in seen], last.name, model.key, model.mig_capable,
                    last.memory_total_mib, str(team) if team else None, card_interval(times), times, utilization,
                    memory, process_data=samples.process_data,
                    entry_today={key: declared[key] for key in ("use", "mig", "replicas") if key in declared})
        for series in seen:
            cards[series.uuid] = card
    for index in sorted(set(today) - set(by_index)):
        problems.append("host %s, GPU %d: in gpushare_gpus but in no sample; it keeps its inventory entry"
                        % (samples.host, index))
    return cards


def _team_figures(team: str, cards: Sequence[Card], demand: Dict[int, Dict[str, float]], proposed: Dict[str, int],
                  window_hours: float) -> Dict[str, Any]:
    processes = [p for card in cards for p in card.processes if p.team == team]
    hours = sorted(demand)
    series = [demand[hour].get(team, 0.0) / 3600.0 for hour in hours]
    gpu_hours = sum(series)
    today = sum(1 for card in cards if card.team_today == team)
    lengths = sorted(end - start for p in processes for start, end in p.sessions)
    at_once, users_at_once = peak_concurrency(processes, 60.0)
    return {
        "gpus_today": today,
        "gpus_proposed": proposed.get(team, 0),
        "gpu_hours": round(gpu_hours, 1),
        "busy_fraction": round(gpu_hours / (window_hours * today), 3) if today and window_hours else None,
        "peak_hourly_demand_gpu_equivalents": round(max(series), 2) if series else 0.0,
        "demand_by_weekday_hour": heat_map([hour * 3600.0 for hour in hours], series),
        "processes": len(processes),
        "kinds": {kind: sum(1 for p in processes if p.kind == kind) for kind in KINDS},
        "users": sorted({p.user for p in processes}),
        "peak_memory_per_process_mib": max((p.peak_mib for p in processes), default=0),
        "typical_memory_per_process_mib": sorted(p.typical_mib for p in processes)[len(processes) // 2]
        if processes else 0,
        "peak_concurrent_processes": at_once,
        "peak_concurrent_users": users_at_once,
        "sessions": len(lengths),
        "median_session_minutes": round(lengths[len(lengths) // 2] / 60.0, 1) if lengths else 0.0,
        "longest_session_minutes": round(lengths[-1] / 60.0, 1) if lengths else 0.0,
    }


def _suggestion(team: str, figures: Dict[str, Any], priorities: Dict[str, Any]) -> str:
    peak = figures["peak_hourly_demand_gpu_equivalents"]
    owned = figures["gpus_proposed"]
    if peak > owned:
        return ("nominal quota %d GPU(s) (the proposal's); its busiest hour asked %.2f, so it borrows from the "
                "cohort (priority %s)" % (owned, peak, priorities.get(team)))
    return "nominal quota %d GPU(s) (the proposal's); its busiest hour asked %.2f, so it can lend" % (owned, peak)


# Where the samples came from, as assessment.json's ``source`` and the messages name it.
SAMPLES_SOURCE = {"kind": "samples", "clock": "each host's own"}


def assess(host_samples: Mapping[str, Optional[HostSamples]], gpus_today: Mapping[str, Any],
           teams: Sequence[Mapping[str, Any]], users: Mapping[str, str],
           limits: Thresholds = Thresholds(), problems: Optional[List[str]] = None,
           source: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The assessment of every host (None: the host has no samples) as assessment.json holds it.

    ``gpus_today``: host -> its ``gpushare_gpus`` (may be missing); ``teams``: ``gpushare_teams``;
    ``users``: ``gpushare_assess_users``; ``source``: where the samples came from (default the
    nvidia-smi files; ``kind: prometheus`` with its ``url``). Raises AssessDataError naming every
    host, file, line or GPU that keeps the proposal from being made.
    """
    with without_cycle_collection():
        return _assess(host_samples, gpus_today, teams, users, limits, problems, dict(source or SAMPLES_SOURCE))


def _no_samples(host: str, source: Mapping[str, Any]) -> str:
    if source.get("kind") == "prometheus":
        return ("host %s: no GPU series in Prometheus (DCGM_FI_DEV_GPU_UTIL with hostname or Hostname %s); its GPUs "
                "keep their inventory entries" % (host, host))
    return "host %s: no samples (no file under the samples directory); its GPUs keep their inventory entries" % host


def _assess(host_samples: Mapping[str, Optional[HostSamples]], gpus_today: Mapping[str, Any],
            teams: Sequence[Mapping[str, Any]], users: Mapping[str, str],
            limits: Thresholds, problems: Optional[List[str]], source: Dict[str, Any]) -> Dict[str, Any]:
    problems = list(problems or [])
    errors: List[str] = []
    team_names = [str(team.get("name")) for team in teams or [] if isinstance(team, Mapping)]
    priorities = {str(team.get("name")): team.get("priority") for team in teams or [] if isinstance(team, Mapping)}
    for user, team in sorted(users.items()):
        if team not in team_names:
            errors.append("gpushare_assess_users: user %r maps to team %r, which is not in gpushare_teams (%s)"
                          % (user, team, ", ".join(team_names)))
    cards: List[Card] = []
    for host in sorted(host_samples):
        samples = host_samples[host]
        today = _inventory_by_index(host, gpus_today.get(host), errors)
        if samples is None or not samples.gpus:
            problems.append(_no_samples(host, source))
            continue
        problems.extend(samples.problems)
        by_uuid = build_cards(samples, today, errors, problems)
        attach_processes(samples, by_uuid, dict(users), limits, problems)
        for card in by_uuid.values():
            if card not in cards:
                cards.append(card)
    if not cards and not errors:
        errors.append("no host has samples: nothing to assess (%s)" % (
            "no DCGM_FI_DEV_GPU_UTIL series of these hosts at %s" % source.get("url")
            if source.get("kind") == "prometheus" else "gpushare_assess_samples_dir/<host>/gpus*.csv"))
        errors.extend(problems)  # why no host has any: names not matched, hosts without data
    demand: Dict[int, Dict[str, float]] = {}
    entries = []
    for card in cards:
        figures = card_figures(card, limits)
        per_hour = card_demand(card, limits)
        team_share: Dict[str, float] = {}
        for hour, by_team in per_hour.items():
            merged = demand.setdefault(hour, {})
            for team, seconds in by_team.items():
                merged[team] = merged.get(team, 0.0) + seconds
                team_share[team] = team_share.get(team, 0.0) + seconds / 3600.0
        team = card_team(card, team_share, errors)
        if team is not None and team not in team_names:
            errors.append("host %s, GPU %d: team %r is not in gpushare_teams (%s)"
                          % (card.host, card.index, team, ", ".join(team_names)))
            team = None
        if team is None:
            continue
        if card.process_data:
            entry, why, placed = propose_card(card, team, figures, limits)
        else:
            entry, why, placed = propose_card_without_processes(card, team, figures, limits)
        entries.append({"host": card.host, "index": card.index, "uuid": card.uuids[-1], "uuids": card.uuids,
                        "name": card.name, "model": card.model, "team_today": card.team_today,
                        "teams": {name: round(value, 1) for name, value in sorted(team_share.items())},
                        "figures": figures, "proposed": entry, "why": why, "mig_layout": placed,
                        "cannot_decide": [] if card.process_data else list(CANNOT_DECIDE)})
    if errors:
        raise AssessDataError("the samples cannot be assessed, %d problem(s):\n- %s"
                              % (len(errors), "\n- ".join(errors)))
    proposed: Dict[str, int] = {}
    for entry in entries:
        proposed[entry["proposed"]["team"]] = proposed.get(entry["proposed"]["team"], 0) + 1
    start = min(card.times[0] for card in cards)
    end = max(card.times[-1] for card in cards)
    window_hours = (end - start) / 3600.0
    team_figures = {team: _team_figures(team, cards, demand, proposed, window_hours) for team in team_names}
    for team, figures in team_figures.items():
        figures["suggestion"] = _suggestion(team, figures, priorities)
    unassigned = [dict(p.figures(), host=p.host, gpu_uuid=p.gpu_uuid) for card in cards for p in card.processes
                  if p.team == UNASSIGNED]
    hosts: Dict[str, List[Dict[str, Any]]] = {}
    for entry in entries:
        hosts.setdefault(entry["host"], []).append(entry)
    return {
        "source": source,
        "window": {"from": time_text(start), "to": time_text(end), "hours": round(window_hours, 1)},
        "thresholds": dict(vars(limits)),
        "gpus": entries,
        "teams": team_figures,
        "capacity": capacity(demand, cards, proposed),
        "replay": replay(cards, entries, demand, limits),
        "proposal": {"hosts": {host: [e["proposed"] for e in items] for host, items in hosts.items()}},
        "unassigned": unassigned,
        "problems": problems,
    }
