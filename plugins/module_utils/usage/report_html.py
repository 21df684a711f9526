# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage section of the HTML report: tables and inline SVG plots (pure; no I/O).

Everything is inline (no script, no font, no network), so the file opens anywhere,
including air-gapped machines.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any, List, Mapping, Optional, Sequence

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP = 720, 160, 44, 22, 10
STYLE = """
section.gpushare-usage { font-family: sans-serif; max-width: 760px; }
section.gpushare-usage table { border-collapse: collapse; margin: 0.5em 0 1em; }
section.gpushare-usage td, section.gpushare-usage th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
section.gpushare-usage th:first-child, section.gpushare-usage td:first-child { text-align: left; }
section.gpushare-usage .missing { color: #a00; }
section.gpushare-usage svg { display: block; margin-bottom: 1em; }
"""


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _cell(value: Any, fmt: str = "{:g}") -> str:
    if value is None:
        return '<td class="missing">missing</td>'
    if isinstance(value, float):
        return f"<td>{_esc(fmt.format(value))}</td>"
    return f"<td>{_esc(value)}</td>"


def _polyline(points: Sequence[Sequence[float]], start: float, end: float, top: float, css: str, fill: bool) -> str:
    if not points:
        return ""
    span = max(end - start, 1.0)
    plot_w, plot_h = WIDTH - PAD_LEFT - 6, HEIGHT - PAD_TOP - PAD_BOTTOM

    def xy(stamp: float, value: float) -> str:
        x = PAD_LEFT + (stamp - start) / span * plot_w
        y = PAD_TOP + plot_h - (value / top) * plot_h
        return f"{x:.1f},{y:.1f}"

    coords = " ".join(xy(t, v) for t, v in points)
    if fill:
        base = PAD_TOP + plot_h
        first_x = PAD_LEFT + (points[0][0] - start) / span * plot_w
        last_x = PAD_LEFT + (points[-1][0] - start) / span * plot_w
        return (f'<polygon points="{first_x:.1f},{base} {coords} {last_x:.1f},{base}" {css}/>')
    return f'<polyline points="{coords}" fill="none" {css}/>'


