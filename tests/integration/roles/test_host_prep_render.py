"""host_prep rendered for Rocky Linux 9 and 10 (and Debian), without a host.

The RedHat-family task files and every template are rendered with the role's own
defaults and OS layers; Molecule runs the Debian path for real.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleError

from .host_layer_render import REPO_ROOT, ROLES, Renderer, by_name, debian_facts, rocky_facts

from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as mirror_rules

MIRRORS = {
    "apt": {"ubuntu": "http://apt.mirror.internal", "kubernetes": "http://apt.mirror.internal",
            "nvidia": "http://apt.mirror.internal", "docker": "http://apt.mirror.internal"},
    "dnf": {"rocky": "http://dnf.mirror.internal", "kubernetes": "http://dnf.mirror.internal",
            "nvidia": "http://dnf.mirror.internal", "docker": "http://dnf.mirror.internal"},
    "registry": "registry.mirror.internal:5000",
    "files": "http://files.mirror.internal/gpushare",
}
PROXY = {"http": "http://proxy.internal:3128", "https": "http://proxy.internal:3128",
         "no_proxy": "localhost,.cluster.local"}


def rocky(major: int, **extra) -> Renderer:
    renderer = Renderer("host_prep", rocky_facts(major), extra)
    renderer.variables["__host_prep_in_container"] = False
    return renderer


@pytest.fixture(params=[9, 10], ids=["rocky9", "rocky10"])
def major(request):
    return request.param


def test_rocky_packages_include_selinux_policy_and_el10_br_netfilter(major):
    task = by_name(rocky(major).tasks("packages.yml"), "Install the packages a Kubernetes node needs")
    packages = task["args"]["name"]
    assert {"container-selinux", "conntrack-tools", "chrony"} <= set(packages)
    # br_netfilter moved to kernel-modules-extra on EL10 only.
    assert any(p.startswith("kernel-modules-extra") for p in packages) == (major == 10)
    assert "update_cache" not in task["args"] or task["args"]["update_cache"] == "__omit_place_holder__"


def test_rocky_repositories_from_upstream(major):
    tasks = rocky(major, host_prep_kubernetes_version="1.35", host_prep_kubernetes_repo_enabled=True).tasks("repositories_dnf.yml")
    k8s = by_name(tasks, "Add the Kubernetes package repository")["args"]
    assert k8s["baseurl"] == "https://pkgs.k8s.io/core:/stable:/v1.35/rpm/"
    assert k8s["gpgkey"] == "https://pkgs.k8s.io/core:/stable:/v1.35/rpm/repodata/repomd.xml.key"
    assert k8s["exclude"] == ["kubelet", "kubeadm", "kubectl", "cri-tools", "kubernetes-cni"]
    assert "Add the distribution repositories from the mirror" not in [t["name"] for t in tasks]
    proxy = by_name(tasks, "Set the dnf proxy")["args"]
    assert proxy["state"] == "absent"


def test_rocky_every_download_goes_to_the_mirrors(major):
    renderer = rocky(major, gpushare_mirrors=MIRRORS, gpushare_proxy=PROXY, host_prep_nvidia_repo_enabled=True,
                     host_prep_ciq_mode="depot", host_prep_ciq_username="u", host_prep_ciq_token="t")
    rendered = renderer.tasks("repositories_dnf.yml") + renderer.tasks("ciq.yml")
    text = yaml.safe_dump([t["items"] for t in rendered])
    assert mirror_rules.upstream_hosts_in(text) == []
    base = by_name(rendered, "Add the distribution repositories from the mirror")["items"]
    assert [item["baseurl"] for item in base] == [
        f"http://dnf.mirror.internal/pub/rocky/$releasever/{name}/$basearch/os/"
        for name in ("BaseOS", "AppStream", "CRB", "extras")]
    assert by_name(rendered, "Set the dnf proxy")["args"]["value"] == "http://proxy.internal:3128"
    depot = by_name(rendered, "Install the depot client")["args"]["name"]
    assert depot == f"http://files.mirror.internal/gpushare/depot/depot-el{major}.x86_64.rpm"


def test_ciq_depot_login_only_when_not_logged_in(major):
    renderer = rocky(major, host_prep_ciq_mode="depot", host_prep_ciq_username="user", host_prep_ciq_token="tok",
                     host_prep_ciq_products=["rlc-9-core"])
    logged_out = renderer.tasks("ciq.yml", {"__host_prep_depot_enabled": {"rc": 1, "stdout": ""}})
    login = by_name(logged_out, "Log in to the CIQ depot")["args"]["argv"]
    assert login == ["depot", "login", "-u", "user", "-t", "tok"]
    assert by_name(logged_out, "Enable the chosen depot products")["items"] == [{"argv": ["depot", "enable", "rlc-9-core"]}]
    logged_in = renderer.tasks("ciq.yml", {"__host_prep_depot_enabled": {"rc": 0, "stdout": "rlc-9-core  enabled"}})
    assert "Log in to the CIQ depot" not in [t["name"] for t in logged_in]
    assert "Enable the chosen depot products" not in [t["name"] for t in logged_in]


def test_ciq_repos_mode_writes_credentialed_repositories(major):
    renderer = rocky(major, host_prep_ciq_mode="repos", host_prep_ciq_username="user", host_prep_ciq_token="tok",
                     host_prep_ciq_repos={"rlc-core": "https://mirror.internal/rlc/core"})
    repo = by_name(renderer.tasks("ciq.yml"), "Rocky Linux from CIQ through repository files on a mirror")["args"]
    assert (repo["name"], repo["baseurl"], repo["username"], repo["password"], repo["mode"]) == (
        "rlc-core", "https://mirror.internal/rlc/core", "user", "tok", "0600")


@pytest.mark.parametrize("role,cni,expected", [
    ("control_plane", "calico", {"6443/tcp", "2379-2380/tcp", "10250/tcp", "10257/tcp", "10259/tcp", "179/tcp", "4789/udp"}),
    ("worker", "cilium", {"10250/tcp", "10256/tcp", "30000-32767/tcp", "30000-32767/udp", "8472/udp", "4240/tcp"}),
])
def test_firewalld_ports_follow_node_role_and_cni(major, role, cni, expected):
    renderer = rocky(major, host_prep_node_role=role, host_prep_firewall="configure", host_prep_firewall_cni=cni,
                     host_prep_firewall_sources=["10.0.0.0/24"], gpushare_kubernetes_distribution="kubeadm")
    tasks = renderer.tasks("firewall_firewalld.yml")
    ports = {item["port"] for item in by_name(tasks, "Allow the Kubernetes, CNI and monitoring ports")["items"]}
    assert expected <= ports
    assert "9400/tcp" in ports  # dcgm-exporter
    if role == "worker":
        assert "6443/tcp" not in ports
    zones = {item["zone"] for item in by_name(tasks, "Allow the Kubernetes, CNI and monitoring ports")["items"]}
    assert zones == {"internal"}
    assert by_name(tasks, "Let the node network into the internal zone")["items"][0]["source"] == "10.0.0.0/24"


def test_selinux_mode_from_variable(major):
    task = by_name(rocky(major, host_prep_selinux_state="enforcing").tasks("selinux.yml"), "Set the SELinux mode")
    assert task["args"] == {"policy": "targeted", "state": "enforcing"}


def test_gpu_node_on_rocky(major):
    renderer = rocky(major, gpushare_gpus=[{"index": 0, "model": "H100-80GB"}], host_prep_kernel_params=["iommu=pt", "intel_iommu=on"])
    grubby = {"__host_prep_grubby": {"stdout": 'index=0\nargs="ro crashkernel=auto iommu=pt"\n', "rc": 0}}
    tasks = renderer.tasks("gpu.yml", grubby)
    headers = by_name(tasks, "Install mokutil and the running kernel's headers (driver builds)")["args"]["name"]
    assert headers == ["mokutil", f"kernel-devel-{rocky_facts(major)['kernel']}", "kernel-headers"]
    # Only the parameter the default kernel lacks is added.
    assert by_name(tasks, "Set the extra kernel parameters (RedHat family)")["args"]["argv"] == [
        "grubby", "--update-kernel=ALL", "--args=intel_iommu=on"]
    assert "Set the extra kernel parameters (Debian family)" not in [t["name"] for t in tasks]
    assert by_name(tasks, "Blacklist nouveau so the NVIDIA driver can bind the GPUs")["args"]["dest"] == (
        "/etc/modprobe.d/gpushare-blacklist-nouveau.conf")


def test_secure_boot_with_operator_driver_fails_with_the_fix(major):
    renderer = rocky(major, gpushare_gpus=[{"index": 0, "model": "L40S"}])
    secure = {"__host_prep_secure_boot": {"stdout": "SecureBoot enabled", "rc": 0}}
    assertion = by_name(renderer.tasks("gpu.yml", secure),
                        "Stop when the GPU Operator would have to build a driver under Secure Boot")
    assert not all(renderer.holds(c, **secure) for c in assertion["args"]["that"])
    assert "gpu_host_driver" in assertion["args"]["fail_msg"]
    renderer.variables["host_prep_gpu_driver_source"] = "host"
    assert all(renderer.holds(c, **secure) for c in assertion["args"]["that"])


def test_templates_render_for_rocky(major):
    renderer = rocky(major, host_prep_chrony_servers=["ntp1.internal"], host_prep_kernel_params=["iommu=pt"],
                     host_prep_proxy=PROXY)
    assert renderer.template("chrony.sources.j2").splitlines()[1:] == ["server ntp1.internal iburst"]
    sysctl = renderer.template("sysctl.conf.j2").splitlines()
    assert "net.bridge.bridge-nf-call-iptables=1" in sysctl
    assert renderer.template("modules-load.conf.j2").splitlines()[-2:] == ["overlay", "br_netfilter"]
    assert "blacklist nouveau" in renderer.template("blacklist-nouveau.conf.j2")
    dropin = renderer.template("proxy-dropin.conf.j2")
    assert 'Environment="HTTPS_PROXY=http://proxy.internal:3128" "https_proxy=http://proxy.internal:3128"' in dropin
    assert by_name(renderer.tasks("time_sync.yml", {"__host_prep_packages": {"changed": False}}),
                   "Enable chrony (and start it on hosts)")["args"]["name"] == "chronyd"


def test_ubuntu_sources_go_to_the_mirror():
    facts = dict(debian_facts(), distribution="Ubuntu", distribution_major_version="24", distribution_release="noble",
                 virtualization_type="kvm", virtualization_role="host")
    renderer = Renderer("host_prep", facts, {"gpushare_mirrors": MIRRORS, "host_prep_kubernetes_repo_enabled": True})
    renderer.variables["__host_prep_in_container"] = False
    stat = by_name(renderer.tasks("repositories_apt.yml"), "Find the stock distribution sources")
    assert [i["path"] for i in stat["items"]] == ["/etc/apt/sources.list.d/ubuntu.sources"]
    tasks = renderer.tasks("repositories_apt.yml", sources_found("/etc/apt/sources.list.d/ubuntu.sources"))
    replaced = by_name(tasks, "Point the distribution sources at the mirror")["items"]
    assert {(i["path"], i["replace"]) for i in replaced} == {
        ("/etc/apt/sources.list.d/ubuntu.sources", "http://apt.mirror.internal/ubuntu")}
    k8s = by_name(tasks, "Add the Kubernetes package repository")["args"]
    assert k8s["uris"] == "http://apt.mirror.internal/core:/stable:/v1.35/deb/"
    assert mirror_rules.upstream_hosts_in(yaml.safe_dump([t["items"] for t in tasks])) == []


def sources_found(*present: str, changed: bool = False) -> dict:
    """Registered results of the stat probe (the files present) and of the rewrite."""
    return {"__host_prep_sources_stat": {"results": [{"item": path, "stat": {"exists": True}} for path in present]},
            "__host_prep_sources_mirror": {"changed": changed}}


def debian(**extra) -> Renderer:
    return Renderer("host_prep", debian_facts(), extra)


def test_debian_archive_goes_to_the_mirror_of_its_own_key():
    mirrors = {"apt": {"debian": "http://127.0.0.1:8080", "ubuntu": "http://ubuntu.mirror.internal"}}
    renderer = debian(gpushare_mirrors=mirrors)
    stat = by_name(renderer.tasks("repositories_apt.yml"), "Find the stock distribution sources")
    assert [i["path"] for i in stat["items"]] == ["/etc/apt/sources.list", "/etc/apt/sources.list.d/debian.sources"]
    # Only the files the host has are rewritten (Debian 12 hosts have one or the other).
    tasks = renderer.tasks("repositories_apt.yml", sources_found("/etc/apt/sources.list"))
    replaced = by_name(tasks, "Point the distribution sources at the mirror")["items"]
    assert {(i["path"], i["regexp"].split("/?")[0].replace("\\", ""), i["replace"]) for i in replaced} == {
        ("/etc/apt/sources.list", "http://deb.debian.org/debian", "http://127.0.0.1:8080/debian"),
        ("/etc/apt/sources.list", "http://deb.debian.org/debian-security", "http://127.0.0.1:8080/debian-security"),
        ("/etc/apt/sources.list", "http://security.debian.org/debian-security",
         "http://127.0.0.1:8080/debian-security"),
    }
    # The setting passes preflight (gpushare_mirrors validation).
    assert renderer.failed_asserts("preflight.yml") == []


def test_debian_sources_stay_without_a_debian_mirror():
    # The Ubuntu setting is not Debian's: nothing is probed or rewritten.
    renderer = debian(gpushare_mirrors={"apt": {"ubuntu": "http://ubuntu.mirror.internal"}})
    names = [t["name"] for t in renderer.tasks("repositories_apt.yml")]
    assert "Find the stock distribution sources" not in names
    assert "Point the distribution sources at the mirror" not in names


def test_the_regexp_keeps_the_security_archive_apart():
    # http://deb.debian.org/debian must not match the start of .../debian-security.
    renderer = debian(gpushare_mirrors={"apt": {"debian": "http://m"}})
    tasks = renderer.tasks("repositories_apt.yml", sources_found("/etc/apt/sources.list"))
    items = by_name(tasks, "Point the distribution sources at the mirror")["items"]
    line = "deb http://deb.debian.org/debian-security bookworm-security main\n"
    rewritten = {re.sub(i["regexp"], i["replace"], line) for i in items} - {line}
    assert rewritten == {"deb http://m/debian-security bookworm-security main\n"}


@pytest.mark.parametrize("extra", [{"host_prep_kubernetes_repo_enabled": True},
                                   {"host_prep_kubernetes_repo_enabled": False, "host_prep_nvidia_repo_enabled": True}])
def test_python3_debian_is_installed_before_the_first_deb822_repository(extra):
    renderer = debian(gpushare_mirrors={"apt": {"debian": "http://m"}}, **extra)
    tasks = renderer.tasks("repositories_apt.yml", sources_found("/etc/apt/sources.list", changed=True))
    names = [t["name"] for t in tasks]
    install = by_name(tasks, "Install python3-debian (deb822_repository needs it on the host)")
    assert install["module"] == "ansible.builtin.apt"
    assert install["args"]["name"] == "python3-debian"
    # Sources just moved to the mirror: the lists are refreshed from it before the install.
    assert install["args"]["update_cache"] is True and install["args"]["cache_valid_time"] == 0
    first_deb822 = next(i for i, t in enumerate(tasks) if t["module"] == "ansible.builtin.deb822_repository")
    assert names.index(install["name"]) < first_deb822
    # And after the apt proxy, which that download may need.
    assert names.index("Remove an apt proxy no longer configured") < names.index(install["name"])


def test_python3_debian_is_not_installed_without_a_deb822_repository():
    renderer = debian(host_prep_kubernetes_repo_enabled=False, host_prep_nvidia_repo_enabled=False)
    names = [t["name"] for t in renderer.tasks("repositories_apt.yml")]
    assert "Install python3-debian (deb822_repository needs it on the host)" not in names


@pytest.mark.parametrize("check_mode,support,runs", [
    (False, {"changed": True}, True),            # real run: installed just before
    (True, {"changed": False}, True),            # check mode, already installed
    (True, {"changed": True}, False),            # check mode, would be installed: skipped
    (True, {"changed": False, "failed": True}, False),  # check mode, apt does not know it yet
])
def test_deb822_repositories_tolerate_missing_python3_debian_in_check_mode_only(check_mode, support, runs):
    renderer = debian(host_prep_kubernetes_repo_enabled=True, host_prep_nvidia_repo_enabled=True)
    renderer.variables["ansible_check_mode"] = check_mode
    names = [t["name"] for t in renderer.tasks("repositories_apt.yml", {"__host_prep_deb822_support": support})]
    for name in ("Add the Kubernetes package repository", "Add the NVIDIA Container Toolkit package repository"):
        assert (name in names) == runs


def test_python3_debian_install_failure_is_fatal_outside_check_mode():
    task = next(t for t in yaml.safe_load((ROLES / "host_prep" / "tasks" / "repositories_apt.yml").read_text())
                if t["name"].startswith("Install python3-debian"))
    renderer = debian()
    assert renderer.value(task["ignore_errors"].strip("{} ")) is False
    renderer.variables["ansible_check_mode"] = True
    assert renderer.value(task["ignore_errors"].strip("{} ")) is True


@pytest.mark.parametrize("extra,words", [
    ({"host_prep_selinux_state": "relaxed"}, ["host_prep_selinux_state", "relaxed"]),
    ({"host_prep_firewall_cni": "weave"}, ["host_prep_firewall_cni", "weave"]),
    ({"host_prep_ciq_mode": "depot"}, ["host_prep_ciq_username", "host_prep_ciq_token"]),
    ({"host_prep_kubernetes_version": "latest"}, ["host_prep_kubernetes_version", "latest"]),
])
def test_preflight_rejects_bad_input_with_the_field(extra, words):
    failed = rocky(9, **extra).failed_asserts("preflight.yml")
    assert failed, f"no preflight assert failed for {extra}"
    message = " ".join(failed)
    for word in words:
        assert word in message


def test_preflight_rejects_a_proxy_without_scheme():
    renderer = rocky(9, gpushare_proxy={"https": "proxy.internal:3128"})
    with pytest.raises(AnsibleError, match=r"gpushare_proxy\.https.*scheme|gpushare_proxy\.https"):
        renderer.failed_asserts("preflight.yml")
    assert rocky(9, gpushare_proxy=PROXY).failed_asserts("preflight.yml") == []


def test_unsupported_os_version_is_named():
    facts = dict(rocky_facts(9), distribution_major_version="8", distribution_version="8.10")
    renderer = Renderer("host_prep", facts)
    failed = " ".join(renderer.failed_asserts("facts.yml"))
    assert "Rocky 8.10 is not supported" in failed
    assert "Rocky 9/10" in failed


SECRETS = ("host_prep_ubuntu_pro_token", "host_prep_ciq_username", "host_prep_ciq_token")


def _tasks_using(node, names, inherited_no_log=False):
    """(task name, no_log) for every task whose arguments mention one of `names`."""
    for task in node or []:
        no_log = bool(task.get("no_log", inherited_no_log))
        if "block" in task:
            yield from _tasks_using(task["block"], names, no_log)
            yield from _tasks_using(task.get("always"), names, no_log)
            continue
        if "ansible.builtin.assert" in task:
            # Asserts run on the controller; only what their message prints could leak.
            body = " ".join(re.findall(r"\{\{.*?\}\}", task["ansible.builtin.assert"].get("fail_msg", ""), re.S))
        else:
            body = yaml.safe_dump({k: v for k, v in task.items() if k not in ("name", "when", "no_log")})
        # A length test hands nothing to a host; any other use of the value does.
        if any(re.search(re.escape(name) + r"(?!\s*\|\s*length)", body) for name in names):
            yield task["name"], no_log


@pytest.mark.parametrize("task_file", sorted(p.name for p in (ROLES / "host_prep" / "tasks").glob("*.yml")))
def test_every_task_handing_a_secret_to_a_host_hides_it(task_file):
    data = yaml.safe_load((ROLES / "host_prep" / "tasks" / task_file).read_text())
    leaks = [name for name, no_log in _tasks_using(data, SECRETS) if not no_log]
    assert leaks == []


def test_argument_specs_cover_every_default():
    for role in ("host_prep", "containerd", "gpu_host_driver"):
        defaults = set(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()))
        specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
        options = set(specs["argument_specs"]["main"]["options"])
        assert defaults == options, f"{role}: only in defaults {defaults - options}, only in specs {options - defaults}"


def test_roles_pass_ansible_syntax_check(tmp_path):
    playbook = tmp_path / "site.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Host layer", "hosts": "all", "gather_facts": False,
        "roles": ["gpushare.cluster.host_prep", "gpushare.cluster.gpu_host_driver", "gpushare.cluster.containerd"],
    }]))
    collections = os.environ["GPUSHARE_COLLECTIONS_PATH"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "--syntax-check", "-i", "localhost,",
                             str(playbook)], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


PROBES = {
    "__host_prep_pro_status": {"stdout": '{"attached": false, "services": []}', "rc": 0},
    "__host_prep_depot_enabled": {"stdout": "", "rc": 1},
    "__host_prep_sysctl_now": {"stdout_lines": ["net.ipv4.ip_forward = 0"], "rc": 0},
    "__host_prep_proc_modules": {"stat": {"exists": True}},
    "__host_prep_secure_boot": {"stdout": "SecureBoot disabled", "rc": 0},
    "__host_prep_grubby": {"stdout": 'args="ro"', "rc": 0},
    "__host_prep_pro_config": {"path": "/tmp/tmpabc.pro.yaml"},
    "__host_prep_sources_stat": {"results": [{"item": "/etc/apt/sources.list.d/ubuntu.sources", "stat": {"exists": True}}]},
}
EVERYTHING_ON = {
    "gpushare_gpus": [{"index": 0, "model": "H100-80GB"}], "gpushare_mirrors": MIRRORS, "gpushare_proxy": PROXY,
    "host_prep_ubuntu_pro_token": "t", "host_prep_ciq_mode": "depot", "host_prep_ciq_username": "u",
    "host_prep_ciq_token": "t", "host_prep_nvidia_repo_enabled": True, "host_prep_kubernetes_repo_enabled": True, "host_prep_chrony_servers": ["ntp.internal"],
    "host_prep_firewall": "configure", "host_prep_firewall_sources": ["10.0.0.0/8"],
    "host_prep_kernel_params": ["iommu=pt"], "host_prep_reboot_allowed": True,
}


APT_ONLY = ("repositories_apt.yml", "firewall_ufw.yml", "ubuntu_pro.yml")
TASK_FILES = sorted(p.name for p in (ROLES / "host_prep" / "tasks").glob("*.yml") if p.name != "main.yml")


@pytest.mark.parametrize("task_file", [f for f in TASK_FILES if f not in APT_ONLY])
def test_every_task_file_renders_for_rocky(major, task_file):
    renderer = rocky(major, **EVERYTHING_ON)
    renderer.variables.update(__host_prep_subscription_tasks="ciq.yml", __host_prep_sources_changed=True)
    assert renderer.tasks(task_file, PROBES), f"{task_file}: no task would run on Rocky {major}"


@pytest.mark.parametrize("task_file", [f for f in TASK_FILES if f not in ("repositories_dnf.yml", "firewall_firewalld.yml",
                                                                          "ciq.yml", "selinux.yml")])
def test_every_task_file_renders_for_ubuntu(task_file):
    facts = dict(debian_facts(), distribution="Ubuntu", distribution_major_version="24", distribution_version="24.04",
                 distribution_release="noble", virtualization_type="kvm", virtualization_role="host")
    renderer = Renderer("host_prep", facts, EVERYTHING_ON)
    renderer.variables.update(__host_prep_in_container=False, __host_prep_subscription_tasks="ubuntu_pro.yml",
                              __host_prep_sources_changed=True)
    assert renderer.tasks(task_file, PROBES), f"{task_file}: no task would run on Ubuntu 24.04"


@pytest.mark.parametrize("template", sorted(p.name for p in (ROLES / "host_prep" / "templates").glob("*.j2")))
def test_every_template_renders_for_rocky(major, template):
    text = rocky(major, **EVERYTHING_ON).template(template)
    assert "Ansible managed" in text.splitlines()[0]


HOST_LAYER_SCENARIOS = ("smoke", "host_prep", "containerd", "airgap_host")


def test_molecule_container_names_are_prefixed_and_never_shared():
    # Podman container names are global on a machine: two scenarios with one name would
    # remove or reuse each other's containers.
    owners: dict[str, list[str]] = {}
    for config in sorted((REPO_ROOT / "molecule").glob("*/molecule.yml")):
        for platform in (yaml.safe_load(config.read_text()) or {}).get("platforms") or []:
            owners.setdefault(platform["name"], []).append(config.parent.name)
    assert {name: scenarios for name, scenarios in owners.items() if len(scenarios) > 1} == {}
    for scenario in HOST_LAYER_SCENARIOS:
        names = [name for name, scenarios in owners.items() if scenario in scenarios]
        assert names, f"molecule/{scenario} has no platform"
        prefix = f"gpushare-{scenario.replace('_', '-')}-"
        assert all(name.startswith(prefix) for name in names), (scenario, names)
