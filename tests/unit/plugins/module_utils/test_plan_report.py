# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the plan report: what the HTML draws and what the text summary lists."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.report import plan_report

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "plan_report" / "example_plan.yml"


@pytest.fixture()
def plan():
    return yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))


class _Elements(HTMLParser):
    """Collects every start tag with its attributes."""

    def __init__(self):
        super().__init__()
        self.elements = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def _parse(document):
    parser = _Elements()
    parser.feed(document)
    return parser.elements


def test_draws_one_bar_per_gpu_and_each_mig_instance_at_its_placement(plan):
    elements = _parse(plan_report.render_html(plan))
    gpus = [attrs for tag, attrs in elements if tag == "g" and attrs.get("class") == "gpu"]
    assert [(g["data-host"], g["data-gpu-index"], g["data-use"], g["data-team"]) for g in gpus] == [
        ("gpu1", "0", "whole", "production"),
        ("gpu1", "1", "mig", "production"),
        ("gpu1", "2", "shared", "data"),
        ("gpu1", "3", "whole", "training"),
    ]
    assert gpus[2]["data-replicas"] == "5"
    instances = [attrs for tag, attrs in elements if tag == "g" and attrs.get("class") == "mig-instance"]
    assert [(i["data-profile"], i["data-start"], i["data-size"], i["data-name"]) for i in instances] == [
        ("1g.24gb", "0", "3", "embeddings"),
        ("1g.24gb", "3", "3", "classifier"),
        ("1g.24gb", "6", "3", "speech-to-text"),
        ("1g.24gb", "9", "3", ""),
    ]


def test_mig_instances_are_drawn_in_proportion_to_the_placement_grid(plan):
    document = plan_report.render_html(plan)
    # RTX PRO 6000 has a 12-unit placement grid: size 3 is a quarter of the bar.
    widths = [float(w) for w in re.findall(r'data-size="3" data-name="[^"]*"><title>[^<]*</title><rect x="[\d.]+" y="\d+" width="([\d.]+)"', document)]
    assert len(widths) == 4
    for width in widths:
        assert width == pytest.approx(plan_report._BAR_WIDTH / 4 - 2)
    xs = [float(x) for x in re.findall(r'data-name="[^"]*"><title>[^<]*</title><rect x="([\d.]+)"', document)]
    assert xs == pytest.approx([plan_report._BAR_X + plan_report._BAR_WIDTH * q / 4 + 1 for q in range(4)])


def test_shared_gpu_shows_replica_dividers(plan):
    document = plan_report.render_html(plan)
    assert document.count('class="replica-divider"') == 4
    assert "time-sliced ×5" in document


def test_report_is_self_contained_and_printable(plan):
    document = plan_report.render_html(plan)
    assert "@media print" in document
    assert not re.search(r'(src|href)="(https?:)?//', document)
    assert "<script" not in document.replace("&lt;script&gt;", "")
    assert "url(http" not in document


def test_text_from_the_plan_is_escaped(plan):
    document = plan_report.render_html(plan)
    assert "<script>alert(1)</script>" not in document
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in document


def test_legend_and_team_table_list_every_team_with_its_colour(plan):
    elements = _parse(plan_report.render_html(plan))
    legend = [attrs["data-team"] for tag, attrs in elements if tag == "li" and "data-team" in attrs]
    rows = [attrs["data-team"] for tag, attrs in elements if tag == "tr" and "data-team" in attrs]
    assert legend == rows == ["production", "data", "training"]
    colours = plan_report.team_colours(legend)
    assert len(set(colours.values())) == 3


def test_many_teams_get_distinct_colours():
    teams = ["team-%d" % n for n in range(40)]
    colours = plan_report.team_colours(teams)
    assert len(set(colours.values())) == 40
    assert all(re.fullmatch(r"#[0-9A-F]{6}", colour) for colour in colours.values())


def test_dra_shared_gpus_explain_who_enforces_what(plan):
    document = plan_report.render_html(plan)
    assert "Time-sliced GPUs rest on people" in document
    assert "standalone ResourceClaim" in document
    no_shared = copy.deepcopy(plan)
    no_shared["nodes"]["gpu1"]["gpus"] = [g for g in no_shared["nodes"]["gpu1"]["gpus"] if g["use"] != "shared"]
    assert "rest on people" not in plan_report.render_html(no_shared)


