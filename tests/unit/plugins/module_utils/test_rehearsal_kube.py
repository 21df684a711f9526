# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rehearsal/kube.py on a fake clock and a fake API server: the wait for a steady state, what a day
deletes, and how a day that cannot go on ends (the real API calls run in the rehearsal tests)."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import kube
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import steps as steps_lib

from test_rehearsal_world import inventory_plan


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


# --- a day on a fake API server: what the rehearsal deletes, and what it does when a step cannot go on ---

class FakeCluster:
    """Objects keyed (namespace, kind, name); refuses to create what ``refuse`` names (kind, name).

    Deleting with an empty name deletes every object of that kind in the namespace, as a DELETE
    on the collection path does (what ``delete_namespaced_job("", ns)`` sends).
    """

    def __init__(self, refuse=(), existing=()):
        self.objects = {key: {"existing": True} for key in existing}
        self.refuse = set(refuse)
        self.deletes = []

    def create(self, _api, obj):
        key = (obj["metadata"]["namespace"], obj["kind"], obj["metadata"]["name"])
        if (obj["kind"], obj["metadata"]["name"]) in self.refuse:
            raise kube.ApiException(status=403, reason="Forbidden")
        if key in self.objects:
            raise kube.ApiException(status=409, reason="AlreadyExists")
        self.objects[key] = obj

    def delete(self, namespace, kind, name):
        self.deletes.append((namespace, kind, name))
        for key in [k for k in self.objects if k[0] == namespace and k[1] == kind and (not name or k[2] == name)]:
            del self.objects[key]

    def client(self):
        """Stands for kubernetes.client: the three APIs the day deletes through."""
        cluster = self

        class Api:
            def __init__(self, _api):
                pass

            def delete_namespaced_pod(self, name, namespace, **_kw):
                cluster.delete(namespace, "Pod", name)

            def delete_namespaced_job(self, name, namespace, **_kw):
                cluster.delete(namespace, "Job", name)

            def delete_namespaced_custom_object(self, _group, _version, namespace, plural, name):
                assert plural == "resourceclaims"
                cluster.delete(namespace, "ResourceClaim", name)

        return type("FakeClient", (), {"CoreV1Api": Api, "BatchV1Api": Api, "CustomObjectsApi": Api})

    def observer(self):
        cluster = self

        class Observer:
            """A workload runs while its object exists (kwok and Kueue are not what is tested here)."""

            def __init__(self, _api, _plan, _world):
                pass

            def _pods(self, namespace, name, kind):
                return [name] if (namespace, kind, name) in cluster.objects else []

            def workload(self, submitted):
                running = self._pods(submitted["namespace"], submitted["name"], submitted["kind"])
                return {"state": "admitted" if running else "pending", "reason": "" if running else "gone",
                        "preemptions": 0, "running": running, "kueue": True}

            def queues(self):
                return {}

            def allocations(self, _submitted, _running):
                return []

        return Observer


@pytest.fixture(scope="module")
def dra_plan():
    return inventory_plan("example", "dra")


def _run(monkeypatch, plan, cluster, steps):
    monkeypatch.setattr(kube, "_create", cluster.create)
    monkeypatch.setattr(kube, "k8s_client", cluster.client())
    monkeypatch.setattr(kube, "Observer", cluster.observer())
    clock = FakeClock()
    checked = steps_lib.validate_steps(plan, steps)
    return kube.run_day("admin", {}, plan, {"devices": []}, checked, timeout=5, settle=0.5, clock=clock,
                        sleep=clock.sleep)


def _claim_attempt(plan, name="training-uses-data-claim"):
    return {"team": "training", "name": name, "shared": True, "claim": steps_lib.PlanView(plan).shared_claims("data")[0]}


def test_a_refused_workload_leaves_every_other_workload_of_its_team_untouched(monkeypatch, dra_plan):
    attempt = _claim_attempt(dra_plan)
    cluster = FakeCluster(refuse=[("Pod", attempt["name"])])
    doc = _run(monkeypatch, dra_plan, cluster, [
        {"at": "08:00", "submit": [{"team": "training", "name": "exp-1", "gpus": 1}], "expect": {"admitted": ["exp-1"]}},
        {"at": "08:30", "submit": [attempt], "expect": {"denied": [attempt["name"]], "admitted": ["exp-1"]}},
    ])
    assert ("training", "Job", "exp-1") in cluster.objects
    # exactly the claim the refused workload created is deleted again, and nothing else
    assert cluster.deletes == [("training", "ResourceClaim", attempt["claim"])]
    assert ("training", "ResourceClaim", attempt["claim"]) not in cluster.objects
    assert doc["passed"], doc["unmet"]
    assert doc["steps"][1]["teams"]["training"]["admitted"] == ["exp-1"]


