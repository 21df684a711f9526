# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster topology decisions for the kubeadm and microk8s roles.

Pure functions, no I/O: which Kubernetes minors are supported, which host initialises the
cluster, in which order hosts join, are upgraded, drained and reset, and whether the pod and
service networks overlap. Errors are ``ValueError`` subclasses whose message names the host
(when there is one) and the inventory field.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access
from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import RESOURCE_V1BETA1_API

SUPPORTED_MINORS = versions.SUPPORTED_KUBERNETES_MINORS
KNOWN_CNIS = ("calico", "cilium", "none")
DISTRIBUTIONS = versions.DISTRIBUTIONS


class TopologyError(GpushareError):
    """Bad cluster input (versions, networks, host groups)."""


def parse_version(version: object, field: str = "gpushare_kubernetes_version") -> tuple:
    """Return (major, minor, patch or None) for '1.35', 'v1.35.2', '1.35.2-1.1'."""
    parsed = versions.parse_kubernetes_version(version)
    if parsed is None:
        raise TopologyError(f"{field}: {version!r} is not a Kubernetes version such as '1.35' or 'v1.35.2'")
    return parsed.major, parsed.minor, parsed.patch


def minor_of(version: object, field: str = "gpushare_kubernetes_version") -> str:
    """'v1.35.2' -> '1.35'."""
    major, minor, _patch = parse_version(version, field)
    return f"{major}.{minor}"


def check_supported_version(
    version: object,
    supported: Sequence[str] = SUPPORTED_MINORS,
    field: str = "gpushare_kubernetes_version",
) -> str:
    """Return the minor of ``version`` or raise when it is outside the supported minors."""
    minor = minor_of(version, field)
    if minor not in supported:
        raise TopologyError(
            f"{field}: Kubernetes {minor} is not supported; supported minors are {', '.join(supported)}"
        )
    return minor


def check_upgrade_step(current: object, target: object, field: str = "gpushare_kubernetes_version") -> bool:
    """Validate an upgrade from ``current`` to ``target``; return True when there is work to do.

    kubeadm and the Kubernetes version-skew policy allow one minor at a time, never a downgrade.
    """
    cur = parse_version(current, "current cluster version")
    tgt = parse_version(target, field)
    if cur[0] != tgt[0]:
        raise TopologyError(f"{field}: cannot move from major {cur[0]} to major {tgt[0]}")
    if tgt[1] < cur[1]:
        raise TopologyError(f"{field}: {minor_of(target)} is older than the running {minor_of(current)}; downgrades are not supported")
    if tgt[1] > cur[1] + 1:
        raise TopologyError(
            f"{field}: upgrade from {cur[0]}.{cur[1]} to {tgt[0]}.{tgt[1]} skips a minor; "
            f"upgrade one minor at a time (next: {cur[0]}.{cur[1] + 1})"
        )
    if tgt[1] == cur[1]:
        return tgt[2] is not None and cur[2] is not None and tgt[2] > cur[2]
    return True


def running_version_problems(
    running: Mapping[str, Mapping[str, object]],
    target: object,
    target_channel: str = "",
    field: str = "gpushare_kubernetes_version",
) -> List[str]:
    """One line per node whose installed Kubernetes an install run would change.

    ``running`` maps each node to what it runs: ``{}`` when Kubernetes is not installed yet,
    else ``{"version": "v1.35.4"}`` and, for a snap, ``{"channel": "1.35/stable"}`` ("-" for a
    side-loaded snap, which tracks no channel). Only upgrade.yml may move a running node to
    another minor (drained, one node at a time: the version-skew policy does not support an
    in-place minor kubelet upgrade) and a snap to another channel; a downgrade is never
    supported. Nodes not installed yet and nodes already on the target are fine.
    """
    problems: List[str] = []
    target_minor = parse_version(target, field)[:2]
    for host in sorted(running):
        node = running[host] or {}
        if not node.get("version"):
            continue
        version = str(node["version"])
        minor = parse_version(version, f"{host}: running Kubernetes version")[:2]
        channel = str(node.get("channel") or "-")
        if minor > target_minor:
            problems.append(
                f"{host} runs Kubernetes {version}, newer than {field} {target}: Kubernetes cannot be "
                f"downgraded; set {field} to {minor[0]}.{minor[1]}"
            )
        elif minor < target_minor:
            problems.append(
                f"{host} runs Kubernetes {version}; {field} {target} would change it in place, without a drain: "
                "only playbooks/upgrade.yml moves a running node to another minor"
            )
        elif target_channel and channel not in ("-", target_channel):
            problems.append(
                f"{host} tracks the snap channel {channel}, not {target_channel}: a refresh here would restart it "
                "without a drain; only playbooks/upgrade.yml changes the channel of a running node"
            )
    return problems


