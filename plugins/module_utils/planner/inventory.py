# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Normalise and validate the GPU and team inventory.

Turns ``gpushare_teams`` and the per-host ``gpushare_gpus`` lists (with the optional
``gpushare_gpu_facts`` of each host) into typed records: ``count:`` shorthands are
expanded, models are resolved to catalog keys (inventory value first, then the facts),
and every entry is checked. Errors are *collected*, never raised one by one, so the
user sees the whole list at once; each names the host, the GPU index and the field.
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError

USES = ("whole", "mig", "shared")
GPU_KEYS = frozenset(("index", "count", "model", "team", "use", "replicas", "mig", "uuid"))
TEAM_KEYS = frozenset(("name", "namespaces", "priority", "group", "borrow", "lend", "cpu", "memory", "namespace_quota"))
# namespace_quota: the ResourceQuota of each of the team's namespaces (every pod, queued or not).
NAMESPACE_QUOTA_KEYS = ("pods", "cpu", "memory")
INT32_MAX = 2 ** 31 - 1
# Kubernetes DNS-1123 label: namespace, queue and claim names are built from these.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_QUANTITY = re.compile(r"^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")

# A limit is None (no limit), an int applying to every GPU resource, or a mapping
# resource name -> int.
Limit = Union[None, int, Dict[str, int]]


class InventoryError(GpushareError):
    """All problems found in an inventory, reported together."""

    def __init__(self, errors: Sequence[str]):
        self.errors = list(errors)
        super().__init__(
            "%d problem(s) in the GPU/team inventory:\n- %s" % (len(self.errors), "\n- ".join(self.errors))
        )


@dataclass(frozen=True)
class Team:
    name: str
    namespaces: Tuple[str, ...]
    priority: int
    group: Optional[str] = None
    borrow: Limit = None
    lend: Limit = None
    cpu: Optional[str] = None
    memory: Optional[str] = None
    # Only the keys the inventory sets; isolation.NAMESPACE_QUOTA_DEFAULTS fills the rest.
    namespace_quota: Tuple[Tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Gpu:
    host: str
    index: int
    model: str  # catalog key
    use: str
    team: str
    replicas: Optional[int] = None
    mig: Optional[Dict[str, Any]] = None
    uuid: Optional[str] = None

    def as_solver_entry(self) -> Dict[str, Any]:
        """The entry shape ``mig_solver.plan_node_layout`` takes."""
        entry: Dict[str, Any] = {"index": self.index, "model": self.model, "use": self.use, "team": self.team}
        if self.mig is not None:
            entry["mig"] = self.mig
        if self.replicas is not None:
            entry["replicas"] = self.replicas
        return entry


@dataclass
class Inventory:
    teams: List[Team] = field(default_factory=list)
    nodes: Dict[str, List[Gpu]] = field(default_factory=dict)
    # "host, GPU index" of the entries whose model only discovery can tell (discovery_pending).
    awaiting_discovery: List[str] = field(default_factory=list)


def _where(host: str, index: Any, field_name: str) -> str:
    return "host %s, GPU %s, field %s" % (host, index if index is not None else "?", field_name)


def _kind(value: Any) -> str:
    """How a wrong value is described to the user: in YAML words, never a Python class name."""
    if isinstance(value, Mapping):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, (list, tuple)):
        return "a list" if value else "an empty list"
    if isinstance(value, bool):
        return "a boolean (%s)" % str(value).lower()
    if isinstance(value, str):
        return "a string (%r)" % value
    if value is None:
        return "nothing (null)"
    return "%r" % (value,)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_limit(team: str, field_name: str, value: Any, errors: List[str]) -> Limit:
    """Validate a borrow/lend option; True/absent = no limit, False = 0."""
    if value is None or value is True:
        return None
    if value is False:
        return 0
    if _is_int(value):
        if value < 0:
            errors.append("team %s, field %s: must be >= 0, got %d" % (team, field_name, value))
            return None
        return value
    if isinstance(value, Mapping):
        limits: Dict[str, int] = {}
        for resource, amount in value.items():
            if not _is_int(amount) or amount < 0:
                errors.append(
                    "team %s, field %s[%s]: must be a non-negative integer, got %r"
                    % (team, field_name, resource, amount)
                )
                continue
            limits[str(resource)] = amount
        return limits
    errors.append(
        "team %s, field %s: must be true/false, a non-negative integer or a mapping of resource "
        "name to integer, got %r" % (team, field_name, value)
    )
    return None


