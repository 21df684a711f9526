# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU discovery on real nvidia-smi captures and lspci lines, plus derived samples."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.discovery import (
    discover,
    parse_lspci,
    parse_nvidia_smi_xml,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"

# capture -> (driver, cuda, GPU count, model, memory MiB, mig current, mig pending, MIG devices on GPU 0)
CAPTURES = {
    "h100-sxm5-80gb-x8-driver-580.xml": ("580.105.08", "13.0", 8, "H100-80GB", 81559, False, False, 0),
    "gb200-x4-arm64-driver-580.xml": ("580.173.02", "13.0", 4, "GB200", 189471, False, False, 0),
    "l40s-x1-driver-595.xml": ("595.91.07", "13.2", 1, "L40S", 46068, None, None, 0),
    "a100-sxm4-80gb-mig-driver-535.xml": ("535.54.03", "12.2", 1, "A100-80GB", 81920, True, True, 4),
    "netdata-a100-sxm4-40gb-mig.xml": ("510.47.03", "11.6", 1, "A100-40GB", 40960, True, True, 2),
    "rtx-pro-6000-blackwell-maxq-driver-590.xml": ("590.44.01", "13.1", 1, "RTX-PRO-6000-WS", 97887, None, None, 0),
}


@pytest.mark.parametrize("capture", sorted(CAPTURES))
def test_real_nvidia_smi_captures(reference_dir, capture):
    facts = parse_nvidia_smi_xml((reference_dir / "nvidia-smi" / capture).read_text(encoding="utf-8"))
    driver, cuda, count, model, memory, current, pending, mig_devices = CAPTURES[capture]
    assert facts["driver_version"] == driver
    assert facts["cuda_version"] == cuda
    assert [g["index"] for g in facts["gpus"]] == list(range(count))
    for gpu in facts["gpus"]:
        assert gpu["model"] == model
        assert gpu["memory_mib"] == memory
        assert gpu["mig_mode_current"] is current
        assert gpu["mig_mode_pending"] is pending
        assert re.match(r"^GPU-[0-9a-f-]{36}$", gpu["uuid"]) or gpu["uuid"].startswith("GPU-")
        assert re.match(r"^0x[0-9A-F]{4}10DE$", gpu["pci_device_id"])
    assert len(facts["gpus"][0]["mig_devices"]) == mig_devices


def test_h100_node_bus_ids_and_uuids_are_distinct(reference_dir):
    facts = parse_nvidia_smi_xml((reference_dir / "nvidia-smi" / "h100-sxm5-80gb-x8-driver-580.xml").read_text())
    assert facts["gpus"][0]["pci_bus_id"] == "00000000:53:00.0"
    assert len({g["pci_bus_id"] for g in facts["gpus"]}) == 8
    assert len({g["uuid"] for g in facts["gpus"]}) == 8
    assert all(g["mig_capable"] for g in facts["gpus"])


def test_a100_40gb_mig_devices(reference_dir):
    facts = parse_nvidia_smi_xml((reference_dir / "nvidia-smi" / "netdata-a100-sxm4-40gb-mig.xml").read_text())
    devices = facts["gpus"][0]["mig_devices"]
    assert [(d["gpu_instance_id"], d["memory_mib"], d["multiprocessor_count"]) for d in devices] == [
        (1, 19968, 42), (2, 19968, 42)]  # two 3g.20gb: the catalog's usable memory, exactly


def test_unknown_and_minimal_gpus(reference_dir):
    p100 = parse_nvidia_smi_xml((reference_dir / "nvidia-smi" / "netdata-tesla-p100.xml").read_text())
    assert p100["gpus"][0]["model"] is None
    assert p100["gpus"][0]["name"] == "Tesla P100-PCIE-16GB"
    assert p100["gpus"][0]["mig_capable"] is False
    trimmed = parse_nvidia_smi_xml(
        (reference_dir / "nvidia-smi" / "netdata-rtx-pro-6000-blackwell-driver-580-trimmed.xml").read_text())
    gpu = trimmed["gpus"][0]
    # "NVIDIA RTX PRO 6000 Blackwell" names no edition and the file has no device ID.
    assert (gpu["model"], gpu["pci_device_id"], trimmed["driver_version"]) == (None, None, None)


def test_derived_mixed_host_with_mig_pending():
    facts = parse_nvidia_smi_xml((FIXTURES / "mixed-h100-l40s-mig-pending.xml").read_text())
    summary = [(g["index"], g["model"], g["mig_capable"], g["mig_mode_current"], g["mig_mode_pending"])
               for g in facts["gpus"]]
    assert summary == [(0, "H100-80GB", True, False, True), (1, "H100-80GB", True, True, True),
                       (2, "L40S", False, None, None)]
    assert facts["gpus"][1]["mig_devices"][0]["memory_mib"] == 81152  # a 7g.80gb


@pytest.mark.parametrize("text", ["not xml", "<other/>", ""])
def test_bad_xml_raises(text):
    with pytest.raises(ValueError, match="nvidia-smi -q -x output"):
        parse_nvidia_smi_xml(text)


