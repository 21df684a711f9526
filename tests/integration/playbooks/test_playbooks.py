# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks as users run them: syntax, layer order, and plan.yml end to end."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import runner  # tests/support


REPO_ROOT = runner.REPO_ROOT
PLAYBOOKS = runner.PLAYBOOKS
EXAMPLE = REPO_ROOT / "inventories" / "example"
MULTINODE = REPO_ROOT / "inventories" / "multinode"
VAULT_PASSWORD = MULTINODE / "vault-password.txt"

# The layers of site.yml, in the order docs/architecture.md gives; each is also its own playbook and tag.
LAYERS = ["prepare_hosts", "kubernetes", "gpu_stack", "queues", "monitoring"]


def _playbook_files():
    return sorted(path.name for path in PLAYBOOKS.glob("*.yml"))


def test_every_playbook_passes_syntax_check():
    playbooks = _playbook_files()
    assert {"site.yml", "plan.yml", "upgrade.yml", "reset.yml", "add_node.yml"} <= set(playbooks)
    result = runner.ansible_playbook("--syntax-check", "-i", str(MULTINODE), "--vault-password-file",
                                     str(VAULT_PASSWORD), *[str(PLAYBOOKS / name) for name in playbooks])
    assert result.returncode == 0, result.stdout + result.stderr
    for name in playbooks:
        assert "playbook: %s" % (PLAYBOOKS / name) in result.stdout


