"""gpu_sampler with state absent: fetched first, then everything it installed or wrote is gone,
nothing else on the host changed, and a second removal changes nothing."""

import os
import re
import subprocess
from pathlib import Path

HOST = "gpushare-gpu-sampler-node"
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
SCENARIO = Path(__file__).resolve().parents[2]


def test_sampler_files_gone(host):
    for path in (
        "/usr/local/sbin/gpushare-sampler",
        "/etc/systemd/system/gpushare-sampler.service",
        "/etc/systemd/system/gpushare-sampler.timer",
        "/etc/systemd/system/timers.target.wants/gpushare-sampler.timer",
        "/var/lib/gpushare-sampler",
    ):
        assert not host.file(path).exists, path


def test_units_unknown_to_systemd(host):
    for unit in ("gpushare-sampler.timer", "gpushare-sampler.service"):
        assert host.check_output("systemctl show --property=LoadState --value %s", unit) == "not-found"
        assert host.run("systemctl is-active %s", unit).stdout.strip() == "inactive"
    assert "gpushare-sampler" not in host.check_output("systemctl list-timers --all --no-legend")


def test_nothing_else_changed(host):
    before = (EPHEMERAL / "listing-before.txt").read_text().splitlines()
    after = host.check_output((SCENARIO / "listing.sh").read_text()).splitlines()
    assert [line for line in after if line not in before] == []
    assert [line for line in before if line not in after] == []


def test_samples_fetched_before_the_removal(host):
    # The removal fetched the samples verify took after converge: three runs, two GPUs each.
    gpus = next((EPHEMERAL / "samples" / HOST).glob("gpus-*.csv")).read_text().splitlines()
    assert len(gpus) == 1 + 3 * 2


def test_second_removal_changes_nothing():
    # Molecule's own inventory directory (its group_vars hold the fetch destination).
    inventory = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent
    # Molecule forces colours on; the recap is read as plain text.
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="false", ANSIBLE_NOCOLOR="true")
    run = subprocess.run(["ansible-playbook", "--inventory", str(inventory), str(SCENARIO / "remove.yml")],
                         capture_output=True, text=True, check=False, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    recap = re.search(r"^%s\s*:.*$" % HOST, run.stdout, re.M)
    assert recap, run.stdout + run.stderr
    assert re.search(r"\bchanged=0\b", recap.group(0)) and re.search(r"\bfailed=0\b", recap.group(0)), recap.group(0)
