"""A stand-in for the GPU Operator's MIG Manager on the rehearsal's simulated nodes.

No container runs on a rehearsal node, so nothing repartitions a GPU when the gpu_operator role
changes a node's ``nvidia.com/mig.config``. This thread does what MIG Manager and the DRA driver
would be seen doing through the API server, polling the Nodes with the rehearsal's Kubernetes
client (kubernetes, as kubernetes.core uses):

- when a watched node's ``nvidia.com/mig.config`` differs from the config it last applied, it
  sets ``nvidia.com/mig.config.state=pending``, waits ``apply_delay`` seconds (repartitioning),
  then writes ``failed`` for a config named in ``fail``, or ``success`` and rewrites the node's
  ResourceSlice to that config's layout exactly as the rehearsal publishes it for a plan
  (``world.resource_slice``: what the DRA driver publishes once it restarts);
- a MIG Manager pod (``app=nvidia-mig-manager`` in ``namespace``, on the node) that starts
  (a new pod uid, Running) applies the node's current label again, as MIG Manager does at start
  (mig-parted v0.15.0, cmd/nvidia-mig-manager/main.go: its informer's first list hands it the
  node's current label); without such a pod only label changes count;
- ``notice_delay`` seconds pass between seeing a change and writing ``pending`` (a manager that
  reacts slowly).

It starts as a manager that has already applied every node's current label (the state the
world was created in). A config name maps to a layout through the plans given: the node's GPUs in
the plan whose labels for that node carry that config. ``events`` records, in order, what it
saw and wrote; a ``seen`` event carries the cordon state of every watched node and the node's pods
(outside ``namespace``) at the moment the change was seen.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

from kubernetes import client as k8s_client

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import kube
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world as world_lib

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"


class MigManagerStandIn(threading.Thread):
    """Applies MIG configs on the watched nodes; see the module docstring."""

    def __init__(self, kubeconfig: str, plans: Sequence[Mapping[str, Any]], nodes: Sequence[str],
                 namespace: str = "gpu-operator", apply_delay: float = 2.0, notice_delay: float = 0.0,
                 poll: float = 0.5):
        super().__init__(name="mig-manager-standin", daemon=True)
        self.api = kube.api_client(kubeconfig)
        self.core = k8s_client.CoreV1Api(self.api)
        self.plans = list(plans)
        self.nodes = list(nodes)
        self.namespace = namespace
        self.apply_delay = apply_delay
        self.notice_delay = notice_delay
        self.poll = poll
        self.fail: set = set()
        self.events: List[Dict[str, Any]] = []
        self.errors: List[str] = []
        self.applied: Dict[str, Optional[str]] = {}
        self.pods: Dict[str, Optional[str]] = {}
        self._stop_event = threading.Event()

    # --- what a config name means ------------------------------------------------------

    def layout(self, node: str, config: str) -> List[Mapping[str, Any]]:
        """The node's GPUs in the first plan that labels it with ``config``."""
        for plan in self.plans:
            entry = plan["nodes"].get(node) or {}
            if (entry.get("labels") or {}).get(MIG_CONFIG) == config:
                return entry.get("gpus") or []
        raise KeyError("no plan labels node %s with %s=%s" % (node, MIG_CONFIG, config))

    # --- reading the cluster -------------------------------------------------------------

    def _nodes(self) -> Dict[str, Any]:
        return {n.metadata.name: n for n in self.core.list_node().items if n.metadata.name in self.nodes}

    def _manager_pods(self) -> Dict[str, str]:
        """node -> uid of its Running MIG Manager pod (not being deleted)."""
        found = {}
        for pod in self.core.list_namespaced_pod(self.namespace, label_selector="app=nvidia-mig-manager").items:
            if pod.metadata.deletion_timestamp is None and (pod.status.phase == "Running") and pod.spec.node_name:
                found[pod.spec.node_name] = pod.metadata.uid
        return found

    def _snapshot(self, node: str) -> Dict[str, Any]:
        nodes = self._nodes()
        pods = self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=" + node).items
        return {"cordoned": {name: bool(n.spec.unschedulable) for name, n in nodes.items()},
                "pods": sorted("%s/%s" % (p.metadata.namespace, p.metadata.name) for p in pods
                               if p.metadata.namespace != self.namespace)}

    def _record(self, node: str, config: Optional[str], what: str, **extra: Any) -> None:
        self.events.append(dict(extra, node=node, config=config, what=what, at=time.monotonic()))

    def _state(self, node: str, state: str) -> None:
        self.core.patch_node(node, {"metadata": {"labels": {MIG_STATE: state}}})

    # --- applying ----------------------------------------------------------------------

    def _apply(self, node: str, config: Optional[str], why: str) -> None:
        self._record(node, config, "seen", why=why, **self._snapshot(node))
        if self.notice_delay:
            self._stop_event.wait(self.notice_delay)
        self.applied[node] = config
        self._state(node, "pending")
        self._record(node, config, "pending")
        self._stop_event.wait(self.apply_delay)
        if config is None or config in self.fail:
            self._state(node, "failed")
            self._record(node, config, "failed")
            return
        slice_object, _index = world_lib.resource_slice(node, self.layout(node, config))
        kube.apply_world(self.api, {"nodes": [], "resource_slices": [slice_object]})
        self._state(node, "success")
        self._record(node, config, "success")

    def start_state(self) -> None:
        """A manager that has applied every node's current label (call before start())."""
        for name, node in self._nodes().items():
            self.applied[name] = (node.metadata.labels or {}).get(MIG_CONFIG)
        self.pods.update(self._manager_pods())

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self._once()
            except Exception as exc:  # pylint: disable=broad-except
                self.errors.append(repr(exc))
            self._stop_event.wait(self.poll)

    def _once(self) -> None:
        pods = self._manager_pods()
        for name, node in sorted(self._nodes().items()):
            config = (node.metadata.labels or {}).get(MIG_CONFIG)
            started = pods.get(name) is not None and pods.get(name) != self.pods.get(name)
            self.pods[name] = pods.get(name)
            if started:
                self._apply(name, config, "MIG Manager pod started")
            elif config != self.applied.get(name):
                self._apply(name, config, "label changed")

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)

    def outcomes(self, node: Optional[str] = None) -> List[tuple]:
        """(node, config, what[, why]) of every event, optionally of one node."""
        return [(e["node"], e["config"], e["what"]) + ((e["why"],) if "why" in e else ())
                for e in self.events if node is None or e["node"] == node]
