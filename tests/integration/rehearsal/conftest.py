"""Fixtures of the rehearsal tests: the binaries (built once, cached) and the shared control planes.

``rehearsal_bin`` builds the binaries with the collection's own build
(``rehearsal_cluster.build``) into ``GPUSHARE_REHEARSAL_CACHE`` (default
``~/.cache/gpushare/rehearsal``); when Go or the Go module proxy is missing the tests are
skipped with that reason printed (``pytest -rs``), never passed. ``rehearsal`` starts one
control plane for the session in a temporary directory and stops it at the end;
``isolation_cluster`` starts one with the worked day's plan applied, for the isolation and
team-access tests. Under pytest-xdist each worker has its own session, so the modules that use
one of these name one xdist group (tests/conftest.py keeps every module's tests together).
"""

from __future__ import annotations

import shutil
import signal

import pytest

from rehearsal_env import GO_DIR, KUEUE_CONFIGURATION, cache_root, rc


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
