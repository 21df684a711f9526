# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layout planner: from per-GPU needs or explicit profiles to placed GPU instances.

Geometry (NVML): a GPU instance of a profile occupies the placement units
``[start, start + size)`` for one of the profile's allowed starts; two instances conflict
when their ranges overlap; each profile has a max count per GPU; compute slices add up to
no more than the GPU has. A layout is valid when all of these hold.

Requests per GPU (``mig`` of an inventory entry):

* ``profiles: {name: count}`` - placed exactly as asked, or rejected with the reason.
* ``instances: [{name, memory, compute?, media?}]`` - for each need the smallest profile
  that holds it (by real usable memory, then compute slices); larger profiles are tried,
  fewest upgrades first, only when the smallest ones cannot be placed together. The
  search is exhaustive, so a layout is found whenever one exists. ``fill`` (default
  true) turns free placement units into extra instances of the smallest profiles.

Results are memoised by (model, request), so a fleet of identical nodes costs one solve
per distinct GPU request. Pure Python, no I/O; errors are ValueError naming host, GPU
index, model and field.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.catalog import MODELS, GpuModel, MigProfile, lookup
from ansible_collections.gpushare.cluster.plugins.module_utils._common.quantities import format_mib, parse_memory_mib
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError

USES = ("whole", "mig", "shared")

_MEDIA_ALIASES = {
    "": "", "none": "", "base": "",
    "me": "+me", "+me": "+me",
    "me.all": "+me.all", "+me.all": "+me.all",
    "-me": "-me", "no-me": "-me",
    "gfx": "+gfx", "+gfx": "+gfx",
}

# A placed instance: (profile name, start).
Slot = Tuple[str, int]


class MigLayoutError(GpushareError):
    """A request that cannot be planned; the message names host, GPU index and field.

    ``errors`` lists each problem on its own (the message joins them).
    """

    def __init__(self, message: str, errors: Optional[Sequence[str]] = None) -> None:
        super().__init__(message)
        self.errors = list(errors) if errors else [message]


