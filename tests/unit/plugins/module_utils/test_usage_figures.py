# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Usage figures from fixed query results."""
from __future__ import annotations

import math

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.usage.figures import (
    UsageDataError,
    choose_step,
    compute_figures,
    instant_queries,
    parse_duration,
    percentile,
)

STEP = 3600
START = 1_000_000 - 1_000_000 % STEP
END = START + 9 * STEP  # ten samples


def matrix(label, value, values):
    """A range-query series; None in ``values`` = no sample at that step."""
    return {"metric": {label: value}, "values": [[START + i * STEP, str(v)] for i, v in enumerate(values) if v is not None]}


def vector(queue, value):
    return {"metric": {"cluster_queue": queue}, "value": [END, str(value)]}


def gpu(host, index, values, profile=None, instance=None):
    labels = {"hostname": host, "gpu": str(index), "UUID": f"GPU-{index}"}
    if profile:
        labels.update(GPU_I_PROFILE=profile, GPU_I_ID=str(instance))
    return {"metric": labels, "values": [[START + i * STEP, str(v)] for i, v in enumerate(values) if v is not None]}


def full_results():
    return {
        "allocated": [matrix("team", "prod", [2] * 10), matrix("team", "train", [0, 0, 1, 1, 2, 2, 2, 2, 1, 0])],
        "busy": [matrix("team", "prod", [1.0] * 10), matrix("team", "train", [0, 0, 1, 1, 2, 2, 2, 2, 1, 0])],
        "idle_allocated": [matrix("team", "prod", [1] * 10), matrix("team", "train", [0] * 10)],
        "borrowed": [matrix("team", "prod", [0] * 10), matrix("team", "train", [0, 0, 0, 0, 1, 1, 1, 1, 0, 0])],
        "lent": [matrix("team", "prod", [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]), matrix("team", "train", [0] * 10)],
        "pending": [matrix("team", "prod", [0] * 10), matrix("team", "train", [0, 1, 1, 1, 0, 0, 0, 0, 0, 0])],
        "gpu_allocated": [gpu("n1", 0, [1] * 10), gpu("n1", 1, [1] * 10), gpu("n1", 2, [0, 0, 1, 1, 1, 1, 1, 1, 1, 0]),
                          gpu("n1", 3, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0])],
        "gpu_busy": [gpu("n1", 0, [0.02] * 10), gpu("n1", 1, [0.98] * 10), gpu("n1", 2, [0, 0, 1, 1, 1, 1, 1, 1, 1, 0]),
                     gpu("n1", 3, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0])],
    }


def full_instants():
    return {
        "nominal_quota": [vector("prod", 2), vector("train", 1)],
        "borrowing_limit": [vector("prod", math.inf), vector("train", 1)],
        "wait_p95": [vector("prod", 4), vector("train", 7200)],
        "wait_mean": [vector("prod", 2), vector("train", 3600)],
        "admitted": [vector("prod", 3), vector("train", 2)],
    }


def test_team_figures_from_recorded_series():
    figures = compute_figures(full_results(), full_instants(), START, END, STEP, teams=["prod", "train"])
    prod, train = figures["teams"]["prod"], figures["teams"]["train"]
    assert figures["window"] == {"start": START, "end": END, "step_seconds": STEP, "hours": 9.0, "samples": 10}
    assert prod["gpu_hours_allocated"] == 20.0 and prod["gpu_hours_busy"] == 10.0 and prod["efficiency"] == 0.5
    assert prod["idle_allocated_gpu_hours"] == 10.0
    assert prod["lending_hours"] == 2.0 and prod["lent_gpu_hours"] == 2.0
    assert prod["borrowing_limit"] is None and prod["borrowing_unlimited"] is True
    assert train["gpu_hours_allocated"] == 11.0 and train["efficiency"] == 1.0
    assert train["allocated_peak"] == 2.0 and train["allocated_p95"] == 2.0
    assert train["borrowing_hours"] == 4.0 and train["borrowed_peak"] == 1.0
    assert train["pending_hours"] == 3.0 and train["pending_peak"] == 1.0
    assert train["wait_p95_seconds"] == 7200 and train["wait_mean_seconds"] == 3600
    assert train["nominal_quota"] == 1.0 and train["borrowing_limit"] == 1.0
    assert train["series"]["allocated"][4] == [START + 4 * STEP, 2.0]
    assert figures["missing"] == [] and figures["teams_without_data"] == []


def test_gpu_and_cluster_figures():
    figures = compute_figures(full_results(), full_instants(), START, END, STEP, teams=["prod", "train"])
    by_index = {g["gpu"]: g for g in figures["gpus"]}
    assert by_index[0]["allocated_hours"] == 10.0 and by_index[0]["idle_allocated_hours"] == 10.0
    assert by_index[0]["busy_ratio_when_allocated"] == 0.02
    assert by_index[1]["idle_allocated_hours"] == 0.0
    assert by_index[3]["allocated_hours"] == 4.0 and by_index[3]["busy_ratio_when_allocated"] == 1.0
    cluster = figures["cluster"]
    assert cluster["gpus"] == 4 and cluster["devices"] == 4
    assert cluster["gpu_hours_capacity"] == 36.0
    assert cluster["gpu_hours_allocated"] == 31.0
    # prod 2 + train 2 = 4 of 4 devices at steps 4..7
    assert cluster["saturated_hours"] == 4.0 and cluster["saturated_with_waiting_hours"] == 0.0
    assert cluster["pending_hours"] == 3.0 and cluster["team_pending_most"] == "train"
    assert cluster["team_waiting_longest"] == "train"