def _runs(points: Optional[Sequence[Sequence[float]]], step: float, buckets: int = 700) -> List[List[List[float]]]:
    """Consecutive samples as separate runs (a gap is time without the series, drawn empty),
    each thinned to about ``buckets`` per window by keeping the peak of each bucket."""
    if not points:
        return []
    runs: List[List[List[float]]] = [[list(points[0])]]
    for previous, point in zip(points, points[1:]):
        if point[0] - previous[0] > step * 1.5:
            runs.append([])
        runs[-1].append(list(point))
    stride = max(1, len(points) // buckets)
    if stride == 1:
        return runs
    thinned = []
    for run in runs:
        out = []
        for number in range(0, len(run), stride):
            chunk = run[number:number + stride]
            out.append([chunk[0][0], max(p[1] for p in chunk)])
        out.append(run[-1])
        thinned.append(out)
    return thinned


def team_plot(team: str, figures: Mapping[str, Any], start: float, end: float, step: float,
              nominal: Optional[float]) -> str:
    """SVG: allocated devices (filled) and busy device-equivalents (line) over the window."""
    series = figures.get("series") or {}
    allocated = _runs(series.get("allocated"), step)
    busy = _runs(series.get("busy"), step)
    values = [p[1] for run in allocated + busy for p in run] + ([nominal] if nominal else [])
    top = max(values + [1.0]) * 1.1
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'role="img" aria-label="GPUs allocated and busy for team {_esc(team)}">',
             f"<title>{_esc(team)}: GPUs allocated (area) and busy (line)</title>",
             f'<rect x="{PAD_LEFT}" y="{PAD_TOP}" width="{WIDTH - PAD_LEFT - 6}" height="{plot_h}" '
             'fill="#fafafa" stroke="#999"/>']
    for fraction in (0.0, 0.5, 1.0):
        value = top / 1.1 * fraction
        y = PAD_TOP + plot_h - value / top * plot_h
        parts.append(f'<text x="{PAD_LEFT - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{value:.1f}</text>')
    days = int((end - start) // 86400)
    for day in range(0, days + 1, max(1, days // 7)):
        stamp = start + day * 86400
        x = PAD_LEFT + (stamp - start) / max(end - start, 1) * (WIDTH - PAD_LEFT - 6)
        label = datetime.fromtimestamp(stamp, tz=timezone.utc).strftime("%m-%d")
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - 6}" font-size="10" text-anchor="middle">{label}</text>')
    for run in allocated:
        parts.append(_polyline(run, start, end, top, 'fill="#9ecae1" stroke="#3182bd" stroke-width="0.5"', True))
    for run in busy:
        parts.append(_polyline(run, start, end, top, 'stroke="#e6550d" stroke-width="1"', False))
    if nominal:
        y = PAD_TOP + plot_h - nominal / top * plot_h
        parts.append(f'<line x1="{PAD_LEFT}" x2="{WIDTH - 6}" y1="{y:.1f}" y2="{y:.1f}" stroke="#31a354" '
                     'stroke-dasharray="4 3"><title>nominal quota</title></line>')
    if not allocated and not busy:
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" fill="#a00">no data</text>')
    parts.append("</svg>")
    return "".join(parts)


def fmt_time(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render_section(figures: Mapping[str, Any], proposals: Sequence[Mapping[str, Any]]) -> str:
    """An HTML ``<section>`` with the team table, plots, GPU table and proposals."""
    window = figures["window"]
    start, end = window["start"], window["end"]
    out = [f'<section class="gpushare-usage" id="usage"><style>{STYLE}</style>',
           "<h2>GPU use per team</h2>",
           f"<p>{_esc(fmt_time(start))} to {_esc(fmt_time(end))} ({window['hours']:g} h, "
           f"one sample every {window['step_seconds']} s). A device is a whole GPU or one MIG instance.</p>",
           "<table><tr><th>team</th><th>allocated GPU-h</th><th>busy GPU-h</th><th>efficiency</th>"
           "<th>peak</th><th>p95</th><th>nominal</th><th>borrowing h</th><th>lending h</th>"
           "<th>pending h</th><th>p95 wait h</th></tr>"]
    for team, fig in figures["teams"].items():
        wait = fig.get("wait_p95_seconds")
        out.append(f"<tr><td>{_esc(team)}</td>" + "".join([
            _cell(fig.get("gpu_hours_allocated")), _cell(fig.get("gpu_hours_busy")),
            _cell(fig.get("efficiency"), "{:.0%}"), _cell(fig.get("allocated_peak")),
            _cell(fig.get("allocated_p95")), _cell(fig.get("nominal_quota")),
            _cell(fig.get("borrowing_hours")), _cell(fig.get("lending_hours")),
            _cell(fig.get("pending_hours")), _cell(None if wait is None else wait / 3600.0, "{:.1f}"),
        ]) + "</tr>")
    out.append("</table>")
    for team, fig in figures["teams"].items():
        out.append(f"<h3>{_esc(team)}: allocated (area) and busy (line)</h3>")
        out.append(team_plot(team, fig, start, end, window["step_seconds"], fig.get("nominal_quota")))
    cluster = figures["cluster"]
    out.append("<h3>Cluster</h3><table>")
    for key in ("gpus", "devices", "gpu_hours_capacity", "gpu_hours_allocated", "gpu_hours_busy",
                "allocated_share", "busy_share", "saturated_hours", "saturated_with_waiting_hours", "pending_hours"):
        out.append(f"<tr><td>{_esc(key.replace('_', ' '))}</td>{_cell(cluster.get(key))}</tr>")
    out.append("</table><h3>Devices</h3><table><tr><th>host</th><th>GPU</th><th>MIG profile</th>"
               "<th>allocated h</th><th>idle while allocated h</th><th>busy when allocated</th>"
               "<th>memory peak MiB</th></tr>")
    for gpu in figures.get("gpus", []):
        out.append(f"<tr><td>{_esc(gpu['host'])}</td><td>{_esc(gpu['gpu'])}</td><td>{_esc(gpu.get('mig_profile') or '')}</td>"
                   + _cell(gpu.get("allocated_hours")) + _cell(gpu.get("idle_allocated_hours"))
                   + _cell(gpu.get("busy_ratio_when_allocated"), "{:.0%}")
                   + (_cell(gpu.get("memory_used_peak_mib")) if gpu.get("mig_profile") else "<td></td>") + "</tr>")
    out.append("</table>")
    if figures.get("missing"):
        out.append('<h3>Missing data</h3><ul class="missing">')
        for item in figures["missing"]:
            out.append(f"<li>{_esc(item['figure'])}: no <code>{_esc(item['series'])}</code> ({_esc(item['source'])})</li>")
        out.append("</ul>")
    out.append("<h3>Proposals</h3>")
    if not proposals:
        out.append("<p>No change proposed.</p>")
    else:
        out.append("<ol>")
        for proposal in proposals:
            out.append(f"<li><strong>{_esc(proposal['kind'].replace('_', ' '))}</strong>: "
                       f"<code>{_esc(proposal.get('where'))}</code> <code>{_esc(proposal.get('variable'))}</code>: "
                       f"{_esc(proposal.get('current'))} &rarr; <code>{_esc(proposal.get('proposed'))}</code>. "
                       f"{_esc(proposal['reason'])}</li>")
        out.append("</ol>")
    out.append("</section>")
    return "\n".join(out)


def render_page(figures: Mapping[str, Any], proposals: Sequence[Mapping[str, Any]]) -> str:
    """A standalone page holding only the usage section."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>GPU use per team</title>"
            "</head><body>\n" + render_section(figures, proposals) + "\n</body></html>\n")
