# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Worlds with a known truth for the assessment: who ran what, when, with how much memory.

A world is cards and jobs; ``write(root)`` turns it into the CSV files the sampler would have
fetched (nvidia-smi's header lines, rotated into one file per day), so the tests can check the
proposal against what they put in.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

GPU_HEADER = "timestamp, uuid, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
APP_HEADER = "timestamp, gpu_uuid, pid, used_gpu_memory [MiB], user"
# Monday 2 March 2026, 00:00 on the hosts' clocks.
MONDAY = 1772409600
HOUR = 3600
DAY = 24 * HOUR
GIB = 1024
RTX = ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887)
L40S = ("NVIDIA L40S", 46068)


@dataclass
class Job:
    """One process on one card from start to end (seconds after the world's start)."""

    host: str
    index: int
    user: str
    pid: int
    start: float
    end: float
    memory_mib: int
    utilization: int


@dataclass
class World:
    cards: Dict[str, List[Tuple[int, str, int]]]  # host -> (index, nvidia-smi name, memory MiB)
    days: int = 7
    interval: int = 120
    jobs: List[Job] = field(default_factory=list)
    replaced: Dict[Tuple[str, int], float] = field(default_factory=dict)  # (host, index) -> when a new card came

    def uuid(self, host: str, index: int, when: float = 0.0) -> str:
        generation = 1 if when >= self.replaced.get((host, index), float("inf")) else 0
        number = sum(ord(c) for c in host) * 100 + index
        return "GPU-%08x-0000-4000-8000-%012d" % (number, generation)

    def steady(self, host, index, user, pid, memory_gib, utilization):
        self.jobs.append(Job(host, index, user, pid, 0, self.days * DAY, int(memory_gib * GIB), utilization))

    def daily(self, host, index, user, pid, start_hour, end_hour, memory_gib, utilization, weekdays_only=True):
        """One run a day from start_hour to end_hour (end past 24 runs into the next day)."""
        for day in range(self.days):
            if weekdays_only and day % 7 >= 5:
                continue
            self.jobs.append(Job(host, index, user, pid + day, day * DAY + start_hour * HOUR,
                                 min(day * DAY + end_hour * HOUR, self.days * DAY), int(memory_gib * GIB),
                                 utilization))

    def notebooks(self, host, index, users, seed=1, memory_gib=(4, 12), utilization=6, first=10, last=19):
        """Interactive sessions on weekdays between first and last hour, each user one or two."""
        rng = random.Random(seed)
        pid = 20000
        for day in range(self.days):
            if day % 7 >= 5:
                continue
            for user in users:
                for _session in range(rng.choice((1, 2))):
                    start = day * DAY + first * HOUR + rng.randrange(0, 3 * HOUR, self.interval)
                    length = rng.randrange(HOUR, 4 * HOUR, self.interval)
                    end = min(start + length, day * DAY + last * HOUR)
                    pid += 1
                    self.jobs.append(Job(host, index, user, pid, start, end, rng.randint(*memory_gib) * GIB,
                                         utilization))

    def lines(self, host: str) -> Dict[str, List[str]]:
        """The host's files by name: gpus-<day>.csv and apps-<day>.csv."""
        files: Dict[str, List[str]] = {}
        jobs = [job for job in self.jobs if job.host == host]
        for step in range(0, self.days * DAY, self.interval):
            day = step // DAY
            stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(MONDAY + step)) + ".%03d" % (step % 997)
            gpus = files.setdefault("gpus-%02d.csv" % day, [GPU_HEADER])
            apps = files.setdefault("apps-%02d.csv" % day, [APP_HEADER])
            for index, name, total in self.cards[host]:
                running = [job for job in jobs if job.index == index and job.start <= step < job.end]
                util = min(100, sum(job.utilization for job in running))
                used = min(total, sum(job.memory_mib for job in running))
                uuid = self.uuid(host, index, step)
                gpus.append("%s, %s, %d, %s, %d, %d, %d" % (stamp, uuid, index, name, util, used, total))
                for job in running:
                    apps.append("%s, %s, %d, %d, %s" % (stamp, uuid, job.pid, job.memory_mib, job.user))
        return files

    def write(self, root: Path) -> Path:
        for host in self.cards:
            folder = root / host
            folder.mkdir(parents=True, exist_ok=True)
            for name, lines in self.lines(host).items():
                (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return root


TEAMS = [
    {"name": "production", "namespaces": ["production"], "priority": 1000},
    {"name": "data", "namespaces": ["data"], "priority": 100},
    {"name": "training", "namespaces": ["training"], "priority": 10},
]
NOTEBOOK_USERS = ["alice", "bob", "carol", "dave", "erin"]


def worked_day(days: int = 7) -> World:
    """The README's server: four RTX PRO 6000, one per team today; the truth of the worked day."""
    world = World({"gpu1": [(index, RTX[0], RTX[1]) for index in range(4)]}, days=days)
    world.steady("gpu1", 0, "vllm", 1000, 86, 70)  # production's model, served with vLLM
    world.steady("gpu1", 1, "embed", 1100, 8, 8)  # three small production models
    world.steady("gpu1", 1, "classify", 1200, 7, 6)
    world.steady("gpu1", 1, "stt", 1300, 17, 12)
    world.notebooks("gpu1", 2, NOTEBOOK_USERS)  # five notebooks of the data team
    world.daily("gpu1", 3, "trainer", 3000, 13, 29 + 1 / 6.0, 60, 95)  # the fine-tune, 13:00 to 05:10
    return world


WORKED_DAY_TODAY = {"gpu1": [
    {"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "whole"},
    {"index": 1, "model": "RTX-PRO-6000", "team": "production", "use": "whole"},
    {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "whole"},
    {"index": 3, "model": "RTX-PRO-6000", "team": "training", "use": "whole"},
]}
WORKED_DAY_USERS = dict({"vllm": "production", "embed": "production", "classify": "production", "stt": "production",
                         "trainer": "training"}, **{user: "data" for user in NOTEBOOK_USERS})


def overloaded(days: int = 7) -> Tuple[World, Dict[str, Any]]:
    """Two L40S, one per team: production serves all day; two fine-tunes at once on training's one
    card every weekday 09:00-17:00, so one would wait. The world and its gpushare_gpus today."""
    world = World({"node": [(0, L40S[0], L40S[1]), (1, L40S[0], L40S[1])]}, days=days)
    world.steady("node", 0, "serve", 10, 40, 80)
    world.daily("node", 1, "tune-a", 1000, 9, 17, 20, 90)
    world.daily("node", 1, "tune-b", 2000, 9, 17, 20, 90)
    return world, {"node": [{"index": 0, "team": "production"}, {"index": 1, "team": "training"}]}


def assess(world: World, root: Path, today: Mapping[str, Any], users: Mapping[str, str],
           teams: Optional[Sequence[Mapping[str, Any]]] = None) -> Dict[str, Any]:
    """The assessment of the world's samples written under root/samples, as the module makes it."""
    from ansible_collections.gpushare.cluster.plugins.module_utils.assess import analysis, files

    samples_dir = world.write(root / "samples")
    problems: List[str] = []
    samples = files.read_samples(str(samples_dir), sorted(set(world.cards) | set(today)), problems)
    return analysis.assess(samples, today, TEAMS if teams is None else teams, users, problems=problems)