def test_missing_series_are_reported_not_zero():
    results = {"allocated": full_results()["allocated"], "busy": [], "gpu_allocated": None}
    figures = compute_figures(results, {}, START, END, STEP, teams=["prod"])
    prod = figures["teams"]["prod"]
    assert prod["gpu_hours_allocated"] == 20.0
    assert prod["gpu_hours_busy"] is None and prod["efficiency"] is None
    assert prod["pending_hours"] is None and prod["borrowing_hours"] is None
    assert prod["wait_p95_seconds"] is None and prod["nominal_quota"] is None and prod["borrowing_unlimited"] is None
    missing = {m["figure"]: m for m in figures["missing"]}
    assert {"busy", "idle_allocated", "borrowed", "lent", "pending", "nominal_quota", "wait_p95",
            "gpu_allocated", "gpu_busy"} <= set(missing)
    assert missing["busy"]["series"] == "gpushare:team_gpus_busy"
    assert "Kueue" in missing["pending"]["source"]
    assert figures["cluster"]["busy_share"] is None and figures["cluster"]["gpus"] == 0


def test_team_without_data_is_listed_and_team_only_in_data_is_added():
    figures = compute_figures(full_results(), full_instants(), START, END, STEP, teams=["prod", "research"])
    assert figures["teams_without_data"] == ["research"]
    research = figures["teams"]["research"]
    assert research["has_data"] is False
    assert research["gpu_hours_allocated"] is None and research["pending_hours"] is None
    assert "train" in figures["teams"]


def test_cluster_queue_names_map_to_teams():
    figures = compute_figures(full_results(), full_instants(), START, END, STEP, teams=["train"],
                              cluster_queues={"train": "prod"})
    assert figures["teams"]["train"]["nominal_quota"] == 2.0


def test_mig_memory_figures():
    results = {"gpu_allocated": [gpu("n1", 1, [1] * 10, "3g.48gb", 2)], "gpu_busy": [gpu("n1", 1, [0.2] * 10, "3g.48gb", 2)]}
    used = {"metric": {"hostname": "n1", "gpu": "1", "GPU_I_PROFILE": "3g.48gb", "GPU_I_ID": "2"}, "value": [END, "5120"]}
    total = dict(used, value=[END, "48640"])
    figures = compute_figures(results, {"mig_memory_used": [used], "mig_memory_total": [total]}, START, END, STEP)
    [entry] = figures["gpus"]
    assert entry["mig_profile"] == "3g.48gb" and entry["mig_instance_id"] == "2"
    assert entry["memory_used_peak_mib"] == 5120 and entry["memory_total_mib"] == 48640


def test_nan_samples_are_ignored():
    results = {"allocated": [matrix("team", "a", ["NaN", 1, 1, None, 1, 1, 1, 1, 1, 1])]}
    figures = compute_figures(results, {}, START, END, STEP, teams=["a"])
    assert figures["teams"]["a"]["gpu_hours_allocated"] == 8.0
    assert figures["teams"]["a"]["coverage"] == 0.8


def test_window_shorter_than_step():
    with pytest.raises(UsageDataError, match="window: 30m is shorter than the step 1h"):
        compute_figures({}, {}, START, START + 1800, STEP)
    with pytest.raises(UsageDataError, match="window: 10m is shorter than the step 1h; widen"):
        choose_step(600, 3600)


@pytest.mark.parametrize("window, step", [(14 * 86400, 300), (86400, 60), (90 * 86400, 1800), (3 * 86400, 60)])
def test_step_chosen_from_window(window, step):
    assert choose_step(window) == step
    assert window / choose_step(window) <= 5000


@pytest.mark.parametrize("text, seconds", [("14d", 1209600), ("36h", 129600), ("1d12h", 129600), ("90m", 5400),
                                           ("600s", 600), ("2w", 1209600), (3600, 3600)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "14 days", "d14", "0s", "-1h", "1.5"])
def test_parse_duration_rejects(text):
    with pytest.raises(UsageDataError, match="window"):
        parse_duration(text)


def test_percentile_nearest_rank():
    assert percentile([], 0.95) is None
    assert percentile(list(range(1, 101)), 0.95) == 95
    assert percentile([3.0], 0.5) == 3.0


def test_instant_queries_use_window_and_raw_regex():
    queries = instant_queries(14 * 86400, r"gpushare\.io/.*")
    assert "increase(kueue_admission_wait_time_seconds_bucket[14d])" in queries["wait_p95"]
    assert r"resource=~`gpushare\.io/.*`" in queries["nominal_quota"]
    assert ".*\\.shared" in queries["nominal_quota"]
    with pytest.raises(UsageDataError, match="backtick"):
        instant_queries(3600, "a`b")
