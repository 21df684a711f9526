# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia-smi samples as the assessment reads them: parsed, checked, ordered.

Two kinds of file per host, nvidia-smi's own CSV (``--format=csv,nounits``):

* ``gpus*.csv``: ``--query-gpu=timestamp,uuid,index,name,utilization.gpu,memory.used,memory.total``;
* ``apps*.csv``: ``--query-compute-apps=timestamp,gpu_uuid,pid,used_gpu_memory`` plus ``user``,
  the process owner the sampler adds.

Several files of a kind (rotation) are read in the order of their first sample. Damaged lines
are skipped and reported with host, file and line; a header that is not nvidia-smi's, or a
file with no readable sample at all, fails with an :class:`AssessDataError`. Pure Python: the
caller hands over the text of each file (``files.py`` reads them).
"""

from __future__ import annotations

import calendar
import contextlib
import gc
import time
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError

GPU_FIELDS = ("timestamp", "uuid", "index", "name", "utilization.gpu", "memory.used", "memory.total")
APP_FIELDS = ("timestamp", "gpu_uuid", "pid", "used_gpu_memory", "user")
GPU_HEADER = "timestamp, uuid, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
APP_HEADER = "timestamp, gpu_uuid, pid, used_gpu_memory [MiB], user"
# Damaged lines reported one by one per file; the rest are counted.
LISTED_PER_FILE = 5


class AssessDataError(GpushareError):
    """Samples that cannot be assessed; the message names host, file and line."""


@dataclass
class GpuSeries:
    """One card (one UUID) of one host, sample by sample."""

    host: str
    uuid: str
    index: int
    name: str
    memory_total_mib: int
    first_seen: str  # "file:line"
    times: List[float] = field(default_factory=list)
    utilization: List[int] = field(default_factory=list)
    memory_used: List[int] = field(default_factory=list)


@dataclass
class ProcessSeries:
    """One process (GPU, pid, user) of one host, sample by sample."""

    host: str
    gpu_uuid: str
    pid: int
    user: str
    times: List[float] = field(default_factory=list)
    memory: List[int] = field(default_factory=list)


@dataclass
class HostSamples:
    """Everything read for one host."""

    host: str
    gpus: Dict[str, GpuSeries] = field(default_factory=dict)  # by UUID, in order of appearance
    processes: Dict[Tuple[str, int, str], ProcessSeries] = field(default_factory=dict)
    files: List[str] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)
    # False when the source has no per-process data at all (dcgm-exporter through Prometheus).
    process_data: bool = True


@dataclass(frozen=True)
class SampleFile:
    """The text of one fetched file: its name (relative to the host directory) and lines."""

    name: str
    lines: Sequence[str]


def _where(host: str, name: str, line: int) -> str:
    return "host %s, file %s, line %d" % (host, name, line)


def _header_fields(text: str) -> Tuple[str, ...]:
    """'memory.used [MiB]' -> 'memory.used': the header's field names without units."""
    return tuple(part.split("[", 1)[0].strip() for part in text.split(","))


_CLOCK: Dict[str, float] = {}


def parse_timestamp(text: str) -> float:
    """nvidia-smi's '2026/03/02 08:00:00.123' (host wall clock) as seconds on a naive UTC scale.

    The wall clock is kept as printed, so hours and weekdays are the host's. ValueError when
    the text is no such timestamp.
    """
    key = text[:19]
    seconds = _CLOCK.get(key)
    if seconds is None:
        if len(key) != 19 or key[4] not in "/-" or key[7] not in "/-" or key[10] != " " or key[13] != ":":
            raise ValueError("not a timestamp (YYYY/MM/DD HH:MM:SS): %r" % text)
        parts = (key[0:4], key[5:7], key[8:10], key[11:13], key[14:16], key[17:19])
        if not all(part.isdigit() for part in parts):
            raise ValueError("not a timestamp (YYYY/MM/DD HH:MM:SS): %r" % text)
        year, month, day, hour, minute, second = (int(part) for part in parts)
        if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
            raise ValueError("not a timestamp (YYYY/MM/DD HH:MM:SS): %r" % text)
        seconds = float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))
        if len(_CLOCK) > 500000:
            _CLOCK.clear()
        _CLOCK[key] = seconds
    fraction = text[20:] if len(text) > 20 and text[19] == "." else ""
    return seconds + (int(fraction) / 10 ** len(fraction) if fraction.isdigit() else 0.0)