def check_cidrs(pod_cidr: str, service_cidr: str, node_cidrs: Iterable[str] = ()) -> List[str]:
    """Return the errors of the cluster networks (empty list when fine).

    Pod and service networks must be valid and disjoint, and neither may overlap a network the
    nodes themselves live on (routing to the hosts would break).
    """
    errors: List[str] = []
    nets = {}
    for field, value in (("pod_cidr", pod_cidr), ("service_cidr", service_cidr)):
        try:
            nets[field] = ipaddress.ip_network(str(value), strict=True)
        except ValueError as exc:
            errors.append(f"{field}: {value!r} is not a network in CIDR form ({exc})")
    if len(nets) == 2 and nets["pod_cidr"].version == nets["service_cidr"].version:
        if nets["pod_cidr"].overlaps(nets["service_cidr"]):
            errors.append(f"pod_cidr {pod_cidr} and service_cidr {service_cidr} overlap; choose disjoint networks")
    for node_cidr in node_cidrs:
        try:
            node_net = ipaddress.ip_network(str(node_cidr), strict=False)
        except ValueError as exc:
            errors.append(f"node network {node_cidr!r} is not a network in CIDR form ({exc})")
            continue
        for field, net in nets.items():
            if net.version == node_net.version and net.overlaps(node_net):
                errors.append(f"{field} {net} overlaps the node network {node_net}")
    return errors


