"""What host_prep leaves on a real kernel (the Debian VM of molecule/vm), after its reboot."""

import os
import pathlib
import re

from ansible_collections.gpushare.cluster.plugins.module_utils.host import ufw_rules

SYSCTLS = {
    "net.ipv4.ip_forward": "1",
    "net.bridge.bridge-nf-call-iptables": "1",
    "net.bridge.bridge-nf-call-ip6tables": "1",
    "fs.inotify.max_user_instances": "8192",
    "fs.inotify.max_user_watches": "524288",
}


def test_the_converge_rebooted_the_vm(host):
    # prepare.yml kept the boot ID from before the converge; the nouveau blacklist in the
    # initramfs is a reboot reason and host_prep_reboot_allowed is true.
    before = pathlib.Path(os.environ["GPUSHARE_VM_RUN_DIR"], "boot_id.before").read_text().strip()
    now = host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    assert before and now and before != now


def test_kernel_modules_loaded_at_boot(host):
    loaded = {line.split()[0] for line in host.file("/proc/modules").content_string.splitlines()}
    assert {"overlay", "br_netfilter"} <= loaded
    # Loaded by systemd-modules-load from the role's file, not by hand after the boot.
    assert host.run("systemctl is-active systemd-modules-load.service").stdout.strip() == "active"


def test_sysctls_in_the_running_kernel(host):
    for key, value in SYSCTLS.items():
        assert host.file("/proc/sys/" + key.replace(".", "/")).content_string.strip() == value, key


def test_swap_off_and_kept_off(host):
    swaps = host.file("/proc/swaps").content_string.splitlines()
    assert swaps[1:] == [], swaps
    assert host.run("systemctl is-enabled swap.target").stdout.strip() == "masked"
    fstab = host.file("/etc/fstab").content_string.splitlines()
    assert "# /swapfile none swap sw 0 0 # swap off for Kubernetes" in fstab


def test_nouveau_blacklisted_in_the_initramfs(host):
    kernel = host.run("uname -r").stdout.strip()
    listing = host.run(f"lsinitramfs /boot/initrd.img-{kernel}")
    assert listing.rc == 0, listing.stderr
    assert "etc/modprobe.d/gpushare-blacklist-nouveau.conf" in listing.stdout.splitlines()


def test_ufw_rules_in_the_kernel(host):
    status = host.run("ufw status verbose")
    assert status.rc == 0
    assert "Status: active" in status.stdout
    assert re.search(r"^Default: deny \(incoming\)", status.stdout, re.M), status.stdout
    # The worker ports from the node network only, SSH from anywhere, the pod network let in.
    assert re.search(r"^10250/tcp\s+ALLOW IN\s+10\.0\.2\.0/24\s*$", status.stdout, re.M), status.stdout
    assert re.search(r"^30000:32767/udp\s+ALLOW IN\s+10\.0\.2\.0/24\s*$", status.stdout, re.M), status.stdout
    assert re.search(r"^(22/tcp \(OpenSSH\)|OpenSSH)\s+ALLOW IN\s+Anywhere\s*$", status.stdout, re.M), status.stdout
    assert re.search(r"^Anywhere\s+ALLOW IN\s+10\.244\.0\.0/16\s*$", status.stdout, re.M), status.stdout
    # ... and really in the kernel's netfilter tables, not only in ufw's files.
    rules = host.run("iptables -S ufw-user-input")
    assert rules.rc == 0, rules.stderr
    assert re.search(r"^-A ufw-user-input -s 10\.0\.2\.0/24 -p tcp .*--dport 10250 -j ACCEPT$", rules.stdout, re.M), rules.stdout
    forward = host.run("iptables -S ufw-user-forward")
    assert forward.rc == 0, forward.stderr
    assert re.search(r"^-A ufw-user-forward -s 10\.244\.0\.0/16 -j ACCEPT$", forward.stdout, re.M), forward.stdout


def test_ufw_prints_the_rules_in_the_form_the_module_compares(host):
    # gpushare.cluster.ufw_rules reads `ufw show added` once and adds only what is missing;
    # that holds only if it writes each rule exactly as this ufw prints it (else every run
    # would add the rules again and be slow, though still unchanged).
    printed = ufw_rules.added(host.run("ufw show added").stdout)
    for rule in ({"name": "OpenSSH"},
                 {"port": "10250/tcp", "from_ip": "10.0.2.0/24"},
                 {"port": "30000-32767/udp", "from_ip": "10.0.2.0/24"},
                 {"from_ip": "10.244.0.0/16"},
                 {"from_ip": "10.244.0.0/16", "route": True},
                 {"to_ip": "10.96.0.0/12", "route": True}):
        assert ufw_rules.command(rule) in printed, (rule, printed)


def test_chrony_running(host):
    assert host.service("chrony").is_enabled
    assert host.service("chrony").is_running


def test_no_failed_units(host):
    failed = host.run("systemctl list-units --failed --plain --no-legend").stdout.strip()
    assert failed == ""


def test_package_lists_came_from_the_test_mirror(host):
    # host_prep pointed the stock source at gpushare_mirrors.apt.debian (10.0.2.2 is the
    # controller's 127.0.0.1 for the guest) and refreshed the lists from it.
    sources = host.file("/etc/apt/sources.list").content_string
    assert re.search(r"^deb http://10\.0\.2\.2:\d+/debian bookworm main$", sources, re.M), sources
    assert "deb.debian.org" not in sources
    log = pathlib.Path(os.environ["GPUSHARE_VM_RUN_DIR"], "mirror", "access.log").read_text()
    assert re.search(r'"GET /debian/dists/bookworm/InRelease HTTP/1\.1" 200', log), log
