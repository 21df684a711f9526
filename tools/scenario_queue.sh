#!/usr/bin/env bash
# The container Molecule scenarios of `make test`, taken from one queue by every lane that has
# finished its own steps (docs/testing.md). Each scenario runs once, in the first lane that claims
# it (mkdir is atomic), as a step of tools/steps.sh named molecule-<scenario>. A scenario mostly
# waits on podman and systemd, so two of them beside the slowest remaining suite fill the cores
# that one lane alone would leave idle at the end of the run.
#
#   tools/scenario_queue.sh QUEUE_DIR MOLECULE SCENARIO...
#
# QUEUE_DIR holds one directory per claimed scenario (make test empties it first); MOLECULE is the
# molecule executable. Exits 1 when a scenario this lane ran failed; it still runs the rest.
set -uo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 QUEUE_DIR MOLECULE [SCENARIO...]" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
queue="$1"
molecule="$2"
shift 2

mkdir -p "${queue}"
rc=0
for scenario in "$@"; do
  mkdir "${queue}/${scenario}" 2>/dev/null || continue
  bash "${here}/steps.sh" run "molecule-${scenario}" nice -n 10 "${molecule}" test -s "${scenario}" || rc=1
done
exit "${rc}"
