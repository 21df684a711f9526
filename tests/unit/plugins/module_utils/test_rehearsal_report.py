# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Rehearsal section of the report draws each step's teams from rehearsal.json."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.report import plan_report
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import report as rehearsal_report

from test_rehearsal_world import inventory_plan


def _doc(unmet=()):
    teams = {
        "production": {"admitted": ["vllm"], "pending": [], "preempted": [], "denied": [], "borrowing": 0,
                       "lent": 0, "gpus_in_use": 1, "gpus_pending": 0},
        "data": {"admitted": [], "pending": [], "preempted": [], "denied": [], "borrowing": 0, "lent": 0,
                 "gpus_in_use": 0, "gpus_pending": 0},
        "training": {"admitted": [], "pending": ["fine-tune"], "preempted": [], "denied": ["x<script>"], "borrowing": 0,
                     "lent": 0, "gpus_in_use": 0, "gpus_pending": 2},
    }
    night = {k: dict(v) for k, v in teams.items()}
    night["production"] = dict(night["production"], admitted=[], gpus_in_use=0, lent=1)
    night["training"] = dict(night["training"], admitted=["fine-tune"], pending=[], gpus_in_use=2, borrowing=1, gpus_pending=0)
    return {"backend": "dra", "unmet": list(unmet), "notes": ["a note"], "steps": [
        {"at": "13:00", "teams": teams, "submitted": ["fine-tune"], "deleted": [], "unmet": list(unmet),
         "allocations": [{"workload": "vllm", "pod": "vllm-abc", "node": "gpu1", "device": "gpu-0", "model": "RTX-PRO-6000",
                          "profile": None, "gpu_index": 0}]},
        {"at": "19:00", "teams": night, "submitted": [], "deleted": ["vllm"], "unmet": [], "allocations": []},
    ]}


def test_each_step_draws_in_use_borrowed_lent_and_pending_per_team():
    html = rehearsal_report.render_section(inventory_plan("example", "dra"), _doc())
    groups = re.findall(r'<g data-step="([^"]+)" data-team="([^"]+)" data-in-use="(\d+)" data-borrowed="(\d+)" '
                        r'data-lent="(\d+)" data-pending="(\d+)">', html)
    assert ("13:00", "training", "0", "0", "0", "2") in groups
    assert ("19:00", "training", "2", "1", "0", "0") in groups
    assert ("19:00", "production", "0", "0", "1", "0") in groups
    assert html.count('class="unit in-use borrowed"') == 1
    assert html.count('class="unit pending"') == 2
    assert "gpu-0" in html and "a note" in html
    assert "x&lt;script&gt;" in html and "<script>" not in html
    assert 'data-unmet="0"' in html


def test_unmet_expectations_are_listed_at_their_step():
    unmet = [{"step": "13:00", "team": "training", "workload": "fine-tune", "what": "expected pending, was admitted"}]
    html = rehearsal_report.render_section(inventory_plan("example", "dra"), _doc(unmet))
    assert 'data-unmet="1"' in html and "training / fine-tune: expected pending, was admitted" in html


def test_the_page_is_the_plan_report_with_the_section_at_the_end():
    plan = inventory_plan("example", "dra")
    page = rehearsal_report.render_page(plan, _doc())
    base = plan_report.render_html(plan)
    assert page.startswith(base[: base.index("</body>")])
    assert page.index('id="rehearsal"') > page.index("Who enforces what")
    HTMLParser().feed(page)


def test_a_document_without_steps_is_an_error():
    with pytest.raises(ValueError, match="steps"):
        rehearsal_report.render_section(inventory_plan("example", "dra"), {"unmet": []})


def test_what_to_know_before_the_day_comes_before_the_first_step_and_deletions_at_their_step():
    doc = _doc()
    doc["before_the_day"] = ["team training has no group: <fix it>"]
    doc["steps"][1]["not_running"] = {"chat": "refused by the API server at 13:00"}
    html = rehearsal_report.render_section(inventory_plan("example", "dra"), doc)
    before = html.index('class="before-the-day"')
    assert before < html.index('data-step="13:00"')
    assert "team training has no group: &lt;fix it&gt;" in html[before:]
    night = html[html.index('<section class="rehearsal-step" data-step="19:00"'):]
    assert "deleted chat: refused by the API server at 13:00" in night
    assert 'class="before-the-day"' not in rehearsal_report.render_section(inventory_plan("example", "dra"), _doc())
