"""What host_prep leaves on a control plane, a GPU worker and a CPU worker."""

import pytest

SYSCTL_FILE = "/etc/sysctl.d/90-gpushare-kubernetes.conf"
NOUVEAU_FILE = "/etc/modprobe.d/gpushare-blacklist-nouveau.conf"
GRUB_SNIPPET = "/etc/default/grub.d/90-gpushare.cfg"


def name(host):
    return host.backend.get_hostname()


def assert_root_file(file, mode=0o644):
    assert file.is_file
    assert file.user == "root"
    assert file.group == "root"
    assert file.mode == mode


@pytest.mark.parametrize("package", ["chrony", "conntrack", "socat", "ethtool", "curl", "gpg"])
def test_node_packages_installed(host, package):
    assert host.package(package).is_installed


def test_kernel_settings_file(host):
    conf = host.file(SYSCTL_FILE)
    assert_root_file(conf)
    lines = conf.content_string.splitlines()
    for line in (
        "net.ipv4.ip_forward=1",
        "net.bridge.bridge-nf-call-iptables=1",
        "net.bridge.bridge-nf-call-ip6tables=1",
        "fs.inotify.max_user_instances=8192",
        "fs.inotify.max_user_watches=524288",
    ):
        assert line in lines


def test_modules_load_file(host):
    conf = host.file("/etc/modules-load.d/gpushare-kubernetes.conf")
    assert_root_file(conf)
    assert [x for x in conf.content_string.splitlines() if x and not x.startswith("#")] == ["overlay", "br_netfilter"]


def test_swap_stays_off_after_reboots(host):
    assert host.run("systemctl is-enabled swap.target").stdout.strip() == "masked"


def test_chrony_enabled(host):
    assert host.service("chrony").is_enabled


def test_time_servers_only_on_the_control_plane(host):
    sources = host.file("/etc/chrony/sources.d/gpushare.sources")
    if name(host) == "gpushare-host-prep-control-plane":
        assert_root_file(sources)
        assert sources.content_string.splitlines()[1:] == [
            "server time1.example.internal iburst",
            "server time2.example.internal iburst",
        ]
        conf = host.file("/etc/chrony/chrony.conf").content_string
        assert not any(line.startswith("pool ") for line in conf.splitlines())
        # chronyd itself accepts the configuration.
        assert host.run("chronyd -p -f /etc/chrony/chrony.conf").rc == 0
    else:
        assert not sources.exists
        assert any(line.startswith("pool ") for line in host.file("/etc/chrony/chrony.conf").content_string.splitlines())


def test_nouveau_blacklisted_only_on_the_gpu_worker(host):
    conf = host.file(NOUVEAU_FILE)
    if name(host) == "gpushare-host-prep-gpu-worker":
        assert_root_file(conf)
        assert "blacklist nouveau" in conf.content_string.splitlines()
        assert "options nouveau modeset=0" in conf.content_string.splitlines()
    else:
        assert not conf.exists


def test_kernel_parameters_only_on_the_gpu_worker(host):
    snippet = host.file(GRUB_SNIPPET)
    if name(host) == "gpushare-host-prep-gpu-worker":
        assert_root_file(snippet)
        assert 'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} iommu=pt"' in snippet.content_string
        # The snippet is valid shell, as grub-mkconfig sources it.
        assert host.run(f"sh -n {GRUB_SNIPPET}").rc == 0
    else:
        assert not snippet.exists


def test_firewall_package_only_where_configured(host):
    assert host.package("ufw").is_installed == (name(host) == "gpushare-host-prep-cpu-worker")


def test_no_proxy_file_without_proxy(host):
    assert not host.file("/etc/apt/apt.conf.d/90gpushare-proxy").exists


def test_no_driver_installed_without_nvidia_gpus(host):
    # gpu_host_driver ran on the GPU worker; this PCI bus has no NVIDIA device.
    assert not host.exists("nvidia-smi")
    assert not host.package("nvidia-compute-utils-580-server").is_installed
