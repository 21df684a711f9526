"""Every topology docs/kubernetes.md allows, through both distributions' render paths and the
kubeadm join steps: one control plane plus workers, three control planes with and without an
endpoint, a single node.

What other hosts read of a node (the bootstrap control plane's address above all) must come
from facts the role publishes: role defaults never reach ``hostvars``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .k8s_render import FIXTURES, collections_dir, load_docs, render
from .test_kubeadm_secrets import STUB


def _host(group, os_name, hostname, address=None, **host_vars):
    facts = {"hostname": hostname}
    if address:
        facts["default_ipv4"] = {"address": address, "interface": "eth0", "network": "192.0.2.0", "netmask": "255.255.255.0"}
    spec = {"os": os_name, "facts": facts, "vars": host_vars}
    spec["groups" if isinstance(group, list) else "group"] = group
    return spec


WORKERS = {
    "gpu1": _host("workers", "ubuntu-24.04", "gpu1", "192.0.2.21"),
    "gpu2": _host("workers", "rocky-9", "GPU2", "192.0.2.22"),
}
THREE_CP = {
    "cp1": _host("control_plane", "ubuntu-24.04", "cp1", "192.0.2.11"),
    "cp2": _host("control_plane", "ubuntu-24.04", "cp2", "192.0.2.12"),
    "cp3": _host("control_plane", "rocky-9", "cp3", "192.0.2.13"),
}


def _join(out, host):
    (doc,) = load_docs(out / host / "join.yaml")
    return doc


def _init(out, host):
    return {doc["kind"]: doc for doc in load_docs(out / host / "init.yaml")}


# -- kubeadm ------------------------------------------------------------------------------

@pytest.mark.parametrize("control_plane,endpoint", [
    (_host("control_plane", "ubuntu-24.04", "cp1", "192.0.2.11"), "192.0.2.11:6443"),
    # Rendering without facts: the address falls back to ansible_host.
    (_host("control_plane", "ubuntu-24.04", "cp1", ansible_host="198.51.100.11"), "198.51.100.11:6443"),
    # An IPv6 address set in the inventory: in brackets in the endpoint.
    (_host("control_plane", "rocky-9", "cp1", "192.0.2.11", kubeadm_advertise_address="2001:db8::11"), "[2001:db8::11]:6443"),
], ids=["facts", "ansible_host", "ipv6"])
def test_kubeadm_one_control_plane_and_workers(tmp_path, control_plane, endpoint):
    render(tmp_path, "kubeadm", {"cp1": control_plane, **WORKERS}, {})
    out = tmp_path / "out" / "kubeadm"
    init = _init(out, "cp1")
    assert "controlPlaneEndpoint" not in init["ClusterConfiguration"]
    # A dedicated control plane keeps its NoSchedule taint; no VIP without kubeadm_vip_address.
    assert init["InitConfiguration"]["nodeRegistration"]["taints"] == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert not (out / "cp1" / "join.yaml").exists() and not (out / "cp1" / "kube-vip.yaml").exists()
    for worker, name in (("gpu1", "gpu1"), ("gpu2", "gpu2")):
        join = _join(out, worker)
        assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == endpoint
        assert join["nodeRegistration"]["name"] == name
        assert "controlPlane" not in join
        assert not (out / worker / "init.yaml").exists() and not (out / worker / "cni.yaml").exists()
    assert (out / "cp1" / "cni.yaml").exists()


def test_kubeadm_three_control_planes_behind_a_load_balancer(tmp_path):
    render(tmp_path, "kubeadm", {**THREE_CP, **WORKERS}, {"kubeadm_control_plane_endpoint": "k8s-api.example.internal:6443"})
    out = tmp_path / "out" / "kubeadm"
    assert _init(out, "cp1")["ClusterConfiguration"]["controlPlaneEndpoint"] == "k8s-api.example.internal:6443"
    for host in ("cp2", "cp3", "gpu1", "gpu2"):
        assert _join(out, host)["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "k8s-api.example.internal:6443"
    assert _join(out, "cp3")["controlPlane"]["localAPIEndpoint"] == {"advertiseAddress": "192.0.2.13", "bindPort": 6443}
    # A load balancer, not kube-vip: no static pod anywhere.
    assert not list(out.glob("*/kube-vip.yaml"))


def test_kubeadm_three_control_planes_without_an_endpoint_are_refused(tmp_path):
    result = render(tmp_path, "kubeadm", {**THREE_CP, **WORKERS}, {}, expect_failure=True)
    assert "kubeadm_control_plane_endpoint: required with more than one control-plane host" in result.stdout
    assert not (tmp_path / "out").exists()


def test_kubeadm_control_planes_without_an_address_are_all_named_before_anything_is_written(tmp_path):
    hosts = {"cp1": _host("control_plane", "ubuntu-24.04", "cp1"), "cp2": _host("control_plane", "ubuntu-24.04", "cp2"),
             "cp3": THREE_CP["cp3"], **WORKERS}
    result = render(tmp_path, "kubeadm", hosts, {"kubeadm_vip_address": "192.0.2.10"}, expect_failure=True)
    # ansible_host defaults to the inventory name, which is no address.
    for host in ("cp1", "cp2"):
        assert (f"{host}: kubeadm_advertise_address \"{host}\" is not an IP address (the host has no default IPv4 address fact "
                "and ansible_host is not an IP address); set it") in result.stdout
    assert "cp3: kubeadm_advertise_address" not in result.stdout
    assert not (tmp_path / "out").exists()


# -- kubeadm join steps with a stand-in kubeadm ------------------------------------------

def _run_join(tmp_path, hosts, order, limit=None):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubeadm").write_text(STUB)
    (bin_dir / "kubeadm").chmod(0o755)
    captured = tmp_path / "captured"
    captured.mkdir()
    groups = {}
    for name, (group, address) in hosts.items():
        (tmp_path / "config" / name).mkdir(parents=True)
        groups.setdefault(group, {"hosts": {}})["hosts"][name] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "fixture_facts_file": str(FIXTURES / "facts" / "ubuntu-24.04.yml"),
            "host_facts": {"hostname": name, "default_ipv4": {"address": address}},
            "kubeadm_config_dir": str(tmp_path / "config" / name),
        }
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups}}))
    env = dict(os.environ)
    env.update(PATH=f"{bin_dir}:{env['PATH']}", STUB_OUT=str(captured), ANSIBLE_COLLECTIONS_PATH=collections_dir(),
               ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
           str(FIXTURES / "render" / "join.yml"), "-e", yaml.safe_dump({"join_order": order}, default_flow_style=True)]
    if limit:
        cmd += ["--limit", limit]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    return result, captured


ONE_CP_ORDER = {"init": None, "bootstrap": "cp1", "control_plane_joins": [], "worker_joins": ["gpu1", "gpu2"]}
ONE_CP_HOSTS = {"cp1": ("control_plane", "192.0.2.11"), "gpu1": ("workers", "192.0.2.21"), "gpu2": ("workers", "192.0.2.22")}


def test_kubeadm_workers_join_the_single_control_plane(tmp_path):
    result, captured = _run_join(tmp_path, ONE_CP_HOSTS, ONE_CP_ORDER)
    assert result.returncode == 0, result.stdout[-4000:]
    for worker in ("gpu1", "gpu2"):
        join = yaml.safe_load((captured / f"{worker}.yaml").read_text())
        assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "192.0.2.11:6443"
        assert join["nodeRegistration"]["kubeletExtraArgs"] == [
            {"name": "node-ip", "value": "192.0.2.21" if worker == "gpu1" else "192.0.2.22"}]


def test_kubeadm_join_without_the_bootstrap_host_says_why(tmp_path):
    result, captured = _run_join(tmp_path, ONE_CP_HOSTS, ONE_CP_ORDER, limit="gpu1")
    assert result.returncode != 0
    assert ("gpu1: cannot join: the bootstrap control plane cp1 is not part of this run (--limit?), so the address "
            "of its API server is unknown; run with it or set kubeadm_control_plane_endpoint") in result.stdout
    assert not list(captured.iterdir())


# -- microk8s -----------------------------------------------------------------------------

def _plan(out, host):
    return yaml.safe_load((out / host / "plan.yaml").read_text())


def test_microk8s_one_control_plane_and_workers(tmp_path):
    render(tmp_path, "microk8s", {"cp1": _host("control_plane", "ubuntu-24.04", "cp1", "192.0.2.11"), **WORKERS}, {})
    out = tmp_path / "out" / "microk8s"
    cp1 = _plan(out, "cp1")
    assert cp1["order"] == {"init": "cp1", "bootstrap": "cp1", "control_plane_joins": [], "worker_joins": ["gpu1", "gpu2"]}
    assert cp1["join"] is None
    for worker in ("gpu1", "gpu2"):
        plan = _plan(out, worker)
        assert plan["join"] == {"address": "192.0.2.11:25000", "as": "worker"}
        assert plan["kubeconfig_server"] == "https://192.0.2.11:16443"


def test_microk8s_three_control_planes_without_an_endpoint(tmp_path):
    # dqlite HA: the other control planes and the workers all join through the first one.
    render(tmp_path, "microk8s", {**THREE_CP, "gpu1": WORKERS["gpu1"]}, {})
    out = tmp_path / "out" / "microk8s"
    assert _plan(out, "cp1")["join"] is None
    assert _plan(out, "cp2")["join"] == _plan(out, "cp3")["join"] == {"address": "192.0.2.11:25000", "as": "control-plane"}
    assert _plan(out, "gpu1")["join"] == {"address": "192.0.2.11:25000", "as": "worker"}


def test_microk8s_ipv6_control_plane_and_single_node(tmp_path):
    render(tmp_path / "v6", "microk8s", {"cp1": _host("control_plane", "ubuntu-24.04", "cp1", "192.0.2.11",
                                                      microk8s_node_address="2001:db8::11"),
                                         "gpu1": WORKERS["gpu1"]}, {}) if (tmp_path / "v6").mkdir() is None else None
    plan = _plan(tmp_path / "v6" / "out" / "microk8s", "gpu1")
    assert plan["join"]["address"] == "[2001:db8::11]:25000" and plan["kubeconfig_server"] == "https://[2001:db8::11]:16443"
    (tmp_path / "solo").mkdir()
    render(tmp_path / "solo", "microk8s", {"solo": _host(["control_plane", "workers"], "rocky-9", "solo", "192.0.2.5")}, {})
    solo = _plan(tmp_path / "solo" / "out" / "microk8s", "solo")
    assert solo["join"] is None and solo["kubeconfig_server"] == "https://192.0.2.5:16443"


def test_microk8s_control_plane_without_an_address_is_refused(tmp_path):
    result = render(tmp_path, "microk8s", {"cp1": _host("control_plane", "ubuntu-24.04", "cp1"), **WORKERS}, {},
                    expect_failure=True)
    # ansible_host defaults to the inventory name, which is no address.
    assert "cp1: microk8s_node_address \"cp1\" is not an IP address" in result.stdout
    assert not (tmp_path / "out").exists()


# -- the sample inventory -----------------------------------------------------------------

ONE_CP_INVENTORY = Path(__file__).resolve().parents[3] / "inventories" / "one-control-plane"


def test_one_control_plane_sample_inventory_renders_a_cluster(tmp_path):
    """inventories/one-control-plane as shipped, with fixture facts that have no address: the
    workers join cp1 through its ansible_host."""
    hosts = {"cp1": "ubuntu-24.04", "hgx1": "ubuntu-24.04", "l40s1": "rocky-9"}
    overlay = tmp_path / "facts.yml"
    overlay.write_text(yaml.safe_dump({"all": {"hosts": {name: {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "fixture_facts_file": str(FIXTURES / "facts" / f"{os_name}.yml"), "host_facts": {"hostname": name}}
        for name, os_name in hosts.items()}}}))
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(ONE_CP_INVENTORY), "-i", str(overlay),
         str(FIXTURES / "render" / "render.yml"),
         "-e", yaml.safe_dump({"render_role": "gpushare.cluster.kubeadm", "gpushare_render_dir": str(tmp_path / "out")},
                              default_flow_style=True)],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:]
    out = tmp_path / "out" / "kubeadm"
    init = _init(out, "cp1")
    assert init["InitConfiguration"]["localAPIEndpoint"]["advertiseAddress"] == "203.0.113.10"
    for worker in ("hgx1", "l40s1"):
        assert _join(out, worker)["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "203.0.113.10:6443"
    assert sorted(p.name for p in out.iterdir()) == ["cp1", "hgx1", "l40s1"]


def test_microk8s_reset_reads_each_node_name_from_published_facts(tmp_path):
    """The reset entry point's remove-node step names another host's node; in check mode every
    step is templated but none runs (and each is guarded by removes: /snap/bin/microk8s)."""
    if Path("/snap/bin/microk8s").exists():
        pytest.skip("MicroK8s is installed on this machine: the reset entry point is not run here")
    playbook = tmp_path / "reset.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Reset", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Reset", "ansible.builtin.include_role": {"name": "gpushare.cluster.microk8s", "tasks_from": "reset"}}]}]))
    groups = {"control_plane": {"hosts": {"mk1": {}}}, "workers": {"hosts": {"gpu1": {}, "gpu2": {}}}}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "--check", "-i", str(inventory), str(playbook)],
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:]
    assert "TASK [gpushare.cluster.microk8s : Remove the node from the cluster]" in result.stdout
    # Removing the snap leaves the kubelet's, kube-proxy's and Calico's packet filtering rules; the
    # reset removes them too (the module itself runs for real in test_reset_network_rules.py).
    assert "TASK [gpushare.cluster.microk8s : Remove the packet filtering rules Kubernetes left]" in result.stdout


def test_kubeadm_reset_removes_the_network_rules_kubeadm_reset_leaves(tmp_path):
    """kubeadm reset leaves the packet filtering rules; the reset entry point removes them after it,
    on each node in the reset order. Check mode: nothing on this machine changes."""
    if Path("/etc/kubernetes/kubelet.conf").exists():
        pytest.skip("kubeadm has set up this machine: the reset entry point is not run here")
    playbook = tmp_path / "reset.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Reset", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Reset", "ansible.builtin.include_role": {"name": "gpushare.cluster.kubeadm", "tasks_from": "reset"}}]}]))
    groups = {"control_plane": {"hosts": {"cp1": {}}}, "workers": {"hosts": {"gpu1": {}}}}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "kubeadm_config_dir": str(tmp_path / "config")}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "--check", "-i", str(inventory), str(playbook)],
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:]
    steps = [line for line in result.stdout.splitlines() if line.startswith("TASK [gpushare.cluster.kubeadm : ")]
    reset = [i for i, line in enumerate(steps) if "Reset kubeadm's state on the node" in line]
    rules = [i for i, line in enumerate(steps) if "Remove the packet filtering rules Kubernetes left" in line]
    # Workers first, then the control plane; on each node the rules go after kubeadm reset.
    assert len(reset) == len(rules) == 2 and all(r < f for r, f in zip(reset, rules)), steps
