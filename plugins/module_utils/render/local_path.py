# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volume provisioner monitoring brings along when the cluster has none.

kubeadm makes no StorageClass at all, and MicroK8s only with its ``hostpath-storage``
add-on (off in ``microk8s_addons``' default), so Prometheus' 50Gi claim and Grafana's would
stay Pending for ever. Rancher's local-path provisioner (the one k3s ships) is small, needs
no storage system and binds each volume to the node its pod first runs on
(``WaitForFirstConsumer``), which works on multi-node clusters; MicroK8s'
``hostpath-storage`` does not (it provisions on the node its own pod runs on).

Pure functions, no I/O: the monitoring role's render step and plan.yml render the same
bytes, the preflight refuses what cannot work, and the mirror manifest lists the images.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as mirror_lib
from ansible_collections.gpushare.cluster.plugins.module_utils._common import yaml_text
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import POD_SECURITY_ENFORCE_LABEL

VERSION = "v0.0.37"
# The release's own image (its deploy/local-path-storage.yaml names it).
IMAGE = "docker.io/rancher/local-path-provisioner:" + VERSION
# The helper pod that makes and removes volume directories. Upstream's manifest names
# docker.io/library/busybox without a tag (whatever "latest" is that day); a mirror needs an
# exact image, so the collection pins one.
HELPER_IMAGE = "docker.io/library/busybox:1.37.0"
STORAGE_CLASS = "local-path"
NAMESPACE = "local-path-storage"
DEFAULT_PATH = "/opt/local-path-provisioner"
PROVISIONERS = ("auto", "local-path", "none")
# The MicroK8s add-on that makes a default StorageClass (microk8s-hostpath).
MICROK8S_STORAGE_ADDONS = ("hostpath-storage", "storage")


def volumes_asked(settings: Mapping[str, Any]) -> bool:
    """Whether Prometheus or Grafana asks for a volume (an empty size means emptyDir / none)."""
    return bool(settings.get("storage_size")) or bool(settings.get("grafana_persistence_size"))


def installed(settings: Mapping[str, Any]) -> bool:
    """Whether the monitoring role installs the provisioner, from its settings.

    ``storage_provisioner``: ``local-path`` always; ``auto`` when a volume is asked and no
    ``storage_class`` names the site's own; ``none`` never.
    """
    provisioner = settings.get("storage_provisioner", "auto")
    if provisioner not in PROVISIONERS:
        raise ValueError("monitoring_storage_provisioner: must be one of %s, got %r"
                         % (", ".join(PROVISIONERS), provisioner))
    if provisioner == "local-path":
        return True
    return provisioner == "auto" and not settings.get("storage_class") and volumes_asked(settings)


def storage_class(settings: Mapping[str, Any]) -> str:
    """The StorageClass the monitoring volumes name; empty = the cluster's default one."""
    if settings.get("storage_class"):
        return str(settings["storage_class"])
    return STORAGE_CLASS if installed(settings) else ""


def storage_errors(distribution: Any, settings: Mapping[str, Any], microk8s_addons: Any = ()) -> List[str]:
    """Why the monitoring volumes could never be bound, before any host is changed.

    With ``storage_provisioner: none`` and no ``storage_class`` the claims go to the default
    StorageClass: kubeadm never makes one, MicroK8s only with its storage add-on.
    """
    try:
        if installed(settings) or settings.get("storage_class") or not volumes_asked(settings):
            return []
    except ValueError as error:
        return [str(error)]
    if distribution == "microk8s" and any(addon in (microk8s_addons or ()) for addon in MICROK8S_STORAGE_ADDONS):
        return []
    sizes = ", ".join("%s %s" % (what, settings[key]) for key, what in
                      (("storage_size", "Prometheus"), ("grafana_persistence_size", "Grafana"))
                      if settings.get(key))
    where = ("a kubeadm cluster has no default StorageClass" if distribution == "kubeadm" else
             "MicroK8s has a default StorageClass only with the hostpath-storage add-on (microk8s_addons)")
    return ["monitoring_storage_class: the monitoring volumes (%s) would ask the default StorageClass, and %s, "
            "so they would stay Pending; set monitoring_storage_provisioner: auto (installs the local-path "
            "provisioner), name your StorageClass in monitoring_storage_class, or set monitoring_storage_size "
            "and monitoring_grafana_persistence_size to '' (no volume: data lost on restart) (docs/monitoring.md)"
            % (sizes, where)]


SERVICE_ACCOUNT = "local-path-provisioner-service-account"
CONFIG_MAP = "local-path-config"
PROVISIONER_NAME = "rancher.io/local-path"
_LABELS = {"app": "local-path-provisioner"}


def manifests(mirrors: Optional[Mapping[str, Any]] = None, path: str = DEFAULT_PATH) -> List[Dict[str, Any]]:
    """The provisioner's objects, images through the mirror and volumes under ``path``.

    What the provisioner of VERSION needs (rancher/local-path-provisioner at that tag: the
    ``start`` command's ``--config`` file and the ``CONFIG_MOUNT_PATH``/``POD_NAMESPACE``
    environment it reads, the ``setup``/``teardown`` scripts and ``helperPod.yaml`` it runs
    for each volume, and the API access it uses): pods in its own namespace, read access to
    nodes, claims, config maps and storage classes, and persistent volumes and events. The
    namespace admits the helper pods' hostPath volumes (Pod Security ``privileged``).
    """
    if not str(path).startswith("/"):
        raise ValueError("monitoring_local_path_dir: must be an absolute path, got %r" % (path,))
    normal = mirror_lib.normalize_mirrors(mirrors)
    in_namespace = {"namespace": NAMESPACE}
    subject = [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]
    read = ["get", "list", "watch"]
    write = read + ["create", "patch", "update", "delete"]
    helper_pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "helper-pod"},
        "spec": {"priorityClassName": "system-node-critical",
                 "tolerations": [{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists",
                                  "effect": "NoSchedule"}],
                 "containers": [{"name": "helper-pod", "image": mirror_lib.mirror_image(HELPER_IMAGE, normal),
                                 "imagePullPolicy": "IfNotPresent"}]},
    }
    node_paths = {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(path)]}]}
    config = {
        "config.json": json.dumps(node_paths, indent=2, sort_keys=True),
        # Run in the helper pod with VOL_DIR set to the volume's directory.
        "setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        "helperPod.yaml": yaml_text.dump(helper_pod),
    }
    probe = {"httpGet": {"path": "/health", "port": "health"}}
    container = {
        "name": "local-path-provisioner", "image": mirror_lib.mirror_image(IMAGE, normal),
        "imagePullPolicy": "IfNotPresent",
        "command": ["local-path-provisioner", "start", "--config", "/etc/config/config.json"],
        "ports": [{"name": "health", "containerPort": 8080, "protocol": "TCP"}],
        "startupProbe": dict(probe, initialDelaySeconds=5, periodSeconds=5, failureThreshold=12),
        "livenessProbe": dict(probe, periodSeconds=10),
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "health"}, "periodSeconds": 5},
        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/config/"}],
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "CONFIG_MOUNT_PATH", "value": "/etc/config/"},
                {"name": "HEALTH_PORT", "value": "8080"}],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": NAMESPACE, "labels": {POD_SECURITY_ENFORCE_LABEL: "privileged"}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(in_namespace, name=SERVICE_ACCOUNT)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": dict(in_namespace, name="local-path-provisioner"),
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": write}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "local-path-provisioner"},
         "rules": [{"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
                    "verbs": read},
                   {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": write},
                   {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
                   {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": read}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": dict(in_namespace, name="local-path-provisioner"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "local-path-provisioner"},
         "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "local-path-provisioner"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "local-path-provisioner"},
         "subjects": subject},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(in_namespace, name=CONFIG_MAP), "data": config},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(in_namespace, name="local-path-provisioner"),
         "spec": {"replicas": 1, "selector": {"matchLabels": dict(_LABELS)},
                  "template": {"metadata": {"labels": dict(_LABELS)},
                               "spec": {"serviceAccountName": SERVICE_ACCOUNT, "containers": [container],
                                        "volumes": [{"name": "config-volume",
                                                     "configMap": {"name": CONFIG_MAP}}]}}}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": STORAGE_CLASS},
         "provisioner": PROVISIONER_NAME, "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"},
    ]


def images() -> List[str]:
    """Every image the provisioner pulls (for the mirror manifest)."""
    return [IMAGE, HELPER_IMAGE]