def check_topology(
    control_planes: Sequence[str],
    workers: Sequence[str],
    distribution: str = "kubeadm",
    cni: Optional[str] = None,
    control_plane_endpoint: Optional[str] = None,
) -> List[str]:
    """Return every error of the host groups together (empty list when fine)."""
    errors: List[str] = []
    if distribution not in DISTRIBUTIONS:
        errors.append(f"gpushare_kubernetes_distribution: {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
    if cni is not None and cni not in KNOWN_CNIS:
        errors.append(f"kubeadm_cni: {cni!r} is not a known CNI; choose one of {', '.join(KNOWN_CNIS)}")
    count = len(control_planes)
    if count == 0:
        if workers:
            errors.append(
                f"control_plane: the group is empty but workers ({', '.join(workers)}) need a control plane to join"
            )
        else:
            errors.append("control_plane: the group is empty; put at least one host in it")
    elif count > 1 and count % 2 == 0:
        errors.append(
            f"control_plane: {count} hosts ({', '.join(control_planes)}); HA needs an odd number (3, 5, ...) "
            "so that etcd/dqlite keeps quorum when one fails"
        )
    # A host in both groups is a control plane that also runs workloads (single-node and
    # small clusters); it joins as a control plane and is never joined a second time.
    for group, hosts in (("control_plane", control_planes), ("workers", workers)):
        seen = set()
        for host in hosts:
            if host in seen:
                errors.append(f"{host}: listed more than once in {group}")
            seen.add(host)
    if distribution == "kubeadm" and count > 1 and not control_plane_endpoint:
        errors.append(
            "kubeadm_control_plane_endpoint: required with more than one control-plane host "
            "(a VIP served by kube-vip or a load balancer) so the API survives the loss of one node"
        )
    return errors


def dedicated_workers(control_planes: Sequence[str], workers: Sequence[str]) -> List[str]:
    """Workers that are not control planes too, in inventory order.

    A host in both groups joins, upgrades and resets once, as a control plane.
    """
    planes = set(control_planes)
    return [host for host in workers if host not in planes]


def bootstrap_host(control_planes: Sequence[str], initialized: Iterable[str] = ()) -> str:
    """The control plane that runs init, or the member of an existing cluster to use.

    Inventory order decides, but a host that already runs a control plane always wins, so a
    re-run or a reordered inventory never initialises a second cluster.
    """
    if not control_planes:
        raise TopologyError("control_plane: the group is empty; no host can initialise the cluster")
    done = set(initialized)
    for host in control_planes:
        if host in done:
            return host
    return control_planes[0]


def join_order(
    control_planes: Sequence[str],
    workers: Sequence[str],
    initialized: Iterable[str] = (),
    joined: Iterable[str] = (),
) -> Dict[str, object]:
    """Who initialises and who joins, in order.

    ``initialized``: control planes that already run the API server. ``joined``: hosts already
    members of the cluster (node names known to the API). Returns ``{"init": host or None,
    "bootstrap": host, "control_plane_joins": [...], "worker_joins": [...]}``; ``init`` is None
    when the cluster exists. Control planes join one at a time, before the workers, so each
    worker can reach a full control plane.
    """
    initialized = list(initialized)
    members = set(joined) | set(initialized)
    first = bootstrap_host(control_planes, initialized)
    return {
        "init": None if first in members else first,
        "bootstrap": first,
        "control_plane_joins": [h for h in control_planes if h != first and h not in members],
        "worker_joins": [h for h in dedicated_workers(control_planes, workers) if h not in members],
    }


def upgrade_order(control_planes: Sequence[str], workers: Sequence[str], bootstrap: Optional[str] = None) -> List[Dict[str, object]]:
    """Steps of a rolling upgrade: control planes first (the first one applies), then workers.

    Every step drains its node; one node at a time.
    """
    if not control_planes:
        raise TopologyError("control_plane: the group is empty; nothing to upgrade first")
    first = bootstrap if bootstrap in control_planes else control_planes[0]
    steps: List[Dict[str, object]] = [{"host": first, "role": "control_plane", "action": "apply", "drain": True}]
    steps += [{"host": h, "role": "control_plane", "action": "node", "drain": True} for h in control_planes if h != first]
    steps += [{"host": h, "role": "worker", "action": "node", "drain": True}
              for h in dedicated_workers(control_planes, workers)]
    return steps


def reset_order(control_planes: Sequence[str], workers: Sequence[str], bootstrap: Optional[str] = None) -> List[Dict[str, object]]:
    """Steps of a teardown: workers, then the other control planes, the bootstrap host last.

    Removing members before the last control plane keeps etcd/dqlite quorum while they leave.
    """
    first = bootstrap if bootstrap in control_planes else (control_planes[0] if control_planes else None)
    steps: List[Dict[str, object]] = [{"host": h, "role": "worker", "last": False}
                                      for h in dedicated_workers(control_planes, workers)]
    steps += [{"host": h, "role": "control_plane", "last": False} for h in reversed(list(control_planes)) if h != first]
    if first is not None:
        steps.append({"host": first, "role": "control_plane", "last": True})
    return steps


def feature_gates_string(gates: Mapping[str, object], field: str = "feature_gates") -> str:
    """{'B': True, 'A': False} -> 'A=false,B=true' (sorted, so the output is stable)."""
    parts = []
    for name in sorted(gates):
        value = gates[name]
        if not re.match(r"^[A-Za-z][A-Za-z0-9]*$", str(name)):
            raise TopologyError(f"{field}: {name!r} is not a feature gate name")
        if not isinstance(value, bool):
            raise TopologyError(f"{field}.{name}: {value!r} must be true or false")
        parts.append(f"{name}={'true' if value else 'false'}")
    return ",".join(parts)


def extra_args_list(args: Mapping[str, object], feature_gates: Optional[Mapping[str, object]] = None) -> List[Dict[str, str]]:
    """kubeadm v1beta4 extraArgs: a sorted list of {name, value}; gates become one feature-gates arg."""
    merged = {str(k): v for k, v in (args or {}).items()}
    if feature_gates:
        if "feature-gates" in merged:
            raise TopologyError("extra args: set feature gates through feature_gates, not a 'feature-gates' argument")
        merged["feature-gates"] = feature_gates_string(feature_gates)
    out = []
    for name in sorted(merged):
        value = merged[name]
        if isinstance(value, bool):
            value = "true" if value else "false"
        out.append({"name": name, "value": str(value)})
    return out


# dcgm-exporter 4.6.0-4.8.3, as GPU Operator v26.7.0 ships it, attributes DRA GPUs to pods by
# watching ResourceSlices through resource.k8s.io/v1beta1 (internal/pkg/transformation/dra.go)
# and waits for that watch before it exports anything; Kubernetes 1.34+ serves only
# resource.k8s.io/v1 unless the API server is told to (seen on the rehearsal's v1.35.4).
DRA_BACKEND_APISERVER_ARGS = {"runtime-config": RESOURCE_V1BETA1_API + "=true"}


def backend_apiserver_args(args: Optional[Mapping[str, object]], backend: str = "dra",
                           authentication: Optional[Mapping[str, object]] = None,
                           field: str = "apiserver args") -> Dict[str, object]:
    """The API server arguments the GPU backend and the identity provider need, the user's ``args`` on top.

    ``authentication``: team_access.authentication_file (``{}`` without ``gpushare_oidc``). kube-apiserver
    refuses --oidc-* flags together with --authentication-config (v1.35.4
    pkg/kubeapiserver/options/authentication.go, Validate), so they are refused here first.
    """
    merged: Dict[str, object] = dict(DRA_BACKEND_APISERVER_ARGS) if backend == "dra" else {}
    if authentication:
        clash = team_access.conflicting_args(args or {})
        if clash:
            raise TopologyError(f"{field}: {', '.join(clash)} cannot be set together with gpushare_oidc "
                                "(kube-apiserver: authentication-config file and oidc-* flags are mutually exclusive); "
                                "set the identity provider in gpushare_oidc only")
        merged.update(authentication["apiserver_args"])  # type: ignore[arg-type]
    merged.update(args or {})
    return merged


UPSTREAM_PACKAGES = "https://pkgs.k8s.io"


def package_repo(version: object, family: str, mirror: Optional[str] = None) -> Dict[str, str]:
    """pkgs.k8s.io repository of one Kubernetes minor for an OS family (Debian or RedHat).

    ``mirror`` replaces ``https://pkgs.k8s.io`` and keeps the path (``/core:/stable:/v1.35/deb/``),
    as a pull-through or rsync mirror of pkgs.k8s.io does.
    """
    minor = minor_of(version)
    base = (mirror or UPSTREAM_PACKAGES).rstrip("/")
    if family == "Debian":
        url = f"{base}/core:/stable:/v{minor}/deb/"
        return {"url": url, "key_url": f"{url}Release.key", "minor": minor, "type": "deb"}
    if family == "RedHat":
        url = f"{base}/core:/stable:/v{minor}/rpm/"
        return {"url": url, "key_url": f"{url}repodata/repomd.xml.key", "minor": minor, "type": "rpm"}
    raise TopologyError(f"ansible_os_family: {family!r} is not supported (Debian or RedHat)")