def test_a_claim_that_already_existed_is_not_deleted_when_the_workload_is_refused(monkeypatch, dra_plan):
    attempt = _claim_attempt(dra_plan)
    claim = ("training", "ResourceClaim", attempt["claim"])
    cluster = FakeCluster(existing=[claim])
    doc = _run(monkeypatch, dra_plan, cluster, [
        {"at": "08:30", "submit": [attempt], "expect": {"denied": [attempt["name"]]}}])
    assert claim in cluster.objects and cluster.deletes == []
    assert doc["passed"] and "AlreadyExists" in doc["steps"][0]["reasons"][attempt["name"]]


def test_delete_refuses_an_empty_name(monkeypatch):
    cluster = FakeCluster(existing=[("training", "Job", "exp-1")])
    monkeypatch.setattr(kube, "k8s_client", cluster.client())
    for submitted in ({"namespace": "training", "name": "", "kind": "Job"},
                      {"namespace": "", "name": "exp-1", "kind": "Job"}):
        with pytest.raises(ValueError, match="without a name and a namespace"):
            kube._delete("admin", submitted)
    with pytest.raises(ValueError, match="ResourceClaim without a name"):
        kube._delete_claim("admin", "training", "")
    assert cluster.deletes == [] and ("training", "Job", "exp-1") in cluster.objects


def test_deleting_a_refused_workload_is_a_fact_of_the_day_and_the_day_goes_on(monkeypatch, dra_plan):
    attempt = _claim_attempt(dra_plan, name="chat")
    cluster = FakeCluster(refuse=[("Pod", "chat")])
    doc = _run(monkeypatch, dra_plan, cluster, [
        {"at": "07:30", "submit": [attempt], "expect": {"denied": ["chat"]}},
        {"at": "08:00", "delete": ["chat"], "submit": [{"team": "training", "name": "exp-1", "gpus": 1}],
         "expect": {"admitted": ["exp-1"]}},
        {"at": "09:00", "expect": {"denied": ["chat"]}},
    ])
    assert [s["at"] for s in doc["steps"]] == ["07:30", "08:00", "09:00"]
    assert doc["steps"][0]["not_running"] == {}
    deleted = doc["steps"][1]["not_running"]
    assert list(deleted) == ["chat"] and "refused by the API server at 07:30" in deleted["chat"]
    assert doc["steps"][1]["teams"]["training"]["admitted"] == ["exp-1"]
    assert "chat" not in doc["steps"][1]["teams"]["training"]["denied"]
    # the later step's expectations are judged on what is there: chat is gone, not denied
    assert doc["unmet"] == [{"step": "09:00", "team": "training", "workload": "chat", "what": "expected denied, was absent"}]


def test_a_step_that_cannot_go_on_stops_the_day_with_what_did_run(monkeypatch, dra_plan):
    cluster = FakeCluster()
    create = cluster.create

    def broken(api, obj):
        if obj["metadata"]["name"] == "exp-2":
            raise KeyError("exp-2")
        create(api, obj)

    cluster.create = broken
    with pytest.raises(kube.DayStopped) as stopped:
        _run(monkeypatch, dra_plan, cluster, [
            {"at": "08:00", "submit": [{"team": "training", "name": "exp-1", "gpus": 1}], "expect": {"admitted": ["exp-1"]}},
            {"at": "09:00", "submit": [{"team": "training", "name": "exp-2", "gpus": 1}]},
            {"at": "10:00", "delete": ["exp-1"]},
        ])
    doc = stopped.value.document
    assert str(stopped.value).startswith("step 09:00: the rehearsal stopped at this step: KeyError")
    assert [s["at"] for s in doc["steps"]] == ["08:00", "09:00"] and not doc["passed"]
    assert doc["steps"][0]["teams"]["training"]["admitted"] == ["exp-1"]
    assert doc["unmet"][0]["step"] == "09:00" and "KeyError" in doc["unmet"][0]["what"]


def test_what_to_know_before_the_day_is_kept_in_the_document(monkeypatch, dra_plan):
    cluster = FakeCluster()
    monkeypatch.setattr(kube, "_create", cluster.create)
    monkeypatch.setattr(kube, "k8s_client", cluster.client())
    monkeypatch.setattr(kube, "Observer", cluster.observer())
    clock = FakeClock()
    steps = steps_lib.validate_steps(dra_plan, [{"at": "08:00", "submit": [{"team": "training", "name": "exp-1", "gpus": 1}]}])
    doc = kube.run_day("admin", {}, dra_plan, {"devices": []}, steps, timeout=5, settle=0.5, clock=clock,
                       sleep=clock.sleep, before_the_day=["team x has no group"])
    assert doc["before_the_day"] == ["team x has no group"]
