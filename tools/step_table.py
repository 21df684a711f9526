"""Print where `make test` spent its time: the step log of tools/steps.sh as a table (start
offset, wall seconds, CPU seconds, exit code, in the order the steps started), the run's wall total, and
each pytest suite's slowest tests from its JUnit XML (setup, call and teardown together, so a
fixture that starts a control plane is counted in the first test that asks for it), and the test
files that used the most CPU (each test's ``cpu_seconds`` property, tests/conftest.py).

    python3 tools/step_table.py build/steps.tsv build/junit [COUNT]
"""

from __future__ import annotations

import glob
import os
import sys
import xml.etree.ElementTree as ET


def read_steps(path):
    """The run's begin time, its steps, and the machine's busy CPU seconds and cores at its begin
    and end (``machine`` lines: tools/steps.sh)."""
    begin, steps, machine = None, [], {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "begin" and len(fields) == 2:
                begin = int(fields[1])
            elif fields[0] == "step" and len(fields) == 6:
                steps.append({"name": fields[1], "start": int(fields[2]), "end": int(fields[3]), "rc": int(fields[4]),
                              "cpu": int(fields[5])})
            elif fields[0] == "machine" and len(fields) == 3 and len(fields[2].split()) == 3:
                seconds, cores, when = fields[2].split()
                machine[fields[1]] = (float(seconds), int(cores), int(when))
    return begin, sorted(steps, key=lambda s: (s["start"], s["end"])), machine


def slowest(xml_path, count):
    """(seconds, test id) of the slowest test cases of one JUnit file, and the number of tests."""
    cases = []
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = "%s::%s" % (case.get("classname", ""), case.get("name", ""))
        cases.append((float(case.get("time") or 0), name))
    cases.sort(reverse=True)
    return cases[:count], len(cases)


def test_file(classname):
    """The test module of a JUnit class name: ``tests.unit.test_x`` of ``tests.unit.test_x.TestY``."""
    parts = classname.split(".")
    modules = [i for i, part in enumerate(parts) if part.startswith("test_")]
    return ".".join(parts[:modules[-1] + 1]) if modules else classname


def cpu_by_file(xml_path):
    """(CPU seconds, tests, file) per test file of one JUnit file, most CPU first, from each test's
    ``cpu_seconds`` property (tests/conftest.py); empty when the run did not record it."""
    files = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        cpu = [float(prop.get("value") or 0) for prop in case.iter("property") if prop.get("name") == "cpu_seconds"]
        if not cpu:
            continue
        name = test_file(case.get("classname", ""))
        seconds, tests = files.get(name, (0.0, 0))
        files[name] = (seconds + cpu[0], tests + 1)
    return sorted(((seconds, tests, name) for name, (seconds, tests) in files.items()), reverse=True)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    log, junit_dir = argv[1], argv[2]
    count = int(argv[3]) if len(argv) > 3 else 15
    if not os.path.exists(log):
        print("step table: no step log at %s" % log)
        return 0
    begin, steps, machine = read_steps(log)
    begin = begin if begin is not None else min((s["start"] for s in steps), default=0)
    print("\n== make test: where the time went (wall seconds; steps on one line started together)")
    print("%-30s %7s %8s %8s %5s" % ("step", "start", "seconds", "cpu s", "exit"))
    for step in steps:
        print("%-30s %7s %8d %8d %5d" % (step["name"], "+%d" % (step["start"] - begin), step["end"] - step["start"],
                                         step["cpu"], step["rc"]))
    if steps:
        end = max(s["end"] for s in steps)
        print("%-30s %7s %8d" % ("total (wall, begin to last end)", "", end - begin))
    if "begin" in machine and "end" in machine:
        busy = machine["end"][0] - machine["begin"][0]
        cores = machine["end"][1]
        available = max(1, machine["end"][2] - machine["begin"][2]) * cores
        print("machine: %d CPU seconds busy of %d on %d cores (%d%%), every process counted (qemu, containers,"
              " control planes too)" % (busy, available, cores, 100 * busy / available))
    for path in sorted(glob.glob(os.path.join(junit_dir, "*.xml"))):
        try:
            cases, total = slowest(path, count)
        except ET.ParseError as exc:
            print("\n== %s: unreadable JUnit file (%s)" % (path, exc))
            continue
        suite = os.path.splitext(os.path.basename(path))[0]
        print("\n== %s: the %d slowest of %d tests (seconds, setup and teardown included)" % (suite, len(cases), total))
        for seconds, name in cases:
            print("%8.1f  %s" % (seconds, name))
        files = cpu_by_file(path)
        if files:
            print("\n== %s: CPU seconds by test file, the %d largest of %d (this process and the ones it waited for:"
                  " ansible-playbook, promtool, Chromium)" % (suite, min(count, len(files)), len(files)))
            for seconds, tests, name in files[:count]:
                print("%8.1f  %4d tests  %s" % (seconds, tests, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
