"""What the microk8s role leaves in the MicroK8s args directory."""

import pytest

ARGS = "/var/snap/microk8s/current/args"
GATES = {"DRAExtendedResource=true", "DRAConsumableCapacity=true"}


def _flags(host, service):
    return [line for line in host.file(f"{ARGS}/{service}").content_string.splitlines() if line.startswith("--")]


@pytest.mark.parametrize("service", ["kubelet", "kube-apiserver", "kube-scheduler", "kube-controller-manager"])
def test_one_feature_gates_line_with_every_gate(host, service):
    lines = [line for line in _flags(host, service) if line.startswith("--feature-gates")]
    assert len(lines) == 1
    assert GATES <= set(lines[0].split("=", 1)[1].strip('"').split(","))


def test_existing_gates_and_flags_are_kept(host):
    apiserver = _flags(host, "kube-apiserver")
    assert "--feature-gates=ListFromCacheSnapshot=false,DRAConsumableCapacity=true,DRAExtendedResource=true" in apiserver
    assert "--secure-port=16443" in apiserver
    kubelet = _flags(host, "kubelet")
    assert "--feature-gates=DevicePlugins=true,DRAConsumableCapacity=true,DRAExtendedResource=true" in kubelet
    assert kubelet[-1] == "--max-pods=250"
    assert len(kubelet) == len(set(kubelet))


def test_cdi_enabled_once_in_containerd_template(host):
    text = host.file(f"{ARGS}/containerd-template.toml").content_string
    assert text.count("enable_cdi = true") == 1
    assert 'cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]' in text
    assert 'default_runtime_name = "${RUNTIME}"' in text


@pytest.mark.parametrize("registry", ["docker.io", "registry.k8s.io", "nvcr.io", "quay.io", "ghcr.io"])
def test_every_registry_pulls_through_the_mirror(host, registry):
    hosts_toml = host.file(f"{ARGS}/certs.d/{registry}/hosts.toml")
    assert hosts_toml.mode == 0o644
    text = hosts_toml.content_string
    if registry == "nvcr.io":
        assert '[host."https://registry.internal:5000/v2/nvcr"]' in text and "override_path = true" in text
    else:
        assert text.startswith('server = "https://registry.internal:5000"\n')
        assert '[host."https://registry.internal:5000"]' in text


def test_proxy_merged_into_containerd_env(host):
    lines = host.file(f"{ARGS}/containerd-env").content_string.splitlines()
    assert "ulimit -n 65536 || true" in lines
    assert lines.count("HTTPS_PROXY=http://proxy.internal:3128") == 1
    assert "NO_PROXY=localhost,.internal,10.1.0.0/16,10.152.183.0/24" in lines
