"""Fixtures of the rehearsal tests: the binaries (built once, cached) and the shared control planes.

``rehearsal_bin`` builds the binaries with the collection's own build
(``rehearsal_cluster.build``) into ``GPUSHARE_REHEARSAL_CACHE`` (default
``~/.cache/gpushare/rehearsal``); when Go or the Go module proxy is missing the tests are
skipped with that reason printed (``pytest -rs``), never passed. ``rehearsal`` starts one
control plane for the session in a temporary directory and stops it at the end;
``isolation_cluster`` starts one with the worked day's plan applied, for the isolation and
team-access tests.

Under pytest-xdist (``make rehearsal-test``: two workers, since these tests mostly wait on a
control plane) each worker has its own session, and ``pytest_xdist_make_scheduler`` below
decides what runs together: a module's tests stay on one worker (its control plane is a
module-scoped fixture), the modules that share ``isolation_cluster`` stay together, and the
worked day's playbook runs, which each start their own control plane, are spread one by one.
"""

from __future__ import annotations

import shutil
import signal

import pytest

from rehearsal_env import GO_DIR, KUEUE_CONFIGURATION, cache_root, leftovers, listable_resources, rc, top_level_objects

#: Modules whose tests share one session-scoped control plane: one xdist work unit.
SHARED_CONTROL_PLANE = {"test_isolation_admission.py": "isolation_cluster", "test_team_access.py": "isolation_cluster",
                        "test_control_plane.py": "rehearsal", "test_node_back.py": "rehearsal",
                        "test_chart_crds.py": "rehearsal"}
#: Session fixtures whose control plane several modules' tests share: a test must leave it as it
#: found it (``leaves_shared_control_planes_as_found``).
SHARED_FIXTURES = ("rehearsal", "isolation_cluster")
#: Modules whose tests are independent runs that each start their own control plane.
INDEPENDENT_TESTS = ("test_worked_day.py",)


def work_unit(nodeid: str) -> str:
    """The xdist work unit (scope) of a test: its module, a shared control plane, or itself."""
    path = nodeid.split("::", 1)[0]
    name = path.rsplit("/", 1)[-1]
    if name in SHARED_CONTROL_PLANE:
        return SHARED_CONTROL_PLANE[name]
    if name in INDEPENDENT_TESTS:
        return nodeid
    return path


def pytest_xdist_make_scheduler(config, log):
    """Schedule the rehearsal tests by :func:`work_unit` (pytest-xdist's loadscope, other scopes).

    Written here rather than with ``xdist_group`` marks: pytest-xdist 3.8 groups by renaming
    ``item._nodeid``, which pytest 9.2 no longer reads (``Node.nodeid`` comes from ``_id``), so
    its ``loadgroup`` mode silently spreads a module's tests over the workers.
    """
    from xdist.scheduler import LoadScopeScheduling  # pylint: disable=import-outside-toplevel

    class RehearsalScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return RehearsalScheduling(config, log)


@pytest.fixture(scope="session")
def rehearsal_bin():
    """The build result (bin_dir, built, cold_seconds ...); skips when it cannot be had."""
    if shutil.which("go") is None:
        pytest.skip("rehearsal binaries cannot be built: no `go` on PATH (install Go 1.26 to run the rehearsal tests)")
    try:
        result = rc.build(str(GO_DIR), cache_root(), log=lambda msg: print(msg, flush=True))
    except rc.RehearsalError as exc:
        text = str(exc)
        if "proxy" in text or "dial tcp" in text or "no such host" in text or "download" in text:
            pytest.skip(f"rehearsal binaries cannot be built here (Go module proxy unreachable): {text[-600:]}")
        raise
    if result["built"]:
        print(f"rehearsal: cold build time {result['seconds']} s", flush=True)
    return result


@pytest.fixture(scope="session")
def rehearsal(rehearsal_bin, tmp_path_factory):
    """One control plane for the session (admin info dict of rehearsal_cluster.start)."""
    directory = tmp_path_factory.mktemp("rehearsal")

    def interrupted(_signum, _frame):
        # A timeout's SIGTERM becomes an interrupt, so the finally below still stops the processes.
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    info = rc.start(str(directory), kueue_configuration=KUEUE_CONFIGURATION, bin_dir=rehearsal_bin["bin_dir"])
    try:
        yield info
    finally:
        rc.stop(str(directory))


@pytest.fixture(scope="session")
def isolation_cluster(rehearsal_bin, tmp_path_factory):
    """The worked day's plan applied to one control plane, as the tenancy, dra_driver and kueue
    roles would, shared by the isolation and team-access tests (test_isolation_admission.py)."""
    import test_isolation_admission  # pylint: disable=import-outside-toplevel

    yield from test_isolation_admission.isolation_control_plane(rehearsal_bin, tmp_path_factory)


@pytest.fixture(autouse=True)
def leaves_shared_control_planes_as_found(request):
    """A test on a shared control plane must delete what it made: its top-level objects (a Job, a
    Namespace, a RoleBinding; what they own goes with them) are compared before and after. A test
    that leaves one fails here, naming it, and the object is deleted so the tests after it see the
    control plane they expect rather than slow down or fail somewhere else."""
    shared = [name for name in SHARED_FIXTURES if name in request.fixturenames]
    if not shared:
        yield
        return
    value = request.getfixturevalue(shared[0])
    info = value.get("info", value)
    resources = listable_resources(info)
    before = top_level_objects(info, resources)
    yield
    left = leftovers(info, resources, before)
    if not left:
        return
    paths = {kind: (path, plural) for path, plural, kind in resources}
    for kind, namespace, name in left:
        path, plural = paths[kind]
        scope = "/namespaces/%s" % namespace if namespace else ""
        rc.api_request(info, "DELETE", "%s%s/%s/%s" % (path, scope, plural, name))
    pytest.fail("%s left on the shared control plane (%s): %s; deleted now" % (
        request.node.nodeid, shared[0], ", ".join("%s %s" % (kind, "/".join(filter(None, (namespace, name))))
                                                  for kind, namespace, name in left)), pytrace=False)
