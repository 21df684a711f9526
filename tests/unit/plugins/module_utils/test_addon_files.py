# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The add-on file tables agree with the roles, and render() refuses what it cannot use."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

ROLES = Path(__file__).resolve().parents[4] / "roles"
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"


def _plan(backend):
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    return build_plan(data["gpushare_teams"], data["nodes"], backend=backend, distribution="microk8s",
                      kubernetes_version="1.35")


def _settings(addon):
    defaults = yaml.safe_load((ROLES / addon / "defaults" / "main.yml").read_text()) or {}
    settings = {key: defaults["%s_%s" % (addon, key)] for key in addon_files.SETTINGS[addon]}
    settings.update({key: "{}" if key.startswith("dashboard") else "groups: [{name: %s}]\n" % key
                     for key in addon_files.ROLE_FILES.get(addon, {})})
    settings["mirrors"] = {}
    return settings


@pytest.mark.parametrize("addon", addon_files.ADDONS)
def test_every_setting_is_a_role_variable_with_a_default_and_a_render_spec(addon):
    defaults = yaml.safe_load((ROLES / addon / "defaults" / "main.yml").read_text()) or {}
    specs = yaml.safe_load((ROLES / addon / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for key in addon_files.SETTINGS[addon]:
        assert "%s_%s" % (addon, key) in defaults, key
        assert "%s_%s" % (addon, key) in specs["render"]["options"], key
    for relative, _template in addon_files.ROLE_FILES.get(addon, {}).values():
        assert (ROLES / addon / relative).is_file(), relative


def test_tenancy_apply_walks_the_files_render_writes():
    listed = yaml.safe_load((ROLES / "tenancy" / "vars" / "main.yml").read_text())["__tenancy_files"]
    assert listed == list(addon_files.TENANCY_APPLY_ORDER)
    assert sorted(listed) == sorted([name for name, _kinds in addon_files.TENANCY_FILES]
                                    + [addon_files.TENANCY_BOUNDARIES_FILE])


def test_dra_driver_writes_nothing_for_the_device_plugin_backend():
    assert addon_files.render("dra_driver", _plan("device_plugin"), _settings("dra_driver")) == {}
    assert len(addon_files.render("dra_driver", _plan("dra"), _settings("dra_driver"))) == 4


def test_missing_settings_and_unknown_addons_are_refused():
    with pytest.raises(ValueError, match="kueue: settings missing: frameworks"):
        addon_files.render("kueue", _plan("dra"), {k: v for k, v in _settings("kueue").items() if k != "frameworks"})
    with pytest.raises(ValueError, match="addon: 'grafana' is not an add-on"):
        addon_files.render("grafana", _plan("dra"), {})


def test_an_empty_plan_is_refused_naming_the_addon():
    with pytest.raises(ValueError, match="^tenancy: gpushare_plan"):
        addon_files.render("tenancy", {}, {})


def test_tenancy_files_hold_every_tenancy_object_once():
    plan = _plan("dra")
    files = addon_files.render("tenancy", plan, {})
    written = [doc for name, text in files.items() if not name.endswith(addon_files.TENANCY_BOUNDARIES_FILE)
               for doc in yaml.safe_load_all(text) if doc]
    expected = [obj for obj in plan["objects"]
                if any(obj["kind"] in kinds for _name, kinds in addon_files.TENANCY_FILES)]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in written) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in expected)
    assert expected
