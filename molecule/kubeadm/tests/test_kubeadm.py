"""What the kubeadm role leaves on a control plane when no Kubernetes binary can run."""

import yaml


def test_repository_points_at_the_mirror_for_the_minor(host):
    sources = host.file("/etc/apt/sources.list.d/kubernetes.sources")
    assert sources.mode == 0o644
    lines = sources.content_string.splitlines()
    assert "URIs: file:///srv/mirror/pkgs-k8s/core:/stable:/v1.35/deb/" in lines
    assert "Signed-By: /etc/apt/keyrings/kubernetes-apt-keyring.asc" in lines
    key = host.file("/etc/apt/keyrings/kubernetes-apt-keyring.asc")
    assert key.mode == 0o644 and "BEGIN PGP PUBLIC KEY BLOCK" in key.content_string


def test_apt_pins_the_minor(host):
    pref = host.file("/etc/apt/preferences.d/kubernetes")
    assert pref.mode == 0o644
    assert "Package: kubelet kubeadm kubectl\nPin: version 1.35.*\nPin-Priority: 1001" in pref.content_string


def test_kubelet_environment(host):
    env = host.file("/etc/default/kubelet").content_string
    address = host.interface.default().addresses[0]
    assert f"KUBELET_EXTRA_ARGS=--node-ip={address}" in env


def test_init_configuration_is_private_and_v1beta4(host):
    assert host.file("/etc/kubernetes/gpushare").mode == 0o700
    init = host.file("/etc/kubernetes/gpushare/init.yaml")
    assert init.mode == 0o600
    docs = {d["kind"]: d for d in yaml.safe_load_all(init.content_string) if d}
    assert docs["ClusterConfiguration"]["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert docs["ClusterConfiguration"]["controlPlaneEndpoint"] == "192.0.2.10:6443"
    assert docs["KubeletConfiguration"]["featureGates"] == {"DRAExtendedResource": True}


def test_kube_vip_static_pod_uses_super_admin_before_init(host):
    pod = yaml.safe_load(host.file("/etc/kubernetes/manifests/kube-vip.yaml").content_string)
    assert pod["spec"]["volumes"][0]["hostPath"]["path"] == "/etc/kubernetes/super-admin.conf"


def test_helm_is_the_verified_pinned_binary(host):
    link = host.file("/usr/local/bin/helm")
    assert link.is_symlink and link.linked_to == "/opt/gpushare/helm/v3.19.0/helm"
    assert host.run("/usr/local/bin/helm").stdout.strip() == "v3.19.0+stand-in"
