"""containerd installed, configured as kubeadm needs it, and running."""

import tomllib

CONFIG = "/etc/containerd/config.toml"
PAUSE = "registry.example.internal:5000/mirror/pause:3.10.1"


def dump(host):
    # The configuration as containerd itself reads it, merged with its defaults.
    return tomllib.loads(host.check_output("containerd --config %s config dump", CONFIG))


def cri(config):
    if config.get("version") == 3:
        return config["plugins"]["io.containerd.cri.v1.runtime"], config["plugins"]["io.containerd.cri.v1.images"]
    plugin = config["plugins"]["io.containerd.grpc.v1.cri"]
    return plugin, plugin


def test_package_and_service(host):
    assert host.package("containerd").is_installed
    service = host.service("containerd")
    assert service.is_enabled
    assert service.is_running


def test_config_file_permissions(host):
    conf = host.file(CONFIG)
    assert conf.is_file
    assert conf.user == "root"
    assert conf.group == "root"
    assert conf.mode == 0o644


def test_containerd_reads_systemd_cgroup_and_pause_image(host):
    config = dump(host)
    runtime, images = cri(config)
    assert runtime["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    if config.get("version") == 3:
        assert images["pinned_images"]["sandbox"] == PAUSE
    else:
        assert images["sandbox_image"] == PAUSE
    assert images["registry"]["config_path"] == "/etc/containerd/certs.d"


def test_running_daemon_answers(host):
    # The daemon is up with this configuration and serves its API.
    out = host.check_output("ctr --address /run/containerd/containerd.sock version")
    assert "Server:" in out


def test_catch_all_mirror_with_path(host):
    hosts_file = host.file("/etc/containerd/certs.d/registry.k8s.io/hosts.toml")
    assert hosts_file.user == "root"
    assert hosts_file.mode == 0o644
    hosts = tomllib.loads(hosts_file.content_string)
    mirror = hosts["host"]["https://registry.example.internal:5000/v2/mirror"]
    assert mirror["capabilities"] == ["pull", "resolve"]
    assert mirror["override_path"] is True


def test_per_registry_mirror_wins_and_is_the_server(host):
    hosts = tomllib.loads(host.file("/etc/containerd/certs.d/nvcr.io/hosts.toml").content_string)
    assert hosts["server"] == "https://nvcr-mirror.example.internal"
    assert list(hosts["host"]) == ["https://nvcr-mirror.example.internal"]


def test_every_upstream_registry_is_mirrored(host):
    for registry in ("docker.io", "registry.k8s.io", "nvcr.io", "quay.io", "ghcr.io"):
        assert host.file(f"/etc/containerd/certs.d/{registry}/hosts.toml").is_file


def test_proxy_reaches_the_daemon(host):
    env = host.check_output("systemctl show containerd --property=Environment")
    assert "HTTPS_PROXY=http://proxy.example.internal:3128" in env
    assert "NO_PROXY=localhost,127.0.0.1,.example.internal" in env
