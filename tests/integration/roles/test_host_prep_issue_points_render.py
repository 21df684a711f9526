"""host_prep steps a container skips, rendered with the facts of a real host.

The kernel probes are fed what the real commands print on this machine (procps `sysctl`),
so a comparison that can never match shows up here; molecule/vm runs the same steps on a
real kernel.
"""

from __future__ import annotations

import json

import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.host import ufw_rules

from .host_layer_render import Renderer, by_name, debian_facts

APPLY = "Apply the settings the running kernel does not have yet"
PROBE = "Read the running kernel's values of these settings"
KEYS = ("net.ipv4.ip_forward", "fs.inotify.max_user_watches", "kernel.pid_max")


def vm(**extra) -> Renderer:
    """A Debian host on its own kernel (the molecule/vm guest)."""
    facts = dict(debian_facts(), virtualization_type="kvm", virtualization_role="guest", swaptotal_mb=128)
    renderer = Renderer("host_prep", facts, extra)
    renderer.variables["__host_prep_in_container"] = False
    return renderer


def kernel_now(key: str) -> int:
    return int(Path("/proc/sys", *key.split(".")).read_text().split()[0])


def probe_output(renderer: Renderer) -> dict:
    """Run the role's own probe command here and register its output as Ansible would."""
    if shutil.which("sysctl") is None:
        pytest.skip("procps sysctl is not installed on this machine")
    argv = by_name(renderer.tasks("kernel.yml"), PROBE)["args"]["argv"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return {"__host_prep_sysctl_now": {"rc": 0, "stdout": done.stdout, "stdout_lines": done.stdout.splitlines(),
                                       "changed": False}}


def test_sysctls_the_kernel_already_has_are_not_applied_again():
    renderer = vm(host_prep_sysctls={key: kernel_now(key) for key in KEYS})
    tasks = renderer.tasks("kernel.yml", probe_output(renderer))
    assert APPLY not in [task["name"] for task in tasks]


def test_only_the_sysctl_that_differs_is_applied():
    wanted = {key: kernel_now(key) for key in KEYS}
    wanted["fs.inotify.max_user_watches"] += 1
    renderer = vm(host_prep_sysctls=wanted)
    applied = by_name(renderer.tasks("kernel.yml", probe_output(renderer)), APPLY)["items"]
    assert [(item["name"], int(item["value"])) for item in applied] == [
        ("fs.inotify.max_user_watches", wanted["fs.inotify.max_user_watches"])]


# --- Firewall: MicroK8s ports and the cluster's own networks -------------------------------

UFW_TASK = "Open the node's ports in ufw and route the pod and service networks"


def ufw_commands(renderer: Renderer) -> list:
    """The rules the role hands to ufw, as ufw itself prints them."""
    return ufw_rules.commands(by_name(renderer.tasks("firewall_ufw.yml"), UFW_TASK)["args"]["rules"])


def ufw_ports(renderer: Renderer) -> set:
    return {rule["port"].split("/")[0].replace("-", ":")
            for rule in by_name(renderer.tasks("firewall_ufw.yml"), UFW_TASK)["args"]["rules"] if "port" in rule}


def test_microk8s_nodes_open_the_microk8s_ports_on_ufw():
    # microk8s.io/docs/services-and-ports: 16443 API server, 25000 cluster agent, 19001 dqlite.
    control_plane = vm(gpushare_kubernetes_distribution="microk8s", host_prep_firewall="configure",
                       host_prep_node_role="control_plane")
    ports = ufw_ports(control_plane)
    assert {"16443", "25000", "19001", "10250"} <= ports
    assert "6443" not in ports and "2379:2380" not in ports
    worker = vm(gpushare_kubernetes_distribution="microk8s", host_prep_firewall="configure", host_prep_node_role="worker")
    ports = ufw_ports(worker)
    assert {"25000", "10250", "30000:32767"} <= ports and "16443" not in ports


def test_microk8s_is_the_default_distribution_like_the_playbooks():
    renderer = vm(host_prep_firewall="configure", host_prep_node_role="control_plane")
    ports = ufw_ports(renderer)
    assert "16443" in ports and "6443" not in ports


@pytest.mark.parametrize("distribution,cidrs", [
    ("microk8s", ["10.1.0.0/16", "10.152.183.0/24"]),
    ("kubeadm", ["10.244.0.0/16", "10.96.0.0/12"]),
])
def test_ufw_lets_in_and_routes_the_pod_and_service_networks(distribution, cidrs):
    renderer = vm(gpushare_kubernetes_distribution=distribution, host_prep_firewall="configure",
                  host_prep_firewall_sources=["192.0.2.0/24"])
    commands = ufw_commands(renderer)
    # SSH first, before ufw is enabled (the module enables it after adding every rule).
    assert commands[0] == "allow OpenSSH"
    for cidr in cidrs:
        assert f"allow from {cidr}" in commands
        assert f"route allow from {cidr}" in commands
        assert f"route allow to {cidr}" in commands
    # The node's own ports only from the given sources, never from anywhere.
    port_rules = [command for command in commands if " port " in command]
    assert port_rules and all(command.startswith("allow from 192.0.2.0/24 to any port ") for command in port_rules)
    assert "allow from 192.0.2.0/24 to any port 30000:32767 proto tcp" in commands
    assert by_name(renderer.tasks("firewall_ufw.yml"), UFW_TASK)["args"]["enabled"] is True


def test_ufw_ports_open_to_anywhere_without_sources():
    renderer = vm(gpushare_kubernetes_distribution="kubeadm", host_prep_firewall="configure",
                  host_prep_node_role="control_plane")
    commands = ufw_commands(renderer)
    assert "allow 6443/tcp" in commands and "allow 2379:2380/tcp" in commands
    assert not [command for command in commands if command.startswith("allow from any")]


def test_kubeadm_cidrs_from_the_inventory_are_trusted():
    renderer = vm(gpushare_kubernetes_distribution="kubeadm", host_prep_firewall="configure",
                  kubeadm_pod_cidr="172.20.0.0/16", kubeadm_service_cidr="172.21.0.0/16")
    assert renderer.value("host_prep_firewall_trusted_cidrs") == ["172.20.0.0/16", "172.21.0.0/16"]


def test_firewalld_trusts_the_pod_and_service_networks():
    from .host_layer_render import rocky_facts
    renderer = Renderer("host_prep", rocky_facts(9), {"gpushare_kubernetes_distribution": "microk8s",
                                                      "host_prep_firewall": "configure",
                                                      "host_prep_firewall_sources": ["192.0.2.0/24"]})
    renderer.variables["__host_prep_in_container"] = False
    tasks = renderer.tasks("firewall_firewalld.yml")
    trusted = by_name(tasks, "Trust the pod and service networks (pods reaching the API server, pods on other nodes)")
    assert {(item["zone"], item["source"]) for item in trusted["items"]} == {
        ("trusted", "10.1.0.0/16"), ("trusted", "10.152.183.0/24")}
    ports = {item["port"] for item in by_name(tasks, "Allow the Kubernetes, CNI and monitoring ports")["items"]}
    assert {"16443/tcp", "25000/tcp", "19001/tcp"} & ports == {"25000/tcp"}  # a worker: no API server here


# --- One owner for the Kubernetes package repository, and the MicroK8s default --------------

def test_the_kubeadm_role_alone_defines_the_kubernetes_repository():
    for distribution in ("kubeadm", "microk8s"):
        names = [t["name"] for t in vm(gpushare_kubernetes_distribution=distribution).tasks("repositories_apt.yml")]
        assert "Add the Kubernetes package repository" not in names, distribution
        assert "Install python3-debian (deb822_repository needs it on the host)" not in names


def test_a_second_owner_of_the_repository_is_refused_before_any_change():
    failed = vm(gpushare_kubernetes_distribution="kubeadm", host_prep_kubernetes_repo_enabled=True).failed_asserts(
        "preflight.yml")
    assert any("kubeadm_repo_enabled" in message for message in failed), failed
    assert vm(gpushare_kubernetes_distribution="kubeadm", host_prep_kubernetes_repo_enabled=True,
              kubeadm_repo_enabled=False).failed_asserts("preflight.yml") == []


def test_microk8s_nodes_get_the_snapd_proxy_when_the_distribution_is_unset():
    facts = dict(debian_facts(), distribution="Ubuntu", distribution_major_version="24", distribution_release="noble",
                 virtualization_type="kvm", virtualization_role="host")
    renderer = Renderer("host_prep", facts, {"gpushare_proxy": {"https": "http://proxy.internal:3128"}})
    renderer.variables["__host_prep_in_container"] = False
    names = [t["name"] for t in renderer.tasks("repositories_apt.yml")]
    assert "Write the snapd proxy drop-in" in names


# --- Reboots: drained on a running cluster, control planes one at a time --------------------

def raw_tasks(task_file: str) -> list:
    import yaml
    from .host_layer_render import ROLES
    return yaml.safe_load((ROLES / "host_prep" / "tasks" / task_file).read_text())


def test_control_planes_reboot_one_at_a_time_and_workers_in_their_batch():
    tasks = {t["name"]: t for t in raw_tasks("reboot_node.yml")}
    assert tasks["Reboot a control plane (one at a time)"]["throttle"] == 1
    assert "throttle" not in tasks["Reboot a worker"]


def test_a_node_of_a_running_cluster_is_drained_before_and_uncordoned_after():
    renderer = vm(gpushare_kubernetes_distribution="kubeadm", group_names=["control_plane"],
                  groups={"control_plane": ["cp1", "node1"], "workers": []}, host_prep_node_role="control_plane")
    renderer.variables["inventory_hostname"] = "node1"
    probe = {"__host_prep_node_probe": {"rc": 0, "stdout": json.dumps(_node("2026-12-06T10:00:00Z"))},
             "__host_prep_drain": {"changed": True, "rc": 0}}
    tasks = renderer.tasks("reboot_node.yml", probe)
    names = [t["name"] for t in tasks]
    assert names == ["Find this host's node on a running cluster", "Drain the node before the reboot",
                     "Reboot a control plane (one at a time)",
                     "Read the node until it is Ready with a heartbeat newer than before the reboot",
                     "Stop here, the node is not back",  # the block's rescue
                     "Make the node schedulable again"]
    drain = by_name(tasks, "Drain the node before the reboot")["args"]["argv"]
    assert drain[:3] == ["kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"]
    assert drain[3:6] == ["drain", "node1", "--ignore-daemonsets"]


def _node(heartbeat, ready="True"):
    return {"kind": "Node", "metadata": {"name": "node1"}, "status": {"conditions": [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-12-06T12:00:00Z"},
        {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}]}}


def test_the_node_is_back_only_with_a_ready_heartbeat_newer_than_before_the_reboot():
    """Ready=True alone passes at once after a quick reboot (the old kubelet's condition stays until
    the node lifecycle controller's 50 s grace period runs out)."""
    renderer = vm(gpushare_kubernetes_distribution="kubeadm", groups={"control_plane": ["cp1"], "workers": ["node1"]})
    block = next(t for t in raw_tasks("reboot_node.yml") if t["name"] == "Wait until the node is Ready again")
    wait = block["block"][0]
    before = {"rc": 0, "stdout": json.dumps(_node("2026-12-06T10:00:00Z"))}

    def back(after):
        registered = {"__host_prep_node_probe": before, "__host_prep_node_after": after}
        return renderer.holds(wait["until"], **block["vars"], **registered)

    assert not back({"rc": 0, "stdout": json.dumps(_node("2026-12-06T10:00:00Z"))})  # the old kubelet's Ready
    assert not back({"rc": 0, "stdout": json.dumps(_node("2026-12-06T10:03:10Z", ready="Unknown"))})
    assert not back({"rc": 1, "stdout": ""})  # the API server not answering yet
    assert back({"rc": 0, "stdout": json.dumps(_node("2026-12-06T10:03:10Z"))})
    assert "stays cordoned" in block["rescue"][0]["ansible.builtin.fail"]["msg"]


def test_no_cluster_means_no_drain():
    renderer = vm(groups={"workers": ["node1"]})
    names = [t["name"] for t in renderer.tasks("reboot_node.yml")]
    assert names == ["Reboot a worker"]


def test_the_reboot_reasons_go_to_the_drained_reboot_and_a_pending_one_is_announced():
    allowed = vm(host_prep_reboot_allowed=True)
    allowed.tasks("reboot.yml", {"__host_prep_nouveau": {"changed": True}})
    include = next(t for t in raw_tasks("reboot.yml") if t["name"] == "Reboot (drained on a running cluster)")
    assert include["ansible.builtin.include_tasks"] == "reboot_node.yml"
    assert all(allowed.holds(c, **allowed._registered) for c in include["when"])
    refused = vm(host_prep_reboot_allowed=False)
    pending = by_name(refused.tasks("reboot.yml", {"__host_prep_nouveau": {"changed": True}}),
                      "Tell the roles that follow whether a reboot is still pending")["args"]
    assert pending["host_prep_reboot_pending"] in (True, "True")


# --- Rocky: EPEL and CRB; EL10's kernel-modules-extra of the running kernel ----------------

def rocky_host(major: int, **extra) -> Renderer:
    from .host_layer_render import rocky_facts
    renderer = Renderer("host_prep", rocky_facts(major), extra)
    renderer.variables["__host_prep_in_container"] = False
    return renderer


@pytest.mark.parametrize("major", [9, 10])
def test_rocky_enables_crb_and_epel(major):
    tasks = rocky_host(major).tasks("repositories_dnf.yml")
    assert by_name(tasks, "Enable CRB, which EPEL's packages depend on")["args"]["name"] == ["crb"]
    assert by_name(tasks, "Add EPEL (python3-kubernetes for the Kubernetes API host, dkms for NVIDIA's open driver "
                          "streams)")["args"]["name"] == "epel-release"


@pytest.mark.parametrize("major", [9, 10])
def test_rocky_takes_epel_from_the_mirror_when_air_gapped(major):
    from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as mirror_rules
    mirrors = {"dnf": {"rocky": "http://dnf.mirror.internal", "epel": "http://dnf.mirror.internal"}}
    tasks = rocky_host(major, gpushare_mirrors=mirrors).tasks("repositories_dnf.yml")
    repo = by_name(tasks, "Add EPEL from the mirror")["args"]
    assert repo["baseurl"] == f"http://dnf.mirror.internal/pub/epel/{major}/Everything/$basearch/"
    assert repo["gpgkey"] == f"http://dnf.mirror.internal/pub/epel/RPM-GPG-KEY-EPEL-{major}"
    names = [t["name"] for t in tasks]
    assert "Add EPEL (python3-kubernetes for the Kubernetes API host, dkms for NVIDIA's open driver streams)" not in names
    assert "Enable CRB, which EPEL's packages depend on" not in names  # the mirror's CRB repository is defined
    import yaml
    assert mirror_rules.upstream_hosts_in(yaml.safe_dump([t["items"] for t in tasks])) == []


def test_rocky10_installs_the_running_kernels_modules_extra():
    from .host_layer_render import rocky_facts
    packages = by_name(rocky_host(10).tasks("packages.yml"), "Install the packages a Kubernetes node needs")["args"]["name"]
    assert f"kernel-modules-extra-{rocky_facts(10)['kernel']}" in packages
    assert "kernel-modules-extra" not in packages


def test_rocky_nodes_keep_networkmanager_away_from_calico():
    renderer = rocky_host(9)
    tasks = renderer.tasks("network.yml", {"__host_prep_networkmanager": {"stat": {"exists": True}}})
    assert by_name(tasks, "Keep NetworkManager away from Calico's interfaces")["args"]["dest"] == (
        "/etc/NetworkManager/conf.d/gpushare-calico.conf")
    text = renderer.template("networkmanager-calico.conf.j2")
    assert "unmanaged-devices=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico" in text
    none = renderer.tasks("network.yml", {"__host_prep_networkmanager": {"stat": {"exists": False}}})
    assert "Keep NetworkManager away from Calico's interfaces" not in [t["name"] for t in none]


def test_ciq_depot_on_rocky10_needs_a_client_url():
    failed = rocky_host(10, host_prep_ciq_mode="depot", host_prep_ciq_username="u",
                        host_prep_ciq_token="t").failed_asserts("ciq.yml")
    assert any("el8 and el9 only" in m for m in failed), failed
    assert rocky_host(9, host_prep_ciq_mode="depot", host_prep_ciq_username="u",
                      host_prep_ciq_token="t").failed_asserts("ciq.yml") == []


# --- chrony: the distribution's pools may live in the sources directory --------------------

def test_pools_in_the_sources_directory_are_turned_off_too():
    facts = dict(debian_facts(), distribution="Ubuntu", distribution_major_version="26", distribution_version="26.04",
                 virtualization_type="kvm", virtualization_role="host")
    renderer = Renderer("host_prep", facts, {"host_prep_chrony_servers": ["ntp.internal"]})
    renderer.variables["__host_prep_in_container"] = False
    found = {"__host_prep_chrony_pool_files": {"files": [{"path": "/etc/chrony/sources.d/ubuntu-ntp-pools.sources"}]}}
    tasks = renderer.tasks("time_sync.yml", found)
    find = by_name(tasks, "Find the distribution's pool files in the sources directory")["args"]
    assert find["excludes"] == ["gpushare.sources"]
    paths = [i["path"] for i in by_name(tasks, "Stop using the distribution's public pools")["items"]]
    assert paths == ["/etc/chrony/chrony.conf", "/etc/chrony/sources.d/ubuntu-ntp-pools.sources"]


# --- kubernetes_common: where python3-kubernetes comes from on Rocky -----------------------

def test_the_python_client_install_names_epel_when_it_fails_on_rocky():
    import yaml
    from .host_layer_render import ROLES
    tasks = yaml.safe_load((ROLES / "kubernetes_common" / "tasks" / "helm.yml").read_text())
    block = next(t for t in tasks if t["name"] == "Install the Kubernetes Python client used by kubernetes.core")
    message = block["rescue"][0]["ansible.builtin.fail"]["msg"]
    assert "EPEL" in message and "host_prep_epel_enabled" in message and "gpushare_mirrors.dnf.epel" in message


def test_every_delegated_reboot_step_names_a_host_without_a_control_plane_group():
    # Ansible templates delegate_to before `when` decides to skip a task: an empty name fails
    # the play ("Empty hostname produced from delegate_to"), as molecule/vm showed on a
    # single worker. Each delegated task must name a host even when no control plane exists.
    renderer = vm(groups={"workers": ["node1"]})
    renderer.variables["inventory_hostname"] = "node1"
    tasks = raw_tasks("reboot_node.yml")
    delegated = [t for t in tasks + [step for t in tasks for step in t.get("block", [])] if "delegate_to" in t]
    assert len(delegated) == 4
    for task in delegated:
        assert renderer.render(task["delegate_to"]) == "node1", task["name"]
