# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters exposing the cluster topology and MicroK8s args logic to the Kubernetes roles."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import cert_expiry
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as k8s_topology
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import microk8s_args
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_minor(version):
    return k8s_topology.minor_of(version)


def k8s_supported_minor(version, supported=None):
    return k8s_topology.check_supported_version(version, tuple(supported or k8s_topology.SUPPORTED_MINORS))


def k8s_upgrade_needed(current, target):
    return k8s_topology.check_upgrade_step(current, target)


def k8s_network_errors(pod_cidr, service_cidr, node_cidrs=None):
    return k8s_topology.check_cidrs(pod_cidr, service_cidr, list(node_cidrs or []))


def k8s_topology_errors(control_planes, workers, distribution="kubeadm", cni=None, control_plane_endpoint=None):
    return k8s_topology.check_topology(list(control_planes or []), list(workers or []), distribution, cni or None,
                                       control_plane_endpoint or None)


def k8s_cert_expiry(output, distribution, threshold_days, now=None):
    """cert_expiry.report of kubeadm's or MicroK8s' expiry check output; ``now`` an ISO time (default: now)."""
    moment = cert_expiry.utc(str(now)) if now else None
    return cert_expiry.report(str(distribution), str(output), float(threshold_days), moment)


def k8s_join_order(control_planes, workers, initialized=None, joined=None):
    return k8s_topology.join_order(list(control_planes or []), list(workers or []), list(initialized or []), list(joined or []))


def k8s_upgrade_order(control_planes, workers, bootstrap=None):
    return k8s_topology.upgrade_order(list(control_planes or []), list(workers or []), bootstrap)


def k8s_reset_order(control_planes, workers, bootstrap=None):
    return k8s_topology.reset_order(list(control_planes or []), list(workers or []), bootstrap)


def k8s_feature_gates(gates):
    return k8s_topology.feature_gates_string(dict(gates or {}))


def k8s_extra_args(args, feature_gates=None):
    return k8s_topology.extra_args_list(dict(args or {}), dict(feature_gates or {}))


def k8s_backend_apiserver_args(args, backend="dra", authentication=None, field="apiserver args"):
    return k8s_topology.backend_apiserver_args(dict(args or {}), str(backend), dict(authentication or {}), str(field))


def k8s_authentication(oidc, path, ca_pem=""):
    return team_access.authentication_file(dict(oidc or {}), str(path), str(ca_pem or ""))


def k8s_package_repo(version, family, mirror=None):
    return k8s_topology.package_repo(version, family, mirror or None)


def microk8s_merge_args(text, args=None, feature_gates=None, remove=None, service="args"):
    return microk8s_args.merge_args(text, dict(args or {}), dict(feature_gates or {}), list(remove or []), service)


def microk8s_merge_env(text, env=None):
    return microk8s_args.merge_env(text, dict(env or {}))


def microk8s_enable_cdi(template, spec_dirs=None):
    if spec_dirs:
        return microk8s_args.enable_cdi(template, tuple(spec_dirs))
    return microk8s_args.enable_cdi(template)


class FilterModule:
    """gpushare.cluster Kubernetes filters."""

    def filters(self):
        funcs = (
            k8s_minor, k8s_supported_minor, k8s_upgrade_needed, k8s_network_errors, k8s_topology_errors,
            k8s_join_order, k8s_upgrade_order, k8s_reset_order, k8s_feature_gates, k8s_extra_args, k8s_backend_apiserver_args,
            k8s_authentication, k8s_package_repo, microk8s_merge_args, microk8s_merge_env, microk8s_enable_cdi,
            k8s_cert_expiry,
        )
        return {func.__name__: _wrap(func) for func in funcs}
