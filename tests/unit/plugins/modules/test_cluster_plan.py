# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from pathlib import Path

import yaml

from module_runner import run_module
from ansible_collections.gpushare.cluster.plugins.modules import cluster_plan

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"


def run(capsys, args):
    return run_module(cluster_plan, args, capsys)[1]


def test_returns_the_whole_plan(capsys):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    result = run(capsys, {"teams": data["gpushare_teams"], "nodes": data["nodes"], "backend": "device_plugin",
                          "distribution": "kubeadm", "kubernetes_version": "1.34"})
    assert result["changed"] is False
    plan = result["plan"]
    assert (plan["backend"], plan["distribution"], plan["kubernetes_version"]) == ("device_plugin", "kubeadm", "1.34")
    assert plan["nodes"]["gpu1"]["device_plugin_config"] in plan["device_plugin_configs"]
    assert any("full-size MIG instance" in w for w in plan["warnings"])
    assert any("full-size MIG instance" in w["event"]["msg"] for w in result["warnings"])


def test_bad_version_and_inventory_fail_together(capsys):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    data["nodes"]["gpu1"][2]["replicas"] = 1
    result = run(capsys, {"teams": data["gpushare_teams"], "nodes": data["nodes"], "distribution": "microk8s",
                          "kubernetes_version": "1.29"})
    assert result["failed"] is True
    assert [e.split(":")[0] for e in result["errors"]] == ["gpushare_kubernetes_version",
                                                           "host gpu1, GPU 2, field replicas"]


def test_distribution_and_version_have_no_default(capsys):
    """They are required in the inventory (docs/inventory.md): the module never picks one."""
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    result = run(capsys, {"teams": data["gpushare_teams"], "nodes": data["nodes"]})
    assert result["failed"] is True
    assert "distribution, kubernetes_version" in result["msg"]


def test_a_patch_version_is_written_as_its_minor(capsys):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    result = run(capsys, {"teams": data["gpushare_teams"], "nodes": data["nodes"], "distribution": "kubeadm",
                          "kubernetes_version": "1.35.0"})
    assert result["plan"]["kubernetes_version"] == "1.35"
