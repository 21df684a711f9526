# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a layer needs before the run starts: its secrets, and volumes that can be bound.

The roles check these only when they get to them (the Grafana password in the last layer,
hours into a first run); the preflight of every playbook and plan.yml check them here,
with the inventory, before any host is changed. Pure: the caller evaluates the variables
on the controller, as each host sees them, and passes for a secret only whether it is set
(:data:`SET`), never its value, so no message can carry one.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.render import local_path

# The layers of site.yml, by their tags (each is also a playbook of its own).
LAYERS = ("prepare_hosts", "kubernetes", "gpu_stack", "queues", "monitoring")
# A secret that is set: its value never leaves the caller. A vaulted value that cannot be
# decrypted without the vault password (plan.yml runs without it) counts as set.
SET = "set"

# Which hosts' view of a variable counts: the monitoring play runs on the first control
# plane (playbooks/monitoring.yml); the host layer on every cluster host.
MONITORING_HOST = "monitoring host"
CLUSTER_HOSTS = "cluster hosts"

# Secret -> (layer, scope, how to set it). Each is required only when its condition below
# holds; join tokens and certificate keys are made for each run and need no variable.
SECRETS: Dict[str, Tuple[str, str, str]] = {
    "monitoring_grafana_admin_password": (
        "monitoring", MONITORING_HOST,
        "set it from a vaulted variable, e.g. monitoring_grafana_admin_password: "
        "\"{{ vault_grafana_admin_password }}\" (docs/monitoring.md)"),
    "host_prep_ciq_username": (
        "prepare_hosts", CLUSTER_HOSTS, "host_prep_ciq_mode is not none: set the CIQ login (docs/host-layer.md)"),
    "host_prep_ciq_token": (
        "prepare_hosts", CLUSTER_HOSTS,
        "host_prep_ciq_mode is not none: set the CIQ token from a vaulted variable (docs/host-layer.md)"),
}
# Variables read as plain values (they decide whether a secret is needed, or the storage).
SETTINGS: Dict[str, str] = {
    "monitoring_render_only": MONITORING_HOST,
    "monitoring_storage_provisioner": MONITORING_HOST,
    "monitoring_storage_class": MONITORING_HOST,
    "monitoring_storage_size": MONITORING_HOST,
    "monitoring_grafana_persistence_size": MONITORING_HOST,
    "microk8s_addons": MONITORING_HOST,
    "host_prep_ciq_mode": CLUSTER_HOSTS,
}


def _first(hosts: Sequence[str]) -> List[str]:
    return [str(hosts[0])] if hosts else []


def variables_by_host(groups: Mapping[str, Sequence[str]]) -> Dict[str, Dict[str, bool]]:
    """host -> {variable: is a secret} the caller evaluates for :func:`check`."""
    scopes = {
        MONITORING_HOST: _first(list(groups.get("control_plane") or [])),
        CLUSTER_HOSTS: sorted(set(groups.get("control_plane") or []) | set(groups.get("workers") or [])),
    }
    wanted: Dict[str, Dict[str, bool]] = {}
    for name, (_layer, scope, _hint) in SECRETS.items():
        for host in scopes[scope]:
            wanted.setdefault(host, {})[name] = True
    for name, scope in SETTINGS.items():
        for host in scopes[scope]:
            wanted.setdefault(host, {})[name] = False
    return wanted


def run_layers(requested: Sequence[str] = LAYERS, run_tags: Sequence[str] = ("all",),
               skip_tags: Sequence[str] = ()) -> List[str]:
    """The layers of ``requested`` that a run with these ``--tags``/``--skip-tags`` executes."""
    tags = set(run_tags or ("all",))
    layers = [layer for layer in requested if "all" in tags or "tagged" in tags or layer in tags]
    return [layer for layer in layers if layer not in set(skip_tags or ())]


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "yes", "on", "1")


def _missing(value: Any) -> bool:
    return value != SET


def check(values: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Sequence[str]], distribution: Any,
          layers: Sequence[str] = LAYERS) -> List[str]:
    """Every missing secret and unbindable volume of ``layers``, one message each.

    ``values``: host -> the variables of :func:`variables_by_host` as that host sees them,
    role defaults included; a secret is :data:`SET` or anything else for "not set".
    """
    errors: List[str] = []
    monitoring_host = next(iter(_first(list(groups.get("control_plane") or []))), None)
    if "monitoring" in layers and monitoring_host is not None:
        seen = values.get(monitoring_host) or {}
        if not _flag(seen.get("monitoring_render_only")):
            if _missing(seen.get("monitoring_grafana_admin_password")):
                errors.append("host %s, field monitoring_grafana_admin_password: required by the monitoring layer "
                              "(Grafana's admin login), not set; %s"
                              % (monitoring_host, SECRETS["monitoring_grafana_admin_password"][2]))
            settings = {"storage_provisioner": seen.get("monitoring_storage_provisioner", "auto"),
                        "storage_class": seen.get("monitoring_storage_class") or "",
                        "storage_size": seen.get("monitoring_storage_size") or "",
                        "grafana_persistence_size": seen.get("monitoring_grafana_persistence_size") or ""}
            addons = seen.get("microk8s_addons") or ()
            errors += ["host %s, field %s" % (monitoring_host, message)
                       for message in local_path.storage_errors(distribution, settings,
                                                                addons if isinstance(addons, (list, tuple)) else ())]
    if "prepare_hosts" in layers:
        cluster = sorted(set(groups.get("control_plane") or []) | set(groups.get("workers") or []))
        by_fields: Dict[Tuple[str, ...], List[str]] = {}
        for host in cluster:
            seen = values.get(host) or {}
            if str(seen.get("host_prep_ciq_mode") or "none") == "none":
                continue
            fields = tuple(name for name in ("host_prep_ciq_username", "host_prep_ciq_token")
                           if _missing(seen.get(name)))
            if fields:
                by_fields.setdefault(fields, []).append(host)
        # One message per set of missing fields, naming every host (a fleet has hundreds).
        for fields, hosts in sorted(by_fields.items()):
            errors.append("host%s %s, field %s: required when host_prep_ciq_mode is not none, not set; set the "
                          "CIQ login and token from vaulted variables (docs/host-layer.md)"
                          % ("s" if len(hosts) > 1 else "", ", ".join(hosts), " and ".join(fields)))
    return errors