def _lspci_blocks(reference_dir):
    blocks = {}
    title = None
    for line in (reference_dir / "nvidia-smi" / "lspci-samples.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            title = line[3:]
            blocks[title] = []
        elif title and line and not line.startswith("#"):
            blocks[title].append(line)
    return {t: "\n".join(lines) for t, lines in blocks.items()}


# block title prefix -> (models in index order)
LSPCI_EXPECTED = {
    "A100 SXM4 40GB and A100 SXM4 80GB": ["A100-40GB", "A100-80GB"],  # two hosts, same BDF
    "A100 SXM4 80GB, multi-GPU host": ["A100-80GB"] * 4,
    "H100 SXM5 80GB x4": ["H100-80GB"] * 4,
    "HGX H100 8-GPU host": ["H100-80GB"] * 8,  # 4 NVSwitch bridges and the BMC VGA left out
    "Same H100 GPUs + NVSwitches": ["H100-80GB"] * 8,
    "KVM guest with 4 of the H100s": ["H100-80GB"] * 4,  # virtio VGA left out
    "H100 PCIe bound to vfio-pci": ["H100-80GB"],
    "H200 SXM 141GB x8": ["H200"] * 8,
    "L40S x2": ["L40S"] * 2,
    "L40S x1 on AWS": ["L40S"],  # old pci.ids: name unknown, model from the device ID
    "HGX B200 x8": ["B200"] * 8,  # -PP bridge paths
    "RTX PRO 6000 Blackwell Server Edition with SR-IOV": [],  # virtual functions only
    "RTX PRO 6000 Blackwell Max-Q": [],  # the reporter cut the address and class off
}


def test_real_lspci_samples(reference_dir):
    blocks = _lspci_blocks(reference_dir)
    assert len(blocks) == len(LSPCI_EXPECTED)
    for prefix, models in LSPCI_EXPECTED.items():
        title = next(t for t in blocks if t.startswith(prefix))
        gpus = parse_lspci(blocks[title])
        assert [g["model"] for g in gpus] == models, title
        assert [g["index"] for g in gpus] == list(range(len(models))), title


def test_lspci_details(reference_dir):
    blocks = _lspci_blocks(reference_dir)
    hgx = parse_lspci(blocks[next(t for t in blocks if t.startswith("HGX H100 8-GPU host"))])
    assert hgx[0]["pci_bus_id"] == "0000:1b:00.0"
    assert hgx[0]["name"] == "H100 SXM5 80GB"
    assert hgx[0]["pci_device_id"] == "0x233010DE"
    b200 = parse_lspci(blocks[next(t for t in blocks if t.startswith("HGX B200 x8"))])
    assert b200[0]["pci_bus_id"] == "0000:1b:00.0"
    assert b200[0]["name"] is None  # "NVIDIA Corporation Device"
    assert b200[0]["memory_mib"] == 184320 and b200[0]["mig_capable"] is True


def test_lspci_derived_mixed_host_sorted_by_bus():
    gpus = parse_lspci((FIXTURES / "lspci-mixed-host.txt").read_text())
    assert [(g["index"], g["model"], g["pci_bus_id"]) for g in gpus] == [
        (0, "H100-80GB", "0000:1b:00.0"), (1, "H100-80GB", "0000:43:00.0"),
        (2, "RTX-PRO-6000-WS", "0000:61:00.0"), (3, "L40S", "0000:91:00.0")]


class FakeRunner:
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        return self.answers[argv[0]]


def test_discover_prefers_nvidia_smi():
    xml = (FIXTURES / "mixed-h100-l40s-mig-pending.xml").read_text()
    run = FakeRunner({"/usr/bin/nvidia-smi": (0, xml, "")})
    facts, warnings = discover(run, "/usr/bin/nvidia-smi", "/usr/bin/lspci")
    assert facts["source"] == "nvidia-smi" and len(facts["gpus"]) == 3 and warnings == []
    assert run.calls == [["/usr/bin/nvidia-smi", "-q", "-x"]]


def test_discover_falls_back_to_lspci_when_driver_missing():
    run = FakeRunner({
        "nvidia-smi": (9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
        "lspci": (0, (FIXTURES / "lspci-mixed-host.txt").read_text(), ""),
    })
    facts, warnings = discover(run, "nvidia-smi", "lspci")
    assert facts["source"] == "lspci" and len(facts["gpus"]) == 4
    assert facts["driver_version"] is None
    assert "couldn't communicate" in warnings[0]
    assert run.calls[1] == ["lspci", "-nn", "-D"]


def test_discover_without_tools_is_not_an_error():
    facts, warnings = discover(FakeRunner({}), None, None)
    assert facts == {"source": "none", "driver_version": None, "cuda_version": None, "gpus": []}
    assert warnings == []


@pytest.mark.parametrize("path", [
    "plugins/modules/gpu_facts.py",
    "plugins/module_utils/gpu/discovery.py",
    "plugins/module_utils/gpu/catalog.py",
    "plugins/module_utils/_common/quantities.py",
])
def test_host_side_code_is_python_38_syntax(repo_root, path):
    """gpu_facts runs on managed hosts, some of which still have Python 3.8."""
    import ast

    source = (repo_root / path).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 8))
    assert "from __future__ import annotations" in source  # annotations stay unevaluated strings
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("removeprefix", "removesuffix"):
            pytest.fail("%s uses str.%s (Python 3.9+)" % (path, node.func.attr))
