# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""assessment.html for worlds whose truth the test wrote (tests/support/assess_worlds.py)."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest

from assess_worlds import TEAMS, WORKED_DAY_TODAY, WORKED_DAY_USERS, assess, worked_day
from assess_worlds import overloaded as overloaded_world
from ansible_collections.gpushare.cluster.plugins.module_utils.assess.page import heat_colour, render_page
from ansible_collections.gpushare.cluster.plugins.module_utils.report.plan_report import contrast_ratio

HOSTILE_TEAM = '<i>ops&"qa"</i>'
HOSTILE_USER = "<script>alert(1)</script>"


class _Page(HTMLParser):
    """The rows of the GPU table and the heat-map cells, with their attributes and text."""

    def __init__(self, text):
        super().__init__()
        self.rows = {}
        self.cells = {}
        self.texts = []
        self._gpu = None
        self._cell = None
        self._row = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and "gpu-heat" in attrs.get("class", ""):
            self._gpu = (attrs["data-host"], int(attrs["data-gpu-index"]))
        elif tag == "tr" and "data-gpu-index" in attrs:
            self._row = (attrs["data-host"], int(attrs["data-gpu-index"]))
            self.rows[self._row] = dict(attrs, text="")
        elif tag == "td" and "data-hour" in attrs:
            self._cell = self._gpu + (attrs["data-weekday"], int(attrs["data-hour"]))
            self.cells[self._cell] = dict(attrs, text="")

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "section":
            self._gpu = None

    def handle_data(self, data):
        self.texts.append(data)
        if self._cell:
            self.cells[self._cell]["text"] += data
        if self._row:
            self.rows[self._row]["text"] += data + " "


def _world_page(world, tmp_path, today, users, teams=TEAMS):
    assessment = assess(world, tmp_path, today, users, teams)
    return assessment, render_page(assessment)


@pytest.fixture(scope="module")
def worked(tmp_path_factory):
    """Two days (Monday, Tuesday) of the worked day: the rest of the week has no sample."""
    return _world_page(worked_day(days=2), tmp_path_factory.mktemp("worked"), WORKED_DAY_TODAY, WORKED_DAY_USERS)


