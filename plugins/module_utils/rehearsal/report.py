# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Rehearsal section of the plan report: what happened at each step of the day.

``render_section(plan, rehearsal)`` turns a rehearsal.json document (docs/rehearsal.md) into
an HTML fragment: per step, one bar per team of its GPUs in use (borrowed ones hatched), the
quota it lends, and what it waits for, in the plan report's team colours; a table of the
teams' workloads; which device each claim got; every expectation that did not hold. The SVG
carries ``data-*`` attributes (step, team, in-use, borrowed, lent, pending) for tests and
scripts. ``render_page`` is the whole report with this section appended.

Pure Python, no I/O, no Ansible import.
"""

from __future__ import annotations

import html
from typing import Any, Dict, List, Mapping

from ansible_collections.gpushare.cluster.plugins.module_utils.report import plan_report

_LABEL_W = 130
_UNIT_W = 26
_ROW_H = 26
_CSS = ("<style>.unmet { color: #a1001a; } tr.unmet td { background: #fde8ea; } "
        ".verdict.failed { color: #a1001a; font-weight: 600; } .verdict.passed { color: #006b3c; font-weight: 600; } "
        "svg.rehearsal { margin: 6px 0; display: block; }</style>")


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _team_bars(step: Mapping[str, Any], colours: Mapping[str, str]) -> str:
    teams = step.get("teams") or {}
    widest = max([t.get("gpus_in_use", 0) + t.get("lent", 0) + t.get("gpus_pending", 0) for t in teams.values()] or [1])
    width = _LABEL_W + _UNIT_W * max(widest, 4) + 20
    rows = []
    for row, (team, info) in enumerate(teams.items()):
        y = row * _ROW_H
        colour = colours.get(team, "#999999")
        in_use, borrowed = int(info.get("gpus_in_use", 0)), int(info.get("borrowing", 0))
        lent, pending = int(info.get("lent", 0)), int(info.get("gpus_pending", 0))
        parts = ['<text class="gpu-label" x="0" y="%d">%s</text>' % (y + 17, _esc(team))]
        x = _LABEL_W
        for unit in range(in_use):
            hatched = unit >= in_use - borrowed
            parts.append('<rect class="unit in-use%s" x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                         % (" borrowed" if hatched else "", x, y + 3, _UNIT_W - 3, _ROW_H - 6, colour))
            if hatched:
                parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="url(#hatch)"/>'
                             % (x, y + 3, _UNIT_W - 3, _ROW_H - 6))
            x += _UNIT_W
        for _unit in range(lent):
            parts.append('<rect class="unit lent" x="%d" y="%d" width="%d" height="%d" fill="%s" fill-opacity="0.25" '
                         'stroke="%s" stroke-dasharray="3 2"/>' % (x, y + 3, _UNIT_W - 3, _ROW_H - 6, colour, colour))
            x += _UNIT_W
        for _unit in range(pending):
            parts.append('<rect class="unit pending" x="%d" y="%d" width="%d" height="%d" fill="none" '
                         'stroke="#5b6470" stroke-dasharray="2 2"/>' % (x, y + 3, _UNIT_W - 3, _ROW_H - 6))
            x += _UNIT_W
        rows.append('<g data-step="%s" data-team="%s" data-in-use="%d" data-borrowed="%d" data-lent="%d" '
                    'data-pending="%d">%s</g>' % (_esc(step.get("at")), _esc(team), in_use, borrowed, lent, pending,
                                                  "".join(parts)))
    return ('<svg class="gpus rehearsal" viewBox="0 0 %d %d" width="%d" height="%d" role="img" '
            'aria-label="GPUs per team at %s">%s</svg>' % (width, len(teams) * _ROW_H, width, len(teams) * _ROW_H,
                                                           _esc(step.get("at")), "".join(rows)))


def _names(values: List[str]) -> str:
    return ", ".join(_esc(v) for v in values) or '<span class="muted">-</span>'


def _step_section(step: Mapping[str, Any], colours: Mapping[str, str]) -> str:
    teams = step.get("teams") or {}
    changes = []
    if step.get("submitted"):
        changes.append("submitted " + _names(step["submitted"]))
    if step.get("deleted"):
        changes.append("deleted " + _names(step["deleted"]))
    rows = "".join(
        "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td></tr>"
        % (_esc(team), _names(t.get("admitted") or []), _names(t.get("pending") or []), _names(t.get("preempted") or []),
           _names(t.get("denied") or []), t.get("gpus_in_use", 0), t.get("borrowing", 0), t.get("lent", 0))
        for team, t in teams.items())
    allocations = step.get("allocations") or []
    alloc_rows = "".join(
        "<tr%s><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>"
        % (' class="unmet"' if a.get("mismatch") else "", _esc(a.get("workload")), _esc(a.get("pod")), _esc(a.get("node")),
           _esc(a.get("device")), _esc(a.get("model")), _esc(a.get("profile") or "whole"),
           _esc(a.get("gpu_index")))
        for a in allocations)
    not_running = step.get("not_running") or {}
    deleted_html = ('<ul class="not-running">%s</ul>' % "".join(
        "<li>deleted %s: %s</li>" % (_esc(name), _esc(why)) for name, why in sorted(not_running.items()))
        if not_running else "")
    unmet = step.get("unmet") or []
    unmet_html = ('<ul class="unmet">%s</ul>' % "".join(
        "<li>%s%s: %s</li>" % (_esc(u.get("team")), " / " + _esc(u["workload"]) if u.get("workload") else "", _esc(u.get("what")))
        for u in unmet)) if unmet else '<p class="met">Every expectation of this step held.</p>'
    return (
        '<section class="rehearsal-step" data-step="%s"><h3>%s <span class="muted">%s</span></h3>%s'
        "<table><tr><th>team</th><th>admitted</th><th>pending</th><th>preempted</th><th>denied</th>"
        "<th>GPUs in use</th><th>borrowed</th><th>lent</th></tr>%s</table>%s%s%s</section>"
        % (_esc(step.get("at")), _esc(step.get("at")), "; ".join(changes), _team_bars(step, colours), rows,
           deleted_html,
           ("<table class=\"allocations\"><tr><th>workload</th><th>pod</th><th>node</th><th>device</th><th>model</th>"
            "<th>profile</th><th>GPU</th></tr>%s</table>" % alloc_rows) if allocations else "",
           unmet_html))


def render_section(plan: Mapping[str, Any], rehearsal: Mapping[str, Any]) -> str:
    """The Rehearsal section (an HTML fragment) for a rehearsal.json document."""
    if not isinstance(rehearsal, Mapping) or not isinstance(rehearsal.get("steps"), list):
        raise ValueError("rehearsal: field 'steps' must be a list")
    teams = list((plan.get("teams") or {}).keys())
    colours = plan_report.team_colours(teams)
    unmet = rehearsal.get("unmet") or []
    verdict = ('<p class="verdict %s" data-unmet="%d">%s</p>'
               % ("passed" if not unmet else "failed", len(unmet),
                  "The day went as the plan promises." if not unmet else
                  "%d expectation(s) did not hold; they are listed at their step." % len(unmet)))
    before = rehearsal.get("before_the_day") or []
    before_html = ('<div class="before-the-day"><p>Before the day:</p><ul class="warnings">%s</ul></div>' % "".join(
        "<li>%s</li>" % _esc(line) for line in before)) if before else ""
    notes = rehearsal.get("notes") or []
    notes_html = ("<ul class=\"warnings\">%s</ul>" % "".join("<li>%s</li>" % _esc(n) for n in notes)) if notes else ""
    legend = ('<ul class="legend"><li><span class="swatch" style="background:#777"></span>in use</li>'
              '<li><span class="swatch hatched"></span>borrowed from another team\'s quota</li>'
              '<li><span class="swatch" style="background:#7773;border:1px dashed #777"></span>lent (idle quota a borrower uses)</li>'
              '<li><span class="swatch" style="background:none;border:1px dashed #5b6470"></span>asked for, pending</li></ul>')
    real = ("<p class=\"muted\">Real: API server, etcd, scheduler, controller manager, Kueue, admission policies and RBAC. "
            "Simulated: kubelet and containers (kwok), and what the GPU stack publishes (backend %s). "
            "Units are quota units: whole GPUs, MIG instances, or shared GPUs held.</p>" % _esc(rehearsal.get("backend")))
    return ('%s<h2 id="rehearsal">Rehearsal</h2>%s%s%s%s%s%s'
            % (_CSS, verdict, before_html, real, notes_html, legend, "".join(_step_section(s, colours) for s in rehearsal["steps"])))


def render_page(plan: Dict[str, Any], rehearsal: Mapping[str, Any], title: str = "GPU sharing plan") -> str:
    """The plan report with the Rehearsal section appended."""
    return plan_report.render_html(plan, title=title, appendix=render_section(plan, rehearsal))
