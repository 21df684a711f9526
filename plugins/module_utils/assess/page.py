# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""assessment.html: the assessment as a manager reads it, on one self-contained page.

``render_page(assessment)`` takes what assessment.json holds (``analysis.assess``) and returns
one HTML document with inline CSS, no script and no external reference, so it opens from a
file, offline, and prints. First the capacity answer in words, then each GPU today beside its
proposed use and why, the teams, then per GPU a heat map of the busy fraction by weekday and
hour, and the processes in no team and the data problems when there are any. Every figure
comes from the assessment: this module lays them out, it computes none. Cells, rows and the
answer carry ``data-*`` attributes so tests and scripts can check what is shown.

Pure Python, no I/O, no Ansible import.
"""

from __future__ import annotations

import html
from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.gpushare.cluster.plugins.module_utils.assess.figures import UNASSIGNED, WEEKDAYS
from ansible_collections.gpushare.cluster.plugins.module_utils.report.plan_report import (
    PAGE_CSS, team_colours, text_colour)

# Idle to busy, light to dark: readable in grey print and for the common colour-vision deficiencies.
_IDLE = (0xF1, 0xF5, 0xFA)
_BUSY = (0x08, 0x30, 0x6B)
_LEGEND_STEPS = (0.0, 0.25, 0.5, 0.75, 1.0)
# A long overloaded window lists its first hours over and counts the rest.
_HOURS_LISTED = 12

_CSS = PAGE_CSS + """
.answer { font-size: 17px; font-weight: 600; margin: 8px 0 4px; padding: 8px 12px; border-left: 6px solid; }
.answer.enough { border-color: #009E73; background: #e8f6f1; } .answer.advised { border-color: #D55E00;
  background: #fcefe6; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 8px 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
table.heat { width: auto; font-size: 10px; table-layout: fixed; }
table.heat th, table.heat td { width: 30px; height: 20px; padding: 0; text-align: center; vertical-align: middle; }
table.heat td.none { background: repeating-linear-gradient(45deg, #d6dae0 0 1px, #fff 1px 5px); }
table.heat th[scope=row] { width: 40px; }
.gpu-heat { break-inside: avoid; page-break-inside: avoid; }
.why { color: var(--muted); }
table.gpus td:nth-child(-n+3), td [data-team] { white-space: nowrap; }
"""


def _text(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _percent(fraction: float) -> str:
    return "%d %%" % round(fraction * 100)


def heat_colour(fraction: float) -> str:
    """The cell colour of a busy fraction (0 to 1), from near white to dark blue."""
    share = min(max(float(fraction), 0.0), 1.0)
    return "#" + "".join("%02X" % round(idle + (busy - idle) * share) for idle, busy in zip(_IDLE, _BUSY))


def _team(team: Any, colours: Mapping[str, str]) -> str:
    if not team:
        return '<span class="muted">none</span>'
    colour = colours.get(str(team), "#B0B0B0")
    return '<span data-team="%s"><span class="swatch" style="background:%s"></span>%s</span>' % (
        _text(team), colour, _text(team))


def _answer(capacity: Mapping[str, Any]) -> str:
    advised = bool(capacity.get("another_gpu_advised"))
    if advised:
        headline = "Another card: %d more %s would hold the busiest hour." % (
            capacity.get("cards_to_add") or 1, capacity.get("model") or "GPU(s) of the same model")
    else:
        headline = "No card to add: the GPUs you have are enough once they are shared."
    facts = [("Busiest hour", capacity.get("busiest_hour") or "none (no process was seen)"),
             ("Demand then", "%.2f GPU-equivalents of %d GPU(s)"
              % (capacity.get("demand_gpu_equivalents") or 0.0, capacity.get("gpus") or 0))]
    if not advised:
        facts.append(("Spare then", "%.2f GPU-equivalents" % (capacity.get("spare_gpu_equivalents") or 0.0)))
    hours = capacity.get("hours_over") or []
    if hours:
        listed = ", ".join(hours[:_HOURS_LISTED])
        facts.append(("Hours over", "%d: %s%s" % (len(hours), listed, " and %d more" % (len(hours) - _HOURS_LISTED)
                                                  if len(hours) > _HOURS_LISTED else "")))
    if capacity.get("teams_waiting"):
        facts.append(("Teams that would wait", ", ".join(capacity["teams_waiting"])))
    return ('<p class="answer %s" data-another-gpu-advised="%s">%s</p><p>%s</p><dl class="facts">%s</dl>'
            % ("advised" if advised else "enough", "true" if advised else "false", _text(headline),
               _text(capacity.get("why")), "".join("<dt>%s</dt><dd>%s</dd>" % (_text(name), _text(value))
                                                   for name, value in facts)))


def _proposed(gpu: Mapping[str, Any], colours: Mapping[str, str]) -> str:
    proposed = gpu["proposed"]
    use = proposed["use"]
    if use == "mig":
        detail = ": " + ", ".join("%s %s" % (inst["name"], inst["profile"]) for inst in gpu.get("mig_layout") or [])
        if not gpu.get("mig_layout"):
            detail = ": " + ", ".join("%s %s" % (inst["name"], inst["memory"])
                                      for inst in proposed.get("mig", {}).get("instances") or [])
        what = "MIG" + detail
    elif use == "shared":
        what = "time-shared, %d replicas" % proposed["replicas"]
    else:
        what = "whole"
    return "%s<br>%s" % (_team(proposed["team"], colours), _text(what))


def _used_by(gpu: Mapping[str, Any], colours: Mapping[str, str]) -> str:
    teams = gpu.get("teams") or {}
    if not teams:
        return '<span class="muted">nobody</span>'
    return "<br>".join("%s %.1f h" % (_team(team, colours), hours)
                       for team, hours in sorted(teams.items(), key=lambda item: (-item[1], item[0])))


def _gpu_table(gpus: Sequence[Mapping[str, Any]], colours: Mapping[str, str]) -> str:
    rows = []
    for gpu in gpus:
        rows.append(
            '<tr data-host="%s" data-gpu-index="%d" data-use="%s"><td>%s</td><td>%d</td><td>%s</td><td>%s</td>'
            '<td>%s</td><td>%s</td><td>%s</td><td class="why">%s</td></tr>'
            % (_text(gpu["host"]), gpu["index"], _text(gpu["proposed"]["use"]), _text(gpu["host"]), gpu["index"],
               _text(gpu["model"]), _team(gpu.get("team_today"), colours), _used_by(gpu, colours),
               _percent(gpu["figures"]["busy_fraction"]), _proposed(gpu, colours), _text(gpu["why"])))
    return ("<table class=\"gpus\"><thead><tr><th>Host</th><th>GPU</th><th>Model</th><th>Team today</th>"
            "<th>Used by (GPU-hours)</th><th>Busy</th><th>Proposed</th><th>Why</th></tr></thead><tbody>%s</tbody>"
            "</table>" % "".join(rows))


def _team_table(teams: Mapping[str, Mapping[str, Any]], colours: Mapping[str, str]) -> str:
    rows = "".join(
        '<tr data-team="%s"><td>%s</td><td>%d</td><td>%d</td><td>%.1f</td><td>%.2f</td><td>%s</td></tr>'
        % (_text(team), _team(team, colours), figures["gpus_today"], figures["gpus_proposed"], figures["gpu_hours"],
           figures["peak_hourly_demand_gpu_equivalents"], _text(figures.get("suggestion")))
        for team, figures in teams.items())
    return ("<table class=\"teams\"><thead><tr><th>Team</th><th>GPUs today</th><th>GPUs proposed</th>"
            "<th>GPU-hours</th><th>Busiest hour (GPU-equivalents)</th><th>Quota and borrowing</th></tr></thead>"
            "<tbody>%s</tbody></table>" % rows)


def _heat_map(gpu: Mapping[str, Any]) -> str:
    figures = gpu["figures"]
    busy = figures["busy_by_weekday_hour"]
    seen = figures.get("sampled_hours_by_weekday_hour")
    where = "%s GPU %d" % (gpu["host"], gpu["index"])
    head = "".join('<th scope="col">%d</th>' % hour for hour in range(24))
    rows = []
    for day, name in enumerate(WEEKDAYS):
        cells = []
        for hour in range(24):
            hours = seen[day][hour] if seen else None
            label = "%s, %s %02d:00-%02d:00" % (where, name, hour, (hour + 1) % 24)
            if hours == 0:
                cells.append('<td class="none" data-weekday="%s" data-hour="%d" title="%s: no sample"></td>'
                             % (name, hour, _text(label)))
                continue
            value = busy[day][hour]
            colour = heat_colour(value)
            cells.append('<td data-weekday="%s" data-hour="%d" data-busy="%s" style="background:%s;color:%s" '
                         'title="%s: busy %s%s">%d</td>'
                         % (name, hour, value, colour, text_colour(colour), _text(label), _percent(value),
                            " over %d hour(s) sampled" % hours if hours else "", round(value * 100)))
        rows.append('<tr><th scope="row">%s</th>%s</tr>' % (name, "".join(cells)))
    return ('<section class="gpu-heat" data-host="%s" data-gpu-index="%d"><h3>%s <span class="muted">%s · busy %s '
            'of the time · proposed %s for %s</span></h3><table class="heat" aria-label="busy %% by weekday and hour, '
            '%s"><thead><tr><th></th>%s</tr></thead><tbody>%s</tbody></table></section>'
            % (_text(gpu["host"]), gpu["index"], _text(where), _text(gpu["model"]),
               _percent(figures["busy_fraction"]), _text(gpu["proposed"]["use"]), _text(gpu["proposed"]["team"]),
               _text(where), head, "".join(rows)))


def _legend(busy_utilization: Any) -> str:
    steps = "".join('<li><span class="swatch" style="background:%s"></span>%s</li>'
                    % (heat_colour(step), _percent(step)) for step in _LEGEND_STEPS)
    return ('<p>Each cell: the share of the samples of that weekday and hour (the host\'s clock) in which the GPU '
            'was busy (utilisation %s %% or more), in per cent; hover a cell for the hours it averages.</p>'
            '<ul class="legend">%s<li><span class="swatch" style="background:repeating-linear-gradient(45deg, '
            '#d6dae0 0 1px, #fff 1px 5px)"></span>no sample</li></ul>' % (_text(busy_utilization), steps))


def _unassigned(processes: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s MiB</td><td>%s</td></tr>"
                   % (_text(p.get("host")), _text(p.get("gpu_uuid")), _text(p.get("user")), _text(p.get("pid")),
                      _text(p.get("kind")), _text(p.get("peak_memory_mib")), _percent(p.get("presence") or 0.0))
                   for p in processes)
    return ("<table class=\"unassigned\"><thead><tr><th>Host</th><th>GPU</th><th>User</th><th>PID</th><th>Kind</th>"
            "<th>Peak memory</th><th>Present</th></tr></thead><tbody>%s</tbody></table>" % rows)


def _source(source: Mapping[str, Any]) -> str:
    if source.get("kind") != "prometheus":
        return ""
    return ", UTC, dcgm-exporter series from Prometheus at %s" % _text(source.get("url"))


def _cannot_decide(gpus: Sequence[Mapping[str, Any]]) -> str:
    """What the proposal could not decide for the GPUs read without per-process data."""
    unknown: Dict[str, List[str]] = {}
    for gpu in gpus:
        for statement in gpu.get("cannot_decide") or []:
            unknown.setdefault(statement, []).append("%s GPU %s" % (gpu["host"], gpu["index"]))
    if not unknown:
        return ""
    items = "".join("<li>%s (%s)</li>" % (_text(statement), _text(", ".join(where)))
                    for statement, where in unknown.items())
    return ("<p>Read without per-process data (dcgm-exporter through Prometheus), so the proposal cannot decide:</p>"
            "<ul class=\"warnings\">%s</ul>" % items)


def render_page(assessment: Mapping[str, Any], title: str = "GPU assessment") -> str:
    """assessment.html's text for an assessment as assessment.json holds it."""
    window = assessment["window"]
    gpus: List[Mapping[str, Any]] = list(assessment["gpus"])
    teams: Dict[str, Mapping[str, Any]] = dict(assessment.get("teams") or {})
    order = list(teams)
    for gpu in gpus:
        for team in [gpu.get("team_today")] + list(gpu.get("teams") or {}):
            if team and team not in order and team != UNASSIGNED:
                order.append(team)
    colours = team_colours(order)
    hosts = sorted({gpu["host"] for gpu in gpus})
    unassigned = assessment.get("unassigned") or []
    problems = assessment.get("problems") or []
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>%s</title>"
        "<style>%s</style></head><body><h1>%s</h1>" % (_text(title), _CSS, _text(title)),
        "<p class=\"meta\"><span>Samples from <b>%s</b> to <b>%s</b> (%s hours%s)</span><span><b>%d</b> GPU(s) on "
        "<b>%d</b> host(s)</span></p>" % (_text(window["from"]), _text(window["to"]), _text(window["hours"]),
                                          _source(assessment.get("source") or {}), len(gpus), len(hosts)),
        "<h2>Enough cards?</h2>", _answer(assessment["capacity"]),
        "<h2>Today and proposed</h2>", _gpu_table(gpus, colours), _cannot_decide(gpus),
        "<h2>Teams</h2>", _team_table(teams, colours),
        "<h2>When the GPUs are busy</h2>", _legend((assessment.get("thresholds") or {}).get("busy_utilization")),
        "".join(_heat_map(gpu) for gpu in gpus),
    ]
    if unassigned:
        parts += ["<h2>Processes in no team</h2><p>Their users are in no team (gpushare_assess_users) and their GPU "
                  "has none today: counted, never dropped.</p>", _unassigned(unassigned)]
    if problems:
        parts += ["<h2>Problems with the data</h2><ul class=\"warnings\">%s</ul>"
                  % "".join("<li>%s</li>" % _text(problem) for problem in problems)]
    parts.append("</body></html>\n")
    return "".join(parts)
