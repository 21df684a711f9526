# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage section's HTML and SVG, from fixed figures."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpushare.cluster.plugins.module_utils.usage.report_html import (
    render_page,
    render_section,
    team_plot,
)

START = 1_800_000_000 - 1_800_000_000 % 86400
STEP = 300


def figures(series=None, **team):
    base = {"gpu_hours_allocated": 10.0, "gpu_hours_busy": None, "efficiency": None, "allocated_peak": 2.0,
            "allocated_p95": 2.0, "nominal_quota": 1.0, "borrowing_hours": 0.0, "lending_hours": 0.0,
            "pending_hours": 3.0, "wait_p95_seconds": 7200.0, "series": series or {}}
    base.update(team)
    return {
        "window": {"start": START, "end": START + 2 * 86400, "step_seconds": STEP, "hours": 48.0, "samples": 577},
        "teams": {"<b>ops</b>": base},
        "gpus": [{"host": "gpu1", "gpu": 1, "mig_profile": "3g.40gb", "allocated_hours": 48.0,
                  "idle_allocated_hours": 1.0, "busy_ratio_when_allocated": 0.25, "memory_used_peak_mib": 5120.0}],
        "cluster": {"gpus": 1, "devices": 1, "busy_share": None},
        "missing": [{"figure": "busy", "series": "gpushare:team_gpus_busy", "source": "DCGM"}],
    }


def test_plot_breaks_the_area_where_the_series_is_absent():
    allocated = [[START + i * STEP, 2.0] for i in range(10)] + [[START + (50 + i) * STEP, 1.0] for i in range(10)]
    svg = team_plot("t", {"series": {"allocated": allocated, "busy": None}}, START, START + 86400, STEP, 1.0)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}polygon")) == 2  # two runs, the gap stays empty
    assert root.findall(f"{ns}polyline") == []
    assert root.find(f"{ns}line") is not None  # the nominal quota


def test_plot_without_data_says_so():
    svg = team_plot("t", {"series": {}}, START, START + 86400, STEP, None)
    assert "no data" in svg
    ET.fromstring(svg)


def test_section_escapes_names_and_marks_missing_figures():
    html = render_section(figures(), [{"kind": "add_gpu", "where": "host_vars/<x>.yml", "variable": "gpushare_gpus",
                                       "current": None, "proposed": {"count": 1}, "reason": "because <reasons>"}])
    assert "<b>ops</b>" not in html and "&lt;b&gt;ops&lt;/b&gt;" in html
    assert "because &lt;reasons&gt;" in html
    assert html.count('class="missing">missing</td>') >= 2  # busy GPU-h and efficiency
    assert "gpushare:team_gpus_busy" in html
    assert re.search(r"<td>2\.0</td>", html)  # p95 wait in hours
    assert "<script" not in html


def test_page_is_complete_and_many_samples_are_thinned():
    points = [[START + i * STEP // 8, float(i % 3)] for i in range(4032)]  # 14 days of 5-minute samples, scaled
    page = render_page(figures(series={"allocated": points, "busy": points}), [])
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "No change proposed." in page
    coordinates = re.findall(r'<polyline points="([^"]*)"', page)[0].split()
    assert 500 < len(coordinates) < 1000
    # Each thinned point keeps its bucket's peak (2 of 0, 1, 2): all at the same height.
    assert len({pair.split(",")[1] for pair in coordinates[:-1]}) == 1
