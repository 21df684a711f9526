# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compiled catalog against the reference geometry (profiles.yaml), field by field."""
from __future__ import annotations

import re

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.catalog import MODELS, lookup

DESIGN_KEYS = [
    "A100-40GB", "A100-80GB", "A30", "H100-80GB", "H100-NVL", "H200", "H200-NVL", "GH200-96GB",
    "GH200-144GB", "B200", "GB200", "B300", "GB300", "RTX-PRO-6000", "RTX-PRO-6000-WS",
    "L4", "L40S", "L40", "A10", "A40",
]

# profiles.yaml entry (by main device ID) -> catalog key
REFERENCE_KEYS = {
    "0x20B010DE": "A100-40GB", "0x20B210DE": "A100-80GB", "0x20B710DE": "A30",
    "0x233010DE": "H100-80GB", "0x232110DE": "H100-NVL", "0x233510DE": "H200",
    "0x233B10DE": "H200-NVL", "0x234210DE": "GH200-96GB", "0x234810DE": "GH200-144GB",
    "0x290110DE": "B200", "0x294110DE": "GB200", "0x318210DE": "B300", "0x31C210DE": "GB300",
    "0x2BB510DE": "RTX-PRO-6000", "0x27B810DE": "L4", "0x26B910DE": "L40S",
}

UNCONFIRMED_FIELD_MAP = {"memory_gib_nvidia_smi": "memory_mib", "placements": "placements", "id": "id"}


@pytest.fixture(scope="module")
def reference_gpus(reference_dir):
    with open(reference_dir / "mig" / "profiles.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gpus"]


def test_catalog_has_exactly_the_design_keys():
    assert list(MODELS) == DESIGN_KEYS


def test_every_reference_model_is_in_the_catalog(reference_gpus):
    assert sorted(entry["device_id"] for entry in reference_gpus) == sorted(REFERENCE_KEYS)


def _reference_ids(entry):
    ids = {entry["device_id"].upper()}
    for values in (entry.get("related_device_ids") or {}).values():
        ids.update(v.upper() for v in values if re.match(r"^0x[0-9A-F]{8}$", v, re.I))
    return ids


@pytest.mark.parametrize("device_id, key", sorted(REFERENCE_KEYS.items()))
def test_model_matches_reference(reference_gpus, device_id, key):
    entry = next(e for e in reference_gpus if e["device_id"] == device_id)
    model = MODELS[key]
    assert model.device_ids[0] == device_id
    ours_ids = {d.upper() for d in model.device_ids}
    if key == "RTX-PRO-6000":  # the reference lists the Workstation Edition with it; it is its own key
        ours_ids |= {d.upper() for d in MODELS["RTX-PRO-6000-WS"].device_ids}
    assert _reference_ids(entry) <= ours_ids
    assert model.mig_capable is entry["mig_supported"]
    assert model.architecture.split()[0] == entry["architecture"].split()[0]
    if "total_memory_mib" in entry:
        assert model.memory_mib == entry["total_memory_mib"]
        assert ("memory_mib" in model.unconfirmed_fields) is bool(entry.get("total_memory_unconfirmed"))
    if not entry["mig_supported"]:
        assert model.profiles == ()
        return
    assert model.placement_units == entry["placement_units"]
    assert model.compute_slices == entry["compute_slices_total"]
    assert model.memory_slices == entry["memory_slices_total"]
    assert [p.name for p in model.profiles] == [p["name"] for p in entry["profiles"]]
    for ours, theirs in zip(model.profiles, entry["profiles"]):
        where = "%s %s" % (key, ours.name)
        assert ours.id == theirs["id"], where
        assert ours.compute_slices == theirs["compute_slices"], where
        assert ours.memory_slices == theirs["memory_slices"], where
        assert ours.max_count == theirs["max_count"], where
        assert list(ours.starts) == theirs["placements"]["starts"], where
        assert ours.size == theirs["placements"]["size"], where
        expected_unconfirmed = set()
        for text in theirs.get("unconfirmed_fields", ()):
            word = text.split()[0]
            if word in UNCONFIRMED_FIELD_MAP:
                expected_unconfirmed.add(UNCONFIRMED_FIELD_MAP[word])
        if "memory_mib" in theirs:
            assert ours.memory_mib == theirs["memory_mib"], where
        else:
            # No published value: an estimate that is marked and never above the name.
            expected_unconfirmed.add("memory_mib")
            name_gib = int(re.search(r"\.(\d+)gb", ours.name).group(1))
            assert ours.memory_mib < name_gib * 1024, where
        assert set(ours.unconfirmed_fields) == expected_unconfirmed, where
        assert ours.unconfirmed is bool(expected_unconfirmed), where
        if theirs.get("unconfirmed"):
            assert ours.unconfirmed, where


