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

try:
    import yaml
except ImportError:  # ansible-core brings PyYAML; yaml_text says so if it is missing
    yaml = None

from ansible_collections.gpushare.cluster.plugins.module_utils import mirrors as mirror_lib

VERSION = "v0.0.37"
# The upstream deploy/local-path-storage.yaml of VERSION (roles/monitoring/files/) names it.
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


def manifests(upstream_text: str, mirrors: Optional[Mapping[str, Any]] = None, path: str = DEFAULT_PATH
              ) -> List[Dict[str, Any]]:
    """The upstream manifest's objects with the collection's pins: images through the
    mirror, the helper image pinned, volumes under ``path``, and the namespace allowed the
    hostPath volumes its helper pods mount (Pod Security ``privileged``)."""
    if yaml is None:
        raise ValueError("PyYAML is needed to render the local-path provisioner")
    if not str(path).startswith("/"):
        raise ValueError("monitoring_local_path_dir: must be an absolute path, got %r" % (path,))
    normal = mirror_lib.normalize_mirrors(mirrors)
    objects = [obj for obj in yaml.safe_load_all(upstream_text) if obj]
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Namespace":
            obj["metadata"].setdefault("labels", {})["pod-security.kubernetes.io/enforce"] = "privileged"
        elif kind == "Deployment":
            for container in obj["spec"]["template"]["spec"]["containers"]:
                if mirror_lib.parse_image(container["image"]).name != mirror_lib.parse_image(IMAGE).name:
                    raise ValueError("local-path manifest: unexpected image %s" % container["image"])
                container["image"] = mirror_lib.mirror_image(IMAGE, normal)
        elif kind == "ConfigMap":
            data = obj["data"]
            config = yaml.safe_load(data["config.json"])
            config["nodePathMap"] = [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(path)]}]
            data["config.json"] = json.dumps(config, indent=2, sort_keys=True)
            helper = yaml.safe_load(data["helperPod.yaml"])
            for container in helper["spec"]["containers"]:
                container["image"] = mirror_lib.mirror_image(HELPER_IMAGE, normal)
            data["helperPod.yaml"] = yaml.safe_dump(helper, sort_keys=False, default_flow_style=False)
    return objects


def images() -> List[str]:
    """Every image the provisioner pulls (for the mirror manifest)."""
    return [IMAGE, HELPER_IMAGE]
