# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Add-on settings resolve as the role sees them: defaults, overrides, templating, types, role files."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.plugin_utils import addon_settings


def resolve(addon, **task_vars):
    loader = DataLoader()
    return addon_settings.resolve(addon, task_vars, Templar(loader=loader, variables=task_vars), loader)


def test_role_defaults_apply_when_nothing_overrides_them():
    settings = resolve("kueue")
    assert settings["version"] == "0.19.2"
    assert settings["release"] == "kueue"
    assert "batch/job" in settings["frameworks"]
    assert settings["service_monitor"] is True
    assert settings["mirrors"] == {}  # "{{ gpushare_mirrors | default({}) }}" templated
    assert set(settings) == set(addon_files.required_settings("kueue"))


def test_task_variables_override_defaults_and_are_templated_and_typed():
    settings = resolve("kueue", kueue_frameworks=["pod"], kueue_service_monitor="no",
                       gpushare_mirrors={"registry": "mirror.example:5000"},
                       kueue_release=trust_as_template("{{ 'queues' }}"))
    assert settings["frameworks"] == ["pod"]
    assert settings["service_monitor"] is False  # converted as the render argument spec says
    assert settings["mirrors"] == {"registry": "mirror.example:5000"}  # through the role default
    assert settings["release"] == "queues"


def test_a_value_of_the_wrong_type_is_refused_naming_the_variable():
    with pytest.raises(AnsibleActionFail, match="kueue: .*kueue_service_monitor"):
        resolve("kueue", kueue_service_monitor="sometimes")


def test_role_files_are_read_and_the_alert_template_rendered_with_the_thresholds():
    settings = resolve("monitoring", monitoring_alert_gpu_idle_hours=7)
    assert "for: 7h" in settings["alerts"]
    assert "[[" not in settings["alerts"]
    assert "{{ $labels.exported_pod }}" in settings["alerts"]  # Prometheus templates pass through
    assert settings["recording_rules"].startswith("---") or "groups:" in settings["recording_rules"]
    assert settings["dashboard_teams"].lstrip().startswith("{")
    assert "DCGM_FI" in resolve("gpu_operator")["dcgm_metrics_csv"]


def test_an_unknown_addon_is_refused():
    with pytest.raises(AnsibleActionFail, match="addon: 'grafana' is not an add-on"):
        resolve("grafana")
