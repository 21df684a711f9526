"""make test's closing table (tools/steps.sh and tools/step_table.py): each step's wall and CPU time,
and the machine's busy CPU over the whole run, which counts the detached processes too."""

from __future__ import annotations

import subprocess
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _steps(build, *args):
    env = {"GPUSHARE_BUILD_DIR": str(build), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["bash", str(TOOLS / "steps.sh"), *args], env=env, capture_output=True, text=True,
                          check=False)


def test_the_table_has_each_step_and_the_machine_s_busy_cpu(tmp_path):
    assert _steps(tmp_path, "begin").returncode == 0
    spin = "import time; end = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    assert _steps(tmp_path, "run", "spin", "python3", "-c", spin).returncode == 0
    assert _steps(tmp_path, "run", "fails", "false").returncode == 1
    table = _steps(tmp_path, "table")
    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines() if line.split()}
    assert rows["fails"][-1] == "1" and rows["spin"][-1] == "0"
    busy = next(line for line in table.stdout.splitlines() if line.startswith("machine: "))
    seconds, cores = int(busy.split()[1]), int(busy.split(" on ")[1].split()[0])
    assert cores >= 1 and 0 <= seconds  # the spin's half second may round down to 0 on an idle machine
    assert [line.split("\t")[:2] for line in (tmp_path / "steps.tsv").read_text().splitlines()
            if line.startswith("machine")] == [["machine", "begin"], ["machine", "end"]]


def test_the_scenario_queue_runs_each_scenario_once_across_lanes(tmp_path):
    """Three lanes take from one queue at once: every scenario runs exactly once, as a step, and a lane
    whose scenario failed exits 1 after running the rest it claimed."""
    ran = tmp_path / "ran"
    molecule = tmp_path / "molecule"
    # Stands in for `molecule test -s NAME`: records the scenario, takes a moment, fails for "broken".
    molecule.write_text('#!/bin/sh\necho "$3" >> "$RAN"\nsleep 0.2\n[ "$3" != broken ]\n')
    molecule.chmod(0o755)
    scenarios = ["airgap_host", "broken", "containerd", "host_prep", "kubeadm", "microk8s", "smoke"]
    env = {"GPUSHARE_BUILD_DIR": str(tmp_path / "build"), "PATH": "/usr/bin:/bin", "RAN": str(ran)}
    assert _steps(tmp_path / "build", "begin").returncode == 0
    lanes = [subprocess.Popen(["bash", str(TOOLS / "scenario_queue.sh"), str(tmp_path / "queue"), str(molecule),
                               *scenarios], env=env, cwd=tmp_path) for lane in range(3)]
    codes = [lane.wait(timeout=60) for lane in lanes]
    assert sorted(ran.read_text().split()) == scenarios
    assert sorted(codes) == [0, 0, 1]
    steps = [line.split("\t") for line in (tmp_path / "build" / "steps.tsv").read_text().splitlines()
             if line.startswith("step\t")]
    assert sorted(step[1] for step in steps) == [f"molecule-{name}" for name in scenarios]
    assert {step[1]: step[4] for step in steps}["molecule-broken"] == "1"


def test_the_table_sums_each_test_file_s_cpu_from_the_junit_properties(tmp_path):
    assert _steps(tmp_path, "begin").returncode == 0  # empties build/junit
    junit = tmp_path / "junit"
    case = '<testcase classname="%s" name="%s" time="1"><properties><property name="cpu_seconds" value="%s"/></properties></testcase>'
    (junit / "integration.xml").write_text("<testsuites><testsuite>%s</testsuite></testsuites>" % "".join([
        case % ("tests.integration.roles.test_apply", "test_a", "30.5"),
        case % ("tests.integration.roles.test_apply.TestSecond", "test_b", "12.0"),
        case % ("tests.integration.usage.test_usage", "test_c", "20.0"),
        '<testcase classname="tests.unit.test_old" name="test_d" time="1"/>']))
    table = _steps(tmp_path, "table")
    assert table.returncode == 0, table.stderr
    section = table.stdout.split("CPU seconds by test file", 1)[1].splitlines()[1:3]
    assert [line.split() for line in section] == [["42.5", "2", "tests", "tests.integration.roles.test_apply"],
                                                  ["20.0", "1", "tests", "tests.integration.usage.test_usage"]]
