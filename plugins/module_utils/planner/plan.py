# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole ``gpushare_plan``: one pure function from the inventory (and the GPU facts
found on the hosts) to every decision the roles apply.

Errors from every stage (inventory, MIG layouts, sharing, quotas) are collected and
raised together as one :class:`PlanError`, so a bad inventory is reported in one go
and nothing partial is ever returned.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpushare.cluster.plugins.module_utils.planner import dra_objects
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import isolation
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as k8s_topology
from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors
from ansible_collections.gpushare.cluster.plugins.module_utils._common import names
from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import quotas
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import sharing
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.inventory import normalise_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions
from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import PlanError  # noqa: F401 (raised here; callers import it from this module)

PLAN_VERSION = contract.PLAN_VERSION
DISTRIBUTIONS = versions.DISTRIBUTIONS
# The supported minors as numbers (34 for "1.34"), for the version check below.
SUPPORTED_MINORS = versions.SUPPORTED_KUBERNETES_MINOR_NUMBERS
# Argument spec of the options every planner module shares (doc fragment
# gpushare.cluster.plan_inputs documents them).
PLAN_INPUT_ARGUMENT_SPEC = dict(
    teams=dict(type="list", elements="dict", required=True),
    nodes=dict(type="dict", required=True),
    gpu_facts=dict(type="dict"),
    backend=dict(type="str", choices=list(versions.BACKENDS), default=versions.DEFAULT_BACKEND),
    cohort=dict(type="str", default="gpushare"),
    tolerations=dict(type="list", elements="dict", default=[]),
)

# The one home of which cluster-wide settings have a default: inventory variable ->
# (plan field, default). REQUIRED ones must be set; docs/inventory.md, the argument specs of
# the planner modules and the playbooks follow this table (tests/unit/plugins/module_utils/test_plan.py).
REQUIRED = None
CLUSTER_SETTINGS = {
    "gpushare_kubernetes_distribution": ("distribution", REQUIRED),
    "gpushare_kubernetes_version": ("kubernetes_version", REQUIRED),
    "gpushare_gpu_backend": ("backend", "dra"),
    # {} is no identity provider: people log in with kubeconfigs from playbooks/team_access.yml.
    "gpushare_oidc": ("oidc", {}),
}
CONTROL_PLANE_GROUP = "control_plane"
WORKER_GROUP = "workers"
# Every variable the validation reads from a host (and from the controller's play vars).
HOST_VARIABLES = tuple(CLUSTER_SETTINGS) + (
    "gpushare_gpus", "gpushare_gpu_facts", "gpushare_mirrors", "gpushare_proxy",
    "kubeadm_control_plane_endpoint", "kubeadm_vip_address", "kubernetes_common_node_name")
CONTROLLER_VARIABLES = tuple(CLUSTER_SETTINGS) + ("gpushare_teams", "gpushare_mirrors", "gpushare_proxy")


def minor_version(kubernetes_version: Any) -> Optional[str]:
    """``"1.35"`` for ``1.35``, ``"v1.35.0"`` or ``"1.35.2"``; None when it is not a supported version."""
    # A plan names a minor: 1.x, without a package revision or pre-release suffix.
    parsed = versions.parse_kubernetes_version(kubernetes_version) if isinstance(kubernetes_version, (str, float)) else None
    if parsed is None or parsed.major != 1 or parsed.suffix or parsed.minor not in SUPPORTED_MINORS:
        return None
    return "1.%d" % parsed.minor


