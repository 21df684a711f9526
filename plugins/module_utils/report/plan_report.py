# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan as people read it: a self-contained HTML report and a text summary.

``render_html(plan)`` turns a ``gpushare_plan`` dict (docs/plan.md) into one HTML page
with inline CSS and SVG and no external reference, so it opens from a file, offline,
and prints. Every node is a picture of its GPUs: one bar per GPU, MIG instances drawn
at their real placement and size, time-sliced GPUs with their replica count, all
coloured by team. The SVG carries ``data-*`` attributes (host, GPU index, use, team,
MIG profile, start, size) so tests and scripts can check what is drawn.

``summary_table(plan)`` is the same plan as plain text for a terminal.

Pure Python, no I/O, no Ansible import. Malformed plans raise ``ValueError`` naming
the host, GPU index and field.
"""

from __future__ import annotations

import functools
import html
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract
from ansible_collections.gpushare.cluster.plugins.module_utils.report import changes_section as plan_changes_report

# Okabe-Ito colours stay distinguishable for the common colour-vision deficiencies;
# further teams get evenly spread hues.
_PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7",
    "#56B4E9", "#D55E00", "#F0E442", "#999933",
)
_UNASSIGNED_COLOUR = "#B0B0B0"

# Placement units of a MIG-capable GPU when neither the plan nor the catalog says:
# every GPU from A100 to B300 has eight memory slices, the smaller parts fewer.
_DEFAULT_PLACEMENT_UNITS = 8

_BAR_X = 230
_BAR_WIDTH = 640
_ROW_HEIGHT = 44
_BAR_HEIGHT = 32
_SVG_WIDTH = _BAR_X + _BAR_WIDTH + 10
# Under a MIG bar: one cell per compute slice and the numbers.
_GAUGE_HEIGHT = 18
_CELL_WIDTH = 14
_CELL_HEIGHT = 10


def _hsl_to_hex(hue: float, saturation: float, lightness: float) -> str:
    """Convert HSL (degrees, 0-1, 0-1) to #rrggbb."""
    chroma = (1 - abs(2 * lightness - 1)) * saturation
    segment = (hue % 360) / 60.0
    second = chroma * (1 - abs(segment % 2 - 1))
    red, green, blue = [
        (chroma, second, 0.0), (second, chroma, 0.0), (0.0, chroma, second),
        (0.0, second, chroma), (second, 0.0, chroma), (chroma, 0.0, second),
    ][int(segment) % 6]
    offset = lightness - chroma / 2
    return "#" + "".join("%02X" % int(round((channel + offset) * 255)) for channel in (red, green, blue))


