"""What the rehearsal tests share: the collection tree (tests/conftest.py), the Go modules, the cache and a
Kueue Configuration shaped as the kueue role renders it. (The fixtures are in conftest.py.)

``rehearsal_bin`` builds the binaries with the collection's own build
(``rehearsal_cluster.build``) into ``GPUSHARE_REHEARSAL_CACHE`` (default
``~/.cache/gpushare/rehearsal``); when Go or the Go module proxy is missing the tests are
skipped with that reason printed (``pytest -rs``), never passed. ``rehearsal`` starts one
control plane for the session in a temporary directory and stops it at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def run_local_playbook(playbook: Path, variables: dict, tmp_path: Path, timeout: int = 300):
    """ansible-playbook ``playbook`` on localhost with this collection and ``variables`` as extra
    vars (JSON); returns the completed process."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collection_path()), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"))
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", json.dumps({"ansible_python_interpreter": sys.executable, **variables}), str(playbook)],
                          env=env, capture_output=True, text=True, timeout=timeout, check=False)


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


def api_ok(info, method, path, body=None, content_type="application/json"):
    """The API server's answer to a request that must succeed (200 or 201); fails naming it."""
    status, obj = rc.api_request(info, method, path, body, content_type=content_type)
    assert status in (200, 201), f"{method} {path}: HTTP {status}: {obj}"
    return obj


def api_get(info, path):
    """The object at ``path``, or None when the API server does not answer 200."""
    status, obj = rc.api_request(info, "GET", path)
    return obj if status == 200 else None


def cache_root() -> str:
    return os.environ.get(CACHE_ENV) or rc.DEFAULT_CACHE_ROOT


#: Kinds whose objects come and go on their own on any control plane (heartbeats, endpoints,
#: events), left out of the objects a test must leave as it found them.
SELF_MANAGED = {"Event", "Lease", "Endpoints", "EndpointSlice"}
#: Objects the control plane makes in every namespace; they go with their namespace.
PER_NAMESPACE = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}


def listable_resources(info):
    """(path of the group version, plural, kind) of every top-level resource the API server lists."""
    found = []
    status, core = rc.api_request(info, "GET", "/api/v1")
    assert status == 200, core
    groups = [("/api/v1", core)]
    status, apis = rc.api_request(info, "GET", "/apis")
    assert status == 200, apis
    for group in apis["groups"]:
        path = "/apis/" + group["preferredVersion"]["groupVersion"]
        status, body = rc.api_request(info, "GET", path)
        if status == 200:
            groups.append((path, body))
    for path, body in groups:
        for resource in body.get("resources") or []:
            if "/" not in resource["name"] and "list" in (resource.get("verbs") or []) \
                    and resource["kind"] not in SELF_MANAGED:
                found.append((path, resource["name"], resource["kind"]))
    return found


def top_level_objects(info, resources):
    """(kind, namespace, name) -> uid of every object no other object owns: what a test creates
    itself (a Job's Workload and Pods are owned by it and go with it)."""
    objects = {}
    for path, plural, kind in resources:
        status, body = rc.api_request(info, "GET", "%s/%s" % (path, plural), timeout=30.0)
        if status != 200:
            continue
        for obj in body.get("items") or []:
            metadata = obj["metadata"]
            if metadata.get("ownerReferences") or (kind, metadata["name"]) in PER_NAMESPACE:
                continue
            objects[(kind, metadata.get("namespace"), metadata["name"])] = metadata.get("uid")
    return objects


def leftovers(info, resources, before, timeout=30.0):
    """The top-level objects a test left behind on a shared control plane, once what it deleted
    has had ``timeout`` seconds to go (namespace finalization, garbage collection); ``before`` is
    :func:`top_level_objects` at the test's start. An object replaced by one of the same name (a
    new uid) counts as left behind too."""
    deadline = time.monotonic() + timeout
    while True:
        now = top_level_objects(info, resources)
        left = sorted(key for key, uid in now.items() if before.get(key) != uid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1.0)
