# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""<role>_helm_release: false (the rehearsal's switch) skips the chart, says so, and still applies
every object of the plan; against the same kubernetes.core stand-ins as test_apply_addons."""

from __future__ import annotations

from addon_checks import inventory_plan
from .test_apply_addons import apply, fresh_cluster


def test_helm_releases_false_skips_the_charts_and_applies_the_plan(tmp_path):
    result, state = apply(tmp_path, ("dra_driver", "kueue", "tenancy"), fresh_cluster(),
                          extra_vars={"gpushare_helm_releases": False})
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert not state.get("releases"), state.get("releases")
    assert "dra_driver: Helm release dra-driver-nvidia-gpu skipped (dra_driver_helm_release: false)" in result.stdout
    assert "kueue: Helm release kueue skipped (kueue_helm_release: false)" in result.stdout
    applied = {(o["kind"], o["name"]) for o in state["applied"]}
    wanted = {(o["kind"], o["metadata"]["name"]) for o in inventory_plan("example")["objects"]}
    assert wanted <= applied, sorted(wanted - applied)


def test_one_role_can_keep_its_release(tmp_path):
    result, state = apply(tmp_path, ("dra_driver", "kueue"), fresh_cluster(),
                          extra_vars={"gpushare_helm_releases": False, "kueue_helm_release": True})
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert set(state.get("releases") or {}) == {"kueue"}