class _Reason(Exception):
    """A problem with one GPU's request, before host and index are known."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason
        self.all = [(field, reason)]


# --- geometry -------------------------------------------------------------------------


def _mask(profile: MigProfile, start: int) -> int:
    return ((1 << profile.size) - 1) << start


def layout_problems(model: GpuModel, placements: Sequence[Slot]) -> List[str]:
    """Why a list of (profile name, start) is not a valid layout on ``model``; empty = valid."""
    problems = []
    occupied = 0
    counts: Dict[str, int] = {}
    compute = 0
    for name, start in placements:
        profile = model.profile(name)
        if start not in profile.starts:
            problems.append("%s cannot start at %d (allowed starts: %s)"
                            % (profile.name, start, ", ".join(str(s) for s in profile.starts)))
            continue
        mask = _mask(profile, start)
        if occupied & mask:
            problems.append("%s at %d overlaps another instance" % (profile.name, start))
        occupied |= mask
        counts[profile.name] = counts.get(profile.name, 0) + 1
        compute += profile.compute_slices
    for name, count in sorted(counts.items()):
        if count > model.profile(name).max_count:
            problems.append("%s x%d exceeds its max count %d" % (name, count, model.profile(name).max_count))
    if compute > model.compute_slices:
        problems.append("%d compute slices used, the GPU has %d" % (compute, model.compute_slices))
    return problems


def _fill_profiles(model: GpuModel) -> Tuple[MigProfile, ...]:
    """Smallest-compute base profiles, smallest memory first (1g, then 1g with 2 memory slices)."""
    return _fill_profiles_of(model.key)


@functools.lru_cache(maxsize=None)
def _fill_profiles_of(model_key: str) -> Tuple[MigProfile, ...]:
    model = MODELS[model_key]
    base = [p for p in model.profiles if p.media == ""]
    smallest = min(p.compute_slices for p in base)
    return tuple(sorted((p for p in base if p.compute_slices == smallest), key=lambda p: (p.memory_mib, p.size)))


@functools.lru_cache(maxsize=None)
def _best_fill(model_key: str, occupied: int, remaining: Tuple[int, ...], compute: int) -> Tuple[int, int, Tuple[Slot, ...]]:
    """Most placement units covered, then most instances, by smallest-profile instances.

    ``remaining`` is how many more of each fill profile the max counts allow.
    """
    model = MODELS[model_key]
    free = next((u for u in range(model.placement_units) if not occupied >> u & 1), None)
    if free is None:
        return (0, 0, ())
    best = _best_fill(model_key, occupied | 1 << free, remaining, compute)  # leave this unit free
    for position, profile in enumerate(_fill_profiles(model)):
        mask = _mask(profile, free)
        if (free not in profile.starts or occupied & mask or not remaining[position]
                or compute + profile.compute_slices > model.compute_slices):
            continue
        left = remaining[:position] + (remaining[position] - 1,) + remaining[position + 1:]
        covered, number, rest = _best_fill(model_key, occupied | mask, left, compute + profile.compute_slices)
        candidate = (covered + profile.size, number + 1, ((profile.name, free),) + rest)
        if candidate[:2] > best[:2]:
            best = candidate
    return best


def _fill(model: GpuModel, placed: Sequence[Slot]) -> Tuple[int, Tuple[Slot, ...]]:
    """(units the fill covers, extra instances) for a placed layout."""
    occupied = 0
    compute = 0
    counts: Dict[str, int] = {}
    for name, start in placed:
        profile = model.profile(name)
        occupied |= _mask(profile, start)
        compute += profile.compute_slices
        counts[name] = counts.get(name, 0) + 1
    remaining = tuple(max(0, p.max_count - counts.get(p.name, 0)) for p in _fill_profiles(model))
    covered, _number, extra = _best_fill(model.key, occupied, remaining, compute)
    return covered, extra


@functools.lru_cache(maxsize=None)
def place_profiles(model_key: str, wanted: Tuple[Tuple[str, int], ...]) -> Optional[Tuple[Slot, ...]]:
    """Place a multiset of profiles ((name, count), ...) on an empty GPU, or None.

    Among all valid placements it returns the one that leaves the most room for further
    small instances (what ``fill`` or a later change can use), then the lowest starts.
    """
    model = MODELS[model_key]
    items: List[MigProfile] = []
    for name, count in wanted:
        items.extend([model.profile(name)] * count)
    items.sort(key=lambda p: (-p.size, -p.compute_slices, p.name))
    if sum(p.size for p in items) > model.placement_units or sum(p.compute_slices for p in items) > model.compute_slices:
        return None
    if any(count > model.profile(name).max_count for name, count in wanted):
        return None
    best: List[Any] = [None, -1]

    def search(position: int, occupied: int, chosen: Tuple[Slot, ...]) -> None:
        if position == len(items):
            room, _extra = _fill(model, chosen)
            if room > best[1]:
                best[0], best[1] = chosen, room
            return
        profile = items[position]
        # Identical profiles take increasing starts, so each layout is visited once.
        lowest = chosen[-1][1] + 1 if chosen and chosen[-1][0] == profile.name else 0
        for start in profile.starts:
            if start >= lowest and not occupied & _mask(profile, start):
                search(position + 1, occupied | _mask(profile, start), chosen + ((profile.name, start),))

    search(0, 0, ())
    return best[0]


# --- requests -------------------------------------------------------------------------


def _need_candidates(model: GpuModel, need: Dict[str, Any]) -> Tuple[MigProfile, ...]:
    return _candidates_for(model.key, need["memory_mib"], need["compute"], need["media"])


@functools.lru_cache(maxsize=None)
def _candidates_for(model_key: str, memory_mib: int, compute: int, media: str) -> Tuple[MigProfile, ...]:
    """Profiles that hold a need, smallest first: real usable memory, then compute slices."""
    candidates = [
        p for p in MODELS[model_key].profiles
        if p.media == media and p.memory_mib >= memory_mib and p.compute_slices >= compute
    ]
    return tuple(sorted(candidates, key=lambda p: (p.memory_mib, p.compute_slices, p.size, p.name)))


def _parse_instances(model: GpuModel, instances: Any) -> List[Dict[str, Any]]:
    if not isinstance(instances, list) or not instances:
        raise _Reason("mig.instances", "must be a non-empty list of {name, memory, compute?, media?}")
    needs = []
    problems: List[Tuple[str, str]] = []
    seen: set = set()
    largest = max(p.memory_mib for p in model.profiles)
    for position, raw in enumerate(instances):
        try:
            need = _parse_need(model, position, raw, seen, largest)
        except _Reason as reason:
            problems.extend(reason.all)
            continue
        needs.append(need)
    if problems:
        # Every bad need of the GPU is reported, not only the first.
        error = _Reason(*problems[0])
        error.all = problems
        raise error
    return needs


def _parse_need(model: GpuModel, position: int, raw: Any, seen: set, largest: int) -> Dict[str, Any]:
    where = "mig.instances[%d]" % position
    if not isinstance(raw, dict):
        raise _Reason(where, "must be a mapping with name and memory")
    unknown = sorted(set(raw) - {"name", "memory", "compute", "media"})
    if unknown:
        raise _Reason(where, "unknown key(s) %s (allowed: name, memory, compute, media)" % ", ".join(unknown))
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _Reason(where + ".name", "is required and must be a non-empty string")
    if name in seen:
        raise _Reason(where + ".name", "duplicate instance name %r" % name)
    seen.add(name)
    if "memory" not in raw:
        raise _Reason(where + ".memory", "is required for %r (e.g. 10Gi)" % name)
    try:
        memory_mib = parse_memory_mib(raw["memory"])
    except ValueError as error:
        raise _Reason(where + ".memory", str(error))
    compute = raw.get("compute", 1)
    if isinstance(compute, str) and compute.lower().endswith("g") and compute[:-1].isdigit():
        compute = int(compute[:-1])  # "3g" as in a profile name
    if isinstance(compute, bool) or not isinstance(compute, int) or compute < 1:
        raise _Reason(where + ".compute", "must be a positive number of compute slices (e.g. 2 or '2g'), got %r"
                      % (raw.get("compute"),))
    media_raw = raw.get("media") or ""
    media = _MEDIA_ALIASES.get(str(media_raw).strip().lower())
    if media is None:
        raise _Reason(where + ".media", "unknown media variant %r (use me, me.all, -me or gfx)" % (media_raw,))
    need = {"name": name, "memory_mib": memory_mib, "compute": compute, "media": media, "field": where}
    if not _need_candidates(model, need):
        if memory_mib > largest:
            reason = ("needs %s for %r, more than the largest profile of %s holds (%s usable; profile names "
                      "round up, the real usable memory is what counts)"
                      % (format_mib(memory_mib), name, model.key, format_mib(largest)))
            raise _Reason(where + ".memory", reason)
        if compute > model.compute_slices:
            raise _Reason(where + ".compute", "needs %d compute slices, %s has %d"
                          % (compute, model.key, model.compute_slices))
        raise _Reason(where + ".media" if media else where,
                      "no profile of %s has media variant %r with %s and %d compute slice(s)"
                      % (model.key, media or "(base)", format_mib(memory_mib), compute))
    return need


def _describe(model: GpuModel, slots: Sequence[Tuple[MigProfile, str]]) -> str:
    return ", ".join("%s for %r" % (profile.name, name) for profile, name in slots)


def _name_hints(model: GpuModel, needs: List[Dict[str, Any]]) -> str:
    """Point out profiles whose name promises more than they hold, when a need falls in the gap."""
    hints = []
    for need in needs:
        for profile in model.profiles:
            named_mib = int(profile.base_name.split(".")[1].rstrip("gb")) * 1024
            if profile.media == need["media"] and profile.memory_mib < need["memory_mib"] <= named_mib:
                hints.append("%s holds %s, less than its name suggests, so it cannot take %r (%s)"
                             % (profile.name, format_mib(profile.memory_mib), need["name"],
                                format_mib(need["memory_mib"])))
                break
    return " (%s)" % "; ".join(hints) if hints else ""


def _explain_instances(model: GpuModel, needs: List[Dict[str, Any]]) -> str:
    """Why even the smallest choices do not fit: the first need that cannot be added."""
    smallest = [(_need_candidates(model, need)[0], need["name"]) for need in needs]
    smallest.sort(key=lambda item: (-item[0].size, -item[0].compute_slices))
    placed: List[Tuple[MigProfile, str]] = []
    for profile, name in smallest:
        trial = placed + [(profile, name)]
        counts: Dict[str, int] = {}
        for p, _n in trial:
            counts[p.name] = counts.get(p.name, 0) + 1
        if place_profiles(model.key, tuple(sorted(counts.items()))) is None:
            used = sum(p.memory_slices for p, _n in placed)
            compute = sum(p.compute_slices for p, _n in placed)
            head = ("%s take %d of %d memory slices and %d of %d compute slices; "
                    % (_describe(model, placed), used, model.memory_slices, compute, model.compute_slices)
                    if placed else "")
            limit = ""
            if counts[profile.name] > profile.max_count:
                limit = " (at most %d %s per GPU)" % (profile.max_count, profile.name)
            return ("%s%s (%s usable) for %r does not fit%s; no choice of larger profiles fits either%s"
                    % (head, profile.name, format_mib(profile.memory_mib), name, limit, _name_hints(model, needs)))
        placed = trial
    return "no valid placement"  # pragma: no cover - the full set failed, so some prefix fails


@functools.lru_cache(maxsize=None)
def _choose_and_place(model_key: str, needs: Tuple[Tuple[int, int, str], ...], fill: bool
                      ) -> Optional[Tuple[Tuple[Tuple[str, int], ...], Tuple[int, ...], Tuple[Slot, ...]]]:
    """Geometry of a request, independent of need names: memoised by (memory, compute, media) needs.

    Returns (profile and start per need, candidate rank per need, fill instances), or None
    when no choice of profiles can be placed.
    """
    model = MODELS[model_key]
    candidates = [_candidates_for(model_key, mib, compute, media) for mib, compute, media in needs]
    # Every combination of choices whose total size and compute can fit, fewest upgrades
    # first: the smallest profiles win whenever they can be placed together.
    vectors: List[Tuple[int, Tuple[int, ...]]] = []

    def enumerate_choices(position: int, size: int, compute: int, chosen: Tuple[int, ...]) -> None:
        if position == len(needs):
            vectors.append((sum(chosen), chosen))
            return
        for rank, profile in enumerate(candidates[position]):
            if size + profile.size <= model.placement_units and compute + profile.compute_slices <= model.compute_slices:
                enumerate_choices(position + 1, size + profile.size, compute + profile.compute_slices, chosen + (rank,))

    enumerate_choices(0, 0, 0, ())
    vectors.sort()
    for _upgrades, ranks in vectors:
        profiles = [candidates[i][rank] for i, rank in enumerate(ranks)]
        counts: Dict[str, int] = {}
        for profile in profiles:
            counts[profile.name] = counts.get(profile.name, 0) + 1
        slots = place_profiles(model_key, tuple(sorted(counts.items())))
        if slots is None:
            continue
        # Hand the starts of each profile to its needs in request order.
        starts: Dict[str, List[int]] = {}
        for name, start in sorted(slots, key=lambda s: s[1]):
            starts.setdefault(name, []).append(start)
        placed = tuple((profile.name, starts[profile.name].pop(0)) for profile in profiles)
        extra: Tuple[Slot, ...] = _fill(model, placed)[1] if fill else ()
        return placed, ranks, extra
    return None


def memo_info() -> Dict[str, int]:
    """How many GPU requests were solved and how many were answered from the memo."""
    info = _solve_cached.cache_info()
    return {"solved": info.misses, "reused": info.hits, "geometries": _choose_and_place.cache_info().misses}


def _solve_instances(model: GpuModel, needs: List[Dict[str, Any]], fill: bool) -> Tuple[List[Tuple[str, int, Optional[str]]], List[str]]:
    if len(needs) > model.placement_units:
        raise _Reason("mig.instances", "%d instances requested; %s holds at most %d"
                      % (len(needs), model.key, max(p.max_count for p in model.profiles)))
    signature = tuple((need["memory_mib"], need["compute"], need["media"]) for need in needs)
    solved = _choose_and_place(model.key, signature, fill)
    if solved is None:
        raise _Reason("mig.instances", _explain_instances(model, needs))
    placed_slots, ranks, extra = solved
    placed: List[Tuple[str, int, Optional[str]]] = [
        (name, start, need["name"]) for (name, start), need in zip(placed_slots, needs)]
    notes = []
    for (name, _start), need, rank in zip(placed_slots, needs, ranks):
        if rank:
            notes.append("%r gets %s instead of %s so that all instances fit together"
                         % (need["name"], name, _need_candidates(model, need)[0].name))
    placed.extend((name, start, None) for name, start in extra)
    return placed, notes


def _solve_profiles(model: GpuModel, profiles: Any) -> List[Tuple[str, int, Optional[str]]]:
    if not isinstance(profiles, dict) or not profiles:
        raise _Reason("mig.profiles", "must be a non-empty mapping of profile name to count")
    wanted: Dict[str, int] = {}
    for name, count in profiles.items():
        where = "mig.profiles[%s]" % name
        try:
            profile = model.profile(str(name))
        except ValueError as error:
            raise _Reason(where, str(error))
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise _Reason(where, "count must be a non-negative integer, got %r" % (count,))
        if count > profile.max_count:
            raise _Reason(where, "%s x%d requested but at most %d fit on %s" % (profile.name, count, profile.max_count, model.key))
        if count:
            wanted[profile.name] = wanted.get(profile.name, 0) + count
    if not wanted:
        raise _Reason("mig.profiles", "asks for no instance; use mig: {profiles: {}} only with at least one count > 0")
    slots = place_profiles(model.key, tuple(sorted(wanted.items())))
    if slots is None:
        used = sum(model.profile(n).memory_slices * c for n, c in wanted.items())
        compute = sum(model.profile(n).compute_slices * c for n, c in wanted.items())
        units = sum(model.profile(n).size * c for n, c in wanted.items())
        summary = ", ".join("%s x%d" % item for item in sorted(wanted.items()))
        if units > model.placement_units or compute > model.compute_slices:
            reason = ("%s use %d of %d memory slices and %d of %d compute slices"
                      % (summary, used, model.memory_slices, compute, model.compute_slices))
        else:
            allowed = "; ".join(
                "%s starts %s size %d" % (n, ",".join(str(s) for s in model.profile(n).starts), model.profile(n).size)
                for n in sorted(wanted)
            )
            reason = "%s cannot be placed together: their allowed placements overlap (%s)" % (summary, allowed)
        raise _Reason("mig.profiles", reason)
    return [(name, start, None) for name, start in slots]


def _warnings_for(model: GpuModel, slots: Sequence[Tuple[str, int, Optional[str]]]) -> List[str]:
    warnings = []
    names = sorted({name for name, _s, _n in slots})
    for name in names:
        profile = model.profile(name)
        if profile.unconfirmed:
            warnings.append("profile %s on %s rests on unconfirmed geometry (%s); check it with 'nvidia-smi mig "
                            "-lgip' and '-lgipp' on the host before applying"
                            % (name, model.key, ", ".join(profile.unconfirmed_fields)))
    if any(name.endswith("+me.all") for name in names) and len(slots) > 1:
        warnings.append("%s: a +me.all instance takes all media engines; whether other instances may run beside "
                        "it is unconfirmed" % model.key)
    bases = {model.profile(n).base_name.split(".")[0] for n in names}
    if model.placement_units == 8 and {"3g", "4g"} <= bases:
        warnings.append("%s: 4g and 3g instances together need an R510 or newer driver" % model.key)
    return warnings


def slice_usage(model: GpuModel, placements: Sequence[Slot]) -> Dict[str, int]:
    """Compute and memory slices a layout uses, and what no further instance can use.

    A slice is *stranded* when it is idle and no profile of the model can still be placed
    (every allowed start overlaps an instance, the max count is reached, or its compute
    slices no longer fit). Idle slices that a further instance could take (``fill: false``)
    are free, not stranded. Keys: ``compute_used``, ``compute_total``, ``memory_used``,
    ``memory_total``, ``stranded_compute``, ``stranded_memory``.
    """
    occupied = 0
    compute = memory = 0
    counts: Dict[str, int] = {}
    for name, start in placements:
        profile = model.profile(name)
        occupied |= _mask(profile, start)
        compute += profile.compute_slices
        memory += profile.memory_slices
        counts[profile.name] = counts.get(profile.name, 0) + 1
    more_fits = any(
        counts.get(profile.name, 0) < profile.max_count and compute + profile.compute_slices <= model.compute_slices
        and any(not occupied & _mask(profile, start) for start in profile.starts)
        for profile in model.profiles)
    usage = {"compute_used": compute, "compute_total": model.compute_slices,
             "memory_used": memory, "memory_total": model.memory_slices,
             "stranded_compute": 0, "stranded_memory": 0}
    if not more_fits:
        usage["stranded_compute"] = model.compute_slices - compute
        usage["stranded_memory"] = model.memory_slices - memory
    return usage


def _decimal_gb(mib: int) -> int:
    """The largest whole number of decimal gigabytes (10^9 bytes) that fits in ``mib``."""
    return int(mib * 1048576 // 1000000000)


def _counted(names: Sequence[str]) -> str:
    """'3 x 1g.20gb, 2 x 1g.10gb' for a list of profile names, in first-seen order."""
    counts: Dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(("%d x %s" % (count, name)) if count > 1 else name for name, count in counts.items())


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _stranding_notes(model: GpuModel, slots: Sequence[Tuple[str, int, Optional[str]]],
                     needs: Sequence[Dict[str, Any]]) -> List[str]:
    """Say when a layout leaves compute (or memory) slices that no instance can use, and why."""
    usage = slice_usage(model, [(name, start) for name, start, _need in slots])
    notes: List[str] = []
    chosen = {need: name for name, _start, need in slots if need}
    listing = _counted([name for name, _start, _need in slots])
    if usage["stranded_compute"]:
        # Needs that just miss a profile with fewer memory slices for the same compute: the
        # typical case is a need written in GiB (10GiB) beside a 9.75 GiB profile (1g.10gb).
        missed: Dict[Tuple[str, str, int], List[str]] = {}
        for need in needs:
            profile = model.profile(chosen[need["name"]])
            smaller = [p for p in model.profiles if p.media == profile.media and p.compute_slices == profile.compute_slices
                       and p.memory_slices < profile.memory_slices and p.memory_mib < need["memory_mib"]]
            if smaller:
                near = max(smaller, key=lambda p: p.memory_mib)
                missed.setdefault((profile.name, near.name, need["memory_mib"]), []).append(need["name"])
        hints = []
        for (taken, near_name, memory_mib), needers in missed.items():
            near, profile = model.profile(near_name), model.profile(taken)
            hints.append("%s %s %s%s, more than %s holds (%s usable), so %s %s (%d memory slices for %d compute "
                         "slice%s); a need of at most %s, such as memory: %dGB (decimal gigabytes), would take %s"
                         % (_quoted(needers), "asks for" if len(needers) == 1 else "ask for", format_mib(memory_mib),
                            "" if len(needers) == 1 else " each", near.name, format_mib(near.memory_mib),
                            "it takes" if len(needers) == 1 else "each takes", profile.name, profile.memory_slices,
                            profile.compute_slices, "" if profile.compute_slices == 1 else "s",
                            format_mib(near.memory_mib), _decimal_gb(near.memory_mib), near.name))
        notes.append("%d of %d compute slices stay idle: the instances (%s) take all %d memory slices but only %d "
                     "compute slices, so no further instance fits%s"
                     % (usage["stranded_compute"], usage["compute_total"], listing, usage["memory_used"],
                        usage["compute_used"], "; " + "; ".join(hints) if hints else ""))
    if usage["stranded_memory"]:
        single = [p.memory_mib for p in model.profiles if p.memory_slices == 1]
        driven = ["%r asks for %d compute slices and takes %s" % (need["name"], need["compute"], chosen[need["name"]])
                  for need in needs if need["compute"] > 1]
        notes.append("%d of %d memory slices stay unused%s: the instances (%s) take all %d compute slices but only "
                     "%d memory slices, so no further instance fits%s"
                     % (usage["stranded_memory"], usage["memory_total"],
                        " (about %s)" % format_mib(min(single) * usage["stranded_memory"]) if single else "",
                        listing, usage["compute_used"], usage["memory_used"],
                        "; " + "; ".join(driven) if driven else ""))
    return notes


@functools.lru_cache(maxsize=4096)
def _solve_cached(model_key: str, request: str) -> Tuple[Tuple[Tuple[str, int, Optional[str]], ...], Tuple[str, ...]]:
    """Solve one GPU's ``mig`` request (as canonical JSON). Raises _Reason."""
    model = MODELS[model_key]
    mig = json.loads(request)
    if not isinstance(mig, dict):
        raise _Reason("mig", "must be a mapping with either instances or profiles")
    unknown = sorted(set(mig) - {"instances", "profiles", "fill"})
    if unknown:
        raise _Reason("mig", "unknown key(s) %s (allowed: instances, profiles, fill)" % ", ".join(unknown))
    if ("instances" in mig) == ("profiles" in mig):
        raise _Reason("mig", "give exactly one of instances (needs) or profiles (explicit counts)")
    fill = mig.get("fill", True)
    if not isinstance(fill, bool):
        raise _Reason("mig.fill", "must be true or false, got %r" % (fill,))
    notes: List[str] = []
    needs: List[Dict[str, Any]] = []
    if "profiles" in mig:
        if "fill" in mig:
            raise _Reason("mig.fill", "applies to instances only; explicit profiles are placed exactly as asked")
        slots = _solve_profiles(model, mig["profiles"])
    else:
        needs = _parse_instances(model, mig["instances"])
        slots, notes = _solve_instances(model, needs, fill)
    problems = layout_problems(model, [(name, start) for name, start, _n in slots])
    if problems:  # pragma: no cover - guards the search itself
        raise AssertionError("planner produced an invalid layout: %s" % "; ".join(problems))
    ordered = sorted(slots, key=lambda s: (-model.profile(s[0]).size, -model.profile(s[0]).compute_slices, s[1]))
    notes += _stranding_notes(model, ordered, needs)
    return tuple(ordered), tuple(notes + _warnings_for(model, slots))


