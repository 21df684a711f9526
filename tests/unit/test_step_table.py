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
