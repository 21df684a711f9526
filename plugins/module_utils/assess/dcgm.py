# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The second source of the assessment: dcgm-exporter's series, read back from Prometheus.

It yields the same :class:`HostSamples` as the nvidia-smi files, one :class:`GpuSeries` per
card (utilisation, memory used and total per timestamp), and no process at all: dcgm-exporter
has no per-process series a site can count on (only with ``KUBERNETES_VIRTUAL_GPUS``, and then
per pod, not per process). The proposal says per GPU what it cannot decide without them
(``proposal.CANNOT_DECIDE``).

Series and labels are those of dcgm-exporter up to 4.8.x (default counters and the GPU
Operator's ``dcp-metrics-included.csv``): ``DCGM_FI_DEV_GPU_UTIL`` (%),
``DCGM_FI_DEV_FB_USED``, ``DCGM_FI_DEV_FB_FREE`` and ``DCGM_FI_DEV_FB_RESERVED`` (MiB); labels
``gpu`` (index), ``UUID`` (``uuid`` with ``--use-old-namespace``), ``modelName``,
``GPU_I_PROFILE``/``GPU_I_ID`` on MIG instances, and the node as ``Hostname`` (up to 4.8.2)
or ``hostname`` (4.8.3, the GPU Operator v26.7.0's exporter): both are read. 4.9.0 renames
these fields and changes their units; it is not read.

A card already cut with MIG has a series per instance: its utilisation is its busiest
instance's, its memory the instances' sum. Series of one card that differ only in labels this
file does not read (the pod of a time-sliced replica, per-process copies) are one series: the
query keeps their maximum. The client (``usage/prometheus.py``) is the only I/O, passed in.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils._common.names import node_name
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.samples import (
    AssessDataError, GpuSeries, HostSamples, check_clock)

HOST_LABELS = ("hostname", "Hostname")
UUID_LABELS = ("UUID", "uuid")
INSTANCE_LABEL = "GPU_I_ID"
# Labels a card's series are told apart by; everything else (pods, driver version) is dropped.
BY = "hostname, Hostname, gpu, UUID, uuid, modelName, GPU_I_ID"
METRICS = {
    "utilization": "DCGM_FI_DEV_GPU_UTIL",
    "used": "DCGM_FI_DEV_FB_USED",
    "free": "DCGM_FI_DEV_FB_FREE",
    "reserved": "DCGM_FI_DEV_FB_RESERVED",  # optional: not every exporter configuration has it
}
# Prometheus refuses a range query of more than 11,000 points per series.
MAX_POINTS = 10000

Key = Tuple[str, int, str]  # (inventory host, index, UUID)


def queries() -> Dict[str, str]:
    """The range query of each figure, one series per card (per MIG instance)."""
    return {key: "max by (%s) (%s)" % (BY, metric) for key, metric in METRICS.items()}


def windows(start: float, end: float, step: float) -> List[Tuple[float, float]]:
    """``[start, end]`` cut into ranges of at most MAX_POINTS points; a last range shorter than
    one step starts a step earlier (the point both hold is read twice, and kept once)."""
    pieces = []
    begin = start
    while True:
        last = min(end, begin + (MAX_POINTS - 1) * step)
        pieces.append((min(begin, max(start, last - step)), last))
        if last >= end:
            return pieces
        begin = last + step


def host_matcher(hosts: Sequence[str], hostnames: Mapping[str, str]) -> Callable[[str], Optional[str]]:
    """The inventory host a node name of the exporter stands for, or None.

    A host matches the name given in ``hostnames`` (``gpushare_assess_prometheus_hostnames``)
    or, when none is given, its inventory name; else that name's short form in lower case (the
    Node name Kubernetes gives it, ``_common/names.py``). Two hosts that would take one short
    name fail the run.
    """
    exact: Dict[str, str] = {}
    short: Dict[str, List[str]] = {}
    for host in hosts:
        exact[str(hostnames.get(host) or host)] = host
        short.setdefault(node_name(str(hostnames.get(host) or host)), []).append(host)
    for name, taken in sorted(short.items()):
        if len(taken) > 1:
            raise AssessDataError("hosts %s: all have the short name %s the exporter would report; set "
                                  "gpushare_assess_prometheus_hostnames for them" % (", ".join(taken), name))

    def match(label: str) -> Optional[str]:
        if label in exact:
            return exact[label]
        found = short.get(node_name(label))
        return found[0] if found else None
    return match


def _label(labels: Mapping[str, str], names: Sequence[str]) -> str:
    return next((labels[name] for name in names if labels.get(name)), "")


def _points(series: Mapping[str, Any]) -> Dict[float, float]:
    out: Dict[float, float] = {}
    for pair in series.get("values") or []:
        try:
            value = float(pair[1])
            when = float(pair[0])
        except (TypeError, ValueError, IndexError):
            continue
        if not math.isnan(value) and not math.isinf(value):
            out[when] = value
    return out


def _describe(metric: str, labels: Mapping[str, str]) -> str:
    shown = ", ".join('%s="%s"' % (name, labels[name]) for name in HOST_LABELS + ("gpu",) + UUID_LABELS
                      if labels.get(name))
    return "series %s{%s}" % (metric, shown)


class _Cards:
    """Series gathered per card and instance: key -> GPU_I_ID -> figure -> {time: value}."""

    def __init__(self, match: Callable[[str], Optional[str]]) -> None:
        self.match = match
        self.data: Dict[Key, Dict[str, Dict[str, Dict[float, float]]]] = {}
        self.names: Dict[Key, str] = {}
        self.where: Dict[Key, str] = {}
        self.unknown: Dict[str, set] = {}
        self.unnamed = 0
        self.bad_index: List[str] = []

    def add(self, figure: str, series: Mapping[str, Any]) -> None:
        labels = series.get("metric") or {}
        node = _label(labels, HOST_LABELS)
        if not node:
            self.unnamed += 1
            return
        host = self.match(node)
        if host is None:
            self.unknown.setdefault(node, set()).add(labels.get("gpu", "?"))
            return
        try:
            index = int(labels.get("gpu", ""))
        except ValueError:
            self.bad_index.append(_describe(METRICS[figure], labels))
            return
        key = (host, index, _label(labels, UUID_LABELS) or "GPU-index-%d" % index)
        instance = labels.get(INSTANCE_LABEL, "")
        self.data.setdefault(key, {}).setdefault(instance, {}).setdefault(figure, {}).update(_points(series))
        if figure == "utilization":
            self.names.setdefault(key, labels.get("modelName", ""))
            self.where.setdefault(key, _describe(METRICS[figure], labels))


def _card_series(key: Key, instances: Dict[str, Dict[str, Dict[float, float]]], name: str, where: str,
                 errors: List[str]) -> Optional[GpuSeries]:
    """One card's GpuSeries from its instances' figures (one instance: the whole card)."""
    host, index, uuid = key
    times = sorted({when for figures in instances.values() for when in figures.get("utilization", {})})
    utilization: List[int] = []
    used: List[int] = []
    kept: List[float] = []
    total = 0.0
    for when in times:
        utils = [f["utilization"][when] for f in instances.values() if when in f.get("utilization", {})]
        memory = [f["used"][when] for f in instances.values() if when in f.get("used", {})]
        if not memory:
            continue
        kept.append(when)
        utilization.append(int(round(min(max(utils + [0.0]), 100.0))))
        used.append(int(round(max(sum(memory), 0.0))))
        size = sum(f["used"].get(when, 0.0) + f.get("free", {}).get(when, 0.0) + f.get("reserved", {}).get(when, 0.0)
                   for f in instances.values())
        total = max(total, size)
    if not kept:
        errors.append("host %s, GPU %d (%s): no %s samples beside its utilisation in the window"
                      % (host, index, uuid, METRICS["used"]))
        return None
    if not any(f.get("free") for f in instances.values()):
        errors.append("host %s, GPU %d (%s): no %s series, so the card's memory size is unknown; the exporter's "
                      "counters must include it" % (host, index, uuid, METRICS["free"]))
        return None
    return GpuSeries(host, uuid, index, name, int(round(total)), where, kept, utilization, used)


def host_samples(results: Mapping[str, Sequence[Mapping[str, Any]]], hosts: Sequence[str],
                 hostnames: Mapping[str, str], problems: List[str]) -> Dict[str, Optional[HostSamples]]:
    """Range-query answers (figure -> matrix, as ``queries()`` names them) as each host's samples.

    A host without series is None; series of nodes no host matches, or without a node label,
    are listed in ``problems``, never dropped silently. Raises AssessDataError when a card
    cannot be read at all or no series matches any host.
    """
    match = host_matcher(hosts, hostnames)
    cards = _Cards(match)
    for figure in METRICS:
        for series in results.get(figure) or []:
            cards.add(figure, series)
    errors: List[str] = []
    found: Dict[str, Optional[HostSamples]] = {host: None for host in hosts}
    for key in sorted(cards.data):
        host = key[0]
        if "utilization" not in {f for figures in cards.data[key].values() for f in figures}:
            continue
        series = _card_series(key, cards.data[key], cards.names.get(key, ""), cards.where.get(key, ""), errors)
        if series is None:
            continue
        samples = found[host]
        if samples is None:
            samples = found[host] = HostSamples(host, process_data=False)
        samples.gpus[series.uuid] = series
    for node, gpus in sorted(cards.unknown.items()):
        problems.append("Prometheus has GPU series of node %s (GPU %s) that match no host of gpushare_assess_hosts "
                        "(%s); not assessed: add the host, or map it in gpushare_assess_prometheus_hostnames"
                        % (node, ", ".join(sorted(gpus)), ", ".join(hosts)))
    if cards.unnamed:
        problems.append("Prometheus has %d GPU series without a hostname or Hostname label (exporter run with -n or "
                        "DCGM_EXPORTER_NO_HOSTNAME); not assessed" % cards.unnamed)
    for where in cards.bad_index:
        problems.append("%s: the gpu label is not a GPU index; not assessed" % where)
    if errors:
        raise AssessDataError("the Prometheus series cannot be assessed, %d problem(s):\n- %s"
                              % (len(errors), "\n- ".join(errors)))
    for samples in found.values():
        if samples is not None:
            for series in samples.gpus.values():
                series.times, series.utilization, series.memory_used = (
                    list(column) for column in zip(*sorted(zip(series.times, series.utilization,
                                                               series.memory_used))))
            check_clock(samples)
    return found


def read(client: Any, hosts: Sequence[str], hostnames: Mapping[str, str], start: float, end: float, step: float,
         problems: List[str]) -> Dict[str, Optional[HostSamples]]:
    """Every host's samples over ``[start, end]`` from ``client`` (a PrometheusClient)."""
    results: Dict[str, List[Mapping[str, Any]]] = {}
    for figure, expression in queries().items():
        merged: List[Mapping[str, Any]] = []
        for begin, last in windows(start, end, step):
            merged.extend(client.query_range(expression, begin, last, step))
        results[figure] = merged
    return host_samples(results, hosts, hostnames, problems)