def _check_settings(backend: Any, distribution: Any, kubernetes_version: Any, cohort: Any, errors: List[str],
                    oidc: Any = None) -> None:
    # A setting already reported (not set, or different between hosts) is not reported twice.
    reported = set(error.split(":", 1)[0] for error in errors)
    if backend not in sharing.BACKENDS and "gpushare_gpu_backend" not in reported:
        errors.append("gpushare_gpu_backend: must be one of %s, got %r" % (", ".join(sharing.BACKENDS), backend))
    if distribution not in DISTRIBUTIONS and "gpushare_kubernetes_distribution" not in reported:
        errors.append("gpushare_kubernetes_distribution: must be one of %s, got %r"
                      % (", ".join(DISTRIBUTIONS), distribution))
    if minor_version(kubernetes_version) is None and "gpushare_kubernetes_version" not in reported:
        hint = " (YAML read an unquoted number: write it in quotes, e.g. \"1.35\")" \
            if isinstance(kubernetes_version, float) else ""
        errors.append("gpushare_kubernetes_version: supported are 1.34, 1.35 and 1.36 (DRA resource.k8s.io/v1 "
                      "needs 1.34), got %r%s" % (kubernetes_version, hint))
    if not names.is_dns_label(cohort):
        errors.append("cohort: must be a lowercase DNS label, got %r" % (cohort,))
    if team_access.OIDC_VARIABLE not in reported:
        errors += team_access.oidc_errors(oidc)


def _node_name_errors(node_names: Mapping[str, str]) -> List[str]:
    errors = [error for host, node in sorted(node_names.items()) for error in [names.node_name_error(host, node)]
              if error]
    return errors + names.duplicates("Node", ((node, "host %s" % host) for host, node in sorted(node_names.items())))


def _object_name_errors(objects: Sequence[Mapping[str, Any]]) -> List[str]:
    """Every generated object has a valid name, and no two objects of one kind share a name."""
    errors: List[str] = []
    seen: Dict[tuple, int] = {}
    for obj in objects:
        kind = obj.get("kind")
        metadata = obj.get("metadata") or {}
        name, namespace = metadata.get("name"), metadata.get("namespace")
        key = (str(obj.get("apiVersion", "")).split("/", maxsplit=1)[0], kind, namespace, name)
        check = names.is_dns_label if kind in ("Namespace", "Service") else names.is_dns_subdomain
        where = "%s %s%s" % (kind, "%s/" % namespace if namespace else "", name)
        if not check(name):
            errors.append("%s: generated name is not a valid Kubernetes name" % where)
        seen[key] = seen.get(key, 0) + 1
    errors += ["%s %s%s: %d objects would share this name" % (key[1], "%s/" % key[2] if key[2] else "", key[3], count)
               for key, count in sorted(seen.items(), key=str) if count > 1]
    return errors


def _assemble(teams: Any, nodes: Mapping[str, Any], gpu_facts: Optional[Mapping[str, Any]], backend: str,
              cohort: str, tolerations: Sequence[Mapping[str, Any]], errors: List[str], oidc: Any = None) -> Dict[str, Any]:
    inventory, inventory_errors = normalise_inventory(teams, nodes, gpu_facts)
    errors.extend(inventory_errors)
    if not team_access.oidc_errors(oidc):
        errors.extend(team_access.team_group_errors([(team.name, team.group) for team in inventory.teams], oidc))
    if backend not in sharing.BACKENDS:
        raise PlanError(errors)
    shares = sharing.plan_sharing(inventory.nodes, backend)
    errors.extend(shares.errors)
    warnings = list(shares.warnings)
    dra = dra_objects.build_dra_objects(inventory.teams, shares.nodes) if backend == "dra" else None
    quota = quotas.build_quotas(inventory.teams, shares.nodes, backend, cohort, tolerations,
                                dra.device_class_mappings if dra else ())
    errors.extend(quota.errors)
    if errors:
        raise PlanError(errors)
    rbac_objects, rbac_warnings = isolation.rbac(
        inventory.teams, team_access.groups_prefix(oidc) if not team_access.oidc_errors(oidc) else "")
    objects: List[Dict[str, Any]] = isolation.namespaces(inventory.teams) + quota.objects
    if dra is not None:
        objects += dra.objects
        warnings += dra.warnings
    objects += rbac_objects + isolation.security_policy() + isolation.nvidia_keys_policy()
    objects += isolation.queue_policy(backend, isolation.team_priority_classes(inventory.teams, quota.objects),
                                      dra.shared_claims if dra is not None else None)
    if dra is not None:
        objects += isolation.claim_policies(inventory.teams, dra.template_classes, dra.shared_claims)
    name_errors = _object_name_errors(objects)
    if name_errors:
        raise PlanError(name_errors)
    # The one place the plan's objects get their ownership labels: what plan.yml writes, what
    # the roles apply and what pruning keeps are these stamped objects (ownership.py).
    objects = ownership.stamp(objects, ownership.generation(objects))
    warnings += rbac_warnings + quota.warnings
    return {"inventory": inventory, "shares": shares, "quota": quota, "dra": dra, "objects": objects,
            "warnings": warnings}


