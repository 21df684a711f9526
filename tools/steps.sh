#!/usr/bin/env bash
# The step log of `make test`: each step's start, wall time and exit code, printed as a table at
# the end so that every run shows where its time went (docs/testing.md).
#
#   tools/steps.sh begin               start a new log (build/steps.tsv)
#   tools/steps.sh run NAME CMD ARG..  run CMD, record NAME, its start, end, CPU seconds (user and
#                                      system, of every process it waited for) and exit code; exit as CMD
#   tools/steps.sh table               print the steps, the machine's busy CPU over the run and,
#                                      from build/junit/*.xml, each pytest suite's slowest 15 tests
#
# A step's CPU counts only the processes it waited for; the machine's busy CPU (/proc/stat, all
# processes) also counts what runs detached: the VM's qemu, Molecule's containers, the rehearsal's
# control planes. It says whether the run was bound by the cores rather than by its steps' order.
set -uo pipefail

build="${GPUSHARE_BUILD_DIR:-build}"
log="$build/steps.tsv"

# Seconds of CPU every core of this machine spent busy since boot (user, nice, system, irq,
# softirq, steal), the number of cores and the time: "<seconds> <cores> <epoch>".
busy_cpu() {
  awk -v hz="$(getconf CLK_TCK)" -v now="$(date +%s)" '/^cpu / { busy = ($2 + $3 + $4 + $7 + $8 + $9) / hz }
    /^cpu[0-9]/ { n++ } END { print busy, n, now }' /proc/stat
}

case "${1:-}" in
  begin)
    mkdir -p "$build/junit"
    rm -f "$build"/junit/*.xml
    printf 'begin\t%s\n' "$(date +%s)" > "$log"
    printf 'machine\tbegin\t%s\n' "$(busy_cpu)" >> "$log"
    ;;
  run)
    [ $# -ge 3 ] || { echo "usage: $0 run NAME COMMAND [ARG...]" >&2; exit 2; }
    name="$2"; shift 2
    mkdir -p "$build"
    start=$(date +%s)
    "$@"
    rc=$?
    end=$(date +%s)
    # `times` prints the shell's own and then its children's user and system time (0m1.234s);
    # this shell ran only CMD, so the second line is CMD's CPU time.
    # (`times` must run in this shell, not in a pipeline's subshell, hence the file.)
    times_file=$(mktemp)
    times > "$times_file"
    cpu=$(sed -n 2p "$times_file" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%d", n }')
    rm -f "$times_file"
    # One short line per write: lines of steps that run side by side do not interleave.
    printf 'step\t%s\t%s\t%s\t%s\t%s\n' "$name" "$start" "$end" "$rc" "$cpu" >> "$log"
    exit "$rc"
    ;;
  table)
    printf 'machine\tend\t%s\n' "$(busy_cpu)" >> "$log"
    exec python3 "$(dirname "$0")/step_table.py" "$log" "$build/junit"
    ;;
  *)
    echo "usage: $0 begin | run NAME COMMAND [ARG...] | table" >&2
    exit 2
    ;;
esac
