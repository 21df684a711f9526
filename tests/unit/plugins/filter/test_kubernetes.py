"""The kubernetes filter plugin: wrapping and error conversion."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.filter import (
    access, certificates, etcd_restore, k8s_args, k8s_nodes, k8s_topology, k8s_versions, microk8s_args)

FILTERS = {}
for _module in (access, certificates, etcd_restore, k8s_args, k8s_nodes, k8s_topology, k8s_versions, microk8s_args):
    FILTERS.update(_module.FilterModule().filters())


def test_all_filters_exposed():
    assert set(FILTERS) == {
        "k8s_minor", "k8s_supported_minor", "k8s_upgrade_needed", "k8s_network_errors", "k8s_topology_errors",
        "k8s_join_order", "k8s_upgrade_order", "k8s_reset_order", "k8s_feature_gates", "k8s_extra_args",
        "k8s_package_repo", "microk8s_merge_args", "microk8s_merge_env", "microk8s_enable_cdi",
        "k8s_backend_apiserver_args", "k8s_authentication", "k8s_cert_expiry", "team_login",
        "k8s_running_version_problems", "microk8s_snap_list", "k8s_etcd_restore_commands",
        "k8s_node_restart_problems",
    }


def test_etcd_restore_filter_names_the_host_in_its_error():
    with pytest.raises(AnsibleFilterError, match="cp1: /etc/kubernetes/manifests/etcd.yaml is not YAML"):
        FILTERS["k8s_etcd_restore_commands"]({"cp1": "spec: [unclosed"}, "s.db", "t")


def test_backend_apiserver_args_filter():
    assert FILTERS["k8s_backend_apiserver_args"](None, "dra") == {"runtime-config": "resource.k8s.io/v1beta1=true"}
    assert FILTERS["k8s_backend_apiserver_args"]({"event-ttl": "1h"}, "device_plugin") == {"event-ttl": "1h"}


def test_authentication_filter_feeds_the_apiserver_args():
    oidc = {"issuer_url": "https://idp.example.com", "client_id": "kubernetes"}
    authentication = FILTERS["k8s_authentication"](oidc, "/etc/kubernetes/gpushare/authentication-config.yaml")
    assert FILTERS["k8s_backend_apiserver_args"]({"event-ttl": "1h"}, "device_plugin", authentication) == {
        "authentication-config": "/etc/kubernetes/gpushare/authentication-config.yaml", "event-ttl": "1h"}
    assert FILTERS["k8s_authentication"]({}, "/x") == {}
    with pytest.raises(AnsibleFilterError, match="gpushare_oidc.issuer_url: the URL scheme must be https"):
        FILTERS["k8s_authentication"](dict(oidc, issuer_url="http://idp"), "/x")
    with pytest.raises(AnsibleFilterError, match="microk8s_apiserver_args: oidc-client-id cannot be set together"):
        FILTERS["k8s_backend_apiserver_args"]({"oidc-client-id": "k"}, "dra", authentication, "microk8s_apiserver_args")


def test_value_errors_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match="Kubernetes 1.37 is not supported"):
        FILTERS["k8s_supported_minor"]("1.37")
    with pytest.raises(AnsibleFilterError, match="is not of the form"):
        FILTERS["microk8s_merge_args"]("oops\n", {"a": 1})
    with pytest.raises(AnsibleFilterError, match="containerd-env: '1X' is not an environment variable name"):
        FILTERS["microk8s_merge_env"]("", {"1X": "y"})


def test_filters_accept_none_from_templates():
    assert FILTERS["k8s_join_order"](["cp"], None, None, None)["init"] == "cp"
    assert FILTERS["k8s_extra_args"](None, None) == []
    assert FILTERS["k8s_feature_gates"](None) == ""
    assert FILTERS["microk8s_merge_args"]("--a=1\n", None, {"G": True}) == "--a=1\n--feature-gates=G=true\n"
    assert FILTERS["k8s_package_repo"]("1.36", "Debian", "")["url"].startswith("https://pkgs.k8s.io/")
    assert FILTERS["k8s_topology_errors"](["a", "b"], [], "microk8s", "", "") == [
        "control_plane: 2 hosts (a, b); HA needs an odd number (3, 5, ...) so that etcd/dqlite keeps quorum when one fails"]
    assert FILTERS["microk8s_merge_env"]("ulimit -n 1\n", None) == "ulimit -n 1\n"
    assert FILTERS["k8s_topology_errors"](["gpu1"], ["gpu1"], "microk8s") == []
