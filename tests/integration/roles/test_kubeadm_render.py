"""kubeadm role: files rendered with Ubuntu and Rocky facts, compared with the v1beta4 references."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from .k8s_render import key_paths, load_docs, render

HA_HOSTS = {
    "cp1": {"group": "control_plane", "os": "ubuntu-24.04", "facts": {"hostname": "cp1", "default_ipv4": {"address": "192.0.2.11"}}},
    "cp2": {"group": "control_plane", "os": "ubuntu-24.04", "facts": {"hostname": "cp2", "default_ipv4": {"address": "192.0.2.12"}}},
    "cp3": {"group": "control_plane", "os": "rocky-9", "facts": {"hostname": "cp3", "default_ipv4": {"address": "192.0.2.13"}}},
    "gpu1": {"group": "workers", "os": "rocky-9", "facts": {"hostname": "GPU1", "default_ipv4": {"address": "192.0.2.21"}}},
    "gpu2": {"group": "workers", "os": "ubuntu-24.04", "facts": {"hostname": "gpu2", "default_ipv4": {"address": "192.0.2.22"}}},
}
HA_VARS = {
    "gpushare_kubernetes_version": "1.35",
    "kubeadm_vip_address": "192.0.2.10",
    "kubeadm_feature_gates": {"DRAExtendedResource": True, "DRAConsumableCapacity": True},
    "kubeadm_cert_sans": ["k8s-api.example.internal"],
}
GATES = "DRAConsumableCapacity=true,DRAExtendedResource=true"


def _facts(hosts):
    # Fill the netmask/network keys the fixture file already has; hypothesis-free merge.
    return hosts


@pytest.fixture(scope="module")
def ha(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kubeadm-ha")
    # Host facts deep-merge: the fixture file's default_ipv4 lacks the address.
    hosts = {}
    for name, spec in HA_HOSTS.items():
        spec = dict(spec)
        facts = dict(spec["facts"])
        facts["default_ipv4"] = {"interface": "eno1" if spec["os"].startswith("ubuntu") else "ens3f0",
                                 "network": "192.0.2.0", "netmask": "255.255.255.0", **facts["default_ipv4"]}
        spec["facts"] = facts
        hosts[name] = spec
    render(tmp, "kubeadm", hosts, HA_VARS)
    return tmp / "out" / "kubeadm"


def _by_kind(docs):
    return {doc["kind"]: doc for doc in docs}


def test_only_the_bootstrap_host_gets_an_init_file(ha):
    assert (ha / "cp1" / "init.yaml").exists()
    for host in ("cp2", "cp3", "gpu1", "gpu2"):
        assert not (ha / host / "init.yaml").exists()
        assert (ha / host / "join.yaml").exists()


def test_init_configuration_matches_reference_fields(ha, reference_dir):
    ours = _by_kind(load_docs(ha / "cp1" / "init.yaml"))
    ref = _by_kind(load_docs(reference_dir / "k8s" / "kubeadm" / "kubeadm-init.yaml"))
    assert set(ours) == set(ref) == {"InitConfiguration", "ClusterConfiguration", "KubeletConfiguration"}
    for kind in ref:
        assert ours[kind]["apiVersion"] == ref[kind]["apiVersion"]
    # Every field we write exists in the reference shape, except a few documented extras.
    extras = {
        "InitConfiguration": {"nodeRegistration.taints[].key", "nodeRegistration.taints[].effect"},
        "ClusterConfiguration": set(),
        "KubeletConfiguration": set(),
    }
    # Fields of the reference we leave out on purpose: tokens are created on demand at join
    # time (never baked into a file), node labels come from the inventory after join.
    omitted = {
        "InitConfiguration": {"bootstrapTokens", "bootstrapTokens[].token", "bootstrapTokens[].ttl",
                              "bootstrapTokens[].usages", "bootstrapTokens[].groups"},
        "ClusterConfiguration": set(),
        "KubeletConfiguration": set(),
    }
    for kind in ref:
        ours_paths, ref_paths = key_paths(ours[kind]), key_paths(ref[kind])
        assert ours_paths - ref_paths == extras[kind], kind
        assert ref_paths - ours_paths == omitted[kind], kind


def test_init_values(ha):
    docs = _by_kind(load_docs(ha / "cp1" / "init.yaml"))
    init, cluster, kubelet = docs["InitConfiguration"], docs["ClusterConfiguration"], docs["KubeletConfiguration"]
    assert init["localAPIEndpoint"] == {"advertiseAddress": "192.0.2.11", "bindPort": 6443}
    assert init["nodeRegistration"]["name"] == "cp1"
    assert init["nodeRegistration"]["criSocket"] == "unix:///run/containerd/containerd.sock"
    assert init["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-ip", "value": "192.0.2.11"}]
    assert init["nodeRegistration"]["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert cluster["kubernetesVersion"] == "v1.35.0"
    assert cluster["controlPlaneEndpoint"] == "192.0.2.10:6443"
    assert cluster["networking"] == {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/12", "dnsDomain": "cluster.local"}
    assert cluster["apiServer"]["certSANs"] == ["k8s-api.example.internal", "192.0.2.10"]
    for component in ("controllerManager", "scheduler"):
        assert cluster[component]["extraArgs"] == [{"name": "feature-gates", "value": GATES}]
    # Under dra (the default backend) the API server also serves resource.k8s.io/v1beta1 for dcgm-exporter.
    assert cluster["apiServer"]["extraArgs"] == [{"name": "feature-gates", "value": GATES},
                                                 {"name": "runtime-config", "value": "resource.k8s.io/v1beta1=true"}]
    assert kubelet["cgroupDriver"] == "systemd"
    assert kubelet["featureGates"] == {"DRAConsumableCapacity": True, "DRAExtendedResource": True}


def test_feature_gate_values_equal_reference(ha, reference_dir):
    ours = _by_kind(load_docs(ha / "cp1" / "init.yaml"))
    ref = _by_kind(load_docs(reference_dir / "k8s" / "kubeadm" / "kubeadm-init.yaml"))
    for component in ("apiServer", "controllerManager", "scheduler"):
        ref_gates = set(ref["ClusterConfiguration"][component]["extraArgs"][0]["value"].split(","))
        assert set(ours["ClusterConfiguration"][component]["extraArgs"][0]["value"].split(",")) == ref_gates
    assert ours["KubeletConfiguration"]["featureGates"] == ref["KubeletConfiguration"]["featureGates"]


@pytest.mark.parametrize("host,reference,extras", [
    ("cp2", "kubeadm-join-controlplane.yaml", {"nodeRegistration.kubeletExtraArgs", "nodeRegistration.kubeletExtraArgs[].name",
                                               "nodeRegistration.kubeletExtraArgs[].value", "nodeRegistration.taints",
                                               "nodeRegistration.taints[].key", "nodeRegistration.taints[].effect",
                                               "timeouts", "timeouts.discovery"}),
    ("gpu1", "kubeadm-join-worker.yaml", set()),
])
def test_join_configuration_matches_reference_fields(ha, reference_dir, host, reference, extras):
    (ours,) = load_docs(ha / host / "join.yaml")
    (ref,) = load_docs(reference_dir / "k8s" / "kubeadm" / reference)
    assert ours["apiVersion"] == ref["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert ours["kind"] == ref["kind"] == "JoinConfiguration"
    assert key_paths(ours) - key_paths(ref) == extras
    assert key_paths(ref) - key_paths(ours) == set()


def test_join_values(ha):
    (cp2,) = load_docs(ha / "cp2" / "join.yaml")
    (gpu1,) = load_docs(ha / "gpu1" / "join.yaml")
    for doc in (cp2, gpu1):
        assert doc["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "192.0.2.10:6443"
        assert doc["discovery"]["bootstrapToken"]["token"].startswith("<bootstrap token")
        assert doc["timeouts"] == {"discovery": "5m0s"}
    assert cp2["controlPlane"]["localAPIEndpoint"] == {"advertiseAddress": "192.0.2.12", "bindPort": 6443}
    assert cp2["controlPlane"]["certificateKey"].startswith("<certificate key")
    assert "controlPlane" not in gpu1
    # Node names are lower-cased host names (Kubernetes rejects upper case).
    assert gpu1["nodeRegistration"]["name"] == "gpu1"


def test_repository_definitions_per_os(ha, reference_dir):
    deb = (ha / "cp1" / "kubernetes.sources").read_text()
    assert "URIs: https://pkgs.k8s.io/core:/stable:/v1.35/deb/\n" in deb
    assert "Suites: /\n" in deb and "Types: deb\n" in deb
    assert "Signed-By: /etc/apt/keyrings/kubernetes-apt-keyring.asc\n" in deb
    pref = (ha / "cp1" / "kubernetes.pref").read_text()
    assert "Package: kubelet kubeadm kubectl\nPin: version 1.35.*\nPin-Priority: 1001\n" in pref
    rpm = (ha / "gpu1" / "kubernetes.repo").read_text()
    ref = (reference_dir / "k8s" / "kubeadm" / "repos.md").read_text().replace("v1.34", "v1.35")
    for line in ("baseurl=https://pkgs.k8s.io/core:/stable:/v1.35/rpm/",
                 "gpgkey=https://pkgs.k8s.io/core:/stable:/v1.35/rpm/repodata/repomd.xml.key",
                 "exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni", "gpgcheck=1", "enabled=1", "[kubernetes]"):
        assert line in rpm.splitlines() and line in ref
    assert not (ha / "gpu1" / "kubernetes.pref").exists()


def test_kube_vip_only_on_control_planes(ha):
    (pod,) = load_docs(ha / "cp1" / "kube-vip.yaml")
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["address"] == "192.0.2.10" and env["vip_interface"] == "eno1" and env["port"] == "6443"
    assert pod["spec"]["containers"][0]["image"] == "ghcr.io/kube-vip/kube-vip:v1.0.0"
    # The init host uses super-admin.conf until the cluster exists (kubeadm >= 1.29).
    assert pod["spec"]["volumes"][0]["hostPath"]["path"] == "/etc/kubernetes/super-admin.conf"
    (pod3,) = load_docs(ha / "cp3" / "kube-vip.yaml")
    assert pod3["spec"]["volumes"][0]["hostPath"]["path"] == "/etc/kubernetes/admin.conf"
    assert {e["name"]: e["value"] for e in pod3["spec"]["containers"][0]["env"]}["vip_interface"] == "ens3f0"
    assert not (ha / "gpu1" / "kube-vip.yaml").exists()


def test_kubelet_env(ha):
    assert "KUBELET_EXTRA_ARGS=--node-ip=192.0.2.21\n" in (ha / "gpu1" / "kubelet.env").read_text()


SOLO_IPV4 = {"address": "10.1.0.5", "interface": "eth0", "network": "10.1.0.0", "netmask": "255.255.0.0"}
SINGLE = {"solo": {"group": "control_plane", "os": "rocky-9", "facts": {"hostname": "solo", "default_ipv4": SOLO_IPV4}}}


def test_single_node_with_mirrors(tmp_path):
    render(tmp_path, "kubeadm", SINGLE, {
        "gpushare_kubernetes_version": "v1.36.2",
        "kubeadm_package_version": "1.36.2",
        "kubeadm_schedule_on_control_plane": True,
        "gpushare_mirrors": {"dnf": {"kubernetes": "https://mirror.example.internal/k8s/"},
                             "registries": {"registry.k8s.io": "registry.example.internal/k8s"}},
        "gpushare_proxy": {"https": "http://proxy.example.internal:3128"},
    })
    out = tmp_path / "out" / "kubeadm" / "solo"
    docs = _by_kind(load_docs(out / "init.yaml"))
    assert docs["InitConfiguration"]["nodeRegistration"]["taints"] == []
    cluster = docs["ClusterConfiguration"]
    assert cluster["kubernetesVersion"] == "v1.36.2"
    assert cluster["imageRepository"] == "registry.example.internal/k8s"
    assert "controlPlaneEndpoint" not in cluster
    assert cluster["apiServer"]["extraArgs"] == [{"name": "runtime-config", "value": "resource.k8s.io/v1beta1=true"}]
    assert "featureGates" not in docs["KubeletConfiguration"]
    repo = (out / "kubernetes.repo").read_text().splitlines()
    assert "baseurl=https://mirror.example.internal/k8s/core:/stable:/v1.36/rpm/" in repo
    assert "proxy=http://proxy.example.internal:3128" in repo


@pytest.mark.parametrize("group_vars,message", [
    ({"gpushare_kubernetes_version": "1.33"}, "Kubernetes 1.33 is not supported; supported minors are 1.34, 1.35, 1.36"),
    ({"kubeadm_pod_cidr": "10.96.0.0/16"}, "pod_cidr 10.96.0.0/16 and service_cidr 10.96.0.0/12 overlap"),
    ({"kubeadm_pod_cidr": "10.0.0.0/8"}, "pod_cidr 10.0.0.0/8 overlaps the node network 10.1.0.0/16"),
    ({"kubeadm_cni": "flannel"}, "value of kubeadm_cni must be one of: calico, cilium, none"),
    ({"kubeadm_feature_gates": {"DRAExtendedResource": "yes"}}, "feature_gates.DRAExtendedResource: 'yes' must be true or false"),
])
def test_bad_input_fails_before_anything_is_written(tmp_path, group_vars, message):
    result = render(tmp_path, "kubeadm", SINGLE, group_vars, expect_failure=True)
    assert message in result.stdout
    assert not (tmp_path / "out").exists()


def test_even_control_planes_and_workers_without_control_plane(tmp_path):
    hosts = {name: dict(spec, facts={**spec["facts"], "default_ipv4": {
        "address": spec["facts"]["default_ipv4"]["address"], "interface": "eno1",
        "network": "192.0.2.0", "netmask": "255.255.255.0"}}) for name, spec in HA_HOSTS.items() if name != "cp3"}
    result = render(tmp_path / "even", "kubeadm", hosts, HA_VARS, expect_failure=True) if (tmp_path / "even").mkdir() is None else None
    assert "control_plane: 2 hosts (cp1, cp2); HA needs an odd number" in result.stdout
    workers_only = {name: spec for name, spec in hosts.items() if spec["group"] == "workers"}
    (tmp_path / "nocp").mkdir()
    result = render(tmp_path / "nocp", "kubeadm", workers_only, {}, expect_failure=True)
    assert "control_plane: the group is empty but workers (gpu1, gpu2) need a control plane to join" in result.stdout


def test_calico_values_follow_pod_cidr(ha):
    cni = load_docs(ha / "cp1" / "cni.yaml")[0]
    assert (cni["release"], cni["chart_ref"], cni["version"], cni["namespace"]) == (
        "calico", "tigera-operator", "v3.32.0", "tigera-operator")
    assert cni["chart_repo_url"] == "https://docs.tigera.io/calico/charts"
    assert cni["values"]["installation"]["calicoNetwork"]["ipPools"][0]["cidr"] == "10.244.0.0/16"
    assert "registry" not in cni["values"]["installation"]
    assert not (ha / "cp2" / "cni.yaml").exists()


def test_ubuntu_exact_version_cilium_from_oci_mirror(tmp_path):
    host = {"solo": {"group": "control_plane", "os": "ubuntu-24.04",
                     "facts": {"hostname": "solo", "default_ipv4": SOLO_IPV4}}}
    render(tmp_path, "kubeadm", host, {
        "gpushare_kubernetes_version": "1.35", "kubeadm_package_version": "1.35.2", "kubeadm_cni": "cilium",
        "kubeadm_pod_cidr": "10.42.0.0/16",
        "gpushare_mirrors": {"helm": {"oci": "oci://registry.example.internal/charts"}, "registry": "registry.example.internal"},
    })
    out = tmp_path / "out" / "kubeadm" / "solo"
    assert "Pin: version 1.35.2*\n" in (out / "kubernetes.pref").read_text()
    cni = load_docs(out / "cni.yaml")[0]
    assert cni["chart_ref"] == "oci://registry.example.internal/charts/cilium" and cni["chart_repo_url"] == ""
    assert cni["values"]["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"] == ["10.42.0.0/16"]
    init = {d["kind"]: d for d in load_docs(out / "init.yaml")}
    assert init["ClusterConfiguration"]["kubernetesVersion"] == "v1.35.2"
    assert init["ClusterConfiguration"]["imageRepository"] == "registry.example.internal"


def test_calico_registry_mirror(tmp_path):
    render(tmp_path, "kubeadm", SINGLE, {"gpushare_mirrors": {"registries": {"quay.io": "mirror.example.internal/quay"}}})
    cni = load_docs(tmp_path / "out" / "kubeadm" / "solo" / "cni.yaml")[0]
    assert cni["values"]["installation"]["registry"] == "mirror.example.internal/quay/"
    # The chart's own image: <tigeraOperator.registry>/<tigeraOperator.image> (image stays tigera/operator).
    assert cni["values"]["tigeraOperator"] == {"registry": "mirror.example.internal/quay"}
    # No Docker Hub mirror set: calicoctl keeps the chart's default.
    assert "calicoctl" not in cni["values"]


def test_calico_single_registry_mirror_covers_every_image(tmp_path):
    render(tmp_path, "kubeadm", SINGLE, {"gpushare_mirrors": {"registry": "registry.internal:5000"}})
    values = load_docs(tmp_path / "out" / "kubeadm" / "solo" / "cni.yaml")[0]["values"]
    assert values["tigeraOperator"]["registry"] == "registry.internal:5000"
    assert values["installation"]["registry"] == "registry.internal:5000/"
    assert values["calicoctl"]["image"] == "registry.internal:5000/calico/ctl"
    # The role's own values are kept next to the registry ones.
    assert values["installation"]["cni"] == {"type": "Calico"}


def test_cilium_images_follow_the_registry_mirror(tmp_path):
    render(tmp_path, "kubeadm", SINGLE, {"kubeadm_cni": "cilium", "gpushare_mirrors": {
        "registry": "registry.internal:5000", "registries": {"quay.io": "mirror.example.internal/quay"}}})
    values = load_docs(tmp_path / "out" / "kubeadm" / "solo" / "cni.yaml")[0]["values"]
    repositories = {}

    def walk(node, path):
        if isinstance(node, dict):
            if "repository" in node:
                repositories[path] = node["repository"]
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else key)
    walk(values, "")
    assert repositories["image"] == "mirror.example.internal/quay/cilium/cilium"
    assert repositories["operator.image"] == "mirror.example.internal/quay/cilium/operator"
    assert repositories["envoy.image"] == "mirror.example.internal/quay/cilium/cilium-envoy"
    assert {"hubble.relay.image", "hubble.ui.backend.image", "hubble.ui.frontend.image", "certgen.image",
            "preflight.image", "preflight.envoy.image", "nodeinit.image", "clustermesh.apiserver.image"} <= set(repositories)
    assert all(r.startswith("mirror.example.internal/quay/cilium/") for r in repositories.values()), repositories
    assert values["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"] == ["10.244.0.0/16"]


def test_cilium_without_mirror_keeps_chart_images(tmp_path):
    render(tmp_path, "kubeadm", SINGLE, {"kubeadm_cni": "cilium"})
    values = load_docs(tmp_path / "out" / "kubeadm" / "solo" / "cni.yaml")[0]["values"]
    assert set(values) == {"kubeProxyReplacement", "ipam"}


def test_advertise_address_falls_back_to_ansible_host_without_facts(tmp_path):
    host = {"solo": {"group": "control_plane", "os": "rocky-9", "vars": {"ansible_host": "198.51.100.7"},
                     "facts": {"hostname": "solo"}}}
    render(tmp_path, "kubeadm", host, {})
    out = tmp_path / "out" / "kubeadm" / "solo"
    init = _by_kind(load_docs(out / "init.yaml"))["InitConfiguration"]
    assert init["localAPIEndpoint"]["advertiseAddress"] == "198.51.100.7"
    assert "KUBELET_EXTRA_ARGS=--node-ip=198.51.100.7\n" in (out / "kubelet.env").read_text()


def test_advertise_address_must_be_an_ip(tmp_path):
    host = {"solo": {"group": "control_plane", "os": "rocky-9", "vars": {"ansible_host": "gpu1.example.internal"},
                     "facts": {"hostname": "solo"}}}
    result = render(tmp_path, "kubeadm", host, {}, expect_failure=True)
    assert "solo: kubeadm_advertise_address \"gpu1.example.internal\" is not an IP address" in result.stdout


def test_control_plane_that_is_also_a_worker(tmp_path):
    hosts = {"gpu1": {"groups": ["control_plane", "workers"], "os": "ubuntu-24.04",
                      "facts": {"hostname": "gpu1", "default_ipv4": SOLO_IPV4}}}
    render(tmp_path, "kubeadm", hosts, {})
    out = tmp_path / "out" / "kubeadm" / "gpu1"
    init = _by_kind(load_docs(out / "init.yaml"))["InitConfiguration"]
    # It runs workloads: no control-plane NoSchedule taint, and it never joins as a worker.
    assert init["nodeRegistration"]["taints"] == []
    assert not (out / "join.yaml").exists()


def test_an_exact_kubernetes_version_pins_the_packages_and_the_cluster(tmp_path):
    """gpushare_kubernetes_version "1.35.2" alone (no kubeadm_package_version): the packages, the
    apt pin and kubeadm's kubernetesVersion all name 1.35.2, the tags mirror.yml lists."""
    host = {"solo": {"group": "control_plane", "os": "ubuntu-24.04", "facts": {"hostname": "solo", "default_ipv4": SOLO_IPV4}}}
    render(tmp_path, "kubeadm", host, {"gpushare_kubernetes_version": "1.35.2"})
    out = tmp_path / "out" / "kubeadm" / "solo"
    assert "Pin: version 1.35.2*\n" in (out / "kubernetes.pref").read_text()
    assert _by_kind(load_docs(out / "init.yaml"))["ClusterConfiguration"]["kubernetesVersion"] == "v1.35.2"


