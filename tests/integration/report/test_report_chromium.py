# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open the plan report in headless Chromium: it loads without console errors, draws
exactly the inventory's GPUs and the plan's MIG instances, every label fits its box and
reads on it (measured in the browser), stranded MIG slices are drawn, and it prints.

The reports are built from the bundled example and multinode inventories by plan.yml with
the real planner, as `make demo` does. A screenshot and a PDF print of each are saved
under build/test-artifacts/.

The assessment page (assessment.html) is opened once, offline: it fetches nothing and shows
the capacity answer and every GPU's heat map.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

import runner  # tests/support
from assess_worlds import WORKED_DAY_TODAY, WORKED_DAY_USERS, assess, worked_day
from ansible_collections.gpushare.cluster.plugins.module_utils.assess import files as assess_files

REPO_ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO_ROOT / "build" / "test-artifacts"
INVENTORIES = REPO_ROOT / "inventories"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0", "--window-size=1200,1400",
]

# Injected before anything else in a copy of the report: records script errors, failed
# loads and console.error calls, and what the page laid out, into attributes of <html>
# that --dump-dom then shows.
PROBE = """<script>
(function () {
  var errors = [];
  var root = document.documentElement;
  function record(text) { errors.push(String(text)); root.setAttribute('data-probe-errors', JSON.stringify(errors)); }
  window.addEventListener('error', function (e) {
    record(e.message || ('failed to load ' + ((e.target && (e.target.src || e.target.href)) || '?')));
  }, true);
  var consoleError = console.error;
  console.error = function () { record(Array.prototype.join.call(arguments, ' ')); consoleError.apply(console, arguments); };
  window.addEventListener('load', function () {
    var drawn = [];
    document.querySelectorAll('g.gpu').forEach(function (g) {
      var box = g.querySelector('rect').getBoundingClientRect();
      drawn.push({host: g.dataset.host, index: Number(g.dataset.gpuIndex), use: g.dataset.use,
                  team: g.dataset.team, width: box.width, height: box.height});
    });
    var instances = [];
    document.querySelectorAll('g.mig-instance').forEach(function (g) {
      var box = g.querySelector('rect').getBoundingClientRect();
      instances.push({host: g.dataset.host, index: Number(g.dataset.gpuIndex), profile: g.dataset.profile,
                      start: Number(g.dataset.start), size: Number(g.dataset.size), width: box.width});
    });
    // Every text of the GPU pictures with the box it is drawn on (the MIG instance, the
    // whole bar, the chip of a time-sliced bar), as laid out, and what is painted under it.
    var texts = [];
    document.querySelectorAll('svg.gpus text').forEach(function (t) {
      var g = t.closest('g.gpu');
      var cls = t.getAttribute('class') || '';
      var instance = t.closest('g.mig-instance');
      var box = instance ? instance.querySelector('rect') : cls.indexOf('boxed') >= 0 ? g.querySelector('rect.label-chip')
        : cls.indexOf('bar-text') >= 0 ? g.querySelector('rect.bar') : null;
      var tb = t.getBoundingClientRect();
      var entry = {cls: cls, text: t.textContent, host: g.dataset.host, index: Number(g.dataset.gpuIndex),
                   left: tb.left, right: tb.right, top: tb.top, bottom: tb.bottom, fill: getComputedStyle(t).fill,
                   svgRight: t.closest('svg').getBoundingClientRect().right,
                   barLeft: g.querySelector('rect.bar').getBoundingClientRect().left};
      if (box) {
        var bb = box.getBoundingClientRect();
        entry.box = {left: bb.left, right: bb.right, top: bb.top, bottom: bb.bottom,
                     fill: getComputedStyle(box).fill, opacity: getComputedStyle(box).fillOpacity};
        var y = (tb.top + tb.bottom) / 2;
        entry.onBox = [tb.left + 1, (tb.left + tb.right) / 2, tb.right - 1].map(function (x) {
          var under = document.elementsFromPoint(x, y).filter(function (e) { return e.tagName.toLowerCase() !== 'text'; });
          return under[0] === box;
        });
      }
      texts.push(entry);
    });
    var usage = [];
    document.querySelectorAll('g.mig-usage').forEach(function (g) {
      usage.push({host: g.dataset.host, index: Number(g.dataset.gpuIndex), strandedCompute: Number(g.dataset.strandedCompute),
                  strandedMemory: Number(g.dataset.strandedMemory),
                  idleCells: g.querySelectorAll('rect.compute-cell.idle').length,
                  usedCells: g.querySelectorAll('rect.compute-cell.used').length,
                  computeUsed: Number(g.dataset.computeUsed), computeTotal: Number(g.dataset.computeTotal)});
    });
    root.setAttribute('data-probe-texts', JSON.stringify(texts));
    root.setAttribute('data-probe-usage', JSON.stringify(usage));
    root.setAttribute('data-probe-gpus', JSON.stringify(drawn));
    root.setAttribute('data-probe-instances', JSON.stringify(instances));
    root.setAttribute('data-probe-loaded', 'yes');
    root.setAttribute('data-probe-errors', JSON.stringify(errors));
  });
})();
</script>"""

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="headless Chromium not found at %s (Debian package `chromium`, or set CHROMIUM)" % CHROMIUM,
)


