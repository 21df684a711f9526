"""What the rehearsal tests share: the collection on sys.path, the Go modules, the cache and a
Kueue Configuration shaped as the kueue role renders it. (The fixtures are in conftest.py.)

``rehearsal_bin`` builds the binaries with the collection's own build
(``rehearsal_cluster.build``) into ``GPUSHARE_REHEARSAL_CACHE`` (default
``~/.cache/gpushare/rehearsal``); when Go or the Go module proxy is missing the tests are
skipped with that reason printed (``pytest -rs``), never passed. ``rehearsal`` starts one
control plane for the session in a temporary directory and stops it at the end.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
GO_DIR = REPO_ROOT / "roles" / "rehearsal" / "files" / "go"
CACHE_ENV = "GPUSHARE_REHEARSAL_CACHE"


def collection_path() -> Path:
    """A directory holding ansible_collections/gpushare/cluster -> the checkout."""
    parent = REPO_ROOT.parent
    if parent.name == "gpushare" and parent.parent.name == "ansible_collections":
        return parent.parent.parent
    base = Path(tempfile.gettempdir()) / f"gpushare-collection-{os.getuid()}-{abs(hash(str(REPO_ROOT)))}"
    link = base / "ansible_collections" / "gpushare" / "cluster"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO_ROOT, target_is_directory=True)
        except FileExistsError:
            pass
    return base


sys.path.insert(0, str(collection_path()))

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc  # noqa: E402

#: A Configuration shaped as the kueue role renders it (helm_values.kueue_configuration):
#: the team namespaces are the only ones Kueue manages, every default framework is on.
KUEUE_CONFIGURATION = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "managedJobsNamespaceSelector": {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}],
    },
    "waitForPodsReady": {"timeout": "30m", "blockAdmission": False},
    "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "pod", "deployment", "statefulset"]},
}


def cache_root() -> str:
    return os.environ.get(CACHE_ENV) or rc.DEFAULT_CACHE_ROOT
