"""What the rehearsal tests share: the collection tree (tests/conftest.py), the Go modules, the cache and a
Kueue Configuration shaped as the kueue role renders it. (The fixtures are in conftest.py.)

``rehearsal_bin`` builds the binaries with the collection's own build
(``rehearsal_cluster.build``) into ``GPUSHARE_REHEARSAL_CACHE`` (default
``~/.cache/gpushare/rehearsal``); when Go or the Go module proxy is missing the tests are
skipped with that reason printed (``pytest -rs``), never passed. ``rehearsal`` starts one
control plane for the session in a temporary directory and stops it at the end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values

REPO_ROOT = Path(__file__).resolve().parents[3]
GO_DIR = REPO_ROOT / "roles" / "rehearsal" / "files" / "go"
CACHE_ENV = "GPUSHARE_REHEARSAL_CACHE"


def collection_path() -> Path:
    """The ansible_collections tree tests/conftest.py put on sys.path (it exports where)."""
    return Path(os.environ["GPUSHARE_COLLECTIONS_PATH"])


#: The frameworks the rehearsal's Kueue watches: the part of the kueue role's defaults
#: (helm_values.KUEUE_FRAMEWORKS) the rehearsal tests submit (Jobs, JobSets, plain workloads).
FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset", "pod", "deployment", "statefulset"]

#: The Configuration the kueue role renders (helm_values.kueue_configuration) for a plan of two
#: teams: their namespaces are the only ones Kueue manages.
KUEUE_CONFIGURATION = helm_values.kueue_configuration(
    {"version": 1, "backend": "dra", "distribution": "kubeadm", "nodes": {},
     "teams": {"a": {"namespaces": ["team-a"]}, "b": {"namespaces": ["team-b"]}}},
    {"frameworks": FRAMEWORKS},
)


def wait_until(what, check, timeout, interval):
    """check()'s first true result, polled every interval seconds; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError("%s: not reached in %g s" % (what, timeout))


def cache_root() -> str:
    return os.environ.get(CACHE_ENV) or rc.DEFAULT_CACHE_ROOT
