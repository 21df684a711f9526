# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Quota and layout proposals from usage figures (pure; no I/O).

Input: the figures of ``usage_figures.compute_figures`` plus the inventory
(``gpushare_teams`` and each host's ``gpushare_gpus``). Output: proposals, each naming the
inventory variable to change (``where`` the file, ``variable`` the path inside it), the
current and the proposed value, and the figures that justify it. Nothing is applied:
a person edits the inventory and runs ``plan.yml`` to see the consequences.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import inventory as inventory_lib
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.catalog import MigProfile
from ansible_collections.gpushare.cluster.plugins.module_utils._common.quantities import parse_memory_mib


@dataclass(frozen=True)
class AdviceThresholds:
    """When a figure becomes a proposal. Defaults suit a two-week window."""

    # A whole GPU busy below this share of its allocated time moves to `use: shared`.
    shared_below: float = 0.10
    # Time-sliced replicas are sized so their summed busy share stays under this.
    shared_target: float = 0.5
    # Ignore GPUs allocated for less than this many hours in the window.
    min_allocated_hours: float = 24.0
    # A MIG instance whose peak memory stays under this share of its slice shrinks.
    mig_memory_below: float = 0.5
    # Headroom on top of the peak memory when proposing a smaller MIG need.
    mig_headroom: float = 1.25
    # A team "waits" when workloads were pending this share of the window ...
    waiting_share: float = 0.05
    # ... and the p95 admission wait is at least this long (seconds).
    wait_p95_seconds: float = 900.0
    # The cluster is short of GPUs when saturated with waiting workloads this share of the window.
    saturated_waiting_share: float = 0.10
    # A team whose GPUs are busy below this share may give one to a waiting team.
    donor_efficiency_below: float = 0.3


def _memory_mib(value: Any) -> Optional[int]:
    """An inventory memory need in MiB, or None when it cannot be read (then it is not compared)."""
    try:
        return parse_memory_mib(value)
    except ValueError:
        return None


def _smaller_profile(model_key: Optional[str], profile: str, need_mib: int) -> Tuple[bool, Optional[MigProfile]]:
    """(model known, the smallest plain profile of the model holding ``need_mib`` if smaller than ``profile``)."""
    model = gpu_catalog.find(model_key) if model_key else None
    if model is None or not model.profiles:
        return False, None
    current = next((p for p in model.profiles if p.name == profile), None)
    plain = [p for p in model.profiles if re.fullmatch(r"\d+g\.\d+gb", p.name) and p.memory_mib >= need_mib]
    if current is not None:
        plain = [p for p in plain if p.memory_mib < current.memory_mib]
    return True, min(plain, key=lambda p: (p.memory_mib, p.compute_slices)) if plain else None


def expand_gpus(host: str, entries: Sequence[Mapping[str, Any]]) -> Dict[int, Dict[str, Any]]:
    """Index -> inventory entry for one host, with the planner's own ``count`` rule (inventory.expand_entries).

    ``_entry`` is the entry's position in the list; ``_count`` is set when the entry is a count shorthand.
    """
    errors: List[str] = []
    expanded = inventory_lib.expand_entries(host, list(entries), errors)
    if errors:
        raise ValueError("; ".join(errors))
    return {index: dict(raw, index=index, _entry=position, **({"_count": True} if "count" in raw else {}))
            for index, position, raw in expanded}


def _host_file(host: str) -> str:
    return f"host_vars/{host}.yml"


def _team_priority(teams: Sequence[Mapping[str, Any]]) -> Dict[str, int]:
    return {str(t.get("name")): int(t.get("priority", 0)) for t in teams}


def propose(
    figures: Mapping[str, Any],
    teams: Sequence[Mapping[str, Any]],
    nodes: Mapping[str, Sequence[Mapping[str, Any]]],
    plan: Optional[Mapping[str, Any]] = None,
    thresholds: AdviceThresholds = AdviceThresholds(),
) -> List[Dict[str, Any]]:
    """Proposals for the inventory, most important first (waiting, capacity, then efficiency)."""
    inventory = {host: expand_gpus(host, entries or []) for host, entries in nodes.items()}
    proposals: List[Dict[str, Any]] = []
    proposals += _quota_proposals(figures, teams, inventory, thresholds)
    proposals += _capacity_proposals(figures, inventory, proposals, thresholds)
    proposals += _shared_proposals(figures, inventory, thresholds)
    proposals += _mig_proposals(figures, inventory, plan, thresholds)
    return proposals


def _team_gpus(inventory: Mapping[str, Mapping[int, Mapping[str, Any]]], team: str) -> List[Dict[str, Any]]:
    return [dict(entry, host=host) for host, gpus in inventory.items() for entry in gpus.values()
            if entry.get("team") == team]


def _gpu_figure(figures: Mapping[str, Any], host: str, index: int) -> Optional[Mapping[str, Any]]:
    for gpu in figures.get("gpus", []):
        if gpu["host"] == host and gpu["gpu"] == index and not gpu.get("mig_profile"):
            return gpu
    return None


def _is_waiting(team_figures: Mapping[str, Any], window_hours: float, thresholds: AdviceThresholds) -> bool:
    pending_hours = team_figures.get("pending_hours")
    if not pending_hours or pending_hours < thresholds.waiting_share * window_hours:
        return False
    wait = team_figures.get("wait_p95_seconds")
    # Without the wait histogram, pending time alone decides.
    return wait is None or wait >= thresholds.wait_p95_seconds


def _quota_proposals(figures, teams, inventory, thresholds) -> List[Dict[str, Any]]:
    window_hours = figures["window"]["hours"]
    priorities = _team_priority(teams)
    proposals: List[Dict[str, Any]] = []
    for team, fig in figures["teams"].items():
        if not _is_waiting(fig, window_hours, thresholds):
            continue
        nominal = fig.get("nominal_quota")
        peak = fig.get("allocated_peak") or 0.0
        # An unknown peak (GPUs without exporter data) is not "below the quota".
        if nominal is not None and fig.get("allocated_peak") is not None and peak < nominal:
            # Waiting below its own quota is not a quota problem (a fragmented or
            # oversized request); say so instead of raising the quota.
            proposals.append({
                "kind": "investigate_waiting",
                "team": team,
                "where": None,
                "variable": None,
                "current": None,
                "proposed": None,
                "reason": (
                    f"{team} had workloads pending {fig['pending_hours']:g} h of {window_hours:g} h "
                    f"although its allocation peaked at {peak:g} of a nominal quota of {nominal:g} GPUs: "
                    "check the size of the waiting requests against a single node."
                ),
                "figures": _pick(fig, "pending_hours", "wait_p95_seconds", "allocated_peak", "nominal_quota"),
            })
            continue
        base = nominal if nominal is not None else peak
        deficit = max(1, int(math.ceil(peak - base)) if peak > base else 1)
        evidence = _pick(fig, "pending_hours", "pending_peak", "wait_p95_seconds", "allocated_peak",
                         "allocated_p95", "nominal_quota", "borrowing_limit", "borrowed_peak", "borrowing_hours")
        wait_text = (f", p95 admission wait {fig['wait_p95_seconds'] / 3600:.1f} h"
                     if fig.get("wait_p95_seconds") is not None else "")
        facts = (f"{team} had workloads pending {fig['pending_hours']:g} h of {window_hours:g} h{wait_text}; "
                 f"its allocation peaked at {peak:g} GPUs against a nominal quota of "
                 f"{'unknown' if nominal is None else f'{nominal:g}'}")
        reached = [row for row in fig.get("borrowing_limits") or [] if row.get("reached")]
        if reached:
            row = reached[0]
            current = next((t.get("borrow") for t in teams if t.get("name") == team), None)
            proposed = _raised_borrow(current, row, deficit)
            proposals.append({
                "kind": "raise_borrowing_limit",
                "team": team,
                "where": "group_vars/all (gpushare_teams)",
                "variable": f"gpushare_teams[name={team}].borrow",
                "current": current,
                "proposed": proposed,
                "reason": (f"{facts}; it borrowed up to its limit of {row['limit']:g} {row['resource']} "
                           f"(flavor {row['flavor']}), so a higher borrowing limit lets it use lent GPUs."),
                "figures": dict(evidence, borrowing_limit_resource=row["resource"], borrowing_limit_flavor=row["flavor"]),
            })
            continue
        donor = _donor_gpu(figures, inventory, team, priorities, thresholds)
        if donor is not None:
            proposals.append({
                "kind": "move_gpu",
                "team": team,
                "where": _host_file(donor["host"]),
                "variable": f"gpushare_gpus[index={donor['index']}].team",
                "current": donor["team"],
                "proposed": team,
                "reason": (f"{facts}; GPU {donor['index']} on {donor['host']} is allocated to {donor['team']} "
                           f"but busy only {donor['busy']:.0%} of that time, so moving it raises {team}'s "
                           f"nominal quota to {(nominal or 0) + 1:g}."),
                "figures": dict(evidence, donor_busy_ratio_when_allocated=round(donor["busy"], 3)),
            })
            continue
        proposals.append(_add_gpu(team, inventory, deficit, f"{facts}; no other team has a GPU idle enough to give, "
                                  f"so {team}'s nominal quota grows by {deficit} with {deficit} more GPU(s).",
                                  evidence, kind="add_gpu_for_quota"))
    return proposals


def _raised_borrow(current: Any, row: Mapping[str, Any], deficit: int) -> Any:
    """The team's ``borrow`` with the limit of ``row``'s resource raised, in the form the inventory uses."""
    raised = int(row["limit"]) + deficit
    if isinstance(current, Mapping):
        return dict(current, **{row["resource"]: max(raised, int(current.get(row["resource"], 0)) + deficit)})
    if isinstance(current, int) and not isinstance(current, bool):
        return max(raised, current + deficit)
    return raised


def _donor_gpu(figures, inventory, team, priorities, thresholds) -> Optional[Dict[str, Any]]:
    candidates = []
    for host, gpus in inventory.items():
        for index, entry in gpus.items():
            owner = entry.get("team")
            if owner in (None, team) or entry.get("use", "whole") != "whole":
                continue
            # Never propose taking a GPU from a team that outranks the waiting one:
            # its reclaim would take the GPU back anyway.
            if priorities.get(owner, 0) > priorities.get(team, 0):
                continue
            fig = _gpu_figure(figures, host, index)
            if not fig or fig.get("busy_ratio_when_allocated") is None:
                continue
            busy = fig["busy_ratio_when_allocated"]
            if busy < thresholds.donor_efficiency_below:
                candidates.append({"host": host, "index": index, "team": owner, "busy": busy})
    return min(candidates, key=lambda c: c["busy"]) if candidates else None


def _add_gpu(team, inventory, count, reason, evidence, kind) -> Dict[str, Any]:
    owned = _team_gpus(inventory, team)
    whole = [g for g in owned if g.get("use", "whole") == "whole"]
    model_source = whole or owned or [g for gpus in inventory.values() for g in gpus.values()]
    models = [g.get("model") for g in model_source if g.get("model")]
    model = max(set(models), key=models.count) if models else None
    use = "whole" if whole or not owned else owned[0].get("use", "whole")
    host = model_source[0]["host"] if model_source and "host" in model_source[0] else None
    entry: Dict[str, Any] = {"count": count, "team": team, "use": use}
    if model:
        entry["model"] = model
    like = next((g for g in owned if g.get("use", "whole") == use), None)
    if use == "shared":
        entry["replicas"] = int((like or {}).get("replicas") or 2)
    elif use == "mig":
        entry["mig"] = dict((like or {}).get("mig") or {})
    return {
        "kind": kind,
        "team": team,
        "where": _host_file(host) if host else "host_vars/<new host>.yml",
        "variable": "gpushare_gpus (append)",
        "current": None,
        "proposed": entry,
        "reason": reason + (f" The load that waits runs on {use} GPUs" + (f" ({model})" if model else "") + "."),
        "figures": evidence,
    }


def _capacity_proposals(figures, inventory, earlier, thresholds) -> List[Dict[str, Any]]:
    cluster = figures["cluster"]
    window_hours = figures["window"]["hours"]
    waiting = cluster.get("saturated_with_waiting_hours")
    if not waiting or waiting < thresholds.saturated_waiting_share * window_hours:
        return []
    team = cluster.get("team_pending_most") or cluster.get("team_waiting_longest")
    if team is None or any(p["kind"] == "add_gpu_for_quota" and p["team"] == team for p in earlier):
        return []
    evidence = _pick(cluster, "gpus", "busy_share", "allocated_share", "saturated_hours",
                     "saturated_with_waiting_hours", "wait_p95_seconds_max")
    reason = (f"All {cluster['devices']} GPU devices of {cluster['gpus']} GPUs were allocated while workloads waited for {waiting:g} h of "
              f"{window_hours:g} h (cluster busy share {cluster.get('busy_share') or 0:.0%}); "
              f"{team} waited most, so another card is justified for its load.")
    return [_add_gpu(team, inventory, 1, reason, evidence, kind="add_gpu")]


def _shared_proposals(figures, inventory, thresholds) -> List[Dict[str, Any]]:
    proposals = []
    for host, gpus in inventory.items():
        for index, entry in sorted(gpus.items()):
            if entry.get("use", "whole") != "whole":
                continue
            fig = _gpu_figure(figures, host, index)
            if not fig or fig.get("busy_ratio_when_allocated") is None:
                continue
            if (fig.get("allocated_hours") or 0) < thresholds.min_allocated_hours:
                continue
            busy = fig["busy_ratio_when_allocated"]
            if busy >= thresholds.shared_below:
                continue
            replicas = max(2, min(8, int(thresholds.shared_target / max(busy, 0.01))))
            where = _host_file(host)
            base = f"gpushare_gpus[index={index}]"
            split = (f" GPU {index} is part of the count entry gpushare_gpus[{entry['_entry']}]: write it as its "
                     f"own entry (the count entries before and after it keep their indexes)."
                     if entry.get("_count") else "")
            proposals.append({
                "kind": "whole_to_shared",
                "team": entry.get("team"),
                "where": where,
                "variable": f"{base}.use",
                "current": "whole",
                "proposed": "shared",
                "also": {f"{base}.replicas": replicas},
                "reason": (f"GPU {index} on {host} ({entry.get('team')}) was allocated {fig['allocated_hours']:g} h "
                           f"and busy {busy:.1%} of that time, idle {fig.get('idle_allocated_hours') or 0:g} h; "
                           f"time-sliced with {replicas} replicas the same load keeps the GPU under "
                           f"{thresholds.shared_target:.0%} busy and frees it for others.{split}"),
                "figures": _pick(fig, "allocated_hours", "busy_ratio_when_allocated", "idle_allocated_hours"),
            })
    return proposals


def _planned_instance(plan, host, index, profile) -> List[str]:
    if not plan:
        return []
    node = (plan.get("nodes") or {}).get(host) or {}
    for gpu in node.get("gpus") or []:
        if gpu.get("index") == index:
            return [i.get("name") for i in gpu.get("instances") or [] if i.get("profile") == profile and i.get("name")]
    return []


def _mig_proposals(figures, inventory, plan, thresholds) -> List[Dict[str, Any]]:
    proposals = []
    for fig in figures.get("gpus", []):
        profile = fig.get("mig_profile")
        used, total = fig.get("memory_used_peak_mib"), fig.get("memory_total_mib")
        if not profile or used is None or not total:
            continue
        if used >= thresholds.mig_memory_below * total:
            continue
        if (fig.get("allocated_hours") or 0) < thresholds.min_allocated_hours:
            continue  # an unused slice (often a fill instance) says nothing about a need
        host, index = fig["host"], fig["gpu"]
        entry = (inventory.get(host) or {}).get(index, {})
        if entry.get("use") != "mig" or entry.get("_count"):
            # A MIG instance the planner made for a shared GPU (device_plugin), or a MIG layout
            # shared by every GPU of a count entry: a smaller need is no change of this GPU's
            # own entry, so nothing is proposed.
            continue
        need_gib = max(1, int(math.ceil(used * thresholds.mig_headroom / 1024.0)))
        known, smaller = _smaller_profile(entry.get("model"), profile, need_gib * 1024)
        if known and smaller is None:
            continue  # no smaller profile of this model holds the need: nothing to free
        if not known and _compute_slices(profile) <= 1:
            # Model unknown and already the fewest compute slices: a smaller need
            # might not free anything.
            continue
        target = (f"the planner would pick {smaller.name} ({smaller.memory_mib / 1024:.1f} GiB) instead"
                  if smaller else "lets the planner pick a smaller profile")
        proposed = f"{need_gib}GiB"
        instances = (entry.get("mig") or {}).get("instances") or []
        names = _planned_instance(plan, host, index, profile)
        if not names and not plan and len(instances) == 1:
            names = [instances[0].get("name")]  # one need: the slice is the one that serves it
        if len(names) != 1 or not any(i.get("name") == names[0] for i in instances):
            # Which need this slice serves is not known (several on one profile, explicit
            # profiles, no plan): no proposal rather than one that names no key of the entry.
            continue
        variable = f"gpushare_gpus[index={index}].mig.instances[name={names[0]}].memory"
        current = next((i.get("memory") for i in instances if i.get("name") == names[0]), None)
        current_mib = _memory_mib(current) if current is not None else None
        if current_mib is not None and current_mib <= need_gib * 1024:
            continue  # the need is already small; the planner chose the slice size for other reasons
        proposals.append({
            "kind": "mig_smaller_profile",
            "team": entry.get("team"),
            "where": _host_file(host),
            "variable": variable,
            "current": current if current is not None else profile,
            "proposed": proposed,
            "reason": (f"MIG instance {profile} on {host} GPU {index} never used more than "
                       f"{used / 1024:.1f} GiB of its {total / 1024:.1f} GiB; with a need of {need_gib}GiB "
                       f"({thresholds.mig_headroom:.0%} of the peak) {target}, freeing slices."),
            "figures": _pick(fig, "memory_used_peak_mib", "memory_total_mib", "allocated_hours",
                             "busy_ratio_when_allocated"),
        })
    return proposals


_PATH_STEP = re.compile(r"(?P<key>[a-z_]+)(?:\[(?P<field>[a-z]+)=(?P<value>[^\]]+)\])?")


def apply_proposal(teams: Sequence[Mapping[str, Any]], nodes: Mapping[str, Sequence[Mapping[str, Any]]],
                   proposal: Mapping[str, Any]) -> Tuple[List[Dict[str, Any]], Dict[str, List[Dict[str, Any]]]]:
    """The inventory (``gpushare_teams``, host -> ``gpushare_gpus``) with one proposal applied.

    Proposals name their change as a path (``gpushare_teams[name=T].borrow``,
    ``gpushare_gpus[index=N].use``, ``...mig.instances[name=X].memory``, ``gpushare_gpus (append)``)
    in the file ``where``; this applies exactly that, so each proposal can be planned again. A GPU
    that is part of a ``count`` entry is first written as its own entry, the rest of the count
    keeping its indexes. Proposals without a change (``variable`` None) leave the inventory as it is.
    """
    import copy

    new_teams = copy.deepcopy([dict(t) for t in teams])
    new_nodes = {host: copy.deepcopy([dict(e) for e in entries or []]) for host, entries in nodes.items()}
    variable = proposal.get("variable")
    if not variable:
        return new_teams, new_nodes
    changes = {variable: proposal.get("proposed")}
    changes.update(proposal.get("also") or {})
    for path, value in changes.items():
        if path.startswith("gpushare_teams"):
            _set_path(new_teams, path[len("gpushare_teams"):], value, path)
            continue
        match = re.fullmatch(r"host_vars/(?P<host>.+)\.yml", str(proposal.get("where") or ""))
        if not match:
            raise ValueError(f"proposal {proposal.get('kind')}: where {proposal.get('where')!r} names no host file")
        host = match.group("host")
        entries = new_nodes.setdefault(host, [])
        if path == "gpushare_gpus (append)":
            entries.append(copy.deepcopy(dict(value)))
            continue
        index_match = re.match(r"gpushare_gpus\[index=(\d+)\]", path)
        if index_match:
            _split_out(host, entries, int(index_match.group(1)))
        _set_path(entries, path[len("gpushare_gpus"):], value, path)
    return new_teams, new_nodes


def _split_out(host: str, entries: List[Dict[str, Any]], index: int) -> None:
    """Write GPU ``index`` as its own entry when a count entry holds it; every index stays where it was."""
    expanded = inventory_lib.expand_entries(host, entries, [])
    for index_, position, raw in expanded:
        if index_ != index or "count" not in raw:
            continue
        start = min(i for i, p, _r in expanded if p == position)
        base = {k: v for k, v in raw.items() if k != "count"}
        replacement = []
        if index > start:
            replacement.append(dict(base, count=index - start))
        replacement.append(dict(base, index=index))
        if start + raw["count"] - 1 > index:
            replacement.append(dict(base, count=start + raw["count"] - 1 - index))
        entries[position:position + 1] = replacement
        return


def _set_path(items: Any, path: str, value: Any, whole: str) -> None:
    steps = [step for step in path.split(".") if step]
    # The first step selects an element of the list: "[name=T]" or "[index=N]".
    first = re.fullmatch(r"\[(?P<field>[a-z]+)=(?P<value>[^\]]+)\]", steps[0]) if steps else None
    if first is None:
        raise ValueError(f"proposal variable {whole!r}: cannot be applied")
    target = _select(items, first.group("field"), first.group("value"), whole)
    for number, step in enumerate(steps[1:]):
        match = _PATH_STEP.fullmatch(step)
        if match is None:
            raise ValueError(f"proposal variable {whole!r}: cannot be applied")
        last = number == len(steps) - 2
        if match.group("field"):
            target = _select(target.get(match.group("key")) or [], match.group("field"), match.group("value"), whole)
            if last:
                raise ValueError(f"proposal variable {whole!r}: ends with a selector")
        elif last:
            target[match.group("key")] = value
        else:
            target = target.setdefault(match.group("key"), {})


def _select(items: Any, field: str, value: str, whole: str) -> Dict[str, Any]:
    for item in items:
        if isinstance(item, dict) and str(item.get(field)) == value:
            return item
    raise ValueError(f"proposal variable {whole!r}: no entry with {field} {value}")


def _compute_slices(profile: str) -> int:
    match = re.match(r"(\d+)g\.", profile)
    return int(match.group(1)) if match else 0


def _pick(source: Mapping[str, Any], *keys: str) -> Dict[str, Any]:
    return {key: source.get(key) for key in keys}


def _fmt(value: Any, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "missing"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def summary_lines(figures: Mapping[str, Any], proposals: Sequence[Mapping[str, Any]]) -> List[str]:
    """Human-readable lines: the window, one per team, the cluster, then each proposal."""
    window = figures["window"]
    lines = [f"window: {window['hours']:g} h at {window['step_seconds']} s steps"]
    for team, fig in figures["teams"].items():
        efficiency = fig.get("efficiency")
        wait = fig.get("wait_p95_seconds")
        lines.append(
            f"team {team}: allocated {_fmt(fig.get('gpu_hours_allocated'), ' GPU-h')}, "
            f"busy {_fmt(fig.get('gpu_hours_busy'), ' GPU-h')}, "
            f"efficiency {'missing' if efficiency is None else f'{efficiency:.0%}'}, "
            f"peak {_fmt(fig.get('allocated_peak'))} / p95 {_fmt(fig.get('allocated_p95'))} GPUs, "
            f"borrowing {_fmt(fig.get('borrowing_hours'), ' h')}, lending {_fmt(fig.get('lending_hours'), ' h')}, "
            f"pending {_fmt(fig.get('pending_hours'), ' h')}, "
            f"p95 wait {'missing' if wait is None else f'{wait / 3600:.1f} h'}"
        )
    cluster = figures["cluster"]
    busy_share = cluster.get("busy_share")
    lines.append(
        f"cluster: {cluster.get('gpus')} GPUs ({cluster.get('devices')} devices), busy share "
        f"{'missing' if busy_share is None else f'{busy_share:.0%}'}, "
        f"saturated {_fmt(cluster.get('saturated_hours'), ' h')}, pending {_fmt(cluster.get('pending_hours'), ' h')}"
    )
    for item in figures.get("missing", []):
        lines.append(f"missing: {item['figure']} ({item['series']}; from {item['source']})")
    for proposal in proposals:
        lines.append(
            f"proposal {proposal['kind']}: {proposal.get('where') or '-'}: {proposal.get('variable') or '-'}: "
            f"{proposal.get('current')!r} -> {proposal.get('proposed')!r} ({proposal['reason']})"
        )
    return lines