SNAPSHOT_FILES = ("gpushare-etcd-snapshot", "gpushare-etcd-snapshot.service", "gpushare-etcd-snapshot.timer")


def test_etcd_snapshots_only_on_control_planes_of_either_os(ha):
    for host in ("cp1", "cp2", "cp3"):  # Ubuntu and Rocky control planes
        assert all((ha / host / name).is_file() for name in SNAPSHOT_FILES), host
        script = (ha / host / "gpushare-etcd-snapshot").read_text()
        assert 'BACKUP_DIR="${BACKUP_DIR:-/var/backups/etcd}"' in script and 'KEEP="${KEEP:-14}"' in script
        assert 'CERT="${CERT:-$PKI/healthcheck-client.crt}"' in script
        timer = (ha / host / "gpushare-etcd-snapshot.timer").read_text()
        assert "OnCalendar=*-*-* 02,14:00:00" in timer and "Persistent=true" in timer
        assert "ExecStart=/usr/local/sbin/gpushare-etcd-snapshot" in (ha / host / "gpushare-etcd-snapshot.service").read_text()
    for host in ("gpu1", "gpu2"):
        assert not any((ha / host / name).exists() for name in SNAPSHOT_FILES), host


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("host", ["cp1", "cp3"])
def test_etcd_snapshot_units_pass_systemd_analyze_verify(ha, tmp_path, host):
    # The script's installed path does not exist on this machine: verify checks that
    # ExecStart is executable, so the units point at the rendered script instead.
    script = tmp_path / "gpushare-etcd-snapshot"
    script.write_text((ha / host / "gpushare-etcd-snapshot").read_text())
    script.chmod(0o755)
    for name in SNAPSHOT_FILES[1:]:
        text = (ha / host / name).read_text().replace("/usr/local/sbin/gpushare-etcd-snapshot", str(script))
        (tmp_path / name).write_text(text)
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", *(str(tmp_path / name) for name in SNAPSHOT_FILES[1:])],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_etcd_snapshots_can_be_turned_off(tmp_path):
    render(tmp_path, "kubeadm", SINGLE, {"kubeadm_etcd_backup_enabled": False})
    host = next(iter(SINGLE))
    assert not any((tmp_path / "out" / "kubeadm" / host / name).exists() for name in SNAPSHOT_FILES)