def _number(text: str) -> int:
    """'81559', '81559 MiB', '35 %' -> int; nvidia-smi's '[N/A]' -> -1."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if text.startswith("[") or text in ("N/A", ""):
        return -1
    return int(text.split()[0])


def _first_time(host: str, sample: SampleFile) -> float:
    """The time of the first sample of a file, for ordering rotated files (inf: none readable)."""
    for line in sample.lines[1:]:
        try:
            return parse_timestamp(line.split(",", 1)[0].strip())
        except ValueError:
            continue
    return float("inf")


def order_files(host: str, files: Iterable[SampleFile]) -> List[SampleFile]:
    """Rotated files in the order of their first sample, then by name."""
    return sorted(files, key=lambda sample: (_first_time(host, sample), sample.name))


class _Damage:
    """Damaged lines of one file: the first few listed, the rest counted."""

    def __init__(self, host: str, name: str) -> None:
        self.host, self.name = host, name
        self.listed: List[str] = []
        self.count = 0

    def add(self, line: int, reason: str) -> None:
        self.count += 1
        if len(self.listed) < LISTED_PER_FILE:
            self.listed.append("%s: %s" % (_where(self.host, self.name, line), reason))

    def report(self, problems: List[str], readable: int) -> None:
        problems.extend(self.listed)
        if self.count > len(self.listed):
            problems.append("host %s, file %s: %d more damaged line(s) skipped" %
                            (self.host, self.name, self.count - len(self.listed)))
        if readable == 0 and self.count:
            raise AssessDataError("host %s, file %s: no readable sample in %d line(s); first problem: %s"
                                  % (self.host, self.name, self.count, self.listed[0]))


def _check_header(host: str, sample: SampleFile, expected: Tuple[str, ...], printed: str) -> None:
    first = sample.lines[0].strip() if sample.lines else ""
    if _header_fields(first) != expected:
        raise AssessDataError("%s: header %r is not %r (nvidia-smi --format=csv,nounits prints it as the first line)"
                              % (_where(host, sample.name, 1), first, printed))


def _sound(lines: Sequence[str], width: int) -> bool:
    """Every line has ``width`` fields, counted by their ", " separators."""
    return set(map(str.count, lines, repeat(", "))) == {width - 1}


def _columns(sample: SampleFile, width: int) -> Optional[List[List[str]]]:
    """The columns of a file whose every line is sound, read column by column (fast); None when a
    line needs the careful reading, line by line, that names it.

    With ``width`` fields on every line, splitting the lines joined by ", " gives the same fields
    as splitting each line, row after row, without a list per line: column k is every width-th
    field from k.
    """
    body = sample.lines[1:]
    # Blank lines and repeated headers (files appended to each other) are read line by line, so
    # that line numbers stay right.
    if not body or not _sound(body, width) or sample.lines[0].strip() in body:
        return None
    fields = ", ".join(body).split(", ")
    return [fields[k::width] for k in range(width)]


def _period(uuids: Sequence[str]) -> int:
    """How many cards each sample lists when every sample lists the same cards in the same order
    (as nvidia-smi prints them); 0 otherwise."""
    try:
        period = uuids.index(uuids[0], 1)
    except ValueError:
        period = len(uuids)
    if len(uuids) % period or len(set(uuids[:period])) != period or uuids[period:] != uuids[:-period]:
        return 0
    return period


def _times(column: Sequence[str]) -> List[float]:
    clock = {text: parse_timestamp(text) for text in set(column)}
    return list(map(clock.__getitem__, column))


def _pick(values: Sequence[Any], where: Union[slice, List[int]]) -> Sequence[Any]:
    """The values at ``where``: a slice, or a list of positions."""
    return values[where] if isinstance(where, slice) else [values[i] for i in where]


def _read_gpu_columns(samples: HostSamples, sample: SampleFile) -> bool:
    """Add a sound gpus*.csv file column by column; False (nothing added) when a line is not."""
    columns = _columns(sample, len(GPU_FIELDS))
    if columns is None:
        return False
    stamps, uuids, indexes, names = columns[:4]
    try:
        times = _times(stamps)
        utilization, used, total = (list(map(int, column)) for column in columns[4:])
        index_numbers = list(map(int, indexes))
    except ValueError:
        return False
    if max(utilization) > 100 or min(utilization) < 0 or min(total) <= 0 or min(used) < 0 or \
            not all(uuid.startswith("GPU-") for uuid in set(uuids)):
        return False
    period = _period(uuids)
    if period:  # the usual file: a card's rows are every period-th row from its first
        rows = {uuid: (first, slice(first, None, period)) for first, uuid in enumerate(uuids[:period])}
    else:
        positions: Dict[str, List[int]] = {}
        for position, uuid in enumerate(uuids):
            positions.setdefault(uuid, []).append(position)
        rows = {uuid: (where[0], where) for uuid, where in positions.items()}
    for uuid, (first, where) in rows.items():
        series = samples.gpus.get(uuid)
        if series is None:
            series = samples.gpus[uuid] = GpuSeries(samples.host, uuid, index_numbers[first], names[first],
                                                    total[first], "%s:%d" % (sample.name, first + 2))
        series.times.extend(_pick(times, where))
        series.utilization.extend(_pick(utilization, where))
        series.memory_used.extend(_pick(used, where))
    samples.files.append(sample.name)
    return True


def _data_lines(sample: SampleFile, count: int, damage: "_Damage") -> Iterator[Tuple[int, List[str]]]:
    """(line number, fields) of each data line of ``sample`` with ``count`` fields.

    Blank lines and repeated headers (appended files) are skipped; a line with another number
    of fields is reported to ``damage``. nvidia-smi separates with ", "; a bare "," is accepted.
    """
    header = sample.lines[0].strip()
    for number, raw in enumerate(sample.lines[1:], 2):
        line = raw.strip()
        if not line or line == header:
            continue
        parts = line.split(", ")
        if len(parts) != count:
            parts = [part.strip() for part in line.split(",")]
            if len(parts) != count:
                damage.add(number, "expected %d fields, got %d (truncated or garbled line)" % (count, len(parts)))
                continue
        yield number, parts


def read_gpu_file(samples: HostSamples, sample: SampleFile) -> None:
    """Add one gpus*.csv file to ``samples``."""
    host = samples.host
    _check_header(host, sample, GPU_FIELDS, GPU_HEADER)
    if _read_gpu_columns(samples, sample):
        return
    damage = _Damage(host, sample.name)
    readable = 0
    gpus = samples.gpus
    stamp, when = "", 0.0
    for number, parts in _data_lines(sample, len(GPU_FIELDS), damage):
        try:
            if parts[0] != stamp:
                when = parse_timestamp(parts[0])
                stamp = parts[0]
            uuid = parts[1]
            try:
                util, used, total = int(parts[4]), int(parts[5]), int(parts[6])
            except ValueError:
                util, used, total = _number(parts[4]), _number(parts[5]), _number(parts[6])
            index = int(parts[2])
        except ValueError as error:
            damage.add(number, "unreadable value (%s)" % error)
            continue
        if not uuid.startswith("GPU-") or util > 100 or total <= 0:
            damage.add(number, "not a GPU sample (uuid %r, utilization %d, memory.total %d)" % (uuid, util, total))
            continue
        series = gpus.get(uuid)
        if series is None:
            series = gpus[uuid] = GpuSeries(host, uuid, index, parts[3], total, "%s:%d" % (sample.name, number))
        series.times.append(when)
        series.utilization.append(max(util, 0))
        series.memory_used.append(max(used, 0))
        readable += 1
    damage.report(samples.problems, readable)
    samples.files.append(sample.name)


def _read_app_columns(samples: HostSamples, sample: SampleFile) -> bool:
    """Add a sound apps*.csv file column by column; False (nothing added) when a line is not."""
    if not any(line and line != sample.lines[0] for line in sample.lines[1:]):
        samples.files.append(sample.name)
        return True
    columns = _columns(sample, len(APP_FIELDS))
    if columns is None:
        return False
    stamps, uuids, pids, memory, users = columns
    try:
        times = _times(stamps)
        pid_numbers = list(map(int, pids))
        mib = list(map(int, memory))
    except ValueError:
        return False
    if min(mib) < 0 or not all(uuid.startswith("GPU-") for uuid in set(uuids)) or "" in set(users):
        return False
    processes = samples.processes
    for key, when, used in zip(zip(uuids, pid_numbers, users), times, mib):
        series = processes.get(key)
        if series is None:
            series = processes[key] = ProcessSeries(samples.host, key[0], key[1], key[2])
        series.times.append(when)
        series.memory.append(used)
    samples.files.append(sample.name)
    return True


def read_app_file(samples: HostSamples, sample: SampleFile) -> None:
    """Add one apps*.csv file to ``samples`` (a file with only its header: no process ran)."""
    host = samples.host
    _check_header(host, sample, APP_FIELDS, APP_HEADER)
    if _read_app_columns(samples, sample):
        return
    damage = _Damage(host, sample.name)
    readable = 0
    processes = samples.processes
    unknown_memory = 0
    stamp, when = "", 0.0
    for number, parts in _data_lines(sample, len(APP_FIELDS), damage):
        try:
            if parts[0] != stamp:
                when = parse_timestamp(parts[0])
                stamp = parts[0]
            pid = int(parts[2])
            memory = int(parts[3]) if parts[3].isdigit() else _number(parts[3])
        except ValueError as error:
            damage.add(number, "unreadable value (%s)" % error)
            continue
        user = parts[4] or "?"
        if not parts[1].startswith("GPU-"):
            damage.add(number, "not a GPU UUID: %r" % parts[1])
            continue
        if memory < 0:
            unknown_memory += 1
            memory = 0
        key = (parts[1], pid, user)
        series = processes.get(key)
        if series is None:
            series = processes[key] = ProcessSeries(host, parts[1], pid, user)
        series.times.append(when)
        series.memory.append(memory)
        readable += 1
    damage.report(samples.problems, readable if readable or damage.count == 0 else 0)
    if unknown_memory:
        samples.problems.append("host %s, file %s: %d process sample(s) without used_gpu_memory (counted as 0 MiB)"
                                % (host, sample.name, unknown_memory))
    samples.files.append(sample.name)


@contextlib.contextmanager
def without_cycle_collection() -> Iterator[None]:
    """Millions of small rows and sets, none of them cyclic: the cycle collector would walk them
    again and again while they are made, for nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def read_host(host: str, gpu_files: Sequence[SampleFile], app_files: Sequence[SampleFile]) -> HostSamples:
    """Every file of one host, rotated files in order; problems in ``problems``."""
    samples = HostSamples(host)
    if not gpu_files:
        raise AssessDataError("host %s: no gpus*.csv file (no samples for this host)" % host)
    with without_cycle_collection():
        for sample in order_files(host, gpu_files):
            read_gpu_file(samples, sample)
        for sample in order_files(host, app_files):
            read_app_file(samples, sample)
    if not app_files:
        samples.problems.append("host %s: no apps*.csv file: no process data, so nothing can be said of who used "
                                "the GPUs; each keeps its current team and use" % host)
    check_clock(samples)
    return samples