def _check_quantity(team: str, field_name: str, value: Any, errors: List[str]) -> Optional[str]:
    if value is None:
        return None
    text = None
    if _is_int(value) or isinstance(value, str):
        text = str(value)
    elif isinstance(value, float) and math.isfinite(value) and value >= 0:
        # YAML reads `cpu: 0.5` as a float; Kubernetes takes the same decimal as a quantity.
        text = format(decimal.Decimal(repr(value)).normalize(), "f")
    if text is None or not _QUANTITY.match(text):
        errors.append("team %s, field %s: %r is not a Kubernetes quantity (e.g. 64, 500m, 256Gi)"
                      % (team, field_name, value))
        return None
    return text


def _check_namespace_quota(team: str, value: Any, errors: List[str]) -> Tuple[Tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        errors.append("team %s, field namespace_quota: must be a mapping with keys %s, got %r"
                      % (team, ", ".join(NAMESPACE_QUOTA_KEYS), value))
        return ()
    result: List[Tuple[str, Any]] = []
    for key in sorted(value):
        item = value[key]
        if key not in NAMESPACE_QUOTA_KEYS:
            errors.append("team %s, field namespace_quota.%s: unknown key (known: %s)"
                          % (team, key, ", ".join(NAMESPACE_QUOTA_KEYS)))
        elif key == "pods":
            if not _is_int(item) or not 1 <= item <= INT32_MAX:
                errors.append("team %s, field namespace_quota.pods: must be a positive integer, got %r" % (team, item))
            else:
                result.append((key, item))
        else:
            quantity = _check_quantity(team, "namespace_quota.%s" % key, item, errors) if item is not None else None
            if item is None:
                errors.append("team %s, field namespace_quota.%s: must be a Kubernetes quantity, got None" % (team, key))
            elif quantity is not None:
                result.append((key, quantity))
    return tuple(result)


def normalise_teams(teams: Any, errors: List[str]) -> List[Team]:
    """Validate ``gpushare_teams``; append problems to ``errors``."""
    if teams is None:
        errors.append("gpushare_teams: not set; the inventory must list the teams (docs/inventory.md)")
        return []
    if not isinstance(teams, list) or not teams:
        errors.append("gpushare_teams: must be a non-empty list of teams (each a mapping with name, namespaces "
                      "and priority), got %s" % _kind(teams))
        return []
    result: List[Team] = []
    names_seen: Dict[str, int] = {}
    namespace_owner: Dict[str, str] = {}
    for position, raw in enumerate(teams):
        if not isinstance(raw, Mapping):
            errors.append("gpushare_teams[%d]: must be a mapping, got %r" % (position, raw))
            continue
        name = raw.get("name")
        label = name if isinstance(name, str) else "#%d" % position
        for key in sorted(set(raw) - TEAM_KEYS):
            errors.append("team %s, field %s: unknown option (known: %s)" % (label, key, ", ".join(sorted(TEAM_KEYS))))
        if not isinstance(name, str) or not _DNS_LABEL.match(name):
            errors.append("team %s, field name: must be a lowercase DNS label (a-z, 0-9, '-'), got %r" % (label, name))
            continue
        if name in names_seen:
            errors.append("team %s, field name: defined twice (gpushare_teams[%d] and [%d])"
                          % (name, names_seen[name], position))
            continue
        names_seen[name] = position
        namespaces = raw.get("namespaces")
        if not isinstance(namespaces, list) or not namespaces:
            errors.append("team %s, field namespaces: must be a non-empty list of namespace names" % name)
            namespaces = []
        clean_namespaces: List[str] = []
        for namespace in namespaces:
            if not isinstance(namespace, str) or not _DNS_LABEL.match(namespace):
                errors.append("team %s, field namespaces: %r is not a valid namespace name" % (name, namespace))
                continue
            if namespace in namespace_owner:
                errors.append("team %s, field namespaces: namespace %s is already claimed by team %s"
                              % (name, namespace, namespace_owner[namespace]))
                continue
            if namespace in clean_namespaces:
                errors.append("team %s, field namespaces: namespace %s is listed twice" % (name, namespace))
                continue
            namespace_owner[namespace] = name
            clean_namespaces.append(namespace)
        priority = raw.get("priority")
        if not _is_int(priority) or not -INT32_MAX <= priority <= INT32_MAX:
            errors.append("team %s, field priority: must be an integer (int32), got %r" % (name, priority))
            priority = 0
        group = raw.get("group")
        if group is not None and (not isinstance(group, str) or not group):
            errors.append("team %s, field group: must be a non-empty string, got %r" % (name, group))
            group = None
        result.append(Team(
            name=name,
            namespaces=tuple(clean_namespaces),
            priority=priority,
            group=group,
            borrow=_check_limit(name, "borrow", raw.get("borrow"), errors),
            lend=_check_limit(name, "lend", raw.get("lend"), errors),
            cpu=_check_quantity(name, "cpu", raw.get("cpu"), errors),
            memory=_check_quantity(name, "memory", raw.get("memory"), errors),
            namespace_quota=_check_namespace_quota(name, raw.get("namespace_quota"), errors),
        ))
    if result:
        top = max(team.priority for team in result)
        tied = [team.name for team in result if team.priority == top]
        if len(tied) > 1:
            errors.append(
                "teams %s, field priority: the highest priority (%d) must belong to one team, the one whose "
                "workloads go first and, while borrowing, displace every other borrower" % (", ".join(tied), top)
            )
    return result


def _facts_by_index(facts: Optional[Mapping[str, Any]]) -> Dict[int, Mapping[str, Any]]:
    if not facts:
        return {}
    return {gpu["index"]: gpu for gpu in facts.get("gpus") or [] if _is_int(gpu.get("index"))}


def _expand(host: str, entries: Any, errors: List[str]) -> List[Tuple[int, Mapping[str, Any]]]:
    return [(index, raw) for index, _position, raw in expand_entries(host, entries, errors)]


def expand_entries(host: str, entries: Any, errors: List[str]) -> List[Tuple[int, int, Mapping[str, Any]]]:
    """(index, position in the list, entry) of every GPU, by index; the one home of the ``count`` rule.

    ``count:`` shorthands are expanded in list order: a count takes the indexes right after the entry before it.

    An index given twice, whether written or taken by a count, is refused naming both entries:
    the inventory is never renumbered behind the user's back.
    """
    if not isinstance(entries, list):
        errors.append("host %s, field gpushare_gpus: must be a list of GPU entries, got %s" % (host, _kind(entries)))
        return []
    taken: Dict[int, Tuple[int, Mapping[str, Any]]] = {}
    expanded: List[Tuple[int, int, Mapping[str, Any]]] = []
    next_index = 0
    for position, raw in enumerate(entries):
        if not isinstance(raw, Mapping):
            errors.append("host %s, gpushare_gpus[%d]: must be a mapping, got %s" % (host, position, _kind(raw)))
            continue
        has_index, has_count = "index" in raw, "count" in raw
        if has_index and has_count:
            errors.append("%s: give either index or count, not both" % _where(host, raw.get("index"), "count"))
            continue
        if has_count:
            count = raw["count"]
            if not _is_int(count) or count < 1:
                errors.append("host %s, gpushare_gpus[%d], field count: must be a positive integer, got %r"
                              % (host, position, count))
                continue
            indexes = list(range(next_index, next_index + count))
        else:
            index = raw.get("index")
            if not _is_int(index) or index < 0:
                errors.append("host %s, gpushare_gpus[%d], field index: must be a non-negative integer, got %r"
                              % (host, position, index))
                continue
            indexes = [index]
        for index in indexes:
            if index in taken:
                first = taken[index][0]
                how = "count: %d" % raw["count"] if has_count else "index: %d" % index
                errors.append("%s: GPU %d is given twice, by gpushare_gpus[%d] and gpushare_gpus[%d] (%s); a count "
                              "takes the indexes right after the entry before it" % (
                                  _where(host, index, "index"), index, first, position, how))
                continue
            taken[index] = (position, raw)
            expanded.append((index, position, raw))
        next_index = indexes[-1] + 1
    return sorted(expanded, key=lambda item: item[0])


def _resolve_model(host: str, index: int, raw: Mapping[str, Any], fact: Optional[Mapping[str, Any]],
                   errors: List[str], discovery_pending: bool = False) -> Optional[gpu_catalog.GpuModel]:
    declared = raw.get("model")
    found = None
    if fact is not None:
        for candidate in (fact.get("model"), fact.get("name"), fact.get("pci_device_id")):
            if candidate:
                found = gpu_catalog.find(str(candidate))
                if found is not None:
                    break
    if declared is not None:
        try:
            model = gpu_catalog.lookup(str(declared))
        except ValueError as exc:
            errors.append("%s: %s" % (_where(host, index, "model"), exc))
            return None
        if found is not None and found.key != model.key:
            errors.append("%s: the inventory says %s but the host reports %s (%s)"
                          % (_where(host, index, "model"), model.key, found.key, fact.get("name")))
            return None
        return model
    if found is not None:
        return found
    if fact is not None:
        errors.append("%s: not set and the GPU the host reports (%r) is not in the catalog"
                      % (_where(host, index, "model"), fact.get("name")))
    elif not discovery_pending:
        errors.append("%s: not set and no gpu_facts for this host to discover it" % _where(host, index, "model"))
    return None


def normalise_gpus(host: str, entries: Any, facts: Optional[Mapping[str, Any]], team_names: Sequence[str],
                   errors: List[str], discovery_pending: bool = False,
                   awaiting_discovery: Optional[List[str]] = None) -> List[Gpu]:
    """Validate one host's ``gpushare_gpus``; append problems to ``errors``.

    ``discovery_pending``: the hosts are asked for their GPUs later, so a model left out is
    not an error yet (that GPU is left out of the result).
    """
    by_index = _facts_by_index(facts)
    result: List[Gpu] = []
    for index, raw in _expand(host, entries, errors):
        before = len(errors)
        for key in sorted(set(raw) - GPU_KEYS):
            errors.append("%s: unknown option (known: %s)" % (_where(host, index, key), ", ".join(sorted(GPU_KEYS))))
        fact = by_index.get(index)
        if by_index and fact is None:
            errors.append("%s: the host reports no GPU with this index (found: %s)"
                          % (_where(host, index, "index"), ", ".join(str(i) for i in sorted(by_index))))
        model = _resolve_model(host, index, raw, fact, errors, discovery_pending and facts is None)
        use = raw.get("use")
        if use not in USES:
            errors.append("%s: must be one of %s, got %r" % (_where(host, index, "use"), ", ".join(USES), use))
        team = raw.get("team")
        if team not in team_names:
            errors.append("%s: unknown team %r (teams: %s)"
                          % (_where(host, index, "team"), team, ", ".join(team_names) or "none"))
        replicas = raw.get("replicas")
        if use == "shared":
            if not _is_int(replicas) or replicas < 2:
                errors.append("%s: a shared GPU needs replicas >= 2 (the number of pods that take turns), got %r"
                              % (_where(host, index, "replicas"), replicas))
        elif replicas is not None:
            errors.append("%s: replicas is only valid with use: shared (use is %r)"
                          % (_where(host, index, "replicas"), use))
        mig = raw.get("mig")
        if use == "mig":
            if not isinstance(mig, Mapping) or not (mig.get("instances") or mig.get("profiles")):
                errors.append("%s: use: mig needs mig.instances (needs) or mig.profiles (name: count)"
                              % _where(host, index, "mig"))
            if model is not None and not model.mig_capable:
                errors.append("%s: %s does not support MIG" % (_where(host, index, "use"), model.key))
        elif mig is not None:
            errors.append("%s: mig is only valid with use: mig (use is %r)" % (_where(host, index, "mig"), use))
        uuid = raw.get("uuid")
        if uuid is not None and (not isinstance(uuid, str) or not uuid.strip()):
            errors.append("%s: must be the GPU's uuid as nvidia-smi prints it (GPU-...), got %r"
                          % (_where(host, index, "uuid"), uuid))
        uuid = uuid or (fact.get("uuid") if fact else None)
        if model is None and len(errors) == before and awaiting_discovery is not None:
            awaiting_discovery.append("host %s, GPU %d" % (host, index))
        if len(errors) != before or model is None:
            continue
        result.append(Gpu(host=host, index=index, model=model.key, use=use, team=team,
                          replicas=replicas if use == "shared" else None,
                          mig=dict(mig) if use == "mig" else None, uuid=uuid))
    return result


def normalise_inventory(teams: Any, nodes: Mapping[str, Any], gpu_facts: Optional[Mapping[str, Any]] = None,
                        discovery_pending: bool = False) -> Tuple[Inventory, List[str]]:
    """Return the valid part of the inventory and the list of every problem found."""
    errors: List[str] = []
    inventory = Inventory(teams=normalise_teams(teams, errors))
    team_names = [team.name for team in inventory.teams]
    if not isinstance(nodes, Mapping):
        errors.append("nodes: must map host names to lists of GPU entries")
        return inventory, errors
    for host in sorted(nodes):
        facts = (gpu_facts or {}).get(host)
        inventory.nodes[host] = normalise_gpus(str(host), nodes[host] or [], facts, team_names, errors,
                                               discovery_pending, inventory.awaiting_discovery)
    owners: Dict[str, List[str]] = {}
    for host, gpus in inventory.nodes.items():
        for gpu in gpus:
            if gpu.uuid:
                owners.setdefault(gpu.uuid, []).append("host %s, GPU %d" % (host, gpu.index))
    for uuid, where in sorted(owners.items()):
        if len(where) > 1:
            errors.append("%s, field uuid: %s is given to %d GPUs (%s); a uuid names one physical GPU"
                          % (where[1], uuid, len(where), "; ".join(where)))
    return inventory, errors