def team_colours(teams: Sequence[str]) -> Dict[str, str]:
    """A stable colour per team, in the order the teams are given."""
    colours = {}
    for position, team in enumerate(teams):
        if position < len(_PALETTE):
            colours[team] = _PALETTE[position]
        else:
            # The golden angle spreads any number of hues without neighbours clashing.
            colours[team] = _hsl_to_hex((position - len(_PALETTE)) * 137.508, 0.55, 0.50)
    return colours


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of #rrggbb."""
    channels = []
    for i in (1, 3, 5):
        value = int(colour[i:i + 2], 16) / 255.0
        channels.append(value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4)
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours (1 to 21; 4.5 is the minimum for small text)."""
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with the background (never below 4.5:1)."""
    return "#000000" if contrast_ratio(background, "#000000") >= contrast_ratio(background, "#FFFFFF") else "#FFFFFF"


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _require(mapping: Any, key: str, where: str, kind: type) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError("%s: field '%s' is missing" % (where, key))
    value = mapping[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ValueError("%s: field '%s' must be a %s, got %r" % (where, key, kind.__name__, value))
    return value


def _placement_units(gpu: Dict[str, Any], where: str) -> int:
    """How many placement units the GPU's MIG bar is divided into."""
    units = gpu.get("placement_units")
    if isinstance(units, int) and not isinstance(units, bool) and units > 0:
        return units
    try:
        from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog

        units = gpu_catalog.lookup(str(gpu.get("model"))).placement_units
    except (ImportError, ValueError, AttributeError):
        units = None
    ends = [inst["start"] + inst["size"] for inst in gpu.get("instances") or []]
    units = units or _DEFAULT_PLACEMENT_UNITS
    if ends and max(ends) > units:
        raise ValueError("%s: field 'instances' places a MIG instance beyond the GPU's %d placement units"
                         % (where, units))
    return units


def _checked_nodes(plan: Dict[str, Any]) -> List[Tuple[str, List[Dict[str, Any]]]]:
    """The plan's nodes with their GPUs, checked for the fields the report draws."""
    nodes = contract.check_plan_file(plan, ValueError)["nodes"]
    checked = []
    for host in sorted(nodes):
        gpus = _require(nodes[host], "gpus", "host %s" % host, list)
        for gpu in gpus:
            index = gpu.get("index") if isinstance(gpu, dict) else None
            where = "host %s GPU %s" % (host, index)
            _require(gpu, "index", where, int)
            use = _require(gpu, "use", where, str)
            if use not in ("whole", "mig", "shared"):
                raise ValueError("%s: field 'use' must be whole, mig or shared, got %r" % (where, use))
            if use == "mig":
                for position, inst in enumerate(_require(gpu, "instances", where, list)):
                    inst_where = "%s MIG instance %d" % (where, position)
                    _require(inst, "profile", inst_where, str)
                    if _require(inst, "start", inst_where, int) < 0:
                        raise ValueError("%s: field 'start' must not be negative" % inst_where)
                    if _require(inst, "size", inst_where, int) <= 0:
                        raise ValueError("%s: field 'size' must be positive" % inst_where)
                _placement_units(gpu, where)
            if use == "shared":
                replicas = _require(gpu, "replicas", where, int)
                if replicas < 1:
                    raise ValueError("%s: field 'replicas' must be at least 1, got %d" % (where, replicas))
        checked.append((host, sorted(gpus, key=lambda gpu: gpu["index"])))
    return checked


def _team_order(plan: Dict[str, Any], nodes: List[Tuple[str, List[Dict[str, Any]]]]) -> List[str]:
    teams = list((plan.get("teams") or {}).keys())
    for _host, gpus in nodes:
        for gpu in gpus:
            team = gpu.get("team")
            if team and team not in teams:
                teams.append(team)
    return teams


def _resources_text(resources: Optional[Dict[str, Any]]) -> str:
    if not resources:
        return ""
    return ", ".join("%s: %s" % (name, count) for name, count in sorted(resources.items()))


def slice_usage(gpu: Dict[str, Any]) -> Optional[Dict[str, int]]:
    """Compute and memory slices a MIG GPU of the plan uses and strands (mig_solver.slice_usage).

    None when the model is not in the catalog, or a profile is unknown to it."""
    try:
        placements = tuple((str(inst["profile"]), int(inst["start"])) for inst in gpu.get("instances") or [])
    except (KeyError, TypeError, ValueError):
        return None
    return _slice_usage(str(gpu.get("model")), placements)


@functools.lru_cache(maxsize=1024)
def _slice_usage(model_key: str, placements: Tuple[Tuple[str, int], ...]) -> Optional[Dict[str, int]]:
    # A fleet repeats a few layouts: each is counted once.
    try:
        from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
        from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import mig_solver

        return mig_solver.slice_usage(gpu_catalog.lookup(model_key), list(placements))
    except (ImportError, ValueError, AttributeError):
        return None


def _row_height(gpu: Dict[str, Any]) -> int:
    return _ROW_HEIGHT + (_GAUGE_HEIGHT if gpu["use"] == "mig" and slice_usage(gpu) else 0)


def _gauge(host: str, gpu: Dict[str, Any], usage: Dict[str, int], colour: str, y: int) -> str:
    """The compute slices of a MIG GPU as cells under its bar: used ones in the team colour,
    idle ones hatched, with the numbers; stranded ones (no instance can use them) say so."""
    cells = []
    for slot in range(usage["compute_total"]):
        used = slot < usage["compute_used"]
        cells.append('<rect class="compute-cell %s" x="%d" y="%d" width="%d" height="%d"%s/>'
                     % ("used" if used else "idle", _BAR_X + slot * (_CELL_WIDTH + 2), y, _CELL_WIDTH, _CELL_HEIGHT,
                        ' fill="%s"' % colour if used else ' fill="url(#idle)"'))
    idle = usage["compute_total"] - usage["compute_used"]
    text = "compute %d of %d slices used" % (usage["compute_used"], usage["compute_total"])
    if usage["stranded_compute"]:
        text += " · %d idle: every memory slice is taken" % usage["stranded_compute"]
    elif idle:
        text += " · %d free" % idle
    if usage["stranded_memory"]:
        text += " · %d memory slice%s unusable" % (usage["stranded_memory"], "" if usage["stranded_memory"] == 1 else "s")
    text_x = _BAR_X + usage["compute_total"] * (_CELL_WIDTH + 2) + 6
    return ('<g class="mig-usage" data-host="%s" data-gpu-index="%d" data-compute-used="%d" data-compute-total="%d" '
            'data-memory-used="%d" data-memory-total="%d" data-stranded-compute="%d" data-stranded-memory="%d">'
            '<title>%s</title>%s<text class="gauge-text%s" x="%d" y="%d">%s</text></g>'
            % (_esc(host), gpu["index"], usage["compute_used"], usage["compute_total"], usage["memory_used"],
               usage["memory_total"], usage["stranded_compute"], usage["stranded_memory"],
               _esc("%s GPU %d: %s" % (host, gpu["index"], text)), "".join(cells),
               " stranded" if usage["stranded_compute"] or usage["stranded_memory"] else "", text_x,
               y + _CELL_HEIGHT - 1, _esc(_fit(text, _SVG_WIDTH - text_x - 4, 11))))


def _gpu_row(host: str, gpu: Dict[str, Any], y: int, colours: Dict[str, str]) -> str:
    """One GPU as an SVG group: label on the left, bar on the right (and, for MIG, its compute slices)."""
    where = "host %s GPU %s" % (host, gpu["index"])
    team = gpu.get("team")
    colour = colours.get(team, _UNASSIGNED_COLOUR) if team else _UNASSIGNED_COLOUR
    ink = text_colour(colour)
    use = gpu["use"]
    parts = [
        '<g class="gpu" data-host="%s" data-gpu-index="%d" data-use="%s" data-team="%s" data-model="%s"%s>'
        % (_esc(host), gpu["index"], _esc(use), _esc(team or ""), _esc(gpu.get("model")),
           ' data-replicas="%d"' % gpu["replicas"] if use == "shared" else ""),
        '<title>%s: %s, %s, team %s%s</title>'
        % (_esc(where), _esc(gpu.get("model")), _esc(use), _esc(team or "none"),
           "; " + _esc(_resources_text(gpu.get("resources"))) if gpu.get("resources") else ""),
        '<text class="gpu-label" x="0" y="%d">GPU %d</text>' % (y + 14, gpu["index"]),
        '<text class="gpu-sub" x="0" y="%d">%s</text>'
        % (y + 28, _esc(_fit("%s · %s" % (gpu.get("model"), use), _BAR_X - 12, 11))),
    ]
    if use == "whole":
        parts += _whole_bar(team, y, colour, ink)
    elif use == "shared":
        parts += _shared_bar(gpu, team, y, colour)
    else:
        parts += _mig_bar(host, gpu, where, y, colour, ink)
    parts.append("</g>")
    return "".join(parts)


def _whole_bar(team: Optional[str], bar_y: int, colour: str, ink: str) -> List[str]:
    """A whole GPU's bar: one block in the team's colour."""
    text = "whole GPU · %s" % (team or "unassigned")
    return ['<rect class="bar whole" x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
            % (_BAR_X, bar_y, _BAR_WIDTH, _BAR_HEIGHT, colour),
            '<text class="bar-text" x="%d" y="%d" fill="%s">%s</text>'
            % (_BAR_X + 10, bar_y + 21, ink, _esc(_fit(text, _BAR_WIDTH - 20, 13, bold=True)))]


def _shared_bar(gpu: Dict[str, Any], team: Optional[str], bar_y: int, colour: str) -> List[str]:
    """A time-sliced GPU's bar: hatched, with a divider between replicas and the text on a chip."""
    parts: List[str] = []
    replicas = gpu["replicas"]
    parts.append('<rect class="bar shared" x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                 % (_BAR_X, bar_y, _BAR_WIDTH, _BAR_HEIGHT, colour))
    parts.append('<rect class="bar-hatch" x="%d" y="%d" width="%d" height="%d" fill="url(#hatch)"/>'
                 % (_BAR_X, bar_y, _BAR_WIDTH, _BAR_HEIGHT))
    # Dashed dividers show the time slices: replicas take turns, they do not split memory.
    for slot in range(1, replicas):
        x = _BAR_X + _BAR_WIDTH * slot / replicas
        parts.append('<line class="replica-divider" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>'
                     % (x, bar_y, x, bar_y + _BAR_HEIGHT))
    # device_plugin may time-slice a full-size MIG instance instead of the bare GPU.
    carrier = ", ".join(inst["profile"] for inst in gpu.get("instances") or [] if isinstance(inst, dict))
    text = _fit("time-sliced ×%d%s · %s" % (replicas, " on MIG " + carrier if carrier else "", team or "unassigned"),
                _BAR_WIDTH - 24, 13, bold=True)
    # The text sits on an opaque chip above the hatching and the dividers, so it reads
    # on every team colour.
    parts.append('<rect class="label-chip" x="%d" y="%d" width="%.1f" height="%d" rx="3"/>'
                 % (_BAR_X + 6, bar_y + 6, text_width(text, 13, bold=True) + 10, _BAR_HEIGHT - 12))
    parts.append('<text class="bar-text boxed" x="%d" y="%d">%s</text>' % (_BAR_X + 11, bar_y + 21, _esc(text)))
    return parts


def _mig_bar(host: str, gpu: Dict[str, Any], where: str, bar_y: int, colour: str, ink: str) -> List[str]:
    """A MIG GPU's bar: its placement units, each instance on its slices, and the usage gauge."""
    parts: List[str] = []
    units = _placement_units(gpu, where)
    unit_width = _BAR_WIDTH / units
    usage = slice_usage(gpu)
    stranded = bool(usage and usage["stranded_memory"])
    # Free units no profile can start on are drawn as unusable (mig_solver.slice_usage).
    parts.append('<rect class="bar mig-free%s" x="%d" y="%d" width="%d" height="%d"/>'
                 % (" stranded" if stranded else "", _BAR_X, bar_y, _BAR_WIDTH, _BAR_HEIGHT))
    for slot in range(1, units):
        x = _BAR_X + unit_width * slot
        parts.append('<line class="unit-divider" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>'
                     % (x, bar_y, x, bar_y + _BAR_HEIGHT))
    for inst in gpu["instances"]:
        x = _BAR_X + unit_width * inst["start"]
        width = unit_width * inst["size"]
        # A named instance serves an inventory need; unnamed ones (explicit profiles, or
        # left-over slices) are shown by profile and usable memory.
        label = inst.get("name") or inst["profile"]
        detail = inst["profile"] if inst.get("name") else (
            "%.1f GiB" % (inst["memory_mib"] / 1024.0) if isinstance(inst.get("memory_mib"), int) else "")
        parts.append(
            '<g class="mig-instance" data-host="%s" data-gpu-index="%d" data-profile="%s" '
            'data-start="%d" data-size="%d" data-name="%s">'
            '<title>%s: %s, start %d, size %d%s</title>'
            '<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
            '<text class="mig-text" x="%.1f" y="%d" fill="%s">%s</text>'
            '<text class="mig-sub" x="%.1f" y="%d" fill="%s">%s</text></g>'
            % (_esc(host), gpu["index"], _esc(inst["profile"]), inst["start"], inst["size"],
               _esc(inst.get("name") or ""),
               _esc(label), _esc(inst["profile"]), inst["start"], inst["size"],
               ", %d MiB" % inst["memory_mib"] if isinstance(inst.get("memory_mib"), int) else "",
               x + 1, bar_y + 1, width - 2, _BAR_HEIGHT - 2, colour,
               x + 5, bar_y + 14, ink, _esc(_fit(label, width - 10, 11, bold=True)),
               x + 5, bar_y + 27, ink, _esc(_fit(detail, width - 10, 10))))
    if usage:
        parts.append(_gauge(host, gpu, usage, colour, bar_y + _BAR_HEIGHT + 5))
    return parts


# Advance widths in hundredths of an em of DejaVu Sans (regular, bold) for " " to "~",
# measured in Chromium; the report names DejaVu Sans first and it is among the widest
# sans-serif faces, so text measured with it fits in the narrower fallbacks too.
_CHAR_WIDTHS = {
    False: (32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
            34, 34, 84, 84, 84, 53, 100, 71, 69, 70, 77, 63, 58, 77, 75, 29, 29, 66, 56, 86, 75, 79, 60, 79, 69, 63,
            60, 73, 68, 99, 69, 61, 69, 39, 34, 39, 84, 50, 50, 61, 63, 55, 63, 62, 34, 63, 63, 28, 28, 58, 28, 97,
            63, 61, 63, 63, 40, 52, 39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84),
    True: (35, 46, 52, 84, 70, 100, 87, 31, 46, 46, 52, 84, 38, 42, 38, 37, 70, 70, 70, 70, 70, 70, 70, 70, 70, 70,
           40, 40, 84, 84, 84, 58, 100, 77, 76, 73, 83, 68, 68, 82, 84, 37, 37, 77, 64, 100, 84, 85, 73, 85, 77, 68,
           70, 81, 77, 110, 77, 72, 73, 46, 37, 46, 84, 50, 50, 67, 72, 59, 72, 68, 41, 72, 71, 34, 34, 67, 34, 104,
           71, 69, 72, 72, 49, 60, 48, 71, 65, 92, 65, 65, 58, 71, 37, 71, 84),
}
_OTHER_CHAR_WIDTH = {False: 100, True: 110}  # "×", "…" and the rest: as wide as the widest letter


def text_width(text: str, size: float, bold: bool = False) -> float:
    """Width in px of ``text`` set in DejaVu Sans at ``size`` px."""
    table = _CHAR_WIDTHS[bold]
    total = 0
    for char in text:
        code = ord(char) - 32
        total += table[code] if 0 <= code < len(table) else _OTHER_CHAR_WIDTH[bold]
    return total * size / 100.0


def _fit(text: str, width: float, size: float = 11, bold: bool = False) -> str:
    """Shorten a label to what fits in ``width`` px, ending it with "…" when cut."""
    if text_width(text, size, bold) <= width:
        return text
    while text and text_width(text + "…", size, bold) > width:
        text = text[:-1]
    return text + "…" if text else ""


def _node_section(host: str, node: Dict[str, Any], gpus: List[Dict[str, Any]], colours: Dict[str, str]) -> str:
    rows = []
    y = 6
    for gpu in gpus:
        rows.append(_gpu_row(host, gpu, y, colours))
        y += _row_height(gpu)
    height = max(y, _ROW_HEIGHT) + 2
    rows = "".join(rows)
    facts = []
    if node.get("mig_config"):
        facts.append("MIG config <code>%s</code>" % _esc(node["mig_config"]))
    if node.get("device_plugin_config"):
        facts.append("device plugin config <code>%s</code>" % _esc(node["device_plugin_config"]))
    labels = node.get("labels") or {}
    label_list = "".join("<li><code>%s=%s</code></li>" % (_esc(k), _esc(v)) for k, v in sorted(labels.items()))
    return (
        '<section class="node" data-host="%s"><h3>%s <span class="muted">%d GPU%s</span></h3>'
        '<svg class="gpus" role="img" aria-label="GPUs of %s" xmlns="http://www.w3.org/2000/svg" '
        'viewBox="0 0 %d %d" width="%d" height="%d">%s</svg>%s%s</section>'
        % (_esc(host), _esc(host), len(gpus), "" if len(gpus) == 1 else "s", _esc(host),
           _SVG_WIDTH, height, _SVG_WIDTH, height, rows,
           "<p class=\"muted\">%s</p>" % "; ".join(facts) if facts else "",
           "<details><summary>Node labels</summary><ul>%s</ul></details>" % label_list if labels else "")
    )


def _instance_profile(gpu: Dict[str, Any], resource: str) -> Optional[str]:
    """The MIG profile a resource of this GPU counts ('mig-1g.24gb', 'mig-1g.10gb.me' ...)."""
    best = None
    for inst in gpu.get("instances") or []:
        profile = str(inst.get("profile", "")) if isinstance(inst, dict) else ""
        if profile and (profile in resource or profile.replace("+", ".") in resource):
            if best is None or len(profile) > len(best):
                best = profile
    return best


def _kind_of(gpu: Dict[str, Any], resource: str, backend: Any) -> str:
    """What one unit of ``resource`` on this GPU is, with %s for the model."""
    use = gpu["use"]
    profile = _instance_profile(gpu, resource)
    if use == "whole":
        return "whole %s"
    if use == "mig":
        return "MIG %s on %%s" % profile if profile else "MIG instance on %s"
    if backend == "dra":
        return "time-shared %s"
    return "time-slice of MIG %s on %%s" % profile if profile else "time-slice of %s"


def resource_terms(nodes: List[Tuple[str, List[Dict[str, Any]]]], backend: Any = None) -> Dict[str, str]:
    """Quota resource (and ``flavor/resource``, the key of the limits) -> what it is in the
    inventory's own terms: use, MIG profile and model ("MIG 1g.24gb on RTX-PRO-6000")."""
    found: Dict[str, Dict[str, set]] = {}
    for _host, gpus in nodes:
        for gpu in gpus:
            for resource in gpu.get("resources") or {}:
                kind = _kind_of(gpu, str(resource), backend)
                keys = [str(resource)] + (["%s/%s" % (gpu["flavor"], resource)] if gpu.get("flavor") else [])
                for key in keys:
                    found.setdefault(key, {}).setdefault(kind, set()).add(str(gpu.get("model")))
    return {key: " or ".join(kind % " / ".join(sorted(models)) for kind, models in sorted(kinds.items()))
            for key, kinds in found.items()}


def _term(key: str, terms: Dict[str, str]) -> str:
    if key in terms:
        return terms[key]
    flavor, _slash, resource = key.partition("/")
    # Limits are keyed flavor/resource; a resource name itself has a dot before its slash.
    if resource and "." not in flavor and resource in terms:
        return terms[resource]
    return key


def quota_text(values: Optional[Dict[str, Any]], terms: Dict[str, str]) -> str:
    """Counts in the inventory's terms: '4 × whole H100-80GB, 2 × MIG 1g.20gb on H100-80GB'; 'none' when empty."""
    named = [(_term(str(key), terms), count) for key, count in (values or {}).items() if count]
    # Whole GPUs first, then MIG instances, then time-shared GPUs, as the report draws them.
    named.sort(key=lambda item: (0 if item[0].startswith("whole") else 1 if item[0].startswith("MIG") else 2, item[0]))
    parts = ["%s × %s" % (count, term) for term, count in named]
    return ", ".join(parts) or "none"


def limit_text(values: Optional[Dict[str, Any]], terms: Dict[str, str]) -> str:
    """A borrowing or lending limit: 'no limit' when none is set; 'none of X' for a limit of 0
    (nothing of X is borrowed or lent), 'at most N × X' otherwise; resources not named have no limit."""
    if not values:
        return "no limit"
    parts = [("none of %s" if not count else "at most %s × %%s" % count) % _term(str(key), terms)
             for key, count in sorted(values.items())]
    return ", ".join(parts) + "; no limit on the rest"


def _owned_text(gpus: List[Dict[str, Any]]) -> str:
    counts: Dict[Tuple[str, str], int] = {}
    for gpu in gpus:
        key = (gpu["use"], str(gpu.get("model")))
        counts[key] = counts.get(key, 0) + 1
    words = {"whole": "whole %s", "mig": "%s cut with MIG", "shared": "time-sliced %s"}
    ordered = sorted(counts.items(), key=lambda item: (("whole", "mig", "shared").index(item[0][0]), item[0][1]))
    return ", ".join("%d %s" % (count, words[use] % model) for (use, model), count in ordered) or "none"


def team_gpus(nodes: List[Tuple[str, List[Dict[str, Any]]]]) -> Dict[str, List[Dict[str, Any]]]:
    owned: Dict[str, List[Dict[str, Any]]] = {}
    for _host, gpus in nodes:
        for gpu in gpus:
            owned.setdefault(gpu.get("team") or "", []).append(gpu)
    return owned


def share_text(owned: int, total: int) -> str:
    """'2 of 4 GPUs (50%)': a team's share of the cluster, counting every GPU it owns as one."""
    return "%d of %d GPU%s (%d%%)" % (owned, total, "" if total == 1 else "s", round(100.0 * owned / total) if total else 0)


def login_group_text(info: Dict[str, Any]) -> str:
    """The group a person must be in to act as the team: the Kubernetes group its RoleBinding
    names and, with an identity provider, the provider's group behind it."""
    access = info.get("access") or {}
    group = access.get("kubernetes_group") or info.get("group")
    if not group:
        return "-"
    provider = access.get("identity_provider_group")
    return "%s (provider group %s)" % (group, provider) if provider and provider != group else str(group)


def _team_table(plan: Dict[str, Any], teams: List[str], colours: Dict[str, str],
                nodes: List[Tuple[str, List[Dict[str, Any]]]]) -> str:
    terms = resource_terms(nodes, plan.get("backend"))
    owned = team_gpus(nodes)
    total = sum(len(gpus) for _host, gpus in nodes)
    rows = []
    for team in teams:
        info = (plan.get("teams") or {}).get(team) or {}
        gpus = owned.get(team, [])
        percent = 100.0 * len(gpus) / total if total else 0
        capacity = info.get("capacity") or {}
        rows.append(
            '<tr data-team="%s"><td><span class="swatch" style="background:%s"></span>%s</td>'
            '<td>%s</td><td>%s</td><td>%s</td><td data-share="%d">%s<span class="share-bar"><span style="width:%.1f%%;'
            'background:%s"></span></span></td><td>%s</td><td title="%s">%s</td><td>%s</td><td>%s</td>'
            '<td>%s</td></tr>'
            % (_esc(team), colours[team], _esc(team), _esc(info.get("priority", "—")),
               _esc(", ".join(info.get("namespaces") or [])) or "—", _esc(login_group_text(info)), len(gpus), _esc(share_text(len(gpus), total)),
               percent, colours[team], _esc(_owned_text(gpus)),
               _esc(_resources_text(capacity)), _esc(quota_text(capacity, terms)),
               _esc(limit_text(info.get("borrowing_limit"), terms)), _esc(limit_text(info.get("lending_limit"), terms)),
               _esc(info.get("reclaim", "—"))))
    return (
        '<table class="teams"><thead><tr><th>Team</th><th>Priority</th><th>Namespaces</th><th>Login group</th>'
        "<th>Share of the cluster</th><th>GPUs owned</th><th>Nominal quota</th><th>Borrows</th><th>Lends</th>"
        "<th>Reclaims within cohort</th></tr></thead><tbody>%s</tbody></table>"
        '<p class="muted">Quotas are counted in Kueue resources (plan.json, <code>teams.*.capacity</code>; '
        "hover a quota for its resource names). <i>no limit</i>: the team may borrow or lend all of it; "
        "<i>none of</i>: it borrows or lends none of that.</p>" % "".join(rows)
    )


def _shared_gpus(nodes: List[Tuple[str, List[Dict[str, Any]]]]) -> List[Tuple[str, Dict[str, Any]]]:
    return [(host, gpu) for host, gpus in nodes for gpu in gpus if gpu["use"] == "shared"]


def _names(names: Sequence[str]) -> str:
    return ", ".join(_esc(name) for name in names) if names else "none"


def _team_stories(plan: Dict[str, Any], teams: List[str], nodes: List[Tuple[str, List[Dict[str, Any]]]]) -> str:
    """What each team gets, lends, gets back and borrows, as Kueue v0.19 enforces it.

    Kueue v0.19.2 pkg/scheduler/preemption (classical): with ``reclaimWithinCohort: Any`` a
    workload within its queue's nominal quota preempts borrowers of any priority; with
    ``borrowWithinCohort: LowerPriority`` a borrowing workload preempts only lower-priority
    workloads of queues that are themselves borrowing.
    """
    infos = {team: (plan.get("teams") or {}).get(team) or {} for team in teams}
    backend = plan.get("backend")
    terms = resource_terms(nodes, backend)
    shared_by_team: Dict[str, List[str]] = {}
    for host, gpu in _shared_gpus(nodes):
        shared_by_team.setdefault(gpu.get("team") or "", []).append("%s GPU %d" % (host, gpu["index"]))
    items = []
    for team in teams:
        info = infos[team]
        priority = info.get("priority", 0)
        higher = [t for t in teams if infos[t].get("priority", 0) > priority]
        lower = [t for t in teams if infos[t].get("priority", 0) < priority]
        capacity = info.get("capacity") or {}
        lending = info.get("lending_limit") or {}
        borrowing = info.get("borrowing_limit") or {}
        reclaim = info.get("reclaim", "—")
        owns = _esc(quota_text(capacity, terms)) if any(capacity.values()) else "no GPUs"
        lends = ("what it leaves idle (%s)" % _esc(limit_text(lending, terms)) if lending
                 else "whatever it leaves idle" if capacity else "nothing")
        if reclaim == "Any":
            back = ("at once, by preemption of any borrower whatever its priority "
                    "(<code>reclaimWithinCohort: Any</code>)") if capacity else "—"
        else:
            back = "only from lower-priority borrowers (<code>reclaimWithinCohort: %s</code>)" % _esc(reclaim)
        borrows = ("what the others leave idle (%s)" % _esc(limit_text(borrowing, terms)) if borrowing
                   else "whatever the other teams leave idle")
        text = ("<li data-team-story=\"%s\"><b>%s</b> (priority %s) gets %s. It lends %s and gets it back %s. "
                "It borrows %s; a borrowing workload of %s is preempted when the lender takes its quota back, "
                "and by borrowing workloads of higher-priority teams (%s); while borrowing it displaces "
                "borrowing workloads of lower-priority teams (%s), never a team's own quota "
                "(<code>borrowWithinCohort: LowerPriority</code>)."
                % (_esc(team), _esc(team), _esc(priority), owns, lends, back, borrows, _esc(team),
                   _names(higher), _names(lower)))
        if shared_by_team.get(team) and backend == "dra":
            several = len(shared_by_team[team]) > 1
            resources = sorted(name for name in capacity if name.endswith("-shared"))
            text += (" Its time-shared GPU%s (%s) %s also counted as whole device%s of %s: Kueue lends %s like any "
                     "quota (it does not see the notebooks), the scheduler places a borrower on %s only once no pod "
                     "holds the shared claim, and that borrower keeps it until it ends; Kueue cannot preempt it for "
                     "the notebooks. A lending limit of 0 on that resource keeps it."
                     % ("s" if several else "", _esc("; ".join(shared_by_team[team])), "are" if several else "is",
                        "s" if several else "", ", ".join("<code>%s</code>" % _esc(r) for r in resources) or "—",
                        "them" if several else "it", "one" if several else "it"))
        elif shared_by_team.get(team):
            text += (" Its time-sliced GPU%s (%s) %s counted in slots, lent as slots: a workload that needs a "
                     "whole GPU cannot borrow %s." % (
                         "s" if len(shared_by_team[team]) > 1 else "", _esc("; ".join(shared_by_team[team])),
                         "are" if len(shared_by_team[team]) > 1 else "is",
                         "them" if len(shared_by_team[team]) > 1 else "it"))
        items.append(text + "</li>")
    return "<ul class=\"stories\">%s</ul>" % "".join(items)


def _enforcement(plan: Dict[str, Any], nodes: List[Tuple[str, List[Dict[str, Any]]]]) -> str:
    """Which parts of sharing Kubernetes enforces and which rest on people."""
    shared = ["%s GPU %d (%d replicas)" % (host, gpu["index"], gpu["replicas"]) for host, gpu in _shared_gpus(nodes)]
    items = [
        "<li><b>Quota</b> — enforced by Kueue: a workload that does not fit its team's nominal quota "
        "plus what it may borrow stays suspended in its team's queue.</li>",
        "<li><b>Borrowing</b> — enforced by Kueue within the cohort <code>%s</code>: a team may use "
        "quota another team leaves idle, up to its borrowing limit.</li>" % _esc(plan.get("cohort", "gpushare")),
        "<li><b>Reclaim</b> — enforced by Kueue through preemption: every team takes back what it lent, "
        "from any borrower; production first: among borrowers, the higher priority displaces the lower, "
        "and free quota goes to the highest priority first.</li>",
        "<li><b>Isolation</b> — MIG instances are isolated in hardware; whole GPUs belong to one "
        "workload.</li>",
    ]
    if shared:
        items.append(
            "<li><b>Time-sliced GPUs rest on people</b> (%s): pods share memory and faults, nothing "
            "limits a pod's memory, and a notebook holds its slice until someone closes it. "
            "Kubernetes does not close idle notebooks.</li>" % _esc("; ".join(shared)))
    if plan.get("backend") == "dra" and shared:
        items.append(
            "<li><b>DRA and time-sliced GPUs</b>: the pods that share a GPU reference one standalone "
            "ResourceClaim and carry no queue label: Kueue 0.19 refuses every workload that uses a claim "
            "directly, so they run outside Kueue (the team's admission policy allows exactly these pods). "
            "The replica count is the intended number of pods; nothing caps it. Kueue counts the GPU "
            "itself as one whole device of <code>gpushare.io/&lt;model&gt;-shared</code> in the owner's "
            "quota, taken through the <code>gpu-&lt;model&gt;-shared</code> claim template: the scheduler "
            "places such a claim only once no pod holds the shared claim (it is released when the last one "
            "ends).</li>")
        items.append(
            "<li><b>The worked day under dra</b>: at 13:00 Kueue, which does not see the notebooks, admits "
            "the fine-tune (its own GPU plus the lendable time-shared one), and its pod waits for the device "
            "in the scheduler, not in the queue; with waitForPodsReady Kueue puts it back in the queue and "
            "retries. At 19:00 the notebooks close, the shared claim is released and the fine-tune starts on "
            "both GPUs. At 05:10 it ends and the GPU is the notebooks' again. If notebooks come back while it "
            "runs, they wait until it ends: Kueue cannot preempt on their behalf.</li>")
    elif shared:
        items.append(
            "<li><b>The worked day under device_plugin</b>: the time-sliced GPU is counted in slots "
            "(<code>nvidia.com/gpu.shared</code> or a time-sliced full-size MIG instance), which the device "
            "plugin enforces; a workload that needs whole GPUs cannot borrow it. At 13:00 the fine-tune waits "
            "in its team's queue and at 19:00 it keeps waiting: the notebooks' GPU never becomes a whole GPU. "
            "Use the dra backend for the story as told.</li>")
    return "<ul class=\"enforcement\">%s</ul>" % "".join(items)


# The page itself (type, headings, tables, legends, print): the assessment page uses it too.
PAGE_CSS = """
:root { --ink: #1b1f24; --muted: #5b6470; --line: #d6dae0; --paper: #ffffff; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 24px; font: 14px/1.45 system-ui, -apple-system,
  "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); background: var(--paper); }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 15px; margin: 16px 0 6px; }
.muted { color: var(--muted); font-weight: normal; }
.meta span { margin-right: 18px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { display: inline-block; width: 14px; height: 14px; border: 1px solid #0003;
  vertical-align: -2px; margin-right: 6px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f7; }
.warnings li { margin: 4px 0; } .warnings { color: #7a4100; }
code { font: 12px "DejaVu Sans Mono", ui-monospace, monospace; }
@media print {
  @page { size: A4 landscape; margin: 12mm; }
  body { max-width: none; padding: 0; font-size: 11px; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2 { break-after: avoid; page-break-after: avoid; }
  table { break-inside: avoid; }
}
"""

_CSS = PAGE_CSS + """
.swatch.hatched { background: repeating-linear-gradient(45deg, #777 0 2px, #fff 2px 6px); }
.swatch.mig { background: #eef0f3; border: 1px dashed #8a929c; }
.swatch.idle { background: repeating-linear-gradient(45deg, #d58a00 0 2px, #fff4e0 2px 6px); }
.swatch.unusable { background: repeating-linear-gradient(-45deg, #c0504d 0 2px, #eef0f3 2px 7px); }
.share-bar { display: block; height: 6px; margin-top: 3px; background: #eef0f3; }
.share-bar span { display: block; height: 6px; }
.stamp { color: var(--muted); margin: 0 0 4px; } .stamp span { margin-right: 18px; }
svg.gpus { display: block; max-width: 100%; height: auto; }
svg text { font-family: "DejaVu Sans", system-ui, sans-serif; }
.gpu-label { font-size: 13px; font-weight: 600; fill: var(--ink); }
.gpu-sub { font-size: 11px; fill: var(--muted); }
.bar-text { font-size: 13px; font-weight: 600; }
.bar-text.boxed { fill: #000; }
.label-chip { fill: #fff; stroke: #0006; stroke-width: 1; }
.gauge-text { font-size: 11px; fill: var(--muted); } .gauge-text.stranded { fill: #8a3b00; font-weight: 600; }
.compute-cell { stroke: #0005; stroke-width: 1; }
.mig-text { font-size: 11px; font-weight: 600; } .mig-sub { font-size: 10px; }
.mig-free { fill: #eef0f3; stroke: #8a929c; stroke-dasharray: 4 3; } .mig-free.stranded { fill: url(#unusable); }
.unit-divider { stroke: #c3c8cf; stroke-width: 1; }
.replica-divider { stroke: #ffffff; stroke-width: 2; stroke-dasharray: 4 3; }
.bar.whole, .bar.shared { stroke: #0004; }
td:first-child, td[data-share] { white-space: nowrap; }
.node { break-inside: avoid; page-break-inside: avoid; }
@media print {
  details > *:not(summary) { display: block; } details summary { display: none; }
  .node { break-inside: avoid; }
}
"""


STAMP_FIELDS = ("inventory", "date", "version")


def stamp_line(stamp: Optional[Dict[str, Any]]) -> str:
    """'Inventory inventories/example · planned 2026-12-03 12:00 UTC · gpushare.cluster 0.1.0' ('' without a stamp)."""
    if not stamp:
        return ""
    parts = []
    if stamp.get("inventory"):
        parts.append("Inventory %s" % stamp["inventory"])
    if stamp.get("date"):
        parts.append("planned %s" % stamp["date"])
    if stamp.get("version"):
        parts.append("gpushare.cluster %s" % stamp["version"])
    return " · ".join(parts)


def _stamp_html(stamp: Optional[Dict[str, Any]]) -> str:
    if not stamp:
        return ""
    return ('<p class="stamp" data-stamp-inventory="%s" data-stamp-date="%s" data-stamp-version="%s">%s</p>'
            % (_esc(stamp.get("inventory", "")), _esc(stamp.get("date", "")), _esc(stamp.get("version", "")),
               "".join("<span>%s</span>" % _esc(part) for part in stamp_line(stamp).split(" · "))))


def render_html(plan: Dict[str, Any], title: str = "GPU sharing plan", appendix: str = "",
                stamp: Optional[Dict[str, Any]] = None, changes: Optional[Dict[str, Any]] = None) -> str:
    """Render the plan as one self-contained HTML document (inline CSS and SVG).

    ``appendix`` is HTML added at the end (the Rehearsal section, rehearsal_report);
    ``stamp`` (``inventory``, ``date``, ``version``) says under the title what was planned,
    when, and by which collection version; ``changes`` (plan_changes.compare) puts the Changes
    section first."""
    if not isinstance(plan, dict):
        raise ValueError("plan: must be a mapping, got %s" % type(plan).__name__)
    nodes = _checked_nodes(plan)
    teams = _team_order(plan, nodes)
    colours = team_colours(teams)
    total_gpus = sum(len(gpus) for _host, gpus in nodes)
    total_mig = sum(len(gpu.get("instances") or []) for _host, gpus in nodes for gpu in gpus if gpu["use"] == "mig")
    legend = "".join('<li data-team="%s"><span class="swatch" style="background:%s"></span>%s</li>'
                     % (_esc(team), colours[team], _esc(team)) for team in teams)
    legend += ('<li><span class="swatch hatched"></span>time-sliced (dashes: replicas)</li>'
               '<li><span class="swatch mig"></span>MIG: free slices; boxes are instances at their placement</li>'
               '<li><span class="swatch idle"></span>MIG compute slices left idle</li>'
               '<li><span class="swatch unusable"></span>MIG memory no instance can use</li>')
    warnings = plan.get("warnings") or []
    warning_html = ("<ul class=\"warnings\">%s</ul>" % "".join("<li>%s</li>" % _esc(w) for w in warnings)
                    if warnings else "<p>No warnings.</p>")
    sections = "".join(_node_section(host, plan["nodes"][host], gpus, colours) for host, gpus in nodes)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>%s</title><style>%s</style></head><body>"
        "<h1>%s</h1>%s<p class=\"meta\"><span>Kubernetes <b>%s</b> (%s)</span><span>GPU backend <b>%s</b></span>"
        "<span>Cohort <b>%s</b></span><span data-total-gpus=\"%d\"><b>%d</b> GPUs on <b>%d</b> node%s</span>"
        "<span data-total-mig-instances=\"%d\"><b>%d</b> MIG instances</span></p>"
        "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
        "<pattern id=\"hatch\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"8\" fill=\"#ffffff\" fill-opacity=\"0.45\"/>"
        "</pattern><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fff4e0\"/>"
        "<rect width=\"2\" height=\"6\" fill=\"#d58a00\"/></pattern>"
        "<pattern id=\"unusable\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(-45)\"><rect width=\"8\" height=\"8\" fill=\"#eef0f3\"/>"
        "<rect width=\"2\" height=\"8\" fill=\"#c0504d\" fill-opacity=\"0.55\"/></pattern></defs></svg>%s"
        "<h2>Nodes</h2><ul class=\"legend\">%s</ul>%s"
        "<h2>Teams</h2>%s"
        "<h2>What each team gets, lends and gets back</h2>%s"
        "<h2>Warnings</h2>%s"
        "<h2>Who enforces what</h2>%s%s</body></html>\n"
        % (_esc(title), _CSS, _esc(title), _stamp_html(stamp), _esc(plan.get("kubernetes_version", "")),
           _esc(plan.get("distribution", "")),
           _esc(plan.get("backend", "")), _esc(plan.get("cohort", "")), total_gpus, total_gpus, len(nodes),
           "" if len(nodes) == 1 else "s", total_mig, total_mig,
           plan_changes_report.render_section(changes) if changes else "", legend, sections,
           _team_table(plan, teams, colours, nodes), _team_stories(plan, teams, nodes), warning_html,
           _enforcement(plan, nodes), appendix)
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row)]
    line = "  ".join("%-*s" % (width, header) for width, header in zip(widths, headers)).rstrip()
    rule = "  ".join("-" * width for width in widths)
    body = ["  ".join("%-*s" % (width, cell) for width, cell in zip(widths, row)).rstrip() for row in rows]
    return "\n".join([line, rule] + body)


