# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open the plan report in headless Chromium: it loads without console errors, draws
exactly the inventory's GPUs and the plan's MIG instances, and prints.

The reports are built from the bundled example and multinode inventories by plan.yml with
the real planner, as `make demo` does. A screenshot and a PDF print of each are saved
under build/test-artifacts/.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

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
    spec = importlib.util.spec_from_file_location("gpushare_playbook_runner", REPO_ROOT / "tests" / "unit" / "playbooks" / "runner.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
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


@pytest.fixture(scope="module", params=["example", "multinode"])
def report(request, tmp_path_factory):
    inventory = INVENTORIES / request.param
    directory = tmp_path_factory.mktemp("report")
    index = directory / "index.html"
    plan = _plan_with_playbook(inventory, directory)
    return {"plan": plan, "index": index, "dir": directory, "inventory": inventory, "name": request.param}


def test_report_loads_without_errors_and_draws_the_inventory(report, tmp_path):
    document = report["index"].read_text(encoding="utf-8")
    probe = report["dir"] / "probe.html"
    probe.write_text(document.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    result = _chromium(tmp_path, "--dump-dom", probe.as_uri())

    parser = _Root()
    parser.feed(result.stdout)
    root = parser.attrs or {}
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
    assert expected, "both inventories cut GPUs with MIG"
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