# --- node level -----------------------------------------------------------------------


def _where(host: Optional[str], index: Any, model: Optional[str], field: str) -> str:
    gpu = "GPU %s" % (index,)
    if model:
        gpu += " (%s)" % model
    prefix = "host %s, " % host if host else ""
    return "%s%s, field %s" % (prefix, gpu, field)


def plan_node_layout(gpus: Sequence[Dict[str, Any]], config_name: str, host: Optional[str] = None) -> Dict[str, Any]:
    """Plan the MIG layout of one node; see the module documentation of mig_layout.

    Returns ``{"gpus": [...], "mig_parted": {...}, "warnings": [...]}``. All problems of
    the node are collected and raised together as one MigLayoutError.
    """
    errors: List[str] = []
    if not isinstance(config_name, str) or not config_name.strip():
        errors.append("%sfield config_name: must be a non-empty string" % ("host %s, " % host if host else ""))
    if not isinstance(gpus, (list, tuple)):
        raise MigLayoutError("%sfield gpus: must be a list of GPU entries" % ("host %s, " % host if host else ""))
    seen: Dict[int, int] = {}
    planned: List[Dict[str, Any]] = []
    warnings: List[str] = []
    entries: List[Dict[str, Any]] = []
    for position, entry in enumerate(gpus):
        index = _entry_index(entry, position, host, seen, errors)
        if index is None:
            continue
        try:
            model = lookup(str(entry.get("model", "")))
        except ValueError as error:
            errors.append(_where(host, index, None, "model") + ": " + str(error))
            continue
        result = _plan_gpu(entry, index, model, host, errors, warnings)
        if result is None:
            continue
        planned.append(result)
        entries.append({"model": model, "result": result})
    if errors:
        raise MigLayoutError("; ".join(errors), errors)
    planned.sort(key=lambda g: g["index"])
    specs = _mig_parted_specs(entries)
    mig_configs = {config_name: specs} if specs else {}
    return {"gpus": planned, "mig_parted": {"version": "v1", "mig-configs": mig_configs}, "warnings": warnings}


