"""Command line of the rehearsal control plane (plugins/module_utils/rehearsal/cluster.py).

    python tools/rehearsal.py build [GO_DIR] [CACHE_ROOT]   build every missing binary (cached by version)
    python tools/rehearsal.py start DIR [BIN_DIR]           start a control plane in DIR, print its info
    python tools/rehearsal.py stop DIR                      stop the processes the start of DIR recorded
    python tools/rehearsal.py user DIR USER [GROUP ...]     write a kubeconfig for a team user

The collection must be importable (``make collection-link`` and
``PYTHONPATH=build/collections``, as ``make rehearsal-binaries`` does).
"""

from __future__ import annotations

import json
import os
import sys

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_DIR = os.path.join(TOP, "roles", "rehearsal", "files", "go")


def main(argv):
    if not argv or argv[0] not in ("build", "start", "stop", "user") or (argv[0] != "build" and len(argv) < 2):
        sys.stderr.write(__doc__)
        return 2
    try:
        if argv[0] == "build":
            go_dir = argv[1] if len(argv) > 1 else GO_DIR
            cache = argv[2] if len(argv) > 2 else os.environ.get("GPUSHARE_REHEARSAL_CACHE") or rc.DEFAULT_CACHE_ROOT
            result = rc.build(go_dir, cache, log=lambda msg: print(msg, flush=True))
            if result["built"]:
                print("rehearsal: cold build time: " + ", ".join(f"{c} {s} s" for c, s in result["seconds"].items()))
            else:
                print("rehearsal: cached, nothing built (first build took "
                      + ", ".join(f"{c} {s} s" for c, s in sorted(result["cold_seconds"].items())) + ")")
            print(f"rehearsal: binaries in {result['bin_dir']}")
        elif argv[0] == "start":
            bin_dir = argv[2] if len(argv) > 2 else rc.bin_dir_for(GO_DIR, os.environ.get("GPUSHARE_REHEARSAL_CACHE") or rc.DEFAULT_CACHE_ROOT)
            print(json.dumps(rc.start(argv[1], bin_dir=bin_dir), indent=2, sort_keys=True))
        elif argv[0] == "stop":
            print(json.dumps(rc.stop(argv[1]), indent=2, sort_keys=True))
        else:
            if len(argv) < 3:
                sys.stderr.write(__doc__)
                return 2
            print(rc.user_kubeconfig(argv[1], argv[2], argv[3:]))
    except rc.RehearsalError as exc:
        sys.stderr.write(f"rehearsal: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
