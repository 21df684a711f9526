# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the checkout importable as ``ansible_collections.gpushare.cluster`` for benchmarks
run as plain scripts (``.venv/bin/python benchmarks/<name>.py``)."""

import importlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def collections_path():
    """``build/collections`` of this checkout, holding ``ansible_collections/gpushare/cluster`` ->
    the checkout (for ANSIBLE_COLLECTIONS_PATH and sys.path): the link `make collection-link`
    makes and ansible.cfg reads, made here the same way when it is missing. Inside the
    checkout, it can only ever import this checkout's code."""
    base = REPO / "build" / "collections"
    link = base / "ansible_collections" / "gpushare" / "cluster"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to("../../../..", target_is_directory=True)
    return base


def module_util(name):
    """Import ``plugins/module_utils/<package>/<name>.py`` (``name`` is dotted: ``"planner.plan"``) through the symlinked collection tree."""
    base = collections_path()
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    return importlib.import_module("ansible_collections.gpushare.cluster.plugins.module_utils." + name)