def test_summary_lists_each_gpu_team_and_warning(plan):
    text = plan_report.summary_table(plan)
    lines = text.splitlines()
    assert lines[0] == "Plan: Kubernetes 1.35 (microk8s), backend dra, 4 GPUs on 1 node, 3 teams"
    gpu_lines = [line for line in lines if line.startswith("gpu1 ")]
    assert len(gpu_lines) == 4
    assert "1g.24gb@0(embeddings)" in gpu_lines[1]
    assert "5 replicas" in gpu_lines[2]
    team_lines = [line.split()[0] for line in lines if re.match(r"^(production|data|training) ", line)]
    assert team_lines == ["production", "data", "training"]
    assert lines[-1].startswith("- gpu1 GPU 1: free slices")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p: p["nodes"]["gpu1"]["gpus"][2].pop("replicas"), "host gpu1 GPU 2: field 'replicas' is missing"),
        (lambda p: p["nodes"]["gpu1"]["gpus"][0].update(use="half"), "host gpu1 GPU 0: field 'use' must be whole, mig or shared"),
        (lambda p: p["nodes"]["gpu1"]["gpus"][1]["instances"][0].update(start="0"),
         "host gpu1 GPU 1 MIG instance 0: field 'start' must be a int"),
        (lambda p: p["nodes"]["gpu1"]["gpus"][1]["instances"][3].update(start=10),
         "host gpu1 GPU 1: field 'instances' places a MIG instance beyond the GPU's 12 placement units"),
        (lambda p: p.pop("nodes"), "plan: field 'nodes' is missing"),
    ],
)
def test_malformed_plans_name_host_gpu_and_field(plan, mutate, message):
    mutate(plan)
    with pytest.raises(ValueError, match=re.escape(message)):
        plan_report.render_html(plan)
    with pytest.raises(ValueError, match=re.escape(message)):
        plan_report.summary_table(plan)


def test_summary_for_a_terminal_caps_rows_and_says_how_many_are_left_out(plan):
    plan["warnings"] = ["warning %d" % n for n in range(5)]
    text = plan_report.summary_table(plan, max_rows=2)
    assert len([line for line in text.splitlines() if line.startswith("gpu1 ")]) == 2
    assert "... and 2 more GPUs (summary.txt and index.html list them all)" in text
    assert "- warning 1" in text and "- warning 2" not in text
    assert "... and 3 more warnings" in text
    assert "more" not in plan_report.summary_table(plan)


def _planned(backend):
    import yaml as _yaml

    from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

    data = _yaml.safe_load((Path(__file__).resolve().parents[3] / "fixtures" / "inventories" / "four_gpu_example.yml").read_text())
    return build_plan(data["gpushare_teams"], data["nodes"], backend=backend)


def _stories(document):
    return dict(re.findall(r'<li data-team-story="([^"]+)">(.*?)</li>', document))


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_report_says_team_by_team_what_each_gets_lends_and_gets_back(backend):
    stories = _stories(plan_report.render_html(_planned(backend)))
    assert list(stories) == ["production", "data", "training"]
    for team, text in stories.items():
        # Every team takes back what it lent, from any borrower (Kueue reclaimWithinCohort: Any).
        assert "gets it back at once, by preemption of any borrower whatever its priority" in text, team
    assert "higher-priority teams (none)" in stories["production"]
    assert "lower-priority teams (data, training)" in stories["production"]
    assert "higher-priority teams (production, data)" in stories["training"]
    if backend == "dra":
        assert "gpu1 GPU 2" in stories["data"] and "keeps it until it ends" in stories["data"]
    else:
        assert "counted in slots, lent as slots" in stories["data"]


@pytest.mark.parametrize("backend", ["dra", "device_plugin"])
def test_report_says_what_happens_on_the_worked_day_instead(backend):
    document = plan_report.render_html(_planned(backend))
    if backend == "dra":
        assert "waits for the device in the scheduler, not in the queue" in document
        assert "carry no queue label" in document and "nothing caps it" in document
        assert "outside every quota" not in document
    else:
        assert "at 19:00 it keeps waiting" in document


# --- read by people: quotas in the inventory's terms, limits, shares, stamp -------------


def _team_line(text, team):
    return next(line for line in text.splitlines() if line.startswith(team + " "))


def test_quotas_read_as_model_profile_and_count_not_resource_names(plan):
    text = plan_report.summary_table(plan)
    assert "1 × whole RTX-PRO-6000, 4 × MIG 1g.24gb on RTX-PRO-6000" in _team_line(text, "production")
    assert "5 × time-shared RTX-PRO-6000" in _team_line(text, "data")
    document = plan_report.render_html(plan)
    assert "1 × whole RTX-PRO-6000, 4 × MIG 1g.24gb on RTX-PRO-6000" in document
    # The resource names stay at hand, in the cell's title.
    assert 'title="mig-1g.24gb: 4, whole-gpu: 1"' in document


def test_each_team_says_which_group_its_members_log_in_with(plan):
    plan["teams"]["data"]["access"] = {"kubernetes_group": "idp:data-science", "identity_provider_group": "data-science"}
    plan["teams"]["training"]["access"] = {"kubernetes_group": "ml-training", "identity_provider_group": None}
    text = plan_report.summary_table(plan)
    assert "idp:data-science (provider group data-science)" in _team_line(text, "data")
    assert " ml-training " in _team_line(text, "training")
    document = plan_report.render_html(plan)
    assert "<th>Login group</th>" in document
    assert "<td>idp:data-science (provider group data-science)</td>" in document


