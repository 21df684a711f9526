"""What gpu_sampler installs, what one run of its service writes and what was fetched."""

import os
import sys
from pathlib import Path

import pytest

HOST = "gpushare-gpu-sampler-node"
SAMPLES = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "samples"
PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", "."))
SAMPLER_DIR = "/var/lib/gpushare-sampler"
GPU_HEADER = "timestamp, uuid, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
APP_HEADER = "timestamp, gpu_uuid, pid, used_gpu_memory [MiB], user"
FIRST_GPU = "GPU-3f6c1e52-8a4b-4d07-9e1a-6b2c0d9f7a11"


def lines(host, pattern):
    """The lines of the one sampler file matching pattern (one day's file)."""
    paths = host.check_output(f"ls {SAMPLER_DIR}/{pattern}").split()
    assert len(paths) == 1, paths
    return host.file(paths[0]).content_string.splitlines()


def notebook_pid(host):
    return host.check_output("systemctl show --property=MainPID --value gpushare-molecule-notebook.service")


def sample(host):
    host.run_expect([0], "systemctl start gpushare-sampler.service")


def test_script_and_units_installed(host):
    script = host.file("/usr/local/sbin/gpushare-sampler")
    assert script.is_file and script.user == "root" and script.mode == 0o755
    for unit in ("gpushare-sampler.service", "gpushare-sampler.timer"):
        conf = host.file(f"/etc/systemd/system/{unit}")
        assert conf.is_file and conf.user == "root" and conf.mode == 0o644
    assert f"ExecStart=/usr/local/sbin/gpushare-sampler {SAMPLER_DIR} 35 nvidia-smi" in \
        host.file("/etc/systemd/system/gpushare-sampler.service").content_string
    assert "OnUnitActiveSec=3600s" in host.file("/etc/systemd/system/gpushare-sampler.timer").content_string


def test_timer_enabled_and_active(host):
    assert host.service("gpushare-sampler.timer").is_enabled
    assert host.service("gpushare-sampler.timer").is_running
    # The first sample was taken by the install, and it succeeded.
    assert host.check_output("systemctl show --property=Result --value gpushare-sampler.service") == "success"


def test_a_run_appends_nvidia_smis_csv_and_the_process_owner(host):
    gpus_before, apps_before = lines(host, "gpus-*.csv"), lines(host, "apps-*.csv")
    sample(host)
    gpus, apps = lines(host, "gpus-*.csv"), lines(host, "apps-*.csv")
    assert gpus[0] == GPU_HEADER and apps[0] == APP_HEADER
    # One header per file; each run adds a line per GPU and per process.
    assert gpus.count(GPU_HEADER) == 1 and apps.count(APP_HEADER) == 1
    assert gpus[:len(gpus_before)] == gpus_before and len(gpus) == len(gpus_before) + 2
    assert apps[:len(apps_before)] == apps_before and len(apps) == len(apps_before) + 1
    assert gpus[-1].endswith(", 1, NVIDIA L40S, 0, 0, 46068")
    fields = [field.strip() for field in apps[-1].split(",")]
    # The owner's whole name, longer than ps's default column of 8 characters.
    assert fields[1:] == [FIRST_GPU, notebook_pid(host), "20000", "data-scientist"]


def test_no_running_processes_adds_no_process_line(host):
    host.run_expect([0], "systemctl stop gpushare-molecule-notebook.service")
    try:
        gpus_before, apps_before = lines(host, "gpus-*.csv"), lines(host, "apps-*.csv")
        sample(host)
        assert len(lines(host, "gpus-*.csv")) == len(gpus_before) + 2
        assert lines(host, "apps-*.csv") == apps_before
    finally:
        host.run_expect([0], "systemctl start gpushare-molecule-notebook.service")


def test_samples_fetched_per_inventory_host(host):
    folder = SAMPLES / HOST
    names = sorted(path.name for path in folder.iterdir())
    assert len(names) == 2 and names[0].startswith("apps-") and names[1].startswith("gpus-"), names
    # What was fetched is what the host had then: the start of its files now.
    for name in names:
        fetched = (folder / name).read_text().splitlines()
        assert fetched and host.file(f"{SAMPLER_DIR}/{name}").content_string.splitlines()[:len(fetched)] == fetched


@pytest.fixture(scope="module")
def reader():
    sys.path.insert(0, str(PROJECT / "build" / "collections"))
    from ansible_collections.gpushare.cluster.plugins.module_utils.assess import files
    return files


def test_fetched_samples_read_by_the_assessment(reader):
    problems = []
    found = reader.read_samples(str(SAMPLES), [HOST], problems)
    samples = found[HOST]
    assert problems == [] and samples.problems == []
    assert [(gpu.index, gpu.name, gpu.memory_total_mib) for gpu in samples.gpus.values()] == [
        (0, "NVIDIA A100-SXM4-80GB", 81920), (1, "NVIDIA L40S", 46068)]
    assert [(proc.gpu_uuid, proc.user, proc.memory) for proc in samples.processes.values()] == [
        (FIRST_GPU, "data-scientist", [20000])]
