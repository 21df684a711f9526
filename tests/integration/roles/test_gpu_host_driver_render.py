"""gpu_host_driver rendered for Rocky Linux 9 and 10 and Ubuntu, without a host or a GPU."""

from __future__ import annotations

from pathlib import Path

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
    tasks = renderer.tasks("facts.yml", pci)
    for name in ("Decide what this host needs", "Decide Fabric Manager and the NVLink Subnet Manager"):
        renderer.variables.update(by_name(tasks, name)["args"])
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
    assert name == ["nvidia-open-595*", "python3-dnf-plugin-versionlock", "nvidia-fabricmanager-595*",
                    "libnvidia-nscq-595*", "nvlsm", "infiniband-diags"]
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
                        gpu_host_driver_open_modules=False, gpu_host_driver_branch="590")
    task = by_name(renderer.tasks("driver_Debian.yml"), "Install the driver with ubuntu-drivers")
    assert task["args"]["argv"] == ["ubuntu-drivers", "install", "--gpgpu", "nvidia:590-server"]
    assert "creates" not in task["args"]


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


# --- NVLink 5: switches behind ConnectX ports (VPD SW_MNG), no NVSwitch on the PCI bus ------

HGX_B200 = {"__gpu_host_driver_pci": {"stdout_lines": ["0x030200 0x2901"] * 8 + [
    "vpd-sw-mng /sys/class/infiniband/mlx5_4/device/vpd", "vpd-sw-mng /sys/class/infiniband/mlx5_5/device/vpd"]}}


def test_the_probe_reads_the_connectx_vpd():
    probe = Renderer("gpu_host_driver", rocky_facts(9)).value("__gpu_host_driver_pci_probe")
    assert "/sys/class/infiniband/*/device/vpd" in probe and "SW_MNG" in probe


@pytest.mark.parametrize("facts", [rocky_facts(9), rocky_facts(10), ubuntu_facts()], ids=["rocky9", "rocky10", "ubuntu"])
def test_nvlink5_gets_fabric_manager_nvlsm_and_ib_umad_without_an_nvswitch(facts):
    # No model in the inventory: the VPD alone says NVLink 5.
    renderer = prepared(facts, HGX_B200)
    assert renderer.variables["__gpu_host_driver_with_fm"] is True
    assert renderer.variables["__gpu_host_driver_with_nvlsm"] is True
    family = "RedHat" if facts["os_family"] == "RedHat" else "Debian"
    tasks = renderer.tasks(f"driver_{family}.yml")
    install = next(t for t in tasks if t["name"].startswith("Install") and t["module"] in (
        "ansible.builtin.dnf", "ansible.builtin.apt") and "nvlsm" in str(t["args"]["name"]))["args"]["name"]
    assert {"nvlsm", "infiniband-diags"} <= set(install)
    assert any("fabric" in name or name.endswith("/fm") for name in install)
    services = renderer.tasks("services.yml")
    assert by_name(services, "Load them now")["items"] == [{"name": "ib_umad", "state": "present"}]
    assert "ib_umad" in by_name(services, "Load the modules Fabric Manager needs on NVLink 5 at boot")["args"]["content"]
    assert "nvidia-fabricmanager" == by_name(
        services, "Start Fabric Manager (NVSwitch systems; with the NVLink Subnet Manager on NVLink 5)")["args"]["name"]


def test_ubuntu_takes_only_nvlsm_from_nvidias_cuda_repository():
    renderer = prepared(ubuntu_facts(), HGX_B200, gpushare_mirrors={"apt": {"nvidia": "http://apt.mirror.internal"}})
    tasks = renderer.tasks("driver_Debian.yml")
    repo = by_name(tasks, "Add NVIDIA's CUDA repository")["args"]
    assert repo["uris"] == "http://apt.mirror.internal/compute/cuda/repos/ubuntu2404/x86_64/"
    pin = by_name(tasks, "Take only nvlsm from NVIDIA's CUDA repository")["args"]["content"]
    assert 'Package: nvlsm\nPin: origin "apt.mirror.internal"\nPin-Priority: 500' in pin
    assert 'Package: *\nPin: origin "apt.mirror.internal"\nPin-Priority: -1' in pin


def test_a_single_pcie_gpu_gets_neither():
    renderer = prepared(ubuntu_facts(), L40S)
    assert renderer.variables["__gpu_host_driver_with_fm"] is False
    assert renderer.variables["__gpu_host_driver_with_nvlsm"] is False


# --- Ubuntu: ubuntu-drivers leaves no nvidia-smi; transitional branches --------------------

def test_ubuntu_drivers_is_followed_by_nvidia_smi_and_persistenced():
    renderer = prepared(ubuntu_facts(), L40S, gpu_host_driver_ubuntu_method="ubuntu-drivers")
    installed = {"__gpu_host_driver_marker": {"rc": 0, "stdout": "installed"}}
    tasks = renderer.tasks("driver_Debian.yml", installed)
    names = [t["name"] for t in tasks]
    # Installed already: ubuntu-drivers is not run again (it used to run on every play).
    assert "Install the driver with ubuntu-drivers" not in names
    utils = by_name(tasks, "Install nvidia-smi, the persistence daemon and Fabric Manager next to ubuntu-drivers")
    assert utils["args"]["name"] == ["nvidia-utils-580-server", "nvidia-compute-utils-580-server"]
    fresh = prepared(ubuntu_facts(), L40S, gpu_host_driver_ubuntu_method="ubuntu-drivers").tasks(
        "driver_Debian.yml", {"__gpu_host_driver_marker": {"rc": 1, "stdout": ""}})
    assert "Install the driver with ubuntu-drivers" in [t["name"] for t in fresh]