def _inventory_gpus(inventory):
    """(host, index, use, team) of every GPU the inventory declares, shorthand expanded."""
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text(encoding="utf-8"))
    names = set()
    for group in hosts["all"]["children"].values():
        names.update((group.get("hosts") or {}).keys())
    gpus = []
    for host in sorted(names):
        host_vars = inventory / "host_vars" / ("%s.yml" % host)
        if not host_vars.exists():
            continue
        next_index = 0
        for entry in yaml.safe_load(host_vars.read_text(encoding="utf-8")).get("gpushare_gpus", []):
            if "count" in entry:
                for offset in range(entry["count"]):
                    gpus.append((host, next_index + offset, entry["use"], entry["team"]))
                next_index += entry["count"]
            else:
                gpus.append((host, entry["index"], entry["use"], entry["team"]))
                next_index = entry["index"] + 1
    return gpus


def _plan_with_playbook(inventory, directory):
    """Run plan.yml on the inventory (the `make demo` path) into directory."""
    result = runner.run_plan_playbook(inventory, directory, "-e", "gpushare_plan_render_addons=false")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((directory / "plan.json").read_text(encoding="utf-8"))


class _Root(HTMLParser):
    def __init__(self):
        super().__init__()
        self.attrs = None

    def handle_starttag(self, tag, attrs):
        if tag == "html" and self.attrs is None:
            self.attrs = dict(attrs)


def _chromium(tmp_path, *args):
    profile = tmp_path / "chromium-profile"
    command = [CHROMIUM] + CHROMIUM_FLAGS + ["--user-data-dir=%s" % profile] + list(args)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, "chromium failed (%d): %s" % (result.returncode, result.stderr[-2000:])
    return result


