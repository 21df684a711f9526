"""host_prep steps a container skips, rendered with the facts of a real host.

The kernel probes are fed what the real commands print on this machine (procps `sysctl`),
so a comparison that can never match shows up here; molecule/vm runs the same steps on a
real kernel.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

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

def firewall_ports(renderer: Renderer, task_file: str, name: str, key: str) -> set:
    return {str(item[key]) for item in by_name(renderer.tasks(task_file), name)["items"]}


def test_microk8s_nodes_open_the_microk8s_ports_on_ufw():
    # microk8s.io/docs/services-and-ports: 16443 API server, 25000 cluster agent, 19001 dqlite.
    control_plane = vm(gpushare_kubernetes_distribution="microk8s", host_prep_firewall="configure",
                       host_prep_node_role="control_plane")
    ports = firewall_ports(control_plane, "firewall_ufw.yml", "Allow the Kubernetes, CNI and monitoring ports", "port")
    assert {"16443", "25000", "19001", "10250"} <= ports
    assert "6443" not in ports and "2379:2380" not in ports
    worker = vm(gpushare_kubernetes_distribution="microk8s", host_prep_firewall="configure", host_prep_node_role="worker")
    ports = firewall_ports(worker, "firewall_ufw.yml", "Allow the Kubernetes, CNI and monitoring ports", "port")
    assert {"25000", "10250", "30000:32767"} <= ports and "16443" not in ports


def test_microk8s_is_the_default_distribution_like_the_playbooks():
    renderer = vm(host_prep_firewall="configure", host_prep_node_role="control_plane")
    ports = firewall_ports(renderer, "firewall_ufw.yml", "Allow the Kubernetes, CNI and monitoring ports", "port")
    assert "16443" in ports and "6443" not in ports


@pytest.mark.parametrize("distribution,cidrs", [
    ("microk8s", ["10.1.0.0/16", "10.152.183.0/24"]),
    ("kubeadm", ["10.244.0.0/16", "10.96.0.0/12"]),
])
def test_ufw_lets_in_and_routes_the_pod_and_service_networks(distribution, cidrs):
    renderer = vm(gpushare_kubernetes_distribution=distribution, host_prep_firewall="configure",
                  host_prep_firewall_sources=["192.0.2.0/24"])
    tasks = renderer.tasks("firewall_ufw.yml")
    allowed = by_name(tasks, "Let the pod and service networks in (pods reaching the API server, kubelet, DNS)")
    assert [item["from_ip"] for item in allowed["items"]] == cidrs
    assert all("port" not in item for item in allowed["items"])
    routed = by_name(tasks, "Route the pod and service networks (ufw drops forwarded packets by default)")["items"]
    assert {(item["from_ip"], item["to_ip"]) for item in routed} == {(c, "any") for c in cidrs} | {("any", c) for c in cidrs}
    assert all(item["route"] is True for item in routed)
    names = [task["name"] for task in tasks]
    assert names.index("Route the pod and service networks (ufw drops forwarded packets by default)") < names.index("Enable ufw")


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
