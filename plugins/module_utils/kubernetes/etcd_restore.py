# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The etcd restore of a kubeadm cluster: one ``etcdutl snapshot restore`` per control plane,
from what kubeadm wrote in each etcd static pod manifest.

etcd 3.6 restores with ``etcdutl`` only (etcdctl 3.6 has ``snapshot save`` and no restore).
Every member is restored from the same snapshot into a new cluster: the same
``--initial-cluster`` (every member, ``name=peer URL``) and a new ``--initial-cluster-token``
on all of them, its own ``--name`` and ``--initial-advertise-peer-urls`` on each (etcd v3.6
op-guide, "Disaster recovery", restoring a cluster).

For Kubernetes the restore also takes ``--bump-revision`` and ``--mark-compacted`` (the same
guide's Kubernetes example: ``--bump-revision 1000000000 --mark-compacted``). Without them the
store goes back to the snapshot's revision while the API server's watch cache, the controllers
and the kubelets hold resourceVersions from after it: new writes would reuse revisions they
have already seen and their watches would miss events (kubernetes/kubernetes#131115, a kubelet
keeping a pod that the restore removed). The bump moves every revision past anything a client
saw; marking the revisions up to it compacted makes every watch from an older revision fail
with "compacted", so each client lists again.
"""

from __future__ import annotations

import shlex
from typing import Any, Dict, List, Mapping

try:
    import yaml
except ImportError:  # ansible-core brings PyYAML on the controller, where the filter runs
    yaml = None

#: The etcd guide's bump: far more writes than a cluster makes between a snapshot and its restore.
BUMP_REVISION = 1000000000
#: Where kubeadm writes the etcd member's static pod manifest (the default of the path the errors name).
MANIFEST = "/etc/kubernetes/manifests/etcd.yaml"
#: The manifest flags the restore reads, and what each is for.
MEMBER_FLAGS = {"name": "--name", "data_dir": "--data-dir", "peer_url": "--initial-advertise-peer-urls"}


class RestoreError(ValueError):
    """A control plane whose etcd manifest does not say what the restore needs."""


def member(host: str, manifest_text: str, manifest: str = MANIFEST) -> Dict[str, str]:
    """name, data_dir, peer_url (the first of the advertised peer URLs) and image of the etcd
    member whose static pod manifest (read from ``manifest`` on ``host``) is given."""
    where = "%s: %s" % (host, manifest)
    try:
        pod = yaml.safe_load(manifest_text)
    except yaml.YAMLError as error:
        raise RestoreError("%s is not YAML (%s)" % (where, error)) from error
    containers = ((pod or {}).get("spec") or {}).get("containers") or []
    etcd = next((c for c in containers if c.get("name") == "etcd"), None)
    if etcd is None:
        raise RestoreError("%s has no container named etcd" % where)
    flags = {}
    for argument in list(etcd.get("command") or []) + list(etcd.get("args") or []):
        key, sep, value = str(argument).partition("=")
        if sep:
            flags[key] = value
    found = {}
    for field, flag in MEMBER_FLAGS.items():
        if not flags.get(flag):
            raise RestoreError("%s: the etcd command has no %s, which the restore needs" % (where, flag))
        found[field] = flags[flag]
    found["peer_url"] = found["peer_url"].split(",")[0]
    found["image"] = str(etcd.get("image") or "")
    return found


def initial_cluster(members: Mapping[str, Mapping[str, str]]) -> str:
    """``--initial-cluster`` of the restored cluster: every member, in host order."""
    names = {}
    for host, values in members.items():
        if values["name"] in names:
            raise RestoreError("%s and %s: both etcd members are named %s" % (names[values["name"]], host, values["name"]))
        names[values["name"]] = host
    return ",".join("%s=%s" % (members[host]["name"], members[host]["peer_url"]) for host in sorted(members))


def restore_commands(manifests: Mapping[str, str], snapshot: str, token: str, etcdutl: str = "etcdutl",
                     manifest: str = MANIFEST) -> Dict[str, Dict[str, Any]]:
    """Per control plane: its member, the data directory the restore writes (``<data dir>.restored``)
    and the ``etcdutl snapshot restore`` argv; every problem of every host in one error, each naming
    the host and the manifest path it was read from."""
    if not manifests:
        raise RestoreError("no control plane to restore: the inventory's control_plane group is empty")
    members, problems = {}, []
    for host in sorted(manifests):
        try:
            members[host] = member(host, manifests[host], manifest)
        except RestoreError as error:
            problems.append(str(error))
    if problems:
        raise RestoreError("; ".join(problems))
    cluster = initial_cluster(members)
    images = {values["image"] for values in members.values()}
    if len(images) > 1:
        raise RestoreError("the control planes run different etcd images (%s): finish the upgrade before a restore"
                           % ", ".join(sorted(images)))
    commands = {}
    for host, values in members.items():
        restored = values["data_dir"].rstrip("/") + ".restored"
        argv: List[str] = [etcdutl, "snapshot", "restore", snapshot,
                           "--data-dir", restored,
                           "--name", values["name"],
                           "--initial-cluster", cluster,
                           "--initial-cluster-token", token,
                           "--initial-advertise-peer-urls", values["peer_url"],
                           "--bump-revision", str(BUMP_REVISION),
                           "--mark-compacted"]
        commands[host] = {"member": values, "restored_dir": restored, "argv": argv,
                          "command": " ".join(shlex.quote(a) for a in argv)}
    return commands