def _console_errors(stderr):
    """Console messages and uncaught errors the page logged, not Chromium's own noise."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def _long_names(directory):
    """The example inventory with MIG needs whose names are longer than their boxes are wide."""
    inventory = directory / "long-names"
    shutil.copytree(INVENTORIES / "example", inventory)
    host_vars = inventory / "host_vars" / "gpu1.yml"
    text = host_vars.read_text(encoding="utf-8")
    for short in ("embeddings", "classifier", "speech-to-text"):
        text = text.replace("name: %s," % short, "name: %s-multilingual-large-v2," % short)
    host_vars.write_text(text, encoding="utf-8")
    return inventory


@pytest.fixture(scope="module", params=["example", "multinode", "one-control-plane", "long-names"])
def report(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp("report")
    inventory = (_long_names(tmp_path_factory.mktemp("inventory")) if request.param == "long-names"
                 else INVENTORIES / request.param)
    index = directory / "index.html"
    plan = _plan_with_playbook(inventory, directory)
    return {"plan": plan, "index": index, "dir": directory, "inventory": inventory, "name": request.param}


def _probe(report, tmp_path):
    """The report opened with the probe: (attributes of <html> it set, Chromium's result)."""
    document = report["index"].read_text(encoding="utf-8")
    probe = report["dir"] / "probe.html"
    probe.write_text(document.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    # Tall enough for every node to be inside the window: elementsFromPoint sees only that.
    result = _chromium(tmp_path, "--dump-dom", "--window-size=1200,9000", probe.as_uri())
    parser = _Root()
    parser.feed(result.stdout)
    return parser.attrs or {}, result


def _rgb(css):
    """'rgb(0, 114, 178)' -> '#0072B2'."""
    match = re.fullmatch(r"rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)", css.strip())
    assert match, css
    assert match.group(4) in (None, "1"), "translucent: %s" % css
    return "#%02X%02X%02X" % tuple(int(match.group(i)) for i in (1, 2, 3))


def _contrast(first, second):
    def luminance(colour):
        channels = []
        for i in (1, 3, 5):
            value = int(colour[i:i + 2], 16) / 255.0
            channels.append(value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4)
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_every_label_fits_its_box_and_reads_on_it(report, tmp_path):
    root, _result = _probe(report, tmp_path)
    texts = json.loads(root["data-probe-texts"])
    assert texts
    kinds = {entry["cls"] for entry in texts}
    assert {"gpu-label", "gpu-sub", "bar-text", "mig-text", "mig-sub"} <= kinds, kinds
    for entry in texts:
        where = "%s GPU %s %s %r" % (entry["host"], entry["index"], entry["cls"], entry["text"])
        if "box" not in entry:
            # Labels left of the bars end before the bar; the MIG gauge text inside the picture.
            limit = entry["svgRight"] if entry["cls"].startswith("gauge-text") else entry["barLeft"] - 2
            assert entry["right"] <= limit + 0.5, (where, entry["right"], limit)
            continue
        box = entry["box"]
        assert box["left"] - 0.5 <= entry["left"] and entry["right"] <= box["right"] + 0.5, (where, entry, box)
        assert box["top"] - 0.5 <= entry["top"] and entry["bottom"] <= box["bottom"] + 0.5, (where, entry, box)
        # Nothing but its own box is painted under the text: no hatching, no replica divider.
        assert all(entry["onBox"]), (where, entry["onBox"])
        assert float(box["opacity"]) == 1.0, where
        ratio = _contrast(_rgb(entry["fill"]), _rgb(box["fill"]))
        assert ratio >= 4.5, (where, entry["fill"], box["fill"], ratio)
    if report["name"] == "long-names":
        assert any(entry["text"].endswith("…") for entry in texts if entry["cls"] == "mig-text"), "nothing was cut"
    shared = [entry for entry in texts if "boxed" in entry["cls"]]
    assert all("box" in entry for entry in shared), "text of a time-sliced bar drawn without its chip"
    assert len(shared) == sum(1 for _h, _i, use, _t in _inventory_gpus(report["inventory"]) if use == "shared")


def test_stranded_mig_slices_are_drawn_as_the_plan_warns(report, tmp_path):
    root, _result = _probe(report, tmp_path)
    usage = {(u["host"], u["index"]): u for u in json.loads(root["data-probe-usage"])}
    mig = [(host, gpu["index"]) for host, node in report["plan"]["nodes"].items() for gpu in node["gpus"]
           if gpu["use"] == "mig"]
    assert sorted(usage) == sorted(mig)
    for key, drawn in usage.items():
        assert drawn["usedCells"] == drawn["computeUsed"], key
        assert drawn["idleCells"] == drawn["computeTotal"] - drawn["computeUsed"], key
        warned = [w for w in report["plan"]["warnings"] if re.search(r"\b%s\b.*GPU %d \(" % key, w)]
        assert bool(drawn["strandedCompute"]) == any("compute slices stay idle" in w for w in warned), (key, warned)
        assert bool(drawn["strandedMemory"]) == any("memory slices stay unused" in w for w in warned), (key, warned)


def test_report_loads_without_errors_and_draws_the_inventory(report, tmp_path):
    root, result = _probe(report, tmp_path)
    assert root.get("data-probe-loaded") == "yes", "the page did not finish loading"
    assert json.loads(root["data-probe-errors"]) == []
    assert _console_errors(result.stderr) == []

    drawn = json.loads(root["data-probe-gpus"])
    assert sorted((g["host"], g["index"], g["use"], g["team"]) for g in drawn) == sorted(_inventory_gpus(report["inventory"]))
    assert all(g["width"] > 100 and g["height"] > 10 for g in drawn), drawn

    expected = sorted(
        (host, gpu["index"], inst["profile"], inst["start"], inst["size"])
        for host, node in report["plan"]["nodes"].items()
        for gpu in node["gpus"] if gpu["use"] == "mig"
        for inst in gpu["instances"]
    )
    instances = json.loads(root["data-probe-instances"])
    assert sorted((i["host"], i["index"], i["profile"], i["start"], i["size"]) for i in instances) == expected
    assert expected, "every inventory here cuts GPUs with MIG"
    # Laid out in proportion: instances of equal size get equal widths on the page.
    by_size = {}
    for inst in instances:
        by_size.setdefault((inst["host"], inst["index"], inst["size"]), set()).add(round(inst["width"], 1))
    assert all(len(widths) == 1 for widths in by_size.values()), by_size


def test_screenshot_and_print_are_saved_as_artifacts(report, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / ("plan-report-%s.png" % report["name"])
    pdf = ARTIFACTS / ("plan-report-%s.pdf" % report["name"])
    for stale in (screenshot, pdf):
        if stale.exists():
            stale.unlink()
    height = 1400 if report["name"] == "example" else 2600
    shot = _chromium(tmp_path, "--screenshot=%s" % screenshot, "--window-size=1200,%d" % height, report["index"].as_uri())
    assert _console_errors(shot.stderr) == []
    printed = _chromium(tmp_path, "--print-to-pdf=%s" % pdf, "--no-pdf-header-footer", report["index"].as_uri())
    assert _console_errors(printed.stderr) == []
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    shutil.copy(report["index"], ARTIFACTS / ("plan-report-%s.html" % report["name"]))


# What the assessment page shows once laid out: the resources it fetched (none may be), the
# capacity answer's rendered text and box, and each heat map's cells with their painted colour.
ASSESSMENT_PROBE = """<script>
window.addEventListener('load', function () {
  var root = document.documentElement;
  var answer = document.querySelector('.answer').getBoundingClientRect();
  var maps = [];
  document.querySelectorAll('section.gpu-heat').forEach(function (section) {
    var cells = section.querySelectorAll('td[data-hour]');
    var box = section.querySelector('table.heat').getBoundingClientRect();
    var busy = section.querySelector('td[data-weekday="Mon"][data-hour="14"]');
    maps.push({host: section.dataset.host, index: Number(section.dataset.gpuIndex), cells: cells.length,
               width: box.width, height: box.height, mon14: busy ? busy.innerText : null,
               mon14Colour: busy ? getComputedStyle(busy).backgroundColor : null});
  });
  root.setAttribute('data-probe-resources', JSON.stringify(performance.getEntriesByType('resource').map(
    function (entry) { return entry.name; })));
  root.setAttribute('data-probe-answer', JSON.stringify({height: answer.height, width: answer.width}));
  root.setAttribute('data-probe-text', document.body.innerText);
  root.setAttribute('data-probe-maps', JSON.stringify(maps));
  root.setAttribute('data-probe-loaded', 'yes');
});
</script>"""


def test_the_assessment_page_reads_offline(tmp_path):
    """One Chromium run, network closed (every host unresolvable, a dead proxy): about 7 s."""
    assessment = assess(worked_day(days=2), tmp_path, WORKED_DAY_TODAY, WORKED_DAY_USERS)
    dest = tmp_path / "assess"
    assess_files.publish(assessment, str(INVENTORIES / "example"), str(dest))
    page = dest / "assessment.html"
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>" + ASSESSMENT_PROBE, 1),
                     encoding="utf-8")
    result = _chromium(tmp_path, "--dump-dom", "--window-size=1200,4000", "--proxy-server=127.0.0.1:9",
                       "--host-resolver-rules=MAP * ~NOTFOUND", probe.as_uri())
    assert _console_errors(result.stderr) == []
    root = _Root()
    root.feed(result.stdout)
    shown = root.attrs or {}
    assert shown.get("data-probe-loaded") == "yes", "the page did not finish loading"
    assert json.loads(shown["data-probe-resources"]) == []
    capacity = assessment["capacity"]
    text = shown["data-probe-text"]
    assert "No card to add" in text and capacity["why"] in text
    answer = json.loads(shown["data-probe-answer"])
    assert answer["height"] > 10 and answer["width"] > 300
    maps = json.loads(shown["data-probe-maps"])
    assert [(m["host"], m["index"]) for m in maps] == [(gpu["host"], gpu["index"]) for gpu in assessment["gpus"]]
    for drawn in maps:
        assert drawn["cells"] == 7 * 24 and drawn["width"] > 500 and drawn["height"] > 100, drawn
    # GPU 3's fine-tune runs at 14:00 on Monday: its cell reads 100 on the darkest colour.
    training = maps[3]
    assert training["mon14"] == "100" and _rgb(training["mon14Colour"]) == "#08306B"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(page, ARTIFACTS / "assessment.html")