@pytest.fixture(scope="module")
def overloaded(tmp_path_factory):
    world, today = overloaded_world(days=2)
    return _world_page(world, tmp_path_factory.mktemp("overloaded"), today, {})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A team and a user whose names are markup: a user of that team, one in no team on a GPU with none."""
    world = worked_day(days=2)
    world.daily("gpu1", 2, "mallory", 5000, 20, 22, 4, 5)
    world.daily("gpu1", 3, HOSTILE_USER, 6000, 8, 10, 2, 5)
    today = {"gpu1": [dict(gpu) for gpu in WORKED_DAY_TODAY["gpu1"]]}
    del today["gpu1"][3]["team"]
    teams = TEAMS + [{"name": HOSTILE_TEAM, "namespaces": ["ops"], "priority": 5}]
    return _world_page(world, tmp_path_factory.mktemp("hostile"), today,
                       dict(WORKED_DAY_USERS, mallory=HOSTILE_TEAM), teams)


def test_the_capacity_answer_comes_first_in_plain_words(worked, overloaded):
    for (assessment, page), advised, headline in ((worked, "false", "No card to add"),
                                                  (overloaded, "true", "Another card: 1 more L40S")):
        capacity = assessment["capacity"]
        assert capacity["another_gpu_advised"] is (advised == "true")
        assert page.count('data-another-gpu-advised="%s"' % advised) == 1
        answer = page.index(headline)
        assert answer < page.index("Today and proposed") < page.index("When the GPUs are busy")
        assert html.escape(capacity["why"]) in page
        assert capacity["busiest_hour"] in page
        assert "%.2f GPU-equivalents of %d GPU(s)" % (capacity["demand_gpu_equivalents"], capacity["gpus"]) in page
    _assessment, page = overloaded
    assert "Teams that would wait" in page and "<dd>training</dd>" in page


def test_every_gpu_has_its_row_today_beside_the_proposal(worked):
    assessment, page = worked
    rows = _Page(page).rows
    assert sorted(rows) == sorted((gpu["host"], gpu["index"]) for gpu in assessment["gpus"]) != []
    for gpu in assessment["gpus"]:
        row = rows[(gpu["host"], gpu["index"])]
        assert row["data-use"] == gpu["proposed"]["use"]
        assert gpu["team_today"] in row["text"] and gpu["proposed"]["team"] in row["text"]
        assert gpu["model"] in row["text"] and gpu["why"] in row["text"]
    assert "time-shared, 5 replicas" in rows[("gpu1", 2)]["text"]
    mig = rows[("gpu1", 1)]["text"]
    assert [instance["profile"] for instance in assessment["gpus"][1]["mig_layout"]] == ["1g.24gb"] * 3
    for instance in assessment["gpus"][1]["mig_layout"]:
        assert "%s %s" % (instance["name"], instance["profile"]) in mig


def test_the_heat_map_shows_each_hours_busy_fraction(worked):
    assessment, page = worked
    cells = _Page(page).cells
    assert len(cells) == len(assessment["gpus"]) * 7 * 24
    # The fine-tune on GPU 3 runs from 13:00 to 05:10: busy Monday 14:00 and Tuesday 03:00, idle Monday 10:00.
    for weekday, hour, busy in (("Mon", 14, 1.0), ("Tue", 3, 1.0), ("Mon", 10, 0.0)):
        cell = cells[("gpu1", 3, weekday, hour)]
        assert float(cell["data-busy"]) == busy and cell["text"] == str(round(busy * 100))
        assert "background:%s" % heat_colour(busy) in cell["style"]
        assert cell["title"].startswith("gpu1 GPU 3, %s %02d:00" % (weekday, hour))
    assert heat_colour(1.0) == "#08306B" and heat_colour(0.0) == "#F1F5FA"
    # Wednesday has no sample: no figure, said so, not shown as idle.
    unseen = cells[("gpu1", 3, "Wed", 14)]
    assert "data-busy" not in unseen and unseen["class"] == "none" and unseen["title"].endswith("no sample")
    figures = {(gpu["host"], gpu["index"]): gpu["figures"] for gpu in assessment["gpus"]}
    for (host, index, weekday, hour), cell in cells.items():
        day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun").index(weekday)
        if "data-busy" in cell:
            assert float(cell["data-busy"]) == figures[(host, index)]["busy_by_weekday_hour"][day][hour]
            background, ink = re.search(r"background:(#\w{6});color:(#\w{6})", cell["style"]).groups()
            assert contrast_ratio(background, ink) >= 4.5, cell
        else:
            assert figures[(host, index)]["sampled_hours_by_weekday_hour"][day][hour] == 0


def test_names_from_the_inventory_and_the_samples_are_escaped(hostile):
    assessment, page = hostile
    assert any(p["user"] == HOSTILE_USER for p in assessment["unassigned"])
    assert HOSTILE_TEAM in assessment["teams"]
    assert HOSTILE_USER not in page and HOSTILE_TEAM not in page
    assert "<script" not in page.lower() and "<i>" not in page
    texts = "".join(_Page(page).texts)
    assert HOSTILE_USER in texts and HOSTILE_TEAM in texts
    assert "Processes in no team" in page and "Problems with the data" in page


def test_the_page_is_self_contained(worked, overloaded, hostile):
    for _assessment, page in (worked, overloaded, hostile):
        assert page.startswith("<!DOCTYPE html>")
        assert not re.search(r"https?:|//[a-z]|\bsrc=|\bhref=|@import|url\(", page, re.IGNORECASE)
        assert not re.search(r"<(script|link|img|iframe|object)\b", page, re.IGNORECASE)
    _assessment, page = worked
    assert "Processes in no team" not in page and "Problems with the data" not in page
