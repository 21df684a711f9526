# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus source of the assessment: range-query answers -> HostSamples, and the
proposal of cards that come without per-process data."""

from __future__ import annotations

import pytest

from assess_worlds import TEAMS
from ansible_collections.gpushare.cluster.plugins.module_utils.assess import analysis, dcgm
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.proposal import CANNOT_DECIDE
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.samples import AssessDataError

START = 1772956800  # 2026-03-08 08:00 UTC, a Sunday
STEP = 60
RTX_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
TOTAL = 97887
SOURCE = {"kind": "prometheus", "url": "http://prometheus.test", "step_seconds": STEP, "clock": "UTC"}


def _labels(host, gpu, host_label="hostname", uuid_label="UUID", **extra):
    labels = {host_label: host, "gpu": str(gpu), uuid_label: "GPU-%s-%d" % (host, gpu), "modelName": RTX_NAME}
    labels.update(extra)
    return labels


def _matrix(labels, values, start=START, step=STEP):
    """One series of a range-query answer: Prometheus sends values as strings."""
    return {"metric": dict(labels), "values": [[start + i * step, str(v)] for i, v in enumerate(values) if v is not None]}


def _card(labels, util, used, total=TOTAL, reserved=None):
    free = [None if u is None else total - u - (reserved or 0) for u in used]
    answer = {"utilization": [_matrix(labels, util)], "used": [_matrix(labels, used)], "free": [_matrix(labels, free)]}
    answer["reserved"] = [_matrix(labels, [reserved] * len(used))] if reserved is not None else []
    return answer


def _merge(*answers):
    merged = {key: [] for key in dcgm.METRICS}
    for answer in answers:
        for key, series in answer.items():
            merged[key] += series
    return merged


def test_queries_keep_one_series_per_card_and_instance():
    queries = dcgm.queries()
    assert queries["utilization"] == ("max by (hostname, Hostname, gpu, UUID, uuid, modelName, GPU_I_ID) "
                                      "(DCGM_FI_DEV_GPU_UTIL)")
    assert set(queries) == {"utilization", "used", "free", "reserved"}


def test_both_host_label_spellings_and_both_uuid_labels_are_read():
    answer = _merge(_card(_labels("gpu1", 0), [40, 50], [1000, 2000], reserved=500),
                    _card(_labels("gpu2", 1, host_label="Hostname", uuid_label="uuid"), [0, 100], [0, 10]))
    problems = []
    found = dcgm.host_samples(answer, ["gpu1", "gpu2"], {}, problems)
    one = found["gpu1"].gpus["GPU-gpu1-0"]
    assert (one.index, one.name, one.utilization, one.memory_used) == (0, RTX_NAME, [40, 50], [1000, 2000])
    assert one.memory_total_mib == TOTAL and one.times == [START, START + STEP]
    two = found["gpu2"].gpus["GPU-gpu2-1"]
    assert (two.index, two.utilization, two.memory_used) == (1, [0, 100], [0, 10])
    assert found["gpu1"].process_data is False and found["gpu1"].processes == {}
    assert problems == []


def test_hosts_match_by_name_short_name_or_the_given_name():
    match = dcgm.host_matcher(["gpu1.example.com", "Node-7", "odd"], {"odd": "worker-a"})
    assert match("gpu1.example.com") == "gpu1.example.com"
    assert match("gpu1") == "gpu1.example.com"
    assert match("node-7") == "Node-7"
    assert match("worker-a") == "odd" and match("odd") is None
    assert match("gpu9") is None


def test_two_hosts_with_one_short_name_fail():
    with pytest.raises(AssessDataError, match="hosts gpu1.a, gpu1.b: all have the short name gpu1"):
        dcgm.host_matcher(["gpu1.a", "gpu1.b"], {})


def test_unknown_nodes_and_unnamed_series_are_problems_and_a_host_without_series_is_none():
    unnamed = _labels("gpu1", 0)
    del unnamed["hostname"]
    answer = _merge(_card(_labels("gpu1", 0), [10], [10]), _card(_labels("gpu7", 2), [10], [10]),
                    _card(unnamed, [10], [10]))
    problems = []
    found = dcgm.host_samples(answer, ["gpu1", "gpu2"], {}, problems)
    assert found["gpu2"] is None and list(found["gpu1"].gpus) == ["GPU-gpu1-0"]
    assert problems[0].startswith("Prometheus has GPU series of node gpu7 (GPU 2) that match no host of "
                                  "gpushare_assess_hosts (gpu1, gpu2); not assessed")
    assert "GPU series without a hostname or Hostname label" in problems[1]


def test_mig_instances_make_one_card_busiest_instance_and_summed_memory():
    first = _labels("gpu1", 1, GPU_I_PROFILE="1g.24gb", GPU_I_ID="3")
    second = _labels("gpu1", 1, GPU_I_PROFILE="1g.24gb", GPU_I_ID="4")
    answer = _merge(_card(first, [20, 30], [1000, 1000], total=24064),
                    _card(second, [50, 5], [2000, 3000], total=24064))
    card = dcgm.host_samples(answer, ["gpu1"], {}, [])["gpu1"].gpus["GPU-gpu1-1"]
    assert card.utilization == [50, 30] and card.memory_used == [3000, 4000]
    assert card.memory_total_mib == 2 * 24064


def test_a_gap_is_reported_and_missing_points_are_not_invented():
    values = [50] * 10 + [None] * 40 + [50] * 10
    answer = _merge(_card(_labels("gpu1", 0), values, values))
    problems = []
    found = dcgm.host_samples(answer, ["gpu1"], {}, problems)
    series = found["gpu1"].gpus["GPU-gpu1-0"]
    assert len(series.times) == 20 and series.times[10] - series.times[9] == 41 * STEP
    assert found["gpu1"].problems == ["host gpu1, GPU 0: gap of 0.7 h without samples, 2026-03-08 08:09 to "
                                      "2026-03-08 08:50 (sampler stopped, host down or clock jump)"]


def test_nan_values_and_a_card_without_free_memory():
    answer = _merge(_card(_labels("gpu1", 0), ["NaN", 10], [5, 5]))
    series = dcgm.host_samples(answer, ["gpu1"], {}, [])["gpu1"].gpus["GPU-gpu1-0"]
    assert series.utilization == [10] and series.times == [START + STEP]
    answer["free"] = []
    with pytest.raises(AssessDataError, match=r"host gpu1, GPU 0 \(GPU-gpu1-0\): no DCGM_FI_DEV_FB_FREE series"):
        dcgm.host_samples(answer, ["gpu1"], {}, [])


def test_windows_stay_under_the_point_limit_and_cover_the_range():
    pieces = dcgm.windows(0, 25000 * 60, 60)
    assert pieces[0] == (0, 9999 * 60) and pieces[-1][1] == 25000 * 60
    assert all((last - begin) / 60 + 1 <= dcgm.MAX_POINTS and last - begin >= 60 for begin, last in pieces)
    covered = {t for begin, last in pieces for t in range(begin, last + 1, 60)}
    assert covered == set(range(0, 25000 * 60 + 1, 60))
    assert dcgm.windows(0, 10000 * 60, 60)[-1] == (9999 * 60, 10000 * 60)


class FakeClient:
    """query_range answers from a fixed answer, cut to the asked range as Prometheus does."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def query_range(self, expression, start, end, step):
        self.calls.append((expression, start, end, step))
        figure = next(key for key, query in dcgm.queries().items() if query == expression)
        return [dict(series, values=[v for v in series["values"] if start <= v[0] <= end])
                for series in self.answer[figure]]