def test_workstation_edition_shares_the_server_geometry():
    assert MODELS["RTX-PRO-6000-WS"].profiles == MODELS["RTX-PRO-6000"].profiles
    assert lookup("0x2BB4").key == "RTX-PRO-6000-WS"  # Max-Q, seen in a real capture


@pytest.mark.parametrize("model", [m for m in MODELS.values() if m.mig_capable], ids=lambda m: m.key)
def test_geometry_is_self_consistent(model):
    for profile in model.profiles:
        assert all(0 <= s and s + profile.size <= model.placement_units for s in profile.starts)
        assert profile.memory_mib <= model.memory_mib
        assert profile.max_count <= len(profile.starts) or profile.max_count == 1
        assert profile.media in gpu_catalog.MEDIA_VARIANTS
    # Usable memory grows with memory slices among base profiles.
    base = sorted((p for p in model.profiles if p.media == ""), key=lambda p: p.memory_slices)
    assert [p.memory_mib for p in base] == sorted(p.memory_mib for p in base)


@pytest.mark.parametrize(
    "text, key",
    [
        ("H100-80GB", "H100-80GB"),
        ("h100-80gb", "H100-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-80GB"),
        ("NVIDIA-H100-80GB-HBM3", "H100-80GB"),  # GPU Feature Discovery label form
        ("H100 80GB HBM3", "H100-80GB"),
        ("0x2330", "H100-80GB"),
        ("0x233010de", "H100-80GB"),
        ("233010DE", "H100-80GB"),  # nvidia-smi -q -x pci_device_id
        ("10de:2330", "H100-80GB"),  # lspci -nn
        ("B200", "B200"),  # looks like hex, is a key
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA L40S", "L40S"),
        ("nvidia rtx pro 6000 blackwell max-q workstation edition", "RTX-PRO-6000-WS"),
        ("0x2BB5", "RTX-PRO-6000"),
    ],
)
def test_lookup_by_key_name_or_device_id(text, key):
    assert lookup(text).key == key


@pytest.mark.parametrize("text", ["H100", "Tesla P100-PCIE-16GB", "0x15F8", "", "2330", "A100"])
def test_lookup_unknown_raises(text):
    with pytest.raises(ValueError, match="unknown GPU model"):
        lookup(text)


def test_profile_lookup_and_errors():
    h100 = MODELS["H100-80GB"]
    assert h100.profile("3G.40GB").memory_mib == 40448
    with pytest.raises(ValueError, match="profile '3g.20gb' does not exist on H100-80GB"):
        h100.profile("3g.20gb")
    with pytest.raises(ValueError, match="L40S does not support MIG"):
        MODELS["L40S"].profile("1g.10gb")


def test_media_and_base_names():
    rtx = MODELS["RTX-PRO-6000"]
    assert rtx.profile("1g.24gb+me.all").media == "+me.all"
    assert rtx.profile("1g.24gb+me.all").base_name == "1g.24gb"
    assert rtx.profile("2g.48gb-me").media == "-me"
    assert rtx.profile("4g.96gb+gfx").media == "+gfx"
    assert rtx.profile("4g.96gb").media == ""


