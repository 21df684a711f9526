# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The etcd restore commands built from kubeadm's etcd manifests (etcd_restore.py)."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import etcd_restore


def manifest(name, ip, data_dir="/var/lib/etcd", image="registry.k8s.io/etcd:3.6.16-0", drop=()):
    """An etcd static pod manifest as kubeadm v1.35 writes it (cmd/kubeadm/app/phases/etcd/local.go flags)."""
    flags = {"--advertise-client-urls": f"https://{ip}:2379", "--data-dir": data_dir,
             "--initial-advertise-peer-urls": f"https://{ip}:2380", "--initial-cluster": f"{name}=https://{ip}:2380",
             "--listen-peer-urls": f"https://{ip}:2380", "--name": name}
    command = ["etcd"] + [f"{k}={v}" for k, v in flags.items() if k not in drop]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "etcd", "namespace": "kube-system"},
                           "spec": {"containers": [{"name": "etcd", "image": image, "command": command}]}})


def test_every_member_restores_into_one_new_cluster_with_revisions_bumped_and_compacted():
    commands = etcd_restore.restore_commands(
        {"cp2": manifest("cp2", "10.0.0.2"), "cp1": manifest("cp1", "10.0.0.1"), "cp3": manifest("cp3", "10.0.0.3")},
        "/var/lib/r/snapshot.db", "gpushare-restore-20261206T000000Z", "/var/lib/r/etcdutl")
    cluster = "cp1=https://10.0.0.1:2380,cp2=https://10.0.0.2:2380,cp3=https://10.0.0.3:2380"
    assert commands["cp2"]["argv"] == [
        "/var/lib/r/etcdutl", "snapshot", "restore", "/var/lib/r/snapshot.db", "--data-dir", "/var/lib/etcd.restored",
        "--name", "cp2", "--initial-cluster", cluster, "--initial-cluster-token", "gpushare-restore-20261206T000000Z",
        "--initial-advertise-peer-urls", "https://10.0.0.2:2380", "--bump-revision", "1000000000", "--mark-compacted"]
    assert {host: c["member"]["name"] for host, c in commands.items()} == {"cp1": "cp1", "cp2": "cp2", "cp3": "cp3"}
    assert all(cluster in c["argv"] for c in commands.values())
    assert commands["cp1"]["restored_dir"] == "/var/lib/etcd.restored"
    assert "--initial-cluster cp1=https://10.0.0.1:2380,cp2=" in commands["cp1"]["command"]


def test_the_data_directory_comes_from_the_manifest():
    commands = etcd_restore.restore_commands({"cp1": manifest("cp1", "10.0.0.1", data_dir="/srv/etcd/")}, "s.db", "t")
    assert commands["cp1"]["member"]["data_dir"] == "/srv/etcd/"
    assert commands["cp1"]["restored_dir"] == "/srv/etcd.restored"


def test_every_host_missing_a_flag_is_named_with_the_flag():
    with pytest.raises(etcd_restore.RestoreError) as error:
        etcd_restore.restore_commands({"cp1": manifest("cp1", "10.0.0.1", drop=("--data-dir",)),
                                       "cp2": manifest("cp2", "10.0.0.2", drop=("--name",)),
                                       "cp3": "spec: {containers: [{name: kube-apiserver}]}"}, "s.db", "t")
    message = str(error.value)
    assert "cp1: /etc/kubernetes/manifests/etcd.yaml: the etcd command has no --data-dir" in message
    assert "cp2: /etc/kubernetes/manifests/etcd.yaml: the etcd command has no --name" in message
    assert "cp3: /etc/kubernetes/manifests/etcd.yaml has no container named etcd" in message


def test_the_errors_name_the_manifest_path_that_was_read():
    with pytest.raises(etcd_restore.RestoreError) as error:
        etcd_restore.restore_commands({"cp1": manifest("cp1", "10.0.0.1", drop=("--name",))}, "s.db", "t",
                                      manifest="/srv/kubelet/manifests/etcd.yaml")
    assert "cp1: /srv/kubelet/manifests/etcd.yaml: the etcd command has no --name" in str(error.value)
    assert "/etc/kubernetes" not in str(error.value)


@pytest.mark.parametrize("manifests,words", [
    ({"cp1": manifest("etcd-a", "10.0.0.1"), "cp2": manifest("etcd-a", "10.0.0.2")},
     "cp1 and cp2: both etcd members are named etcd-a"),
    ({"cp1": manifest("cp1", "10.0.0.1"), "cp2": manifest("cp2", "10.0.0.2", image="registry.k8s.io/etcd:3.6.5-0")},
     "the control planes run different etcd images (registry.k8s.io/etcd:3.6.16-0, registry.k8s.io/etcd:3.6.5-0)"),
    ({}, "no control plane to restore"),
    ({"cp1": "spec: [unclosed"}, "cp1: /etc/kubernetes/manifests/etcd.yaml is not YAML"),
])
def test_what_cannot_be_restored_is_refused(manifests, words):
    with pytest.raises(etcd_restore.RestoreError) as error:
        etcd_restore.restore_commands(manifests, "s.db", "t")
    assert words in str(error.value)