def test_no_limit_and_none_are_told_apart(plan):
    plan["teams"]["data"]["lending_limit"] = {"shared-gpu": 0}
    text = plan_report.summary_table(plan)
    header = next(line for line in text.splitlines() if line.startswith("team "))
    assert header.split() == ["team", "priority", "login", "group", "share", "nominal", "quota", "borrows", "lends",
                              "reclaim"]
    assert "none of time-shared RTX-PRO-6000; no limit on the rest" in _team_line(text, "data")
    assert "at most 1 × whole RTX-PRO-6000; no limit on the rest" in _team_line(text, "training")
    production = _team_line(text, "production")
    assert production.count("no limit") == 2 and "none" not in production
    document = plan_report.render_html(plan)
    assert "<th>Borrows</th><th>Lends</th>" in document
    assert "none of time-shared RTX-PRO-6000" in document


def test_each_team_has_its_share_of_the_cluster(plan):
    text = plan_report.summary_table(plan)
    assert "2 of 4 GPUs (50%)" in _team_line(text, "production")
    assert "1 of 4 GPUs (25%)" in _team_line(text, "data")
    shares = dict(re.findall(r'<tr data-team="([^"]+)">.*?<td data-share="(\d+)">', plan_report.render_html(plan)))
    assert shares == {"production": "2", "data": "1", "training": "1"}


def test_stamp_names_inventory_date_and_version(plan):
    stamp = {"inventory": "inventories/example", "date": "2026-12-03 12:00 UTC", "version": "0.1.0"}
    text = plan_report.summary_table(plan, stamp=stamp)
    assert text.splitlines()[1] == "Inventory inventories/example · planned 2026-12-03 12:00 UTC · gpushare.cluster 0.1.0"
    elements = _parse(plan_report.render_html(plan, stamp=stamp))
    stamps = [attrs for tag, attrs in elements if tag == "p" and attrs.get("class") == "stamp"]
    assert [(s["data-stamp-inventory"], s["data-stamp-date"], s["data-stamp-version"]) for s in stamps] == [
        ("inventories/example", "2026-12-03 12:00 UTC", "0.1.0")]
    assert 'class="stamp"' not in plan_report.render_html(plan)


def test_warnings_printed_already_are_counted_not_repeated(plan):
    plan["warnings"] = ["first warning", "second warning"]
    text = plan_report.summary_table(plan, warnings_shown=2)
    assert "first warning" not in text and text.rstrip().endswith("Warnings: 2, printed above")
    text = plan_report.summary_table(plan, warnings_shown=1)
    assert "Warnings: 2, printed above (the first 1; summary.txt and index.html list them all)" in text
    assert "- second warning" in plan_report.summary_table(plan)


def test_bar_text_is_black_or_white_whichever_reads_on_every_team_colour():
    for colour in list(plan_report.team_colours(["t%d" % n for n in range(24)]).values()) + ["#B0B0B0"]:
        assert plan_report.contrast_ratio(colour, plan_report.text_colour(colour)) >= 4.5, colour


def test_labels_are_cut_to_the_width_of_their_box():
    assert plan_report._fit("speech-to-text", 200, 11, bold=True) == "speech-to-text"
    cut = plan_report._fit("speech-to-text", 60, 11, bold=True)
    assert cut.endswith("…") and plan_report.text_width(cut, 11, bold=True) <= 60


def _h100_plan(mig):
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

    teams = [{"name": "serving", "namespaces": ["serving"], "priority": 100}]
    return build_plan(teams, {"gpu1": [{"index": 0, "model": "H100-80GB", "team": "serving", "use": "mig", "mig": mig}]})


def test_stranded_compute_is_drawn_under_the_mig_bar():
    plan = _h100_plan({"instances": [{"name": "a", "memory": "10GiB"}, {"name": "b", "memory": "10GiB"}]})
    document = plan_report.render_html(plan)
    usage = [attrs for tag, attrs in _parse(document) if tag == "g" and attrs.get("class") == "mig-usage"]
    assert [(u["data-compute-used"], u["data-compute-total"], u["data-stranded-compute"], u["data-memory-used"])
            for u in usage] == [("5", "7", "2", "8")]
    assert document.count('class="compute-cell idle"') == 2 and document.count('class="compute-cell used"') == 5
    assert "2 idle: every memory slice is taken" in document
    assert any("2 of 7 compute slices stay idle" in w for w in plan["warnings"])


def test_memory_no_instance_can_use_is_drawn_as_unusable():
    plan = _h100_plan({"instances": [{"name": "big", "memory": "10GB", "compute": 4},
                                     {"name": "mid", "memory": "10GB", "compute": 2}, {"name": "s", "memory": "5GB"}]})
    document = plan_report.render_html(plan)
    assert 'class="bar mig-free stranded"' in document
    assert 'data-stranded-memory="1"' in document and "1 memory slice unusable" in document
    balanced = plan_report.render_html(_h100_plan({"instances": [{"name": "a", "memory": "10GB"}]}))
    assert 'mig-free stranded' not in balanced and 'data-stranded-memory="0"' in balanced
