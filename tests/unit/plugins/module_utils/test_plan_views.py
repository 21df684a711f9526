# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-role plan views render exactly what the whole plan renders."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils import helm_values as hv
from ansible_collections.gpushare.cluster.plugins.module_utils import plan_views as pv

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "addons"
PLANS = ["plan_example.yml", "plan_device_plugin.yml"]
SETTINGS = {"driver_enabled": True, "mirrors": {"registry": "mirror.example:5000"}, "dcgm_metrics_csv": "x",
            "kubelet_root_dir": "", "extra_values": {}}


@pytest.fixture(params=PLANS)
def plan(request):
    return yaml.safe_load((FIXTURES / request.param).read_text())


def test_gpu_operator_view_renders_the_same(plan):
    view = pv.plan_view(plan, "gpu_operator")
    assert hv.gpu_operator_values(view, SETTINGS) == hv.gpu_operator_values(plan, SETTINGS)
    assert hv.node_objects(view) == hv.node_objects(plan)
    assert hv.node_labels(view) == hv.node_labels(plan)


def test_dra_driver_view_renders_the_same(plan):
    view = pv.plan_view(plan, "dra_driver")
    assert hv.objects_for(view, "dra_driver") == hv.objects_for(plan, "dra_driver")
    if plan["backend"] == "dra":
        assert hv.dra_driver_values(view, {}) == hv.dra_driver_values(plan, {})


@pytest.mark.parametrize("role", ["kueue", "tenancy"])
def test_queue_and_tenancy_views_render_the_same(plan, role):
    view = pv.plan_view(plan, role)
    assert hv.objects_for(view, role) == hv.objects_for(plan, role)
    assert hv.team_namespaces(view) == hv.team_namespaces(plan)
    if role == "kueue":
        assert hv.kueue_values(view, {}) == hv.kueue_values(plan, {})


def test_views_leave_out_what_the_roles_do_not_read(plan):
    views = pv.plan_views(plan, ["gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring"])
    assert sorted(views) == ["dra_driver", "gpu_operator", "kueue", "tenancy"]
    assert views["tenancy"]["nodes"] == {}
    assert {obj["kind"] for obj in views["tenancy"]["objects"]} <= set(hv.KINDS_BY_ROLE["tenancy"])
    for node in views["gpu_operator"]["nodes"].values():
        assert all(set(gpu) == {"index"} for gpu in node["gpus"])


def test_unknown_role_is_named():
    with pytest.raises(ValueError, match="'nope'"):
        pv.plan_view({"version": 1}, "nope")
