# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rehearsal/kube.py's wait for a steady state, on a fake clock (the API calls run in the rehearsal)."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import kube


class FakeClock:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self):
        self.now = 100.0
        self.sleeps = 0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps += 1
        self.now += seconds


class ScriptedObserver:
    """Reports the workload states in ``script`` one observation at a time, then the last one for ever."""

    def __init__(self, script):
        self.script = list(script)
        self.seen = 0

    def workload(self, submitted):
        state = self.script[min(self.seen, len(self.script) - 1)]
        return {"state": state, "preemptions": 0, "running": [], "reason": ""}

    def queues(self):
        self.seen += 1  # called once per observation, after the workloads
        return {}


LIVE = {"train": {"name": "train"}}


def test_it_returns_once_nothing_changes_for_the_settle_time():
    clock = FakeClock()
    observer = ScriptedObserver(["pending", "pending", "admitted"])
    observed, now = kube._steady(observer, LIVE, settle=1.0, deadline=clock() + 60, clock=clock, sleep=clock.sleep)
    assert observed["train"]["state"] == "admitted"
    # Admitted at the third observation (0.5 s), then unchanged for 1 s: four more sleeps of 0.25 s.
    assert now == 101.5


def test_a_change_restarts_the_settle_time():
    clock = FakeClock()
    observer = ScriptedObserver(["pending"] * 3 + ["admitted"] + ["pending"] * 2 + ["admitted"])
    observed, now = kube._steady(observer, LIVE, settle=1.0, deadline=clock() + 60, clock=clock, sleep=clock.sleep)
    assert observed["train"]["state"] == "admitted"
    assert now == 102.5  # last change at the seventh observation (1.5 s), steady 1 s later


def test_it_gives_up_at_the_deadline_with_the_last_observation():
    clock = FakeClock()
    observer = ScriptedObserver(["pending", "admitted"] * 100)
    deadline = clock() + 5
    observed, now = kube._steady(observer, LIVE, settle=1.0, deadline=deadline, clock=clock, sleep=clock.sleep)
    assert now == deadline  # not steady: run_day records steady=False
    assert observed["train"]["state"] in ("pending", "admitted")
    assert clock.sleeps == 20
