"""What host_prep's kernel and proxy steps leave on the smoke container."""


def test_sysctl_file_lists_the_kubernetes_settings(host):
    conf = host.file("/etc/sysctl.d/90-gpushare-kubernetes.conf")
    assert conf.is_file
    assert conf.user == "root"
    assert conf.mode == 0o644
    assert "net.ipv4.ip_forward=1" in conf.content_string.splitlines()
    assert "net.bridge.bridge-nf-call-iptables=1" in conf.content_string
    assert "fs.inotify.max_user_instances=8192" in conf.content_string


def test_modules_load_at_boot(host):
    conf = host.file("/etc/modules-load.d/gpushare-kubernetes.conf")
    assert conf.mode == 0o644
    lines = [line for line in conf.content_string.splitlines() if line and not line.startswith("#")]
    assert lines == ["overlay", "br_netfilter"]


def test_swap_target_is_masked(host):
    assert host.run("systemctl is-enabled swap.target").stdout.strip() == "masked"


def test_apt_goes_through_the_proxy_except_no_proxy_hosts(host):
    conf = host.file("/etc/apt/apt.conf.d/90gpushare-proxy")
    assert conf.mode == 0o644
    text = conf.content_string
    assert 'Acquire::http::Proxy "http://proxy.example.internal:3128";' in text
    assert 'Acquire::https::Proxy::example.internal "DIRECT";' in text
    # apt itself reads it back the same way.
    dump = host.check_output("apt-config dump Acquire::http::Proxy")
    assert 'Acquire::http::Proxy "http://proxy.example.internal:3128";' in dump


def test_no_kubernetes_repository_for_microk8s(host):
    assert not host.file("/etc/apt/sources.list.d/kubernetes.sources").exists