def sample_interval(times: Sequence[float]) -> float:
    """The usual time between two samples (median step; 60 s when there are too few)."""
    steps = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    return steps[len(steps) // 2] if steps else 60.0


def _clock(seconds: float) -> str:
    return "%04d-%02d-%02d %02d:%02d" % tuple(time.gmtime(seconds)[:5])


def check_clock(samples: HostSamples) -> Optional[float]:
    """Report gaps and clock jumps of a host (its first card's series); returns its interval."""
    if not samples.gpus:
        return None
    series = next(iter(samples.gpus.values()))
    times = series.times
    interval = sample_interval(times)
    gap = max(5 * interval, 300.0)
    for before, after in zip(times, times[1:]):
        if after < before - 1:
            samples.problems.append("host %s, GPU %d: clock went back %.0f s at %s (after %s); samples kept, "
                                    "hours may count twice" % (samples.host, series.index, before - after,
                                                               _clock(after), _clock(before)))
        elif after - before > gap:
            samples.problems.append("host %s, GPU %d: gap of %.1f h without samples, %s to %s (sampler stopped, "
                                    "host down or clock jump)" % (samples.host, series.index,
                                                                  (after - before) / 3600.0, _clock(before),
                                                                  _clock(after)))
    return interval


def time_text(seconds: float) -> str:
    """Seconds on the naive scale as 'YYYY-MM-DD HH:MM'."""
    return _clock(seconds)
