# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Changes section of the plan report: what plan_changes.compare found, as HTML.

It uses the report's own styles (tables, ``code``, ``.muted``, ``.warnings``), carries
``data-*`` attributes for scripts and tests (``data-change``, ``data-kind``, ``data-node``,
``data-team``, ``data-disruptive``) and has no script. Pure Python, no I/O.
"""

from __future__ import annotations

import html
from typing import Any, List, Mapping

_VERBS = (("create", "Created"), ("update", "Updated"), ("delete", "Deleted"))


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _where(item: Mapping[str, Any]) -> str:
    return "%s%s" % ("%s/" % item["namespace"] if item["namespace"] else "", item["name"])


def _moves(moves: Mapping[str, List[Any]]) -> str:
    if not moves:
        return "—"
    return "<br>".join("%s: %s → %s" % (_esc(resource), _esc("—" if old is None else old), _esc("—" if new is None else new))
                       for resource, (old, new) in moves.items())


def _in_use(team: Mapping[str, Any]) -> str:
    if "in_use" not in team:
        return "not known"
    return "<br>".join("%s: %s" % (_esc(resource), _esc(used)) for resource, used in team["in_use"].items()) or "—"


def _objects(changes: Mapping[str, Any]) -> str:
    rows = []
    for verb, shown in _VERBS:
        for item in changes["objects"][verb]:
            fields = item.get("fields") or []
            rows.append('<tr data-change="%s" data-kind="%s" data-namespace="%s" data-name="%s"><td>%s</td><td>%s</td>'
                        "<td><code>%s</code></td><td>%s</td></tr>"
                        % (verb, _esc(item["kind"]), _esc(item["namespace"]), _esc(item["name"]), shown,
                           _esc(item["kind"]), _esc(_where(item)),
                           "<br>".join("<code>%s</code>" % _esc(path) for path in fields) or "—"))
    if not rows:
        return "<p>No object changes.</p>"
    return ("<table class=\"changes-objects\"><thead><tr><th>Change</th><th>Kind</th><th>Object</th>"
            "<th>Fields that differ</th></tr></thead><tbody>%s</tbody></table>" % "".join(rows))


def _nodes(changes: Mapping[str, Any]) -> str:
    if not changes["nodes"]:
        return ""
    rows = []
    for node in changes["nodes"]:
        labels = "<br>".join("<code>%s</code>: %s → %s" % (_esc(label), _esc(old or "—"), _esc(new or "—"))
                             for label, (old, new) in node["labels"].items()) or "—"
        gpus = "<br>".join("GPU %s: %s → %s" % (_esc(gpu["index"]), _esc(gpu["old"] or "—"), _esc(gpu["new"] or "—"))
                           for gpu in node["gpus"]) or "—"
        rows.append('<tr data-node="%s" data-change="%s" data-drain="%s"><td>%s</td><td>%s</td><td>%s</td>'
                    "<td>%s</td></tr>" % (_esc(node["node"]), _esc(node["change"]), "true" if node["drain"] else "false",
                                          _esc(node["node"]), "drains" if node["drain"] else _esc(node["change"]),
                                          labels, gpus))
    return ("<h3>Nodes</h3><table class=\"changes-nodes\"><thead><tr><th>Node</th><th>Change</th><th>Labels</th>"
            "<th>GPUs</th></tr></thead><tbody>%s</tbody></table>" % "".join(rows))


def _teams(changes: Mapping[str, Any]) -> str:
    if not changes["teams"]:
        return ""
    rows = []
    for team in changes["teams"]:
        rows.append('<tr data-team="%s" data-change="%s"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                    "<td>%s</td></tr>" % (_esc(team["team"]), _esc(team["change"]), _esc(team["team"]),
                                          _esc(team["change"]), _moves(team["quota"]), _moves(team["borrowing_limit"]),
                                          _moves(team["lending_limit"]),
                                          _in_use(team)))
    return ("<h3>Teams</h3><table class=\"changes-teams\"><thead><tr><th>Team</th><th>Change</th>"
            "<th>Nominal quota</th><th>Borrowing limit</th><th>Lending limit</th><th>In use now</th></tr></thead>"
            "<tbody>%s</tbody></table>" % "".join(rows))


def _workloads(changes: Mapping[str, Any]) -> str:
    workloads = changes["workloads"]
    if not workloads["known"]:
        return ("<p class=\"muted\">Workloads: not known (compared with a plan directory; compare with "
                "<code>cluster</code> to see what runs).</p>")
    items = ['<li data-evicted="%s/%s">pod <code>%s/%s</code> on %s is evicted by the drain%s</li>'
             % (_esc(pod["namespace"]), _esc(pod["pod"]), _esc(pod["namespace"]), _esc(pod["pod"]), _esc(pod["node"]),
                " (workload <code>%s</code>)" % _esc(pod["workload"]) if pod["workload"] else "")
             for pod in workloads["evicted"]]
    items += ['<li data-losing-claim="%s/%s">pod <code>%s/%s</code> loses the shared claim <code>%s</code></li>'
              % (_esc(pod["namespace"]), _esc(pod["pod"]), _esc(pod["namespace"]), _esc(pod["pod"]), _esc(pod["claim"]))
              for pod in workloads.get("losing_claim") or []]
    items += ['<li data-without-queue="%s/%s">workload <code>%s/%s</code>%s loses its queue <code>%s</code></li>'
              % (_esc(w["namespace"]), _esc(w["name"]), _esc(w["namespace"]), _esc(w["name"]),
                 " (admitted)" if w["admitted"] else "", _esc(w["queue"])) for w in workloads["without_queue"]]
    listed = ("<ul class=\"changes-workloads\">%s</ul>" % "".join(items) if items
              else "<p>No workload is evicted or loses its queue.</p>")
    return "<h3>Workloads</h3>" + listed


def render_section(changes: Mapping[str, Any]) -> str:
    """The Changes section (an ``<h2>`` and what follows) for the plan report."""
    objects = changes["objects"]
    disruptive = changes["disruptive"]
    if disruptive:
        verdict = ("<p><b>Disruptive</b>: <code>site.yml</code> refuses this change unless run with "
                   "<code>-e gpushare_confirm_disruptive=true</code>:</p><ul class=\"warnings\">%s</ul>"
                   % "".join('<li data-disruptive="%s">%s</li>' % (_esc(reason["kind"]), _esc(reason["reason"]))
                             for reason in disruptive))
    else:
        verdict = "<p data-disruptive=\"none\">Nothing disruptive: no node drains, no team is removed, no quota " \
                  "falls below what is in use.</p>"
    return ('<section id="changes" data-compared-with="%s"><h2>Changes</h2>'
            '<p class="meta">Compared with <code>%s</code>: <span data-count="create">%d</span> to create, '
            '<span data-count="update">%d</span> to update, <span data-count="delete">%d</span> to delete.</p>'
            "%s%s%s%s%s</section>"
            % (_esc(changes["compared_with"]), _esc(changes["compared_with"]), len(objects["create"]),
               len(objects["update"]), len(objects["delete"]), verdict, _objects(changes), _nodes(changes),
               _teams(changes), _workloads(changes)))