@pytest.mark.parametrize("branch", ["535", "550", "570"])
def test_ubuntu_refuses_branches_that_are_transitional_to_580(branch):
    renderer = Renderer("gpu_host_driver", ubuntu_facts(), {"gpu_host_driver_branch": branch})
    failed = renderer.failed_asserts("facts.yml", L40S)
    assert any(f"gpu_host_driver_branch={branch}" in m and "580-server" in m for m in failed), failed


def test_rocky_keeps_the_older_branches():
    renderer = Renderer("gpu_host_driver", rocky_facts(9), {"gpu_host_driver_branch": "570"})
    assert renderer.failed_asserts("facts.yml", L40S) == []


# --- Rocky: DKMS builds need headers, and a MOK under Secure Boot ---------------------------

def test_rocky_installs_the_running_kernels_headers_before_the_driver(major):
    renderer = prepared(rocky_facts(major), L40S)
    tasks = renderer.tasks("driver_RedHat.yml")
    names = [t["name"] for t in tasks]
    headers = by_name(tasks, "Install the running kernel's headers (DKMS builds the modules against them)")
    assert headers["args"]["name"] == [f"kernel-devel-{rocky_facts(major)['kernel']}", "kernel-headers"]
    assert names.index(headers["name"]) < names.index("Install the driver branch (and Fabric Manager, nvlsm where needed)")


def test_rocky_secure_boot_without_an_enrolled_key_stops_before_the_install(major):
    renderer = prepared(rocky_facts(major), L40S)
    probes = {"__gpu_host_driver_sb": {"rc": 0, "stdout": "SecureBoot enabled"},
              "__gpu_host_driver_mok_test": {"rc": 1, "stdout": "/var/lib/dkms/mok.pub is not enrolled", "stderr": ""}}
    failed = renderer.failed_asserts("driver_RedHat.yml", probes)
    assert any("mokutil --import /var/lib/dkms/mok.pub" in m for m in failed), failed


def test_rocky_secure_boot_with_an_enrolled_key_has_dkms_sign(major):
    renderer = prepared(rocky_facts(major), L40S)
    probes = {"__gpu_host_driver_sb": {"rc": 0, "stdout": "SecureBoot enabled"},
              "__gpu_host_driver_mok_test": {"rc": 0, "stdout": "/var/lib/dkms/mok.pub is already enrolled", "stderr": ""}}
    assert renderer.failed_asserts("driver_RedHat.yml", probes) == []
    conf = by_name(renderer.tasks("driver_RedHat.yml", probes), "Have DKMS sign with that key")["args"]
    assert conf["dest"] == "/etc/dkms/framework.conf.d/gpushare-mok.conf"
    assert 'mok_signing_key="/var/lib/dkms/mok.key"' in conf["content"]


def test_rocky_without_secure_boot_writes_no_signing_config(major):
    renderer = prepared(rocky_facts(major), L40S)
    names = [t["name"] for t in renderer.tasks("driver_RedHat.yml", {"__gpu_host_driver_sb": {"rc": 0, "stdout": "SecureBoot disabled"}})]
    assert "Have DKMS sign with that key" not in names


@pytest.mark.parametrize("branch,fabric_manager,nscq", [
    ("575", "nvidia-fabric-manager-575*", "libnvidia-nscq-575*"),
    ("580", "nvidia-fabricmanager-580*", "libnvidia-nscq-580*"),
])
def test_rocky10_fabric_manager_package_names_follow_nvidias_renaming(branch, fabric_manager, nscq):
    renderer = prepared(rocky_facts(10), H100_HGX, gpu_host_driver_branch=branch)
    name = by_name(renderer.tasks("driver_RedHat.yml"),
                   "Install the driver branch (and Fabric Manager, nvlsm where needed)")["args"]["name"]
    assert fabric_manager in name and nscq in name


# --- Order: the reboot comes before any driver service -------------------------------------

def test_services_start_only_after_the_reboot_and_not_while_one_is_pending():
    renderer = prepared(ubuntu_facts(), H100_HGX)
    names = [t["name"] for t in renderer.tasks("services.yml")]
    start = names.index("Keep the driver loaded between jobs (persistence daemon)")
    raw = [t["name"] for t in __import__("yaml").safe_load(
        (Path(__file__).resolve().parents[3] / "roles/gpu_host_driver/tasks/services.yml").read_text())]
    assert raw.index("Reboot into the new driver first, when allowed") < raw.index(names[start])
    assert raw.index("Reboot (drained on a running cluster)") < raw.index(names[start])
    # host_prep left a reboot pending (nouveau blacklisted, reboot not allowed): nothing starts.
    pending = prepared(ubuntu_facts(), H100_HGX, host_prep_reboot_pending=True)
    names = [t["name"] for t in pending.tasks("services.yml")]
    assert "Keep the driver loaded between jobs (persistence daemon)" not in names
    assert "Start Fabric Manager (NVSwitch systems; with the NVLink Subnet Manager on NVLink 5)" not in names
    assert "Check that nvidia-smi answers" not in names
    assert "Say that the driver services and check wait for a reboot" in names
