# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a node is back after its kubelet restarted: a kubeadm upgrade or a snap refresh
(kubernetes_steps' node_back) and a host reboot (host_prep's reboot_node) ask the same question.

Ready=True alone passes at once: the Node keeps the old kubelet's condition until the node
lifecycle controller's grace period runs out (50 s, k8s.io/kubernetes v1.35.4
pkg/controller/nodelifecycle/config/v1alpha1/defaults.go). A kubelet that starts posts its
status at once (pkg/kubelet/kubelet_node_status.go: lastStatusReportTime is zero after a
restart), so a Ready heartbeat newer than the one read before the restart, and the expected
kubeletVersion after an upgrade, mean the new kubelet is there.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ansible_collections.gpushare.cluster.plugins.module_utils._common.versions import parse_kubernetes_version
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes.cert_expiry import utc


def ready_condition(node: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The Node's Ready condition, or {} when it has none (or there is no Node)."""
    conditions = (((node or {}).get("status") or {}).get("conditions")) or []
    return next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), {})


def newer(heartbeat: str, than: str) -> bool:
    """Whether the RFC 3339 time ``heartbeat`` is after ``than``; any time is newer than none."""
    if not heartbeat:
        return False
    if not than:
        return True
    try:
        return utc(heartbeat) > utc(than)
    except ValueError:  # not RFC 3339: the API server's own format compares as text
        return heartbeat > than


def version_matches(running: str, wanted: str) -> bool:
    """``1.36`` matches v1.36.3, ``1.36.1`` only v1.36.1; no wanted version matches any."""
    if not str(wanted or "").strip():
        return True
    have, want = parse_kubernetes_version(running or ""), parse_kubernetes_version(wanted)
    return bool(have and want and (have.major, have.minor) == (want.major, want.minor)
                and want.patch in (None, have.patch))


def restart_problems(now: Optional[Mapping[str, Any]], before: Optional[Mapping[str, Any]],
                     version: str = "") -> List[str]:
    """Why the node (``now``, as read from the API server; empty when it could not be read) is not
    back after the restart, compared with the Node read before it; empty when it is back."""
    if not now:
        return ["the API server has no such node (or did not answer)"]
    problems = []
    ready = ready_condition(now)
    if ready.get("status") != "True":
        problems.append("Ready=%s (%s)" % (ready.get("status", "unknown"), ready.get("message") or "no message"))
    running = str(((now.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "")
    if not version_matches(running, version):
        problems.append("kubelet %s, expected %s" % (running or "unknown", version))
    heartbeat, earlier = str(ready.get("lastHeartbeatTime") or ""), str(ready_condition(before).get("lastHeartbeatTime") or "")
    if not newer(heartbeat, earlier):
        problems.append("no Ready heartbeat since the restart (last %s, before the restart %s)"
                        % (heartbeat or "none", earlier or "unknown"))
    return problems
