# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan.yml -e gpushare_plan_compare=<plan A's directory> on inventory B, for each change of a
running cluster's life: changes.json and the Changes section of index.html say what differs;
and site.yml refuses a disruptive change before any host is touched unless confirmed."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.changes import plan_changes

import runner  # tests/support


EXAMPLE = runner.REPO_ROOT / "inventories" / "example"
GROUP_VARS = Path("group_vars") / "all" / "gpushare.yml"
WHOLE = "gpushare.io/rtx-pro-6000"


def write_inventory(path: Path, edit=None) -> Path:
    """The example inventory, changed by ``edit(teams, hosts)`` (hosts: host -> gpushare_gpus)."""
    shutil.copytree(EXAMPLE, path)
    settings = yaml.safe_load((path / GROUP_VARS).read_text(encoding="utf-8"))
    hosts = {"gpu1": yaml.safe_load((path / "host_vars" / "gpu1.yml").read_text(encoding="utf-8"))["gpushare_gpus"]}
    if edit:
        edit(settings["gpushare_teams"], hosts)
    (path / GROUP_VARS).write_text(yaml.safe_dump(settings), encoding="utf-8")
    for host, gpus in hosts.items():
        (path / "host_vars" / ("%s.yml" % host)).write_text(yaml.safe_dump({"gpushare_gpus": gpus}), encoding="utf-8")
    inventory = yaml.safe_load((path / "hosts.yml").read_text(encoding="utf-8"))
    inventory["all"]["children"]["workers"]["hosts"] = {host: None for host in hosts}
    (path / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    return path


def remove_team(teams, hosts):
    teams[:] = [team for team in teams if team["name"] != "training"]
    hosts["gpu1"][3]["team"] = "data"


def add_team(teams, hosts):
    teams.append({"name": "research", "namespaces": ["research"], "group": "research", "priority": 50})
    hosts["gpu2"] = [{"index": 0, "model": "RTX-PRO-6000", "team": "research", "use": "whole"}]


def change_mig(_teams, hosts):
    hosts["gpu1"][1]["mig"] = {"profiles": {"2g.48gb": 2}}


def move_gpu(_teams, hosts):
    hosts["gpu1"][0]["team"] = "training"


def shared_made_whole(_teams, hosts):
    hosts["gpu1"][2] = {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "whole"}


def with_gpu2(_teams, hosts):
    hosts["gpu2"] = [{"index": 0, "model": "RTX-PRO-6000", "team": "training", "use": "whole"}]


class _Sections(HTMLParser):
    """The data-* attributes of every element inside the Changes section."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.elements = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if attributes.get("id") == "changes":
            self.depth = 1
        elif self.depth and tag == "section":
            self.depth += 1
        if self.depth:
            self.elements.append((tag, {k: v for k, v in attributes.items() if k.startswith("data-")}))

    def handle_endtag(self, tag):
        if self.depth and tag == "section":
            self.depth -= 1


def changes_section(html):
    parser = _Sections()
    parser.feed(html)
    return [attrs for _tag, attrs in parser.elements if attrs]


# case -> (edit for A, edit for B, what the changes must say)
CASES = {
    "team removed": (None, remove_team, lambda c: (
        {"kind": "ClusterQueue", "name": "training", "namespace": "", "group": "kueue.x-k8s.io"}
        in c["objects"]["delete"] and c["disruptive"][0]["kind"] == "team_removed")),
    "team added": (None, add_team, lambda c: (
        {"kind": "ClusterQueue", "name": "research", "namespace": "", "group": "kueue.x-k8s.io"}
        in c["objects"]["create"] and c["disruptive"] == [] and c["nodes"][0]["change"] == "added")),
    "MIG layout changed": (None, change_mig, lambda c: (
        c["nodes"][0]["drain"] and "drain" in [r["kind"] for r in c["disruptive"]])),
    "GPU moved between teams": (None, move_gpu, lambda c: (
        [t["quota"] for t in c["teams"]] == [{WHOLE: [1, None]}, {WHOLE: [1, 2]}])),
    "shared GPU made whole": (None, shared_made_whole, lambda c: (
        {"kind": "ResourceClaim", "name": "shared-gpu1-gpu2", "namespace": "data", "group": "resource.k8s.io"}
        in c["objects"]["delete"])),
    "node removed": (with_gpu2, None, lambda c: (
        [(n["node"], n["change"]) for n in c["nodes"]] == [("gpu2", "removed")])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_compare_with_a_previous_plan_directory(tmp_path, case):
    edit_a, edit_b, expected = CASES[case]
    dir_a, dir_b = tmp_path / "plan-a", tmp_path / "plan-b"
    result = runner.run_plan_playbook(write_inventory(tmp_path / "inv-a", edit_a), dir_a)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not (dir_a / "changes.json").exists()
    result = runner.run_plan_playbook(write_inventory(tmp_path / "inv-b", edit_b), dir_b,
                                      "-e", "gpushare_plan_compare=%s" % dir_a)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    text = (dir_b / "changes.json").read_text(encoding="utf-8")
    changes = json.loads(text)
    plan_a = json.loads((dir_a / "plan.json").read_text(encoding="utf-8"))
    plan_b = json.loads((dir_b / "plan.json").read_text(encoding="utf-8"))
    # The file is the comparison of the two plan.json files, written sorted (byte-stable).
    again = plan_changes.compare(plan_changes.plan_state(plan_a, "plan directory %s" % dir_a), plan_b)
    assert text == json.dumps(again, indent=2, sort_keys=True) + "\n"
    assert changes["compared_with"] == "plan directory %s" % dir_a
    assert expected(changes), json.dumps(changes, indent=1)

    # The Changes section says the same, first in the page.
    html = (dir_b / "index.html").read_text(encoding="utf-8")
    assert html.index('id="changes"') < html.index("<h2>Nodes</h2>")
    elements = changes_section(html)
    counts = {attrs["data-count"]: attrs for attrs in elements if "data-count" in attrs}
    assert sorted(counts) == ["create", "delete", "update"]
    rows = sorted((a["data-change"], a["data-kind"], a["data-namespace"], a["data-name"])
                  for a in elements if "data-kind" in a)
    assert rows == sorted((verb, item["kind"], item["namespace"], item["name"])
                          for verb in ("create", "update", "delete") for item in changes["objects"][verb])
    assert sorted(a["data-node"] for a in elements if "data-node" in a) == [n["node"] for n in changes["nodes"]]
    assert sorted(a["data-team"] for a in elements if "data-team" in a) == [t["team"] for t in changes["teams"]]
    disruptive = [a["data-disruptive"] for a in elements if "data-disruptive" in a]
    assert disruptive == ([r["kind"] for r in changes["disruptive"]] or ["none"])
    # The run prints the summary.
    for line in plan_changes.summary_lines(changes):
        assert line.strip() in result.stdout


def test_without_the_option_the_report_has_no_changes(tmp_path):
    plan_dir = tmp_path / "plan"
    result = runner.run_plan_playbook(write_inventory(tmp_path / "inv"), plan_dir)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not (plan_dir / "changes.json").exists()
    assert 'id="changes"' not in (plan_dir / "index.html").read_text(encoding="utf-8")
    assert "Changes against" not in result.stdout


def test_comparing_with_the_plan_directory_itself_and_a_missing_one(tmp_path):
    plan_dir = tmp_path / "plan"
    inventory = write_inventory(tmp_path / "inv")
    assert runner.run_plan_playbook(inventory, plan_dir).returncode == 0
    # The directory is read before it is replaced: the same inventory changes nothing.
    result = runner.run_plan_playbook(inventory, plan_dir, "-e", "gpushare_plan_compare=%s" % plan_dir)
    assert result.returncode == 0, result.stdout[-3000:]
    changes = json.loads((plan_dir / "changes.json").read_text(encoding="utf-8"))
    assert changes["objects"] == {"create": [], "update": [], "delete": []} and changes["disruptive"] == []
    missing = tmp_path / "nowhere"
    result = runner.run_plan_playbook(inventory, plan_dir, "-e", "gpushare_plan_compare=%s" % missing)
    assert result.returncode != 0
    assert "gpushare_plan_compare: %s is neither `cluster` nor a plan directory written by plan.yml" % missing \
        in result.stdout


# --- site.yml: the summary and the refusal before any host is touched -----------------------

@pytest.fixture()
def local_site(tmp_path):
    """Inventory B (a team removed) with its server run locally and a become that records and
    fails, and plan A's directory to compare with."""
    dir_a = tmp_path / "plan-a"
    assert runner.run_plan_playbook(write_inventory(tmp_path / "inv-a"), dir_a).returncode == 0
    inventory = write_inventory(tmp_path / "inv-b", remove_team)
    return inventory, dir_a, runner.run_locally_with_recorded_become(inventory, tmp_path)


def _site(inventory, dir_a, *extra):
    return runner.ansible_playbook("-i", str(inventory), str(runner.PLAYBOOKS / "site.yml"), *runner.DEMO_VAULT_ARGS,
                                   "-e", "gpushare_discover=false", "-e", "gpushare_plan_compare=%s" % dir_a, *extra)


def test_site_refuses_a_disruptive_change_before_any_host_is_touched(local_site):
    inventory, dir_a, log = local_site
    result = _site(inventory, dir_a)
    assert result.returncode != 0
    assert "team training is removed" in result.stdout
    assert "gpushare_confirm_disruptive=true" in result.stdout
    assert "  delete ClusterQueue training" in result.stdout
    assert "PLAY [Prepare the hosts]" not in result.stdout
    assert not log.exists()


def test_site_goes_on_once_the_disruptive_change_is_confirmed(local_site):
    inventory, dir_a, log = local_site
    result = _site(inventory, dir_a, "-e", "gpushare_confirm_disruptive=true")
    # Past the comparison, the host layer's first become task is the first thing that fails.
    assert "team training is removed" in result.stdout
    assert "PLAY [Prepare the hosts]" in result.stdout
    assert "BECOME-SUCCESS" in log.read_text()


def test_site_refuses_only_for_the_layers_it_runs(local_site):
    inventory, dir_a, log = local_site
    # Removing a team is the queues layer's change: the host layer alone goes ahead.
    result = _site(inventory, dir_a, "--tags", "prepare_hosts")
    assert "team training is removed" in result.stdout
    assert "Refusing a disruptive change" not in result.stdout
    assert "PLAY [Prepare the hosts]" in result.stdout
    assert "BECOME-SUCCESS" in log.read_text()


def test_check_mode_says_what_a_real_run_would_refuse(local_site):
    inventory, dir_a, _log = local_site
    result = _site(inventory, dir_a, "--check", "--tags", "queues", "-e", "gpushare_render_only=true",
                   "-e", "gpushare_render_dir=%s" % (inventory.parent / "render"))
    assert result.returncode == 0, result.stdout[-4000:]
    assert "a real run needs -e gpushare_confirm_disruptive=true for:" in result.stdout
    assert "team training is removed" in result.stdout
