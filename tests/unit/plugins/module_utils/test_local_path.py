# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local-path provisioner monitoring installs when the cluster has no StorageClass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.render import addon_files
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils.render import local_path
from ansible_collections.gpushare.cluster.plugins.module_utils.airgap import manifest as mirror_manifest

ROLE = Path(__file__).resolve().parents[4] / "roles" / "monitoring"
ASKED = {"storage_size": "50Gi", "grafana_persistence_size": "10Gi"}


@pytest.mark.parametrize("settings, installed, storage_class", [
    ({**ASKED, "storage_provisioner": "auto"}, True, "local-path"),
    ({**ASKED, "storage_provisioner": "auto", "storage_class": "ceph-rbd"}, False, "ceph-rbd"),
    ({"storage_size": "", "grafana_persistence_size": "", "storage_provisioner": "auto"}, False, ""),
    ({**ASKED, "storage_provisioner": "none"}, False, ""),
    ({**ASKED, "storage_provisioner": "local-path", "storage_class": "ceph-rbd"}, True, "ceph-rbd"),
])
def test_when_it_is_installed_and_which_class_the_volumes_name(settings, installed, storage_class):
    assert local_path.installed(settings) is installed
    assert local_path.storage_class(settings) == storage_class


def test_kubeadm_without_any_storage_is_refused_with_the_fix():
    settings = {**ASKED, "storage_provisioner": "none"}
    errors = local_path.storage_errors("kubeadm", settings)
    assert len(errors) == 1
    message = errors[0]
    assert "Prometheus 50Gi, Grafana 10Gi" in message and "a kubeadm cluster has no default StorageClass" in message
    assert "monitoring_storage_provisioner: auto" in message and "monitoring_storage_class" in message
    assert local_path.storage_errors("microk8s", settings, ["dns", "hostpath-storage"]) == []
    assert local_path.storage_errors("microk8s", settings, ["dns"])
    assert local_path.storage_errors("kubeadm", {**settings, "storage_class": "nfs"}) == []
    assert local_path.storage_errors("kubeadm", {**ASKED, "storage_provisioner": "auto"}) == []
    assert local_path.storage_errors("kubeadm", {**ASKED, "storage_provisioner": "hostpath"}) == [
        "monitoring_storage_provisioner: must be one of auto, local-path, none, got 'hostpath'"]


def test_the_provisioner_runs_as_its_account_with_the_config_it_reads():
    by_kind = {obj["kind"]: obj for obj in local_path.manifests()}
    pod = by_kind["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == local_path.IMAGE and local_path.IMAGE.endswith(":" + local_path.VERSION)
    assert container["command"][-2:] == ["--config", "/etc/config/config.json"]
    assert {"name": "CONFIG_MOUNT_PATH", "value": "/etc/config/"} in container["env"]
    assert pod["volumes"][0]["configMap"]["name"] == by_kind["ConfigMap"]["metadata"]["name"]
    assert set(by_kind["ConfigMap"]["data"]) == {"config.json", "setup", "teardown", "helperPod.yaml"}
    for binding in (by_kind["RoleBinding"], by_kind["ClusterRoleBinding"]):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                                        "namespace": local_path.NAMESPACE}]
        assert binding["roleRef"]["name"] == by_kind[binding["roleRef"]["kind"]]["metadata"]["name"]
    assert by_kind["StorageClass"]["provisioner"] == "rancher.io/local-path"


def test_manifests_pin_the_helper_follow_the_mirror_and_the_directory():
    objects = local_path.manifests({"registry": "mirror.example:5000"}, "/data/volumes")
    by_kind = {obj["kind"]: obj for obj in objects}
    assert by_kind["Namespace"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "mirror.example:5000/rancher/local-path-provisioner:v0.0.37"
    data = by_kind["ConfigMap"]["data"]
    assert json.loads(data["config.json"])["nodePathMap"][0]["paths"] == ["/data/volumes"]
    assert yaml.safe_load(data["helperPod.yaml"])["spec"]["containers"][0]["image"] == \
        "mirror.example:5000/library/busybox:1.37.0"
    assert by_kind["StorageClass"]["metadata"]["name"] == local_path.STORAGE_CLASS
    assert by_kind["StorageClass"]["volumeBindingMode"] == "WaitForFirstConsumer"
    with pytest.raises(ValueError, match="monitoring_local_path_dir: must be an absolute path"):
        local_path.manifests({}, "volumes")


def _monitoring_settings(**overrides):
    settings = {key: "" for key in addon_files.SETTINGS["monitoring"]}
    settings.update(release="kube-prometheus-stack", namespace="monitoring", retention="30d", storage_size="50Gi",
                    grafana_persistence_size="10Gi", grafana_admin_secret="grafana-admin", storage_provisioner="auto",
                    local_path_dir="/opt/local-path-provisioner", mirrors={}, extra_values={})
    for key, (relative, _template) in addon_files.ROLE_FILES["monitoring"].items():
        settings[key] = (ROLE / relative).read_text(encoding="utf-8")
    settings["alerts"] = "groups: [{name: alerts, rules: []}]"
    settings.update(overrides)
    return settings


def test_the_monitoring_render_adds_it_and_the_volumes_use_it():
    files = addon_files.render("monitoring", {}, _monitoring_settings())
    assert addon_files.MONITORING_LOCAL_PATH_FILE in files
    values = yaml.safe_load(files["values/kube-prometheus-stack.yaml"])
    claim = values["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "local-path" and values["grafana"]["persistence"]["storageClassName"] == "local-path"
    own = addon_files.render("monitoring", {}, _monitoring_settings(storage_class="ceph-rbd"))
    assert addon_files.MONITORING_LOCAL_PATH_FILE not in own


def test_the_mirror_manifest_lists_every_image_the_provisioner_pulls():
    manifest = mirror_manifest.build_manifest({"distribution": "kubeadm", "driver_os": ["ubuntu24.04"], "cni": "none"})
    rendered = local_path.manifests()
    referenced = mirror_manifest.images_in(rendered) + [
        yaml.safe_load(obj["data"]["helperPod.yaml"])["spec"]["containers"][0]["image"]
        for obj in rendered if obj["kind"] == "ConfigMap"]
    assert len(referenced) == 2 and mirror_manifest.uncovered_images(referenced, manifest) == []
    without = mirror_manifest.build_manifest({"distribution": "kubeadm", "driver_os": ["ubuntu24.04"], "cni": "none",
                                              "local_path_provisioner": False})
    assert mirror_manifest.uncovered_images(referenced, without) == sorted(referenced)


def test_grafana_ingress_only_when_a_host_is_given():
    assert "ingress" not in helm_values.monitoring_values({})["grafana"]
    ingress = helm_values.monitoring_values({"grafana_ingress_host": "grafana.example.internal",
                                             "grafana_ingress_class": "nginx",
                                             "grafana_ingress_tls_secret": "grafana-tls"})["grafana"]["ingress"]
    assert ingress == {"enabled": True, "hosts": ["grafana.example.internal"], "path": "/", "ingressClassName": "nginx",
                       "tls": [{"secretName": "grafana-tls", "hosts": ["grafana.example.internal"]}]}
