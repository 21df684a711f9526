"""gpushare_oidc rendered into the API server of both distributions (kubeadm and microk8s roles)."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes.microk8s_args import get_args
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal.cluster import make_ca

from .k8s_render import FIXTURES, load_docs, render
from .test_microk8s_render import HOSTS as MICROK8S_HOSTS
from .test_microk8s_render import _host

OIDC = {"issuer_url": "https://idp.example.com/realms/gpu", "client_id": "kubernetes", "groups_prefix": "idp:"}
KUBEADM_HOSTS = {
    "cp1": _host("cp1", "ubuntu-24.04", "192.0.2.11", "control_plane"),
    "cp2": _host("cp2", "rocky-9", "192.0.2.12", "control_plane"),
    "cp3": _host("cp3", "ubuntu-24.04", "192.0.2.13", "control_plane"),
    "gpu1": _host("gpu1", "ubuntu-24.04", "192.0.2.21", "workers"),
}
KUBEADM_VARS = {"gpushare_kubernetes_version": "1.35", "kubeadm_vip_address": "192.0.2.10"}


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("idp") / "idp-ca.pem"
    path.write_bytes(make_ca("idp.example.com")[0])
    return path


@pytest.fixture(scope="module")
def kubeadm(tmp_path_factory, ca_file):
    tmp = tmp_path_factory.mktemp("kubeadm-oidc")
    render(tmp, "kubeadm", KUBEADM_HOSTS, {**KUBEADM_VARS, "gpushare_oidc": dict(OIDC, ca_file=str(ca_file))})
    return tmp / "out" / "kubeadm"


def test_kubeadm_api_server_loads_the_file_from_a_mounted_volume(kubeadm):
    cluster = next(d for d in load_docs(kubeadm / "cp1" / "init.yaml") if d["kind"] == "ClusterConfiguration")
    path = "/etc/kubernetes/gpushare/authentication-config.yaml"
    args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert args["authentication-config"] == path
    assert args["runtime-config"] == "resource.k8s.io/v1beta1=true"  # the backend's argument is kept
    assert not [name for name in args if name.startswith("oidc-")]
    assert cluster["apiServer"]["extraVolumes"] == [
        {"name": "gpushare-authentication", "hostPath": path, "mountPath": path, "readOnly": True, "pathType": "File"}]


def test_every_kubeadm_control_plane_gets_the_configuration_and_no_worker_does(kubeadm, ca_file):
    expected = team_access.authentication_configuration(OIDC, ca_file.read_text())
    for host in ("cp1", "cp2", "cp3"):
        assert yaml.safe_load((kubeadm / host / "authentication-config.yaml").read_text()) == expected, host
    assert not (kubeadm / "gpu1" / "authentication-config.yaml").exists()
    assert expected["jwt"][0]["issuer"]["certificateAuthority"].startswith("-----BEGIN CERTIFICATE-----")


def test_kubeadm_without_an_identity_provider_has_no_authentication_file(tmp_path):
    render(tmp_path, "kubeadm", {"cp1": KUBEADM_HOSTS["cp1"]}, {"gpushare_kubernetes_version": "1.35"})
    out = tmp_path / "out" / "kubeadm" / "cp1"
    cluster = next(d for d in load_docs(out / "init.yaml") if d["kind"] == "ClusterConfiguration")
    assert "extraVolumes" not in cluster["apiServer"]
    assert "authentication-config" not in {a["name"] for a in cluster["apiServer"]["extraArgs"]}
    assert not (out / "authentication-config.yaml").exists()


def test_oidc_flags_next_to_gpushare_oidc_are_refused_naming_the_variable(tmp_path):
    result = render(tmp_path, "kubeadm", {"cp1": KUBEADM_HOSTS["cp1"]}, {
        "gpushare_kubernetes_version": "1.35", "gpushare_oidc": OIDC,
        "kubeadm_apiserver_extra_args": {"oidc-issuer-url": "https://other.example.com"}}, expect_failure=True)
    assert "kubeadm_apiserver_extra_args: oidc-issuer-url cannot be set together with gpushare_oidc" in result.stdout


def test_microk8s_api_server_args_name_the_file_next_to_them(tmp_path):
    render(tmp_path, "microk8s", {"mk1": MICROK8S_HOSTS["mk1"], "gpu1": MICROK8S_HOSTS["gpu1"]}, {
        "gpushare_kubernetes_version": "1.35", "gpushare_oidc": OIDC,
        "microk8s_render_args_source": str(FIXTURES / "microk8s")})
    out = tmp_path / "out" / "microk8s"
    path = "/var/snap/microk8s/current/args/gpushare-authentication-config.yaml"
    for host in ("mk1", "gpu1"):
        args = get_args((out / host / "kube-apiserver").read_text())
        assert args["authentication-config"] == path
        assert args["runtime-config"] == "resource.k8s.io/v1beta1=true"
        assert yaml.safe_load((out / host / "gpushare-authentication-config.yaml").read_text()) == \
            team_access.authentication_configuration(OIDC)
