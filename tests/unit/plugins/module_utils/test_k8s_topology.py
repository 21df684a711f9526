"""Cluster topology decisions: versions, networks, host groups and host order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as t


@pytest.mark.parametrize("value,expected", [("1.35", "1.35"), ("v1.34.2", "1.34"), ("1.36.0-1.1", "1.36"), (1.35, "1.35")])
def test_minor_of(value, expected):
    assert t.minor_of(value) == expected


@pytest.mark.parametrize("value", ["1.33", "1.37", "v1.20.1"])
def test_unsupported_minor_names_field_and_supported_range(value):
    with pytest.raises(t.TopologyError, match=r"gpushare_kubernetes_version: Kubernetes 1\.\d+ is not supported; supported minors are 1.34, 1.35, 1.36"):
        t.check_supported_version(value)


@pytest.mark.parametrize("value", ["latest", "1", "one.two", ""])
def test_malformed_version(value):
    with pytest.raises(t.TopologyError, match="is not a Kubernetes version"):
        t.minor_of(value)


def test_upgrade_one_minor_at_a_time():
    assert t.check_upgrade_step("v1.34.3", "1.35") is True
    assert t.check_upgrade_step("v1.35.1", "1.35.2") is True
    assert t.check_upgrade_step("v1.35.2", "1.35") is False
    with pytest.raises(t.TopologyError, match="skips a minor; upgrade one minor at a time \\(next: 1.35\\)"):
        t.check_upgrade_step("1.34.1", "1.36")
    with pytest.raises(t.TopologyError, match="downgrades are not supported"):
        t.check_upgrade_step("1.36.0", "1.35")


def test_running_version_problems_name_each_node_that_an_install_run_would_change():
    running = {
        "new": {},                                                   # not installed: the install run installs it
        "same": {"version": "v1.35.4", "channel": "1.35/stable"},   # on the target: nothing to change
        "older": {"version": "v1.34.4", "channel": "1.34/stable"},  # an in-place minor upgrade, no drain
        "newer": {"version": "v1.36.3", "channel": "1.36/stable"},  # a downgrade
        "risk": {"version": "v1.35.5", "channel": "1.35/candidate"},  # same minor, another channel
        "loaded": {"version": "v1.35.2", "channel": "-"},            # side-loaded: tracks no channel
    }
    problems = t.running_version_problems(running, "1.35", "1.35/stable")
    assert [line.split()[0] for line in problems] == ["newer", "older", "risk"]
    newer, older, risk = problems
    assert "v1.36.3" in newer and "cannot be downgraded" in newer and "set gpushare_kubernetes_version to 1.36" in newer
    assert "v1.34.4" in older and "playbooks/upgrade.yml" in older and "without a drain" in older
    assert "1.35/candidate" in risk and "1.35/stable" in risk and "playbooks/upgrade.yml" in risk


def test_running_version_problems_without_a_channel_compare_minors_only():
    # kubeadm: package patch releases within the minor are the repository's business.
    running = {"cp1": {"version": "v1.35.1"}, "gpu1": {"version": "v1.35.4"}}
    assert t.running_version_problems(running, "1.35.4") == []
    assert [p.split()[0] for p in t.running_version_problems(running, "1.36")] == ["cp1", "gpu1"]


def test_running_version_problems_name_an_unreadable_running_version():
    with pytest.raises(t.TopologyError, match="gpu1: running Kubernetes version"):
        t.running_version_problems({"gpu1": {"version": "latest"}}, "1.35")


def test_cidrs_fine():
    assert t.check_cidrs("10.244.0.0/16", "10.96.0.0/12", ["192.168.1.0/24"]) == []


def test_pod_service_overlap():
    errors = t.check_cidrs("10.0.0.0/8", "10.96.0.0/12")
    assert errors == ["pod_cidr 10.0.0.0/8 and service_cidr 10.96.0.0/12 overlap; choose disjoint networks"]


def test_cidr_overlaps_node_network_and_bad_cidr_collected():
    errors = t.check_cidrs("192.168.0.0/16", "10.96.0.1/12", ["192.168.10.5/24"])
    assert any(e.startswith("service_cidr: '10.96.0.1/12' is not a network") for e in errors)
    assert "pod_cidr 192.168.0.0/16 overlaps the node network 192.168.10.0/24" in errors


def test_dual_families_do_not_overlap():
    assert t.check_cidrs("fd00:10:244::/56", "10.96.0.0/12") == []


def test_topology_errors_collected():
    errors = t.check_topology(["cp1", "cp2"], ["cp2", "w1"], "kubeadm", "flannel", None)
    text = "\n".join(errors)
    assert "kubeadm_cni: 'flannel' is not a known CNI" in text
    assert "control_plane: 2 hosts (cp1, cp2); HA needs an odd number" in text
    assert "listed in both" not in text
    assert "kubeadm_control_plane_endpoint: required with more than one control-plane host" in text


@pytest.mark.parametrize("cps,workers", [(["gpu1"], ["gpu1"]), (["a", "b", "c"], ["a", "w1"])])
def test_control_plane_that_also_runs_workloads_is_fine(cps, workers):
    assert t.check_topology(cps, workers, "microk8s") == []
    assert t.check_topology(cps, workers, "kubeadm", "calico", "vip:6443") == []


def test_host_in_both_groups_keeps_the_real_errors():
    errors = t.check_topology(["a", "b"], ["a", "w1", "w1"], "kubeadm", "calico", "vip:6443")
    assert errors == [
        "control_plane: 2 hosts (a, b); HA needs an odd number (3, 5, ...) so that etcd/dqlite keeps quorum when one fails",
        "w1: listed more than once in workers",
    ]


def test_host_in_both_groups_joins_upgrades_and_resets_once_as_control_plane():
    order = t.join_order(["gpu1"], ["gpu1"])
    assert order == {"init": "gpu1", "bootstrap": "gpu1", "control_plane_joins": [], "worker_joins": []}
    order = t.join_order(["cp1", "cp2", "cp3"], ["cp3", "w1"])
    assert order["control_plane_joins"] == ["cp2", "cp3"] and order["worker_joins"] == ["w1"]
    assert [(s["host"], s["role"]) for s in t.upgrade_order(["cp1", "cp2", "cp3"], ["cp3", "w1"])] == [
        ("cp1", "control_plane"), ("cp2", "control_plane"), ("cp3", "control_plane"), ("w1", "worker")]
    assert [(s["host"], s["role"]) for s in t.reset_order(["gpu1"], ["gpu1"])] == [("gpu1", "control_plane")]


def test_workers_without_control_plane():
    assert t.check_topology([], ["w1", "w2"]) == [
        "control_plane: the group is empty but workers (w1, w2) need a control plane to join"
    ]


@pytest.mark.parametrize("cps", [["a"], ["a", "b", "c"], ["a", "b", "c", "d", "e"]])
def test_odd_control_planes_fine(cps):
    assert t.check_topology(cps, ["w"], "kubeadm", "calico", "vip:6443") == []


def test_microk8s_needs_no_endpoint_and_unknown_distribution():
    assert t.check_topology(["a", "b", "c"], [], "microk8s") == []
    assert t.check_topology(["a"], [], "k3s")[0].startswith("gpushare_kubernetes_distribution: 'k3s'")


def test_join_order_fresh_cluster():
    order = t.join_order(["cp1", "cp2", "cp3"], ["w1", "w2"])
    assert order == {"init": "cp1", "bootstrap": "cp1", "control_plane_joins": ["cp2", "cp3"], "worker_joins": ["w1", "w2"]}


def test_join_order_existing_cluster_never_inits_again():
    # cp1 was lost and rebuilt; cp2 still runs the control plane.
    order = t.join_order(["cp1", "cp2", "cp3"], ["w1", "w2"], initialized=["cp2", "cp3"], joined=["w1"])
    assert order == {"init": None, "bootstrap": "cp2", "control_plane_joins": ["cp1"], "worker_joins": ["w2"]}


def test_join_order_rerun_is_empty():
    order = t.join_order(["cp1"], ["w1"], initialized=["cp1"], joined=["cp1", "w1"])
    assert order["init"] is None and order["control_plane_joins"] == [] and order["worker_joins"] == []


def test_upgrade_order_control_planes_first_bootstrap_applies():
    steps = t.upgrade_order(["cp1", "cp2", "cp3"], ["w1", "w2"], bootstrap="cp2")
    assert [(s["host"], s["action"]) for s in steps] == [
        ("cp2", "apply"), ("cp1", "node"), ("cp3", "node"), ("w1", "node"), ("w2", "node")]
    assert all(s["drain"] for s in steps)


def test_reset_order_bootstrap_last():
    steps = t.reset_order(["cp1", "cp2", "cp3"], ["w1"], bootstrap="cp1")
    assert [s["host"] for s in steps] == ["w1", "cp3", "cp2", "cp1"]
    assert [s["last"] for s in steps] == [False, False, False, True]


hosts = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), unique=True, max_size=8)


@given(hosts, hosts, st.data())
def test_join_order_properties(cps, workers, data):
    workers = [w for w in workers if w not in cps]
    if not cps:
        return
    initialized = data.draw(st.lists(st.sampled_from(cps), unique=True))
    joined = data.draw(st.lists(st.sampled_from(cps + workers), unique=True))
    order = t.join_order(cps, workers, initialized, joined)
    members = set(initialized) | set(joined)
    # Exactly one host bootstraps; init only on a cluster with no control plane yet.
    assert order["bootstrap"] in cps
    assert (order["init"] is None) == (order["bootstrap"] in members)
    if initialized:
        assert order["init"] is None and order["bootstrap"] in initialized
    # Every host is either a member, the init host or joins; nobody joins twice.
    everyone = set(cps) | set(workers)
    planned = [order["init"]] if order["init"] else []
    planned += order["control_plane_joins"] + order["worker_joins"]
    assert len(planned) == len(set(planned))
    assert set(planned) | members >= everyone
    assert not set(planned) & members


@given(hosts, hosts)
def test_upgrade_and_reset_cover_every_host_once(cps, workers):
    workers = [w for w in workers if w not in cps]
    if not cps:
        return
    up = [s["host"] for s in t.upgrade_order(cps, workers)]
    down = [s["host"] for s in t.reset_order(cps, workers)]
    assert sorted(up) == sorted(cps + workers) == sorted(down)
    assert up[: len(cps)] == [cps[0]] + [c for c in cps if c != cps[0]]
    assert down[-1] == cps[0]


def test_feature_gates_string_sorted_and_checked():
    assert t.feature_gates_string({"DRAExtendedResource": True, "DRAConsumableCapacity": False}) == \
        "DRAConsumableCapacity=false,DRAExtendedResource=true"
    with pytest.raises(t.TopologyError, match="feature_gates.DRAExtendedResource: 'yes' must be true or false"):
        t.feature_gates_string({"DRAExtendedResource": "yes"})


def test_extra_args_list_v1beta4_shape():
    assert t.extra_args_list({"v": 2, "profiling": False}, {"B": True, "A": True}) == [
        {"name": "feature-gates", "value": "A=true,B=true"},
        {"name": "profiling", "value": "false"},
        {"name": "v", "value": "2"},
    ]
    with pytest.raises(t.TopologyError, match="not a 'feature-gates' argument"):
        t.extra_args_list({"feature-gates": "A=true"}, {"B": True})


def test_package_repo_upstream_and_mirror():
    deb = t.package_repo("1.35", "Debian")
    assert deb["url"] == "https://pkgs.k8s.io/core:/stable:/v1.35/deb/"
    assert deb["key_url"] == "https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key"
    rpm = t.package_repo("v1.34.2", "RedHat", "https://mirror.example.internal/pkgs-k8s/")
    assert rpm["url"] == "https://mirror.example.internal/pkgs-k8s/core:/stable:/v1.34/rpm/"
    assert rpm["key_url"] == "https://mirror.example.internal/pkgs-k8s/core:/stable:/v1.34/rpm/repodata/repomd.xml.key"
    with pytest.raises(t.TopologyError, match="ansible_os_family: 'Suse'"):
        t.package_repo("1.35", "Suse")


def test_package_repo_matches_reference(reference_dir):
    text = (reference_dir / "k8s" / "kubeadm" / "repos.md").read_text()
    assert t.package_repo("1.34", "Debian")["url"] in text
    assert t.package_repo("1.34", "Debian")["key_url"] in text
    assert "baseurl=" + t.package_repo("1.34", "RedHat")["url"] in text
    assert "gpgkey=" + t.package_repo("1.34", "RedHat")["key_url"] in text


def test_backend_apiserver_args_serve_v1beta1_resource_api_under_dra_only():
    assert t.backend_apiserver_args({}, "dra") == {"runtime-config": "resource.k8s.io/v1beta1=true"}
    assert t.backend_apiserver_args({"event-ttl": "1h"}, "device_plugin") == {"event-ttl": "1h"}
    # The user's own runtime-config wins.
    assert t.backend_apiserver_args({"runtime-config": "api/all=true"}, "dra") == {"runtime-config": "api/all=true"}