# --- memory the DRA driver publishes --------------------------------------------------------

def _captured_totals(reference_dir):
    """product name -> set of fb_memory_usage totals (MiB) of the full GPUs in the real captures."""
    from xml.etree import ElementTree

    totals = {}
    for path in sorted((reference_dir / "nvidia-smi").glob("*.xml")):
        try:
            root = ElementTree.parse(path).getroot()
        except ElementTree.ParseError:
            continue
        for gpu in root.iter("gpu"):
            product, total = gpu.findtext("product_name"), gpu.findtext("fb_memory_usage/total")
            if product and total and total.endswith(" MiB"):
                totals.setdefault(product.strip(), {}).setdefault(int(total.split()[0]), path.name)
    return totals


def test_captured_totals_are_the_real_captures(reference_dir):
    captured = _captured_totals(reference_dir)
    for product, (mib, capture) in gpu_catalog.CAPTURED_TOTAL_MIB.items():
        assert captured[product] == {mib: capture}, product
        assert lookup(product).key  # every captured product is in the catalog
    # Every catalogued product that a capture shows is used.
    known = {name for model in MODELS.values() for name in model.product_names}
    assert {p for p in captured if p in known} == set(gpu_catalog.CAPTURED_TOTAL_MIB)


def test_h100_publishes_the_nvml_total_not_the_nominal_size():
    h100 = gpu_catalog.published_memory("NVIDIA H100 80GB HBM3")
    assert (h100.mib, h100.confirmed) == (81559, True)
    assert gpu_catalog.published_memory_mib("NVIDIA H100 80GB HBM3") < MODELS["H100-80GB"].memory_mib
    # The key also covers products no capture shows: the lowest figure, marked unconfirmed.
    key = gpu_catalog.published_memory("H100-80GB")
    assert not key.confirmed and key.mib <= 81559 and "NVIDIA H100 PCIe" in key.source
    assert gpu_catalog.published_memory("L40S") == gpu_catalog.published_memory("NVIDIA L40S")
    assert gpu_catalog.published_memory("L40S").confirmed
    assert gpu_catalog.published_memory_mib("0x2330") == key.mib  # PCI IDs resolve to the key


@pytest.mark.parametrize("key", DESIGN_KEYS)
def test_published_memory_of_every_model_and_profile(key):
    model = MODELS[key]
    figures = []
    for name in (key,) + model.product_names:
        figure = gpu_catalog.published_memory(name)
        assert 0 < figure.mib <= model.memory_mib, name
        assert figure.confirmed == (name in gpu_catalog.CAPTURED_TOTAL_MIB or (
            name == key and all(p in gpu_catalog.CAPTURED_TOTAL_MIB for p in model.product_names))), name
        figures.append(figure.mib)
    assert figures[0] == min(figures[1:])  # the key's figure holds for every product
    for profile in model.profiles:
        figure = gpu_catalog.published_memory(key, profile.name)
        assert 0 < figure.mib <= profile.memory_mib
        assert figure.confirmed == ("memory_mib" not in profile.unconfirmed_fields)
        if figure.confirmed:
            assert figure.mib == profile.memory_mib  # NVML's MemorySizeMB, published as is
        assert gpu_catalog.published_memory_mib(key, profile.name.upper()) == figure.mib
        assert figure.mib < gpu_catalog.published_memory_mib(key) or profile.memory_slices == model.memory_slices


def test_published_memory_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown GPU model"):
        gpu_catalog.published_memory_mib("H101")
    with pytest.raises(ValueError, match="does not support MIG"):
        gpu_catalog.published_memory_mib("L40S", "1g.10gb")
    with pytest.raises(ValueError, match="profile '9g.1gb' does not exist on H100-80GB"):
        gpu_catalog.published_memory_mib("H100-80GB", "9g.1gb")