def team_quotas(teams: Any, nodes: Mapping[str, Any], backend: str = "dra", cohort: str = "gpushare",
                gpu_facts: Optional[Mapping[str, Any]] = None,
                tolerations: Sequence[Mapping[str, Any]] = ()) -> Dict[str, Any]:
    """The ``team_quotas`` module contract: capacity, objects and kueue_configuration."""
    errors: List[str] = []
    if backend not in sharing.BACKENDS:
        errors.append("backend: must be one of %s, got %r" % (", ".join(sharing.BACKENDS), backend))
    parts = _assemble(teams, nodes, gpu_facts, backend, cohort, tolerations, errors)
    return {"capacity": parts["quota"].capacity, "objects": parts["objects"],
            "kueue_configuration": parts["quota"].kueue_configuration, "warnings": parts["warnings"]}


def build_plan(teams: Any, nodes: Mapping[str, Any], gpu_facts: Optional[Mapping[str, Any]] = None,
               backend: str = "dra", distribution: str = "microk8s", kubernetes_version: str = "1.35",
               cohort: str = "gpushare", tolerations: Sequence[Mapping[str, Any]] = (),
               node_names: Optional[Mapping[str, str]] = None, errors: Optional[List[str]] = None,
               oidc: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The ``gpushare_plan`` dict of docs/plan.md; raises PlanError listing every problem.

    ``nodes``: host -> its ``gpushare_gpus`` list; ``gpu_facts``: host -> its
    ``gpushare_gpu_facts`` (optional); ``tolerations``: added to every GPU ResourceFlavor;
    ``node_names``: host -> its Kubernetes Node name (default: :func:`names.node_name`);
    ``errors``: problems found before (settings, topology), reported with the rest;
    ``oidc``: the identity provider (``gpushare_oidc``; None or {} without one).
    """
    errors = list(errors or [])
    _check_settings(backend, distribution, kubernetes_version, cohort, errors, oidc)
    node_names = {host: (node_names or {}).get(host) or names.node_name(host) for host in nodes}
    errors += _node_name_errors(node_names)
    parts = _assemble(teams, nodes, gpu_facts, backend, cohort, tolerations, errors, oidc)
    inventory, shares, quota, dra = parts["inventory"], parts["shares"], parts["quota"], parts["dra"]
    team_plan: Dict[str, Any] = {}
    for team in inventory.teams:
        limits = quota.team_limits[team.name]
        entry = {
            "namespaces": list(team.namespaces),
            "priority": team.priority,
            "group": team.group,
            "capacity": quota.capacity[team.name],
            "borrowing_limit": limits["borrowing_limit"],
            "lending_limit": limits["lending_limit"],
            "reclaim": limits["reclaim"],
            "queue": team.name,
            "namespace_quota": isolation.namespace_quota(team),
            # Who logs in as the team: the group its RoleBinding names, and the group its
            # members need at the identity provider (None without one; docs/security.md).
            "access": {"kubernetes_group": team_access.kubernetes_group(team.group, oidc),
                       "identity_provider_group": team.group if team_access.normalise_oidc(oidc) else None},
        }
        if dra is not None:
            entry["shared_claims"] = ["%s/%s" % claim[:2] for claim in dra.shared_claims.get(team.name, [])]
        team_plan[team.name] = entry
    nodes_plan = {
        host: {"node_name": node_names[host], "gpus": node.gpus, "mig_config": node.mig_config,
               "device_plugin_config": node.device_plugin_config, "labels": node.labels}
        for host, node in shares.nodes.items()
    }
    plan: Dict[str, Any] = {
        "version": PLAN_VERSION,
        "backend": backend,
        "distribution": distribution,
        "kubernetes_version": minor_version(kubernetes_version),
        "cohort": cohort,
        "nodes": nodes_plan,
        "mig_parted": {"version": "v1", "mig-configs": dict(sorted(shares.mig_configs.items()))},
        "device_plugin_configs": dict(sorted(shares.device_plugin_configs.items())) if backend == "device_plugin" else {},
        "teams": team_plan,
        "objects": parts["objects"],
        "kueue_configuration": quota.kueue_configuration,
        "oidc": team_access.normalise_oidc(oidc),
        "warnings": parts["warnings"],
    }
    return plan


def _hosts_of(groups: Mapping[str, Sequence[str]], name: str) -> List[str]:
    return [str(host) for host in groups.get(name) or []]


def _one_value(variable: str, values: Mapping[str, Any], default: Any, errors: List[str]) -> Any:
    """The one value a cluster-wide setting has on every host, or an error naming the hosts that differ."""
    by_value: Dict[str, List[str]] = {}
    for host, value in values.items():
        by_value.setdefault(repr(value) if value is not None else "not set", []).append(host)
    if len(by_value) > 1:
        parts = ["%s on %s" % (shown, ", ".join(hosts)) for shown, hosts in sorted(by_value.items())]
        errors.append("%s: the cluster needs one value, but it is %s; set it once in group_vars/all"
                      % (variable, "; ".join(parts)))
        return None
    value = next(iter(values.values())) if values else None
    if value is None:
        if default is REQUIRED:
            errors.append("%s: required, not set (docs/inventory.md)" % variable)
        return default
    return value


def _topology_errors(groups: Mapping[str, Sequence[str]], gpu_hosts: Sequence[str], distribution: Any,
                     endpoint: Any) -> List[str]:
    errors: List[str] = []
    control_planes = _hosts_of(groups, CONTROL_PLANE_GROUP)
    workers = _hosts_of(groups, WORKER_GROUP)
    if CONTROL_PLANE_GROUP not in groups:
        errors.append("%s: the inventory has no such group; put the Kubernetes control-plane host(s) in it "
                      "(docs/inventory.md, Groups)" % CONTROL_PLANE_GROUP)
    else:
        checked = distribution if distribution in k8s_topology.DISTRIBUTIONS else "microk8s"
        errors += k8s_topology.check_topology(control_planes, workers, checked, None, endpoint or None)
    members = set(control_planes) | set(workers)
    for host in gpu_hosts:
        if host not in members:
            in_groups = sorted(group for group, hosts in groups.items()
                               if host in (hosts or []) and group not in ("all", "ungrouped"))
            errors.append("host %s, field gpushare_gpus: the host has GPUs but is in neither %s nor %s (its groups: %s); "
                          "no Kubernetes node would be made of it" % (host, CONTROL_PLANE_GROUP, WORKER_GROUP,
                                                                      ", ".join(in_groups) or "none"))
    return errors


def _mirror_errors(controller: Mapping[str, Any], hosts: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """gpushare_mirrors and gpushare_proxy as the controller and every host see them, each value checked once."""
    errors: List[str] = []
    for variable, check in (("gpushare_mirrors", mirrors.mirror_errors), ("gpushare_proxy", mirrors.proxy_errors)):
        reference = controller.get(variable)
        for message in check(reference):
            errors.append(message)
        different: Dict[str, List[str]] = {}
        for host, values in sorted(hosts.items()):
            value = values.get(variable)
            if value is not None and value != reference:
                different.setdefault(repr(value), []).append(host)
        for shown, host_list in sorted(different.items()):
            value = hosts[host_list[0]][variable]
            errors += ["hosts %s: %s" % (", ".join(host_list), message) for message in check(value)]
    return errors


def _read_controller_file(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def plan_inventory(controller: Mapping[str, Any], hosts: Mapping[str, Mapping[str, Any]],
                   groups: Mapping[str, Sequence[str]], cohort: str = "gpushare",
                   tolerations: Sequence[Mapping[str, Any]] = (), errors: Sequence[str] = (),
                   discovery_pending: bool = False,
                   read_text: Callable[[str], str] = _read_controller_file) -> Optional[Dict[str, Any]]:
    """Validate every setting of an Ansible inventory and plan it; the one check plan.yml and site.yml share.

    ``controller``: the variables of the play host (``CONTROLLER_VARIABLES``, those set);
    ``hosts``: inventory host -> the ``HOST_VARIABLES`` it has set; ``groups``: the inventory's
    groups. Every problem (settings, mirrors, proxies, topology, teams, GPUs, names) is
    raised at once as a :class:`PlanError`; nothing else is returned in that case.

    ``discovery_pending``: the check made before the hosts are asked for their GPUs; it
    returns None when nothing is wrong. When the inventory names every model, it is the whole
    check (the same errors as without discovery). Otherwise it covers everything that does
    not depend on what the hosts report: a model left out is not an error yet, and the MIG,
    sharing and quota checks wait for discovery, since they need every GPU.

    ``read_text``: how a controller file is read; the only one is ``gpushare_oidc.ca_file``,
    which the Kubernetes roles read on the controller too, so a missing one is refused here.
    """
    found: List[str] = list(errors)
    gpu_hosts = sorted(host for host, values in hosts.items() if "gpushare_gpus" in values)
    cluster = sorted(set(_hosts_of(groups, CONTROL_PLANE_GROUP)) | set(_hosts_of(groups, WORKER_GROUP))
                     | set(gpu_hosts))
    settings: Dict[str, Any] = {}
    for variable, (key, default) in CLUSTER_SETTINGS.items():
        if cluster:
            values = {host: hosts.get(host, {}).get(variable) for host in cluster}
        else:
            values = {"localhost": controller.get(variable)}
        settings[key] = _one_value(variable, values, default, found)
    control_planes = _hosts_of(groups, CONTROL_PLANE_GROUP)
    endpoint = next((hosts.get(host, {}).get(name) for host in control_planes
                     for name in ("kubeadm_control_plane_endpoint", "kubeadm_vip_address")
                     if hosts.get(host, {}).get(name)), None)
    found += _topology_errors(groups, gpu_hosts, settings["distribution"], endpoint)
    found += _mirror_errors(controller, hosts)
    found += team_access.ca_file_errors(settings["oidc"], read_text)
    if not gpu_hosts:
        found.append("gpushare_gpus: no host of the inventory sets it; list the GPUs of each GPU host in its "
                     "host_vars (docs/inventory.md)")
    nodes = {host: hosts[host]["gpushare_gpus"] for host in gpu_hosts}
    facts = {host: values["gpushare_gpu_facts"] for host, values in hosts.items()
             if values.get("gpushare_gpu_facts") and host in nodes}
    node_names = {host: names.node_name(host, hosts[host].get("kubernetes_common_node_name")) for host in gpu_hosts}
    if discovery_pending:
        inventory, inventory_errors = normalise_inventory(controller.get("gpushare_teams"), nodes, None,
                                                          discovery_pending=True)
        if not inventory.awaiting_discovery:
            build_plan(controller.get("gpushare_teams"), nodes, backend=settings["backend"],
                       distribution=settings["distribution"], kubernetes_version=settings["kubernetes_version"],
                       cohort=cohort, tolerations=tolerations, node_names=node_names, errors=found,
                       oidc=settings["oidc"])
            return None
        _check_settings(settings["backend"], settings["distribution"], settings["kubernetes_version"], cohort,
                        found, settings["oidc"])
        found += inventory_errors + _node_name_errors(node_names)
        if found:
            raise PlanError(found)
        return None
    return build_plan(controller.get("gpushare_teams"), nodes, gpu_facts=facts or None,
                      backend=settings["backend"], distribution=settings["distribution"],
                      kubernetes_version=settings["kubernetes_version"], cohort=cohort, tolerations=tolerations,
                      node_names=node_names, errors=found, oidc=settings["oidc"])
