# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The version, topology, MicroK8s, certificate and team access filters that test_kubernetes.py
leaves out: what they return and which input they refuse, as the roles call them."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.filter import access, certificates, k8s_topology, k8s_versions, microk8s_args

FILTERS = {}
for _module in (access, certificates, k8s_topology, k8s_versions, microk8s_args):
    FILTERS.update(_module.FilterModule().filters())

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


@pytest.mark.parametrize("version", ["v1.35.2", "1.35.2", "1.35", 1.35])
def test_k8s_minor(version):
    assert FILTERS["k8s_minor"](version) == "1.35"


def test_k8s_minor_names_the_variable():
    with pytest.raises(AnsibleFilterError, match="gpushare_kubernetes_version"):
        FILTERS["k8s_minor"]("latest")


def test_k8s_upgrade_needed_one_minor_at_a_time():
    assert FILTERS["k8s_upgrade_needed"]("1.34.3", "1.35.2") is True
    assert FILTERS["k8s_upgrade_needed"]("1.35.2", "1.35.2") is False
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_upgrade_needed"]("1.34.3", "1.36.0")
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_upgrade_needed"]("1.35.2", "1.34.3")


def test_k8s_network_errors():
    assert FILTERS["k8s_network_errors"]("10.244.0.0/16", "10.96.0.0/12", ["192.168.1.0/24"]) == []
    assert FILTERS["k8s_network_errors"]("10.244.0.0/16", "10.96.0.0/12", None) == []
    overlapping = FILTERS["k8s_network_errors"]("10.0.0.0/8", "10.96.0.0/12")
    assert len(overlapping) == 1 and "10.0.0.0/8" in overlapping[0] and "10.96.0.0/12" in overlapping[0]
    assert FILTERS["k8s_network_errors"]("10.244.0.0/16", "10.96.0.0/12", ["10.244.3.0/24"])
    assert FILTERS["k8s_network_errors"]("not-a-cidr", "10.96.0.0/12")


def test_k8s_upgrade_and_reset_orders():
    assert FILTERS["k8s_upgrade_order"](["cp1", "cp2", "cp3"], ["gpu1"], "cp2") == [
        {"host": "cp2", "role": "control_plane", "action": "apply", "drain": True},
        {"host": "cp1", "role": "control_plane", "action": "node", "drain": True},
        {"host": "cp3", "role": "control_plane", "action": "node", "drain": True},
        {"host": "gpu1", "role": "worker", "action": "node", "drain": True}]
    assert [step["host"] for step in FILTERS["k8s_reset_order"](["cp1", "cp2"], ["gpu1", "gpu2"], None)] == [
        "gpu1", "gpu2", "cp2", "cp1"]
    assert [step["last"] for step in FILTERS["k8s_reset_order"](["cp1"], ["gpu1"])] == [False, True]


def test_k8s_join_order_skips_members():
    assert FILTERS["k8s_join_order"](["cp1", "cp2"], ["gpu1"], ["cp1"], ["cp1", "gpu1"]) == {
        "init": None, "bootstrap": "cp1", "control_plane_joins": ["cp2"], "worker_joins": []}


def test_microk8s_enable_cdi_is_idempotent_and_takes_spec_dirs():
    text = (FIXTURES / "k8s" / "microk8s" / "containerd-template.toml").read_text(encoding="utf-8")
    once = FILTERS["microk8s_enable_cdi"](text)
    assert once != text and FILTERS["microk8s_enable_cdi"](once) == once
    assert '  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]' in once.splitlines()
    custom = FILTERS["microk8s_enable_cdi"](text, ["/srv/cdi"])
    assert '  cdi_spec_dirs = ["/srv/cdi"]' in custom.splitlines()
    assert FILTERS["microk8s_enable_cdi"](text, None) == once


def test_k8s_cert_expiry_counts_from_now():
    output = (FIXTURES / "cert_expiry" / "kubeadm-1.35.json").read_text(encoding="utf-8")
    report = FILTERS["k8s_cert_expiry"](output, "kubeadm", "30", "2026-12-03T12:00:00Z")
    assert report["renew"] == ["admin.conf", "apiserver-etcd-client"]
    assert FILTERS["k8s_cert_expiry"](output, "kubeadm", 7, "2026-12-03T12:00:00Z")["renew"] == ["apiserver-etcd-client"]
    with pytest.raises(AnsibleFilterError, match="distribution: must be kubeadm or microk8s"):
        FILTERS["k8s_cert_expiry"](output, "k3s", 30, "2026-12-03T12:00:00Z")


TEAMS = [{"name": "ml", "group": "ml-engineers", "namespaces": ["ml-train", "ml-serve"]}]


def test_team_login():
    assert FILTERS["team_login"](TEAMS, "ml", None) == {
        "team": "ml", "group": "ml-engineers", "namespaces": ["ml-train", "ml-serve"], "queue": "ml",
        "identity_provider_group": None}
    # With an identity provider the Kubernetes group carries its prefix; the person's group does not.
    oidc = {"issuer_url": "https://idp.example.com", "client_id": "kubernetes", "groups_prefix": "oidc:"}
    login = FILTERS["team_login"](TEAMS, "ml", oidc)
    assert (login["group"], login["identity_provider_group"]) == ("oidc:ml-engineers", "ml-engineers")
    with pytest.raises(AnsibleFilterError, match="nobody"):
        FILTERS["team_login"](TEAMS, "nobody", {})