def _entry_index(entry: Any, position: int, host: Optional[str], seen: Dict[int, int], errors: List[str]) -> Optional[int]:
    """The GPU index of ``gpus[position]``, or None with the problem in ``errors`` (``seen``: index -> position)."""
    if not isinstance(entry, dict):
        errors.append(_where(host, "#%d" % position, None, "gpus[%d]" % position) + ": must be a mapping")
        return None
    index = entry.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        hint = " (expand 'count' shorthand into indexed entries first)" if "count" in entry else ""
        errors.append(_where(host, "#%d" % position, None, "index") + ": must be a GPU index >= 0, got %r%s"
                      % (index, hint))
        return None
    if index in seen:
        errors.append(_where(host, index, None, "index") + ": duplicate index (entries %d and %d)"
                      % (seen[index], position))
        return None
    seen[index] = position
    return index


def _plan_gpu(entry: Dict[str, Any], index: int, model: GpuModel, host: Optional[str], errors: List[str],
              warnings: List[str]) -> Optional[Dict[str, Any]]:
    """One GPU's planned use and MIG instances, or None with its problems in ``errors``."""
    use = entry.get("use", "whole")
    if use not in USES:
        errors.append(_where(host, index, model.key, "use") + ": must be one of %s, got %r" % (", ".join(USES), use))
        return None
    result = {"index": index, "model": model.key, "mig_enabled": use == "mig", "instances": []}
    if use != "mig":
        if entry.get("mig") is not None:
            errors.append(_where(host, index, model.key, "mig") + ": only applies to use: mig (this GPU is %s)" % use)
            return None
        return result
    if not model.mig_capable:
        errors.append(_where(host, index, model.key, "use") + ": %s does not support MIG; use whole or shared"
                      % model.key)
        return None
    mig = entry.get("mig")
    if mig is None:
        errors.append(_where(host, index, model.key, "mig") + ": use: mig needs mig.instances or mig.profiles")
        return None
    try:
        try:
            request = json.dumps(mig, sort_keys=True, default=str)
        except (TypeError, ValueError) as error:
            raise _Reason("mig", "must be plain data (mappings with string keys, lists, numbers, "
                                 "strings): %s" % error)
        slots, notes = _solve_cached(model.key, request)
    except _Reason as reason:
        errors.extend(_where(host, index, model.key, field) + ": " + text for field, text in reason.all)
        return None
    result["instances"] = [
        {"profile": name, "start": start, "size": model.profile(name).size,
         "memory_mib": model.profile(name).memory_mib, "name": need}
        for name, start, need in slots
    ]
    warnings.extend("%sGPU %d (%s): %s" % ("host %s, " % host if host else "", index, model.key, note)
                    for note in notes)
    return result


def _mig_parted_specs(entries: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The mig-parted config entries of the node's MIG-capable GPUs, by index."""
    specs = []
    for item in sorted(entries, key=lambda e: e["result"]["index"]):
        model, result = item["model"], item["result"]
        if not model.mig_capable:
            continue  # mig-parted leaves GPUs that no spec matches alone
        spec: Dict[str, Any] = {
            "device-filter": list(model.device_ids),
            "devices": [result["index"]],
            "mig-enabled": result["mig_enabled"],
        }
        if result["mig_enabled"]:
            counts: Dict[str, int] = {}
            for instance in result["instances"]:
                counts[instance["profile"]] = counts.get(instance["profile"], 0) + 1
            spec["mig-devices"] = counts
        specs.append(spec)
    return specs
