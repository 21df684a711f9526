# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""layer_checks: the secrets and the storage a layer needs, before any host is changed."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.preflight import layer_checks as lc

GROUPS = {"control_plane": ["cp1"], "workers": ["gpu1", "gpu2", "gpu3"]}
MONITORING = {"monitoring_render_only": False, "monitoring_storage_provisioner": "auto", "monitoring_storage_class": "",
              "monitoring_storage_size": "50Gi", "monitoring_grafana_persistence_size": "10Gi"}


def values(**per_host):
    base = {host: {"host_prep_ciq_mode": "none"} for host in ("cp1", "gpu1", "gpu2", "gpu3")}
    base["cp1"].update(MONITORING, monitoring_grafana_admin_password=lc.SET)
    for host, extra in per_host.items():
        base[host].update(extra)
    return base


def test_everything_set_is_quiet():
    assert lc.check(values(), GROUPS, "kubeadm") == []


def test_the_grafana_password_is_checked_where_the_monitoring_play_runs():
    errors = lc.check(values(cp1={"monitoring_grafana_admin_password": ""}), GROUPS, "kubeadm")
    assert errors == ["host cp1, field monitoring_grafana_admin_password: required by the monitoring layer (Grafana's "
                      "admin login), not set; " + lc.SECRETS["monitoring_grafana_admin_password"][2]]
    # Render only: the role never creates the Secret, so nothing is needed.
    assert lc.check(values(cp1={"monitoring_grafana_admin_password": "", "monitoring_render_only": True}), GROUPS,
                    "kubeadm") == []
    # Only the layers that run are checked.
    assert lc.check(values(cp1={"monitoring_grafana_admin_password": ""}), GROUPS, "kubeadm",
                    ["prepare_hosts", "kubernetes"]) == []


def test_ciq_credentials_are_reported_once_per_missing_set_naming_every_host():
    ciq = {"host_prep_ciq_mode": "depot", "host_prep_ciq_username": lc.SET}
    errors = lc.check(values(gpu1=ciq, gpu2=ciq, gpu3=dict(ciq, host_prep_ciq_username="")), GROUPS, "kubeadm")
    assert errors == [
        "hosts gpu1, gpu2, field host_prep_ciq_token: required when host_prep_ciq_mode is not none, not set; set the "
        "CIQ login and token from vaulted variables (docs/host-layer.md)",
        "host gpu3, field host_prep_ciq_username and host_prep_ciq_token: required when host_prep_ciq_mode is not none, "
        "not set; set the CIQ login and token from vaulted variables (docs/host-layer.md)"]


def test_storage_is_checked_with_the_distribution():
    none = {"monitoring_storage_provisioner": "none"}
    (error,) = lc.check(values(cp1=none), GROUPS, "kubeadm")
    assert error.startswith("host cp1, field monitoring_storage_class: the monitoring volumes")
    assert lc.check(values(cp1=dict(none, microk8s_addons=["dns", "hostpath-storage"])), GROUPS, "microk8s") == []


def test_run_layers_follow_tags():
    assert lc.run_layers() == list(lc.LAYERS)
    assert lc.run_layers(run_tags=["gpu_stack", "queues"]) == ["gpu_stack", "queues"]
    assert lc.run_layers(run_tags=["all"], skip_tags=["monitoring"]) == list(lc.LAYERS[:-1])


def test_secrets_are_never_asked_for_their_value():
    wanted = lc.variables_by_host(GROUPS)
    assert wanted["cp1"]["monitoring_grafana_admin_password"] is True
    assert wanted["gpu2"]["host_prep_ciq_token"] is True and "monitoring_grafana_admin_password" not in wanted["gpu2"]