def test_read_asks_each_figure_and_joins_the_pieces():
    count = 12000
    util = [i % 100 for i in range(count)]
    client = FakeClient(_merge(_card(_labels("gpu1", 0), util, util)))
    found = dcgm.read(client, ["gpu1"], {}, START, START + (count - 1) * STEP, STEP, [])
    assert found["gpu1"].gpus["GPU-gpu1-0"].utilization == util
    assert len(client.calls) == 4 * 2


def _day(values_by_hour, hours=48):
    """One value per minute for ``hours`` hours from a function of the hour of day."""
    return [values_by_hour((i // 60) % 24) for i in range(hours * 60)]


def test_proposal_without_process_data_says_what_it_cannot_decide():
    heavy_util = _day(lambda h: 75 if 8 <= h < 20 else 5)
    heavy_mem = [80000] * len(heavy_util)
    idle = [0] * len(heavy_util)
    notebooks = _day(lambda h: 3 if 10 <= h < 19 else 0)
    notebook_mem = _day(lambda h: 9216 if 10 <= h < 19 else 0)
    answer = _merge(_card(_labels("gpu1", 0), heavy_util, heavy_mem), _card(_labels("gpu1", 1), idle, idle),
                    _card(_labels("gpu1", 2), notebooks, notebook_mem), _card(_labels("gpu1", 3), idle, idle))
    problems = []
    found = dcgm.host_samples(answer, ["gpu1"], {}, problems)
    today = {"gpu1": [{"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "whole"},
                      {"index": 1, "model": "RTX-PRO-6000", "team": "production", "use": "mig",
                       "mig": {"instances": [{"name": "a", "memory": "10GiB"}, {"name": "b", "memory": "10GiB"}]}},
                      {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "shared", "replicas": 5},
                      {"index": 3, "model": "RTX-PRO-6000", "team": "training"}]}
    result = analysis.assess(found, today, TEAMS, {}, problems=problems, source=SOURCE)
    gpus = {gpu["index"]: gpu for gpu in result["gpus"]}
    assert gpus[0]["proposed"] == {"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "whole"}
    assert gpus[0]["why"].startswith("steady heavy use: the card held 50 % of its memory or more in 100 % of the "
                                     "window")
    assert gpus[1]["proposed"]["use"] == "mig" and [i["name"] for i in gpus[1]["mig_layout"]] == ["a", "b"]
    assert gpus[2]["proposed"] == {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "shared",
                                   "replicas": 5}
    assert gpus[3]["proposed"]["use"] == "whole" and gpus[3]["figures"]["busy_fraction"] == 0.0
    for gpu in gpus.values():
        assert gpu["cannot_decide"] == list(CANNOT_DECIDE) and gpu["figures"]["processes"] == 0
        assert gpu["why"].endswith("nor which teams used it")
    assert result["source"] == SOURCE and result["unassigned"] == []
    # Demand without processes: each card its utilisation or memory held, for its team today.
    capacity = result["capacity"]
    assert capacity["another_gpu_advised"] is False and "counted without per-process data" in capacity["why"]
    assert capacity["demand_gpu_equivalents"] == pytest.approx(80000 / TOTAL + 0.0942, abs=0.01)
    assert result["teams"]["training"]["gpu_hours"] == 0.0
    assert result["teams"]["production"]["gpu_hours"] == pytest.approx(48 * 80000 / TOTAL, abs=0.5)


def test_a_mig_entry_by_profiles_is_kept_with_its_placement():
    answer = _merge(_card(_labels("gpu1", 0), [5] * 10, [1000] * 10))
    found = dcgm.host_samples(answer, ["gpu1"], {}, [])
    today = {"gpu1": [{"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "mig",
                       "mig": {"profiles": {"1g.24gb": 4}}}]}
    [gpu] = analysis.assess(found, today, TEAMS, {}, source=SOURCE)["gpus"]
    assert gpu["proposed"]["mig"] == {"profiles": {"1g.24gb": 4}}
    assert [i["profile"] for i in gpu["mig_layout"]] == ["1g.24gb"] * 4
    assert "keeps its MIG instances of today (1g.24gb, 1g.24gb, 1g.24gb, 1g.24gb)" in gpu["why"]


def test_a_card_with_no_team_today_fails_naming_it():
    answer = _merge(_card(_labels("gpu1", 0), [50] * 10, [10] * 10))
    found = dcgm.host_samples(answer, ["gpu1"], {}, [])
    with pytest.raises(AssessDataError, match="host gpu1, GPU 0: no team today, and the Prometheus source has no "
                                              "process owners"):
        analysis.assess(found, {"gpu1": [{"index": 0, "model": "RTX-PRO-6000"}]}, TEAMS, {}, source=SOURCE)


def test_no_series_for_any_host_fails_and_a_host_without_series_is_listed():
    answer = _merge(_card(_labels("gpu1", 0), [50] * 10, [10] * 10))
    found = dcgm.host_samples(answer, ["gpu1", "gpu2"], {}, [])
    today = {"gpu1": [{"index": 0, "team": "production"}], "gpu2": [{"index": 0, "team": "data"}]}
    result = analysis.assess(found, today, TEAMS, {}, source=SOURCE)
    assert ("host gpu2: no GPU series in Prometheus (DCGM_FI_DEV_GPU_UTIL with hostname or Hostname gpu2); its GPUs "
            "keep their inventory entries") in result["problems"]
    with pytest.raises(AssessDataError, match="no host has samples: nothing to assess \\(no DCGM_FI_DEV_GPU_UTIL "
                                              "series of these hosts at http://prometheus.test\\)"):
        analysis.assess({"gpu2": None}, today, TEAMS, {}, source=SOURCE)
