"""microk8s role: args files merged by the role's own wiring, with Ubuntu and Rocky facts."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes.microk8s_args import get_args, parse_gates

from .k8s_render import FIXTURES, render


def _host(name, os_name, address, group):
    return {"group": group, "os": os_name, "facts": {"hostname": name, "default_ipv4": {
        "address": address, "interface": "eth0", "network": "192.0.2.0", "netmask": "255.255.255.0"}}}


HOSTS = {
    "mk1": _host("mk1", "ubuntu-24.04", "192.0.2.31", "control_plane"),
    "mk2": _host("mk2", "ubuntu-24.04", "192.0.2.32", "control_plane"),
    "mk3": _host("mk3", "rocky-9", "192.0.2.33", "control_plane"),
    "gpu1": _host("gpu1", "ubuntu-24.04", "192.0.2.41", "workers"),
}
GATES = {"DRAExtendedResource": True, "DRAConsumableCapacity": True}


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("microk8s")
    render(tmp, "microk8s", HOSTS, {
        "gpushare_kubernetes_version": "1.34",
        "microk8s_feature_gates": GATES,
        "microk8s_kubelet_args": {"max-pods": 250, "cpu-manager-policy": "static"},
        "microk8s_apiserver_args": {"event-ttl": "1h"},
        "microk8s_render_args_source": str(FIXTURES / "microk8s"),
    })
    return tmp / "out" / "microk8s"


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("service", ["kubelet", "kube-apiserver", "kube-scheduler", "kube-controller-manager"])
def test_every_service_gets_the_gates_once(out, host, service):
    text = (out / host / service).read_text()
    gate_lines = [line for line in text.splitlines() if line.startswith("--feature-gates")]
    assert len(gate_lines) == 1
    original = get_args((FIXTURES / "microk8s" / service).read_text())
    expected = dict(parse_gates(original["feature-gates"])) if "feature-gates" in original else {}
    expected.update(GATES)
    assert parse_gates(get_args(text)["feature-gates"]) == expected
    # MicroK8s's own flags survive.
    for name, value in original.items():
        if name != "feature-gates":
            assert get_args(text)[name] == value


def test_service_specific_args_land_in_their_file(out):
    kubelet = get_args((out / "mk1" / "kubelet").read_text())
    assert kubelet["max-pods"] == "250" and kubelet["cpu-manager-policy"] == "static"
    apiserver = get_args((out / "mk1" / "kube-apiserver").read_text())
    assert apiserver["event-ttl"] == "1h" and "max-pods" not in apiserver
    # dra is the default backend: dcgm-exporter's ResourceSlice watch needs resource.k8s.io/v1beta1.
    assert apiserver["runtime-config"] == "resource.k8s.io/v1beta1=true"
    assert "event-ttl" not in get_args((out / "mk1" / "kube-scheduler").read_text())


def test_apiserver_keeps_microk8s_gate_first(out):
    line = [x for x in (out / "mk3" / "kube-apiserver").read_text().splitlines() if x.startswith("--feature-gates")][0]
    assert line == "--feature-gates=ListFromCacheSnapshot=false,DRAConsumableCapacity=true,DRAExtendedResource=true"


def test_cdi_on_for_134(out):
    text = (out / "gpu1" / "containerd-template.toml").read_text()
    assert "  enable_cdi = true\n" in text and 'default_runtime_name = "${RUNTIME}"' in text


def test_plan_paths_and_order(out):
    plan = yaml.safe_load((out / "mk2" / "plan.yaml").read_text())
    assert plan["channel"] == "1.34/stable"
    assert plan["paths"]["containerd_socket"] == "/var/snap/microk8s/common/run/containerd.sock"
    assert plan["paths"]["kubelet_plugins_registry"] == "/var/snap/microk8s/common/var/lib/kubelet/plugins_registry"
    assert plan["order"] == {"init": "mk1", "bootstrap": "mk1", "control_plane_joins": ["mk2", "mk3"], "worker_joins": ["gpu1"]}


def test_no_cdi_on_135_and_empty_args_start(tmp_path):
    render(tmp_path, "microk8s", {"solo": HOSTS["gpu1"] | {"group": "control_plane"}},
           {"gpushare_kubernetes_version": "1.35", "microk8s_feature_gates": {"DRAExtendedResource": True}})
    out = tmp_path / "out" / "microk8s" / "solo"
    assert not (out / "containerd-template.toml").exists()
    assert (out / "kubelet").read_text() == "--feature-gates=DRAExtendedResource=true\n"
    assert yaml.safe_load((out / "plan.yaml").read_text())["channel"] == "1.35/stable"


@pytest.mark.parametrize("group_vars,message", [
    ({"gpushare_kubernetes_version": "1.37"}, "Kubernetes 1.37 is not supported"),
    ({"microk8s_channel": "1.34/stable"}, "microk8s_channel: \"1.34/stable\" does not track Kubernetes 1.35"),
    ({"microk8s_addons": ["dns", "nvidia"]}, "microk8s_addons: the nvidia/gpu add-on installs its own GPU Operator"),
    ({"microk8s_feature_gates": {"Bad-Gate": True}}, "kubelet: feature gate 'Bad-Gate'=True"),
    ({"microk8s_kubelet_args": {"--max-pods": 1}}, "kubelet: '--max-pods' is not an argument name"),
])
def test_bad_input_fails_early(tmp_path, group_vars, message):
    result = render(tmp_path, "microk8s", {"solo": HOSTS["gpu1"] | {"group": "control_plane"}}, group_vars, expect_failure=True)
    assert message in result.stdout
    assert not (tmp_path / "out").exists()


def test_even_control_planes_fail(tmp_path):
    hosts = {k: v for k, v in HOSTS.items() if k != "mk3"}
    result = render(tmp_path, "microk8s", hosts, {}, expect_failure=True)
    assert "control_plane: 2 hosts (mk1, mk2); HA needs an odd number" in result.stdout


def test_no_mirror_no_proxy_files_without_settings(out):
    for host in HOSTS:
        assert not (out / host / "certs.d").exists()
        assert not (out / host / "containerd-env").exists()


def test_single_node_in_both_groups_with_registry_mirrors_and_proxy(tmp_path):
    solo = dict(HOSTS["gpu1"])
    del solo["group"]
    render(tmp_path, "microk8s", {"gpu1": solo | {"groups": ["control_plane", "workers"]}}, {
        "gpushare_mirrors": {"registry": "registry.internal:5000",
                             "registries": {"nvcr.io": "registry.internal:5000/nvcr"}},
        "gpushare_proxy": {"https": "http://proxy.internal:3128", "no_proxy": "localhost,.internal"},
        "microk8s_render_args_source": str(FIXTURES / "microk8s"),
    })
    out = tmp_path / "out" / "microk8s" / "gpu1"
    # A control plane that also runs workloads: it initialises and never joins as a worker.
    assert yaml.safe_load((out / "plan.yaml").read_text())["order"] == {
        "init": "gpu1", "bootstrap": "gpu1", "control_plane_joins": [], "worker_joins": []}
    registries = sorted(p.parent.name for p in (out / "certs.d").glob("*/hosts.toml"))
    assert registries == ["docker.io", "ghcr.io", "nvcr.io", "quay.io", "registry.k8s.io"]
    assert (out / "certs.d" / "docker.io" / "hosts.toml").read_text() == (
        'server = "https://registry.internal:5000"\n\n'
        '[host."https://registry.internal:5000"]\n  capabilities = ["pull", "resolve"]\n')
    # A mirror with a path: the full API prefix and override_path.
    nvcr = (out / "certs.d" / "nvcr.io" / "hosts.toml").read_text()
    assert '[host."https://registry.internal:5000/v2/nvcr"]' in nvcr and "override_path = true" in nvcr
    env = (out / "containerd-env").read_text()
    # MicroK8s's own lines stay, the proxy is appended in both spellings.
    assert env.startswith((FIXTURES / "microk8s" / "containerd-env").read_text())
    assert "HTTPS_PROXY=http://proxy.internal:3128\nNO_PROXY=localhost,.internal,10.1.0.0/16,10.152.183.0/24\n" in env
    assert "https_proxy=http://proxy.internal:3128\n" in env and "HTTP_PROXY" not in env


def test_only_overridden_registries_get_a_mirror(tmp_path):
    render(tmp_path, "microk8s", {"solo": HOSTS["gpu1"] | {"group": "control_plane"}},
           {"gpushare_mirrors": {"registries": {"nvcr.io": "nvcr.internal"}}})
    out = tmp_path / "out" / "microk8s" / "solo"
    assert [p.parent.name for p in (out / "certs.d").glob("*/hosts.toml")] == ["nvcr.io"]
    assert not (out / "containerd-env").exists()
