"""Make the collection importable as ansible_collections.gpushare.cluster for the tests.

`make collection-link` links the checkout into build/collections, the first entry of
ANSIBLE_COLLECTIONS_PATH that the Makefile exports.
"""

import os
import pathlib
import sys

_DEFAULT = pathlib.Path(__file__).resolve().parents[3] / "build" / "collections"
for _root in os.environ.get("ANSIBLE_COLLECTIONS_PATH", str(_DEFAULT)).split(os.pathsep):
    if (pathlib.Path(_root) / "ansible_collections" / "gpushare" / "cluster").is_dir():
        sys.path.insert(0, _root)
        break
