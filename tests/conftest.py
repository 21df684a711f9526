"""Shared pytest fixtures for every test of the collection (tests/unit and tests/integration).

The collection's Python code imports itself as
``ansible_collections.gpushare.cluster``; tests run from a plain checkout, so a
symlinked ``ansible_collections/gpushare/cluster`` tree pointing at the checkout is put
on ``sys.path`` once per session.

Upstream reference data (MIG geometry, chart values, CRDs, nvidia-smi captures) is read
from one place, ``GPUSHARE_REFERENCE_DIR`` (default ``../shared/reference`` next to the
checkout). Tests that need it request the ``reference_dir`` fixture and are skipped with
the reason spelled out when it is absent, never silently passed.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE_ENV = "GPUSHARE_REFERENCE_DIR"


def _collection_path() -> Path:
    """Return a directory holding ansible_collections/gpushare/cluster -> REPO_ROOT."""
    # A checkout already inside an ansible_collections tree (ansible-test, installs).
    parent = REPO_ROOT.parent
    if parent.name == "gpushare" and parent.parent.name == "ansible_collections":
        return parent.parent.parent
    # Named by a digest of the checkout's path, not hash(): str hashes differ per process
    # (PYTHONHASHSEED), which left one directory behind for every pytest process and worker.
    digest = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:16]
    base = Path(tempfile.gettempdir()) / f"gpushare-collection-{os.getuid()}-{digest}"
    link = base / "ansible_collections" / "gpushare" / "cluster"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO_ROOT, target_is_directory=True)
        except FileExistsError:
            pass
    return base


COLLECTIONS_PATH = str(_collection_path())
sys.path.insert(0, COLLECTIONS_PATH)
# Plain helpers more than one suite uses (playbook runner, the mistaken-inventory corpus, the
# add-on file checks): importable by name from every test.
sys.path.insert(0, str(REPO_ROOT / "tests" / "support"))
# Tests that start ansible-playbook point ANSIBLE_COLLECTIONS_PATH here; one variable
# serves test modules in every directory (packages or not).
os.environ["GPUSHARE_COLLECTIONS_PATH"] = COLLECTIONS_PATH


def reference_path() -> Path:
    """Where the upstream reference data is expected (it may not exist)."""
    configured = os.environ.get(REFERENCE_ENV)
    if configured:
        return Path(configured).resolve()
    return (REPO_ROOT.parent / "shared" / "reference").resolve()


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The upstream reference directory; skips the test when it is missing."""
    path = reference_path()
    if not path.is_dir():
        pytest.skip(
            f"upstream reference data not found at {path}: set {REFERENCE_ENV} to the "
            "directory holding mig/, crds/, nvidia-smi/ ... to run this test"
        )
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(autouse=True)
def _modules_run_as_on_a_host(monkeypatch):
    """Run in-process module calls the way they run on a managed host.

    Once any controller code has been imported into the test process (playbook helpers,
    action plugins, filters), ansible-core 2.19 flags the process as the controller and
    sends ``module.warn()`` to the display instead of the module result. Tests would then
    pass or fail depending on which ran first; resetting the flag per test keeps
    ``result["warnings"]`` what a real module run returns.
    """
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)


#: The CPU seconds when a test's setup began.
_CPU_AT_SETUP = pytest.StashKey[float]()


def _cpu_seconds() -> float:
    """CPU seconds of this pytest process and of every child it has waited for (ansible-playbook,
    promtool, Chromium, go): what a test costs on a machine bound by its cores."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_AT_SETUP] = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each test's CPU seconds, setup to teardown, as the JUnit property ``cpu_seconds``:
    ``make test``'s table (tools/step_table.py) lists the test files that use the most CPU.
    Processes a test starts and does not wait for (a control plane) are not counted."""
    if call.when == "teardown" and _CPU_AT_SETUP in item.stash:
        item.user_properties.append(("cpu_seconds", "%.2f" % (_cpu_seconds() - item.stash[_CPU_AT_SETUP])))
    yield