def test_site_lists_the_layers_in_order():
    site = yaml.safe_load((PLAYBOOKS / "site.yml").read_text(encoding="utf-8"))
    imported = [Path(entry["ansible.builtin.import_playbook"]).stem for entry in site]
    present = [layer for layer in LAYERS if (PLAYBOOKS / ("%s.yml" % layer)).exists()]
    assert imported == present

    result = runner.ansible_playbook("--list-tasks", "-i", str(MULTINODE), str(PLAYBOOKS / "site.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    plays = re.findall(r"^\s*play #\d+ \(([^)]*)\): (.*?)\s+TAGS: \[([^\]]*)\]", result.stdout, re.MULTILINE)
    assert plays, result.stdout
    # Every layer's plays carry its tag, and the tags come in the documented order.
    order = []
    for _hosts, _name, tags in plays:
        layer_tags = [tag.strip() for tag in tags.split(",") if tag.strip() in LAYERS]
        for tag in layer_tags:
            if not order or order[-1] != tag:
                order.append(tag)
    assert order == present
    # Preflight (the plan) comes before every play that touches a host.
    assert "preflight" in plays[0][2]


@pytest.mark.parametrize("layer, files", [
    ("gpu_stack", ["manifests/dra_driver/deviceclasses.yaml", "manifests/gpu_operator/node-labels.yaml",
                   "values/dra-driver-nvidia-gpu.yaml", "values/gpu-operator.yaml"]),
    ("queues", ["manifests/kueue/queues.yaml", "manifests/tenancy/admission.yaml", "values/kueue.yaml"]),
    ("monitoring", ["manifests/monitoring/prometheusrule.yaml", "values/kube-prometheus-stack.yaml"]),
])
def test_addon_layers_render_without_a_cluster(tmp_path, layer, files):
    """With gpushare_render_only the add-on layers run the preflight and render, no host or API needed."""
    render_dir = tmp_path / "rendered"
    # The role's argument spec validates (so decrypts) the example's vaulted Grafana password.
    result = runner.ansible_playbook(
        "-i", str(EXAMPLE), str(PLAYBOOKS / ("%s.yml" % layer)), "-e", "gpushare_render_only=true",
        "--vault-password-file", str(VAULT_PASSWORD),
        "-e", "gpushare_discover=false", "-e", "gpushare_render_dir=%s" % render_dir)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    written = sorted(str(path.relative_to(render_dir)) for path in render_dir.rglob("*") if path.is_file())
    assert set(files) <= set(written), written
    assert "Plan the GPU split, queues and sharing configs" in result.stdout


@pytest.fixture(scope="module")
def example_plan(tmp_path_factory):
    plan_dir = tmp_path_factory.mktemp("plan") / "build" / "plan"
    result = runner.run_plan_playbook(EXAMPLE, plan_dir)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return plan_dir, result


def test_plan_writes_plan_report_summary_and_examples(example_plan):
    plan_dir, result = example_plan
    plan = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    assert plan["version"] == 1
    assert sorted(plan["nodes"]) == ["gpu1"]
    assert [gpu["use"] for gpu in plan["nodes"]["gpu1"]["gpus"]] == ["whole", "mig", "shared", "whole"]
    assert [gpu["team"] for gpu in plan["nodes"]["gpu1"]["gpus"]] == ["production", "production", "data", "training"]
    html = (plan_dir / "index.html").read_text(encoding="utf-8")
    assert html.count('class="gpu"') == 4
    summary = (plan_dir / "summary.txt").read_text(encoding="utf-8")
    # The summary is printed at the end of the run, line by line.
    for line in summary.splitlines()[:3]:
        if line.strip():
            assert line.strip() in result.stdout
    assert "index.html" in result.stdout
    # Everything the add-on roles render is part of the plan directory.
    assert sorted(path.name for path in (plan_dir / "values").iterdir()) == [
        "dra-driver-nvidia-gpu.yaml", "gpu-operator.yaml", "kube-prometheus-stack.yaml", "kueue.yaml"]
    assert sorted(path.name for path in (plan_dir / "manifests").iterdir()) == [
        "dra_driver", "examples", "gpu_operator", "kueue", "monitoring", "tenancy"]
    examples = sorted(path.name for path in (plan_dir / "manifests" / "examples").glob("*.yaml"))
    assert examples == ["10-serving.yaml", "20-mig-models.yaml", "30-notebooks.yaml", "40-fine-tune.yaml"]


def test_plan_is_idempotent(example_plan):
    plan_dir, _result = example_plan
    before = {path: path.read_bytes() for path in plan_dir.rglob("*") if path.is_file()}
    again = runner.run_plan_playbook(EXAMPLE, plan_dir)
    assert again.returncode == 0, again.stdout + again.stderr
    # The plan directory is only replaced when its content differs.
    published = re.search(r"TASK \[Validate the inventory, plan, and write the plan directory\][^\n]*\n(\w+):",
                          again.stdout)
    assert published and published.group(1) == "ok", again.stdout
    after = {path: path.read_bytes() for path in plan_dir.rglob("*") if path.is_file()}
    assert before == after


def test_the_stamp_date_is_renewed_only_when_the_plan_changes(tmp_path, example_plan):
    plan_dir = tmp_path / "plan"
    shutil.copytree(example_plan[0], plan_dir)
    stamped = re.compile(r"planned \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    for name in ("index.html", "summary.txt"):
        path = plan_dir / name
        text = path.read_text(encoding="utf-8")
        assert stamped.search(text), name
        text = stamped.sub("planned 2001-02-03 04:05 UTC", text)
        text = re.sub(r'data-stamp-date="[^"]*"', 'data-stamp-date="2001-02-03 04:05 UTC"', text)
        path.write_text(text, encoding="utf-8")
    # The same inventory again: the old date stays, nothing is written.
    again = runner.run_plan_playbook(EXAMPLE, plan_dir)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "planned 2001-02-03 04:05 UTC" in again.stdout
    assert re.search(r"write the plan directory\][^\n]*\nok:", again.stdout), again.stdout[-3000:]
    assert 'data-stamp-date="2001-02-03 04:05 UTC"' in (plan_dir / "index.html").read_text(encoding="utf-8")
    # A changed inventory makes a new plan, dated now.
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, inventory)
    host_vars = inventory / "host_vars" / "gpu1.yml"
    host_vars.write_text(host_vars.read_text(encoding="utf-8").replace("replicas: 5", "replicas: 6"), encoding="utf-8")
    changed = runner.run_plan_playbook(inventory, plan_dir)
    assert changed.returncode == 0, changed.stdout[-3000:]
    assert re.search(r"write the plan directory\][^\n]*\nchanged:", changed.stdout), changed.stdout[-3000:]
    html = (plan_dir / "index.html").read_text(encoding="utf-8")
    assert "2001-02-03" not in html and stamped.search(html)
    assert "gpushare.cluster %s" % yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())["version"] in html


def _broken_inventory(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, inventory)
    host_vars = inventory / "host_vars" / "gpu1.yml"
    gpus = yaml.safe_load(host_vars.read_text(encoding="utf-8"))["gpushare_gpus"]
    gpus[0]["team"] = "marketing"          # no such team
    gpus[2]["replicas"] = 1                # sharing a GPU with one replica shares nothing
    gpus[3]["index"] = 2                   # index 2 twice
    host_vars.write_text(yaml.safe_dump({"gpushare_gpus": gpus}), encoding="utf-8")
    return inventory


def _each_printed_once(output):
    """Every problem of the failed plan task appears once in the run's output."""
    errors = json.loads(re.search(r"^fatal: \[localhost\]: FAILED! => (\{.*\})$", output, re.MULTILINE).group(1))["errors"]
    assert len(errors) == 3, errors
    for error in errors:
        assert output.count(error) == 1, (error, output[-4000:])


def test_plan_with_errors_fails_listing_all_and_writes_nothing(tmp_path):
    plan_dir = tmp_path / "out" / "plan"
    result = runner.run_plan_playbook(_broken_inventory(tmp_path), plan_dir)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "marketing" in output
    assert "replicas" in output
    assert re.search(r"index|duplicate", output)
    assert "the plan cannot be made: 3 problems, listed under errors" in output
    _each_printed_once(output)
    assert not plan_dir.exists()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_site_with_errors_stops_in_the_preflight_before_any_host_play(tmp_path):
    result = runner.ansible_playbook("-i", str(_broken_inventory(tmp_path)), str(PLAYBOOKS / "site.yml"),
                                     "-e", "gpushare_discover=false")
    assert result.returncode != 0
    assert "the plan cannot be made: 3 problems, listed under errors" in result.stdout
    _each_printed_once(result.stdout + result.stderr)
    assert "PLAY [Prepare the hosts]" not in result.stdout
    # gpu1 only went through the (skipped) discovery play: nothing ran on it.
    assert re.search(r"gpu1\s+: ok=0\s+changed=0\s+unreachable=0\s+failed=0", result.stdout), result.stdout


def test_plan_with_errors_leaves_a_previous_plan_untouched(tmp_path, example_plan):
    plan_dir = tmp_path / "plan"
    shutil.copytree(example_plan[0], plan_dir)
    before = {path.relative_to(plan_dir): path.read_bytes() for path in plan_dir.rglob("*") if path.is_file()}
    result = runner.run_plan_playbook(_broken_inventory(tmp_path), plan_dir)
    assert result.returncode != 0
    after = {path.relative_to(plan_dir): path.read_bytes() for path in plan_dir.rglob("*") if path.is_file()}
    assert before == after


def test_plan_without_addon_rendering_writes_the_report_only(tmp_path):
    plan_dir = tmp_path / "plan"
    result = runner.run_plan_playbook(EXAMPLE, plan_dir, "-e", "gpushare_plan_render_addons=false")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert sorted(path.name for path in plan_dir.iterdir()) == ["index.html", "manifests", "plan.json", "summary.txt"]
    assert "Report: %s" % (plan_dir / "index.html") in result.stdout


def test_plan_of_the_multinode_inventory_needs_no_vault_password(tmp_path):
    plan_dir = tmp_path / "plan"
    result = runner.run_plan_playbook(MULTINODE, plan_dir)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    plan = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    assert sorted(plan["nodes"]) == ["a100", "hgx1", "hgx2", "l40s"]
    assert sum(len(node["gpus"]) for node in plan["nodes"].values()) == 22
    assert sorted(plan["teams"]) == ["data", "production", "research", "training"]


def test_multinode_secrets_decrypt_with_the_demo_password():
    command = [str(Path(sys.executable).parent / "ansible"), "-i", str(MULTINODE), "cp1", "-c", "local",
               "--vault-password-file", str(VAULT_PASSWORD), "-m", "ansible.builtin.debug",
               "-a", "msg={{ monitoring_grafana_admin_password | length }}"]
    check = subprocess.run(command, env=runner.ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "\"msg\": 18" in check.stdout


def test_site_preflight_shows_each_plan_warning_once(tmp_path):
    # The example's time-sliced GPU has no UUID known: the plan warns, and site.yml says so once.
    result = runner.ansible_playbook("-i", str(EXAMPLE), str(PLAYBOOKS / "site.yml"), "-e", "gpushare_discover=false",
                                     "--tags", "preflight", *runner.DEMO_VAULT_ARGS)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert output.count("host gpu1, GPU 2: no uuid known") == 1, output[-3000:]