def _gpu_detail(gpu: Dict[str, Any]) -> str:
    if gpu["use"] == "shared":
        return "%d replicas" % gpu["replicas"]
    if gpu["use"] == "mig":
        return " ".join("%s@%d%s" % (inst["profile"], inst["start"], "(%s)" % inst["name"] if inst.get("name") else "")
                        for inst in gpu["instances"])
    return ""


def summary_table(plan: Dict[str, Any], max_rows: Optional[int] = None, stamp: Optional[Dict[str, Any]] = None,
                  warnings_shown: Optional[int] = None) -> str:
    """The plan as plain-text tables: one row per GPU, one per team, then the warnings.

    ``max_rows`` caps the GPU rows and the warnings shown (for a terminal); the count of
    what was left out is said in their place. ``stamp`` as for :func:`render_html`.
    ``warnings_shown``: how many warnings the caller has already printed (as Ansible
    warnings); they are then counted here, not printed a second time.
    """
    if not isinstance(plan, dict):
        raise ValueError("plan: must be a mapping, got %s" % type(plan).__name__)
    nodes = _checked_nodes(plan)
    teams = _team_order(plan, nodes)
    terms = resource_terms(nodes, plan.get("backend"))
    gpu_rows = [
        [host, str(gpu["index"]), str(gpu.get("model", "")), gpu["use"], str(gpu.get("team") or "-"),
         _gpu_detail(gpu), quota_text(gpu.get("resources"), terms)]
        for host, gpus in nodes for gpu in gpus
    ]
    owned = team_gpus(nodes)
    total_gpus = len(gpu_rows)
    team_rows = []
    for team in teams:
        info = (plan.get("teams") or {}).get(team) or {}
        team_rows.append([team, str(info.get("priority", "-")), login_group_text(info), share_text(len(owned.get(team, [])), total_gpus),
                          quota_text(info.get("capacity"), terms), limit_text(info.get("borrowing_limit"), terms),
                          limit_text(info.get("lending_limit"), terms), str(info.get("reclaim", "-"))])
    hidden_gpus = 0
    if max_rows is not None and total_gpus > max_rows:
        hidden_gpus = total_gpus - max_rows
        gpu_rows = gpu_rows[:max_rows]
    parts = [
        "Plan: Kubernetes %s (%s), backend %s, %d GPU%s on %d node%s, %d team%s"
        % (plan.get("kubernetes_version", "?"), plan.get("distribution", "?"), plan.get("backend", "?"),
           total_gpus, "" if total_gpus == 1 else "s", len(nodes), "" if len(nodes) == 1 else "s",
           len(teams), "" if len(teams) == 1 else "s"),
    ]
    if stamp:
        parts.append(stamp_line(stamp))
    parts += [
        "",
        _table(["node", "gpu", "model", "use", "team", "layout", "counts as"], gpu_rows),
    ]
    if hidden_gpus:
        parts.append("... and %d more GPUs (summary.txt and index.html list them all)" % hidden_gpus)
    parts += [
        "",
        _table(["team", "priority", "login group", "share", "nominal quota", "borrows", "lends", "reclaim"], team_rows),
    ]
    warnings = plan.get("warnings") or []
    if warnings_shown is not None and warnings:
        rest = len(warnings) - min(warnings_shown, len(warnings))
        parts += ["", "Warnings: %d, printed above%s" % (
            len(warnings), " (the first %d; summary.txt and index.html list them all)" % warnings_shown if rest else "")]
        return "\n".join(parts) + "\n"
    shown = warnings if max_rows is None else warnings[:max_rows]
    parts += ["", "Warnings:" if warnings else "Warnings: none"] + ["- %s" % w for w in shown]
    if len(shown) < len(warnings):
        parts.append("... and %d more warnings (summary.txt and index.html list them all)" % (len(warnings) - len(shown)))
    return "\n".join(parts) + "\n"
