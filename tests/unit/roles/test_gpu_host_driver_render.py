"""gpu_host_driver rendered for Rocky Linux 9 and 10 and Ubuntu, without a host or a GPU."""

from __future__ import annotations

import pytest

from .host_layer_render import Renderer, by_name, debian_facts, rocky_facts

H100_HGX = {"__gpu_host_driver_pci": {"stdout_lines": ["0x030200 0x2330"] * 8 + ["0x068000 0x22a3"] * 4}}
L40S = {"__gpu_host_driver_pci": {"stdout_lines": ["0x030200 0x26b9"]}}
NO_GPU = {"__gpu_host_driver_pci": {"stdout_lines": ["0x040300 0x10f0"]}}


def ubuntu_facts(major: str = "24") -> dict:
    return dict(debian_facts(), distribution="Ubuntu", distribution_major_version=major,
                distribution_version=f"{major}.04", distribution_release="noble",
                virtualization_type="kvm", virtualization_role="host")


def prepared(facts: dict, pci: dict, **extra) -> Renderer:
    """A renderer whose host facts and PCI probe are already decided (tasks/facts.yml)."""
    renderer = Renderer("gpu_host_driver", facts, extra)
    decided = by_name(renderer.tasks("facts.yml", pci), "Decide what this host needs")["args"]
    renderer.variables.update(decided)
    return renderer


@pytest.fixture(params=[9, 10], ids=["rocky9", "rocky10"])
def major(request):
    return request.param


def test_no_nvidia_gpu_does_nothing_and_says_so():
    renderer = prepared(rocky_facts(9), NO_GPU)
    names = [t["name"] for t in renderer.tasks("main.yml")]
    assert "Say that this host has no NVIDIA GPU" in names
    assert "Install and check the driver" not in names


def test_rocky9_module_stream_and_fabric_manager_on_nvswitch():
    renderer = prepared(rocky_facts(9), H100_HGX, gpushare_gpus=[{"index": 0, "model": "H100-80GB"}])
    tasks = renderer.tasks("driver_RedHat.yml")
    assert by_name(tasks, "Install the driver branch (and Fabric Manager, nvlsm where needed)")["args"]["name"] == [
        "@nvidia-driver:580-open/fm"]
    assert "Hold the driver on its branch (EL10 has no module streams)" not in [t["name"] for t in tasks]
    repo = by_name(tasks, "Add NVIDIA's CUDA repository")["args"]
    assert repo["baseurl"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"


def test_rocky10_packages_with_versionlock_and_nvlsm_for_b200():
    renderer = prepared(rocky_facts(10), H100_HGX, gpushare_gpus=[{"index": 0, "model": "B200"}],
                        gpu_host_driver_branch="595")
    tasks = renderer.tasks("driver_RedHat.yml")
    name = by_name(tasks, "Install the driver branch (and Fabric Manager, nvlsm where needed)")["args"]["name"]
    assert name == ["nvidia-open-595*", "python3-dnf-plugin-versionlock", "nvidia-fabricmanager-595*", "nvlsm"]
    assert by_name(tasks, "Hold the driver on its branch (EL10 has no module streams)")["args"]["name"] == [
        "*nvidia*595*"]


def test_rocky_single_gpu_without_fabric_manager(major):
    renderer = prepared(rocky_facts(major), L40S)
    name = by_name(renderer.tasks("driver_RedHat.yml"),
                   "Install the driver branch (and Fabric Manager, nvlsm where needed)")["args"]["name"]
    assert not any("fabricmanager" in n or n.endswith("/fm") for n in name)


def test_cuda_repository_through_the_mirror(major):
    renderer = prepared(rocky_facts(major), L40S, gpushare_mirrors={"dnf": {"nvidia": "http://dnf.mirror.internal"}})
    repo = by_name(renderer.tasks("driver_RedHat.yml"), "Add NVIDIA's CUDA repository")["args"]
    assert repo["baseurl"] == f"http://dnf.mirror.internal/compute/cuda/repos/rhel{major}/x86_64"
    assert repo["gpgkey"].startswith("http://dnf.mirror.internal/")


def test_ubuntu_signed_precompiled_packages():
    renderer = prepared(ubuntu_facts(), H100_HGX)
    install = by_name(renderer.tasks("driver_Debian.yml"), "Install Canonical's signed driver modules and user space")
    assert install["args"]["name"] == [
        "linux-modules-nvidia-580-server-open-generic", "nvidia-utils-580-server",
        "nvidia-compute-utils-580-server", "nvidia-fabricmanager-580", "libnvidia-nscq-580"]


def test_ubuntu_drivers_method():
    renderer = prepared(ubuntu_facts("22"), L40S, gpu_host_driver_ubuntu_method="ubuntu-drivers",
                        gpu_host_driver_open_modules=False, gpu_host_driver_branch="570")
    task = by_name(renderer.tasks("driver_Debian.yml"), "Install the driver with ubuntu-drivers")
    assert task["args"]["argv"] == ["ubuntu-drivers", "install", "--gpgpu", "nvidia:570-server"]
    assert task["args"]["creates"] == "/usr/bin/nvidia-smi"


def test_debian_has_no_signed_driver_and_says_so():
    renderer = prepared(debian_facts(), L40S)
    assert "no Canonical-signed NVIDIA packages" in " ".join(renderer.failed_asserts("driver_Debian.yml"))


@pytest.mark.parametrize("extra,words", [
    ({"gpu_host_driver_branch": "999"}, ["unknown driver branch", "gpu_host_driver_branch=999", "580"]),
    ({"gpu_host_driver_ubuntu_method": "dkms"}, ["gpu_host_driver_ubuntu_method", "dkms"]),
    ({"gpu_host_driver_open_modules": False, "gpushare_gpus": [{"index": 0, "model": "B200"}]},
     ["B200", "gpu_host_driver_open_modules=true"]),
])
def test_preflight_rejects_bad_input(extra, words):
    message = " ".join(Renderer("gpu_host_driver", rocky_facts(9), extra).failed_asserts("preflight.yml"))
    for word in words:
        assert word in message


def test_preflight_accepts_the_defaults():
    assert Renderer("gpu_host_driver", rocky_facts(10)).failed_asserts("preflight.yml") == []


@pytest.mark.parametrize("task_file", ["preflight.yml", "facts.yml", "driver_RedHat.yml", "services.yml"])
def test_every_task_file_renders_for_rocky(major, task_file):
    renderer = prepared(rocky_facts(major), H100_HGX, gpushare_gpus=[{"index": 0, "model": "B200"}],
                        gpushare_mirrors={"dnf": {"nvidia": "http://dnf.mirror.internal"}})
    probes = dict(H100_HGX, __gpu_host_driver_install={"changed": True},
                  __gpu_host_driver_smi={"rc": 0, "stdout_lines": ["0, NVIDIA B200, 580.95.05"]})
    assert renderer.tasks(task_file, probes), f"{task_file}: no task would run on Rocky {major}"
