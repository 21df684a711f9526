# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Catalog of NVIDIA datacenter GPUs and their MIG GPU-instance geometry.

Each model has its PCI device IDs, the product names nvidia-smi and GPU Feature
Discovery print, total memory, and for MIG parts every GPU-instance profile with its
nvidia-smi profile ID, real usable memory (MiB, not the number in the name), compute and
memory slices, max count and placements (allowed starts and size in placement units, as
``nvidia-smi mig -lgipp`` prints them).

The data was compiled from real ``nvidia-smi mig -lgip/-lgipp`` output where it exists
and from NVIDIA's mig-parted configuration otherwise. Values that no real transcript
confirms carry ``unconfirmed`` marks; the planner turns them into warnings. Where NVIDIA
publishes no usable memory for a profile, the catalog holds a deliberately low estimate
(memory of one slice x slices, or 7/8 of the GB in the name) so a need is never promised
more memory than the hardware gives; such profiles list ``memory_mib`` as unconfirmed.

``published_memory_mib(model, profile=None)`` gives the memory the NVIDIA DRA driver
(kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1) publishes as device capacity ``memory``; every
memory floor the planner writes into a DRA selector is at most that figure.

Pure Python, no I/O, runs on Python 3.8+ (hosts import it through gpu_facts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

MEDIA_VARIANTS = ("", "+me", "+me.all", "-me", "+gfx")


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one GPU model."""

    name: str  # NVIDIA's name as mig-parted and nvidia-smi use it, e.g. "1g.10gb+me"
    id: int  # nvidia-smi GPU-instance profile ID (-lgip), not the NVML enum
    memory_mib: int  # real usable memory
    compute_slices: int
    memory_slices: int
    max_count: int  # on an empty GPU
    starts: Tuple[int, ...]  # allowed placement starts
    size: int  # placement units occupied: [start, start + size)
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()  # subset of ("id", "memory_mib", "placements")

    @property
    def media(self) -> str:
        """Media variant suffix: '', '+me', '+me.all', '-me' or '+gfx'."""
        return self.name.rpartition("gb")[2]  # names end "<N>gb" plus the variant

    @property
    def base_name(self) -> str:
        """Name without the media suffix, e.g. '1g.10gb'."""
        return self.name[: len(self.name) - len(self.media)]


@dataclass(frozen=True)
class GpuModel:
    """One GPU model of the catalog."""

    key: str
    product_names: Tuple[str, ...]
    device_ids: Tuple[str, ...]  # "0x233010DE" form, first is the main one
    memory_mib: int
    architecture: str
    mig_capable: bool
    profiles: Tuple[MigProfile, ...] = ()
    placement_units: int = 0  # 8 on datacenter parts, 4 on A30, 12 on RTX PRO 6000
    compute_slices: int = 0
    memory_slices: int = 0
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()  # e.g. ("memory_mib",)

    def profile(self, name: str) -> MigProfile:
        """The profile called ``name`` (case-insensitive); ValueError when absent."""
        wanted = name.strip().lower()
        for candidate in self.profiles:
            if candidate.name.lower() == wanted:
                return candidate
        if not self.mig_capable:
            raise ValueError("%s does not support MIG, so it has no profile %r" % (self.key, name))
        raise ValueError(
            "profile %r does not exist on %s; its profiles are: %s"
            % (name, self.key, ", ".join(p.name for p in self.profiles))
        )


# --- geometry tables -------------------------------------------------------------------

# The 8-unit datacenter layout shared by A100, H100, H200, GH200, B200, GB200, B300 and
# GB300: (role, nvidia-smi ID, compute slices, memory slices, max count, starts, size).
_EIGHT_UNIT_SHAPES = (
    ("1g", 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g+me", 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g.2x", 15, 1, 2, 4, (0, 2, 4, 6), 2),
    ("2g", 14, 2, 2, 3, (0, 2, 4), 2),
    ("3g", 9, 3, 4, 2, (0, 4), 4),
    ("4g", 5, 4, 4, 1, (0,), 4),
    ("7g", 0, 7, 8, 1, (0,), 8),
)

_ALL_UNCONFIRMED = ("id", "memory_mib", "placements")


def _estimate_from_name(name: str) -> int:
    """7/8 of the GB in the name, in whole 64 MiB units (real values are 89-99 % of it)."""
    gigabytes = int(re.match(r"^\d+c?\.?\d*g\.(\d+)gb", name).group(1))
    return (gigabytes * 1024 * 7 // 8) // 64 * 64


def _eight_unit_profiles(
    names: Dict[str, str],
    memory: Dict[str, Optional[int]],
    unconfirmed: Dict[str, Tuple[str, ...]],
) -> Tuple[MigProfile, ...]:
    """Build the seven profiles of an 8-unit part.

    ``names`` maps role -> profile name, ``memory`` role -> MiB (None when no transcript
    gives it), ``unconfirmed`` role -> unconfirmed fields (key "*" applies to every role).
    """
    per_slice = memory.get("1g")
    profiles = []
    for role, profile_id, compute, mem_slices, max_count, starts, size in _EIGHT_UNIT_SHAPES:
        fields = tuple(unconfirmed.get(role, unconfirmed.get("*", ())))
        memory_mib = memory.get(role)
        if memory_mib is None:
            # Never overstate: one confirmed slice times the slices, else 7/8 of the name.
            memory_mib = per_slice * mem_slices if per_slice else _estimate_from_name(names[role])
            if "memory_mib" not in fields:
                fields = fields + ("memory_mib",)
        profiles.append(
            MigProfile(
                name=names[role],
                id=profile_id,
                memory_mib=memory_mib,
                compute_slices=compute,
                memory_slices=mem_slices,
                max_count=max_count,
                starts=starts,
                size=size,
                unconfirmed=bool(fields),
                unconfirmed_fields=tuple(sorted(fields)),
            )
        )
    return tuple(profiles)


def _names(one: str, one_double: str, two: str, three: str, four: str, seven: str) -> Dict[str, str]:
    return {"1g": one, "1g+me": one + "+me", "1g.2x": one_double, "2g": two, "3g": three, "4g": four, "7g": seven}


def _memory(one, one_double, three, seven, four=None) -> Dict[str, Optional[int]]:
    # 2g has the memory of the 2-slice 1g, 4g that of 3g; +me that of 1g.
    return {"1g": one, "1g+me": one, "1g.2x": one_double, "2g": one_double,
            "3g": three, "4g": three if four is None else four, "7g": seven}


def _profile(name, profile_id, memory_mib, compute, mem_slices, max_count, starts, size, unconfirmed=()):
    return MigProfile(name, profile_id, memory_mib, compute, mem_slices, max_count, tuple(starts), size,
                      bool(unconfirmed), tuple(unconfirmed))


_A30_PROFILES = (
    _profile("1g.6gb", 14, 5952, 1, 1, 4, (0, 1, 2, 3), 1),
    _profile("1g.6gb+me", 21, 5952, 1, 1, 1, (0, 1, 2, 3), 1),
    _profile("2g.12gb", 5, 11968, 2, 2, 2, (0, 2), 2),
    _profile("2g.12gb+me", 6, 11968, 2, 2, 1, (0, 2), 2),
    _profile("4g.24gb", 0, 24000, 4, 4, 1, (0,), 4),
)

# RTX PRO 6000 Blackwell: -lgipp prints a 12-unit grid.
_RTX_PRO_6000_PROFILES = (
    _profile("1g.24gb", 14, 24192, 1, 1, 4, (0, 3, 6, 9), 3),
    _profile("1g.24gb+me", 21, 24192, 1, 1, 1, (0, 3, 6, 9), 3),
    _profile("1g.24gb+gfx", 47, 24192, 1, 1, 4, (0, 3, 6, 9), 3),
    _profile("1g.24gb+me.all", 65, 24192, 1, 1, 1, (0, 3, 6, 9), 3),
    _profile("1g.24gb-me", 67, 24192, 1, 1, 4, (0, 3, 6, 9), 3),
    _profile("2g.48gb", 5, 48512, 2, 2, 2, (0, 6), 6),
    _profile("2g.48gb+gfx", 35, 48512, 2, 2, 2, (0, 6), 6),
    _profile("2g.48gb+me.all", 64, 48512, 2, 2, 1, (0, 6), 6),
    _profile("2g.48gb-me", 66, 48512, 2, 2, 2, (0, 6), 6),
    _profile("4g.96gb", 0, 97408, 4, 4, 1, (0,), 12),
    _profile("4g.96gb+gfx", 32, 97408, 4, 4, 1, (0,), 12),
)

_PLACEMENTS = ("placements",)


def _eight_unit_model(key, product_names, device_ids, memory_mib, architecture, profiles, memory_unconfirmed=False):
    return GpuModel(
        key=key,
        product_names=tuple(product_names),
        device_ids=tuple(device_ids),
        memory_mib=memory_mib,
        architecture=architecture,
        mig_capable=True,
        profiles=profiles,
        placement_units=8,
        compute_slices=7,
        memory_slices=8,
        unconfirmed=memory_unconfirmed or any(p.unconfirmed for p in profiles),
        unconfirmed_fields=("memory_mib",) if memory_unconfirmed else (),
    )


def _plain_model(key, product_names, device_ids, memory_mib, architecture, memory_unconfirmed=True):
    return GpuModel(
        key=key,
        product_names=tuple(product_names),
        device_ids=tuple(device_ids),
        memory_mib=memory_mib,
        architecture=architecture,
        mig_capable=False,
        unconfirmed=memory_unconfirmed,
        unconfirmed_fields=("memory_mib",) if memory_unconfirmed else (),
    )


_CATALOG = (
    _eight_unit_model(
        "A100-40GB",
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"),
        ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"),
        40960, "Ampere",
        _eight_unit_profiles(
            _names("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
            _memory(4864, 9856, 19968, 40192), {}),
    ),
    _eight_unit_model(
        "A100-80GB",
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A800-SXM4-80GB", "NVIDIA A800 80GB PCIe"),
        ("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"),
        81920, "Ampere",
        _eight_unit_profiles(
            _names("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            _memory(9728, 19968, 40192, 80896), {"1g.2x": ("memory_mib",)}),
    ),
    GpuModel(
        key="A30",
        product_names=("NVIDIA A30",),
        device_ids=("0x20B710DE",),
        memory_mib=24576,
        architecture="Ampere",
        mig_capable=True,
        profiles=_A30_PROFILES,
        placement_units=4,
        compute_slices=4,
        memory_slices=4,
    ),
    _eight_unit_model(
        "H100-80GB",
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H800", "NVIDIA H800 PCIe"),
        ("0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"),
        81920, "Hopper",
        _eight_unit_profiles(
            _names("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            _memory(9984, 20096, 40448, 81152), {}),
    ),
    _eight_unit_model(
        "H100-NVL",
        ("NVIDIA H100 NVL", "NVIDIA H800 NVL"),
        ("0x232110DE", "0x233A10DE"),
        95830, "Hopper",
        _eight_unit_profiles(
            _names("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
            _memory(11008, 22144, 47488, 95360), {}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "H200",
        ("NVIDIA H200",),
        ("0x233510DE",),
        143771, "Hopper",
        _eight_unit_profiles(
            _names("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
            _memory(16384, 33024, 71168, 143104), {"*": _PLACEMENTS}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "H200-NVL",
        ("NVIDIA H200 NVL",),
        ("0x233B10DE",),
        143771, "Hopper",  # the same 141 GB of HBM3e as the SXM part
        _eight_unit_profiles(
            _names("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
            _memory(None, None, None, None), {"*": _ALL_UNCONFIRMED}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "GH200-96GB",
        ("NVIDIA GH200 480GB", "NVIDIA H100 96GB", "NVIDIA H20"),
        ("0x234210DE", "0x233D10DE", "0x20B610DE", "0x232910DE"),
        98304, "Hopper",
        _eight_unit_profiles(
            _names("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
            _memory(11264, 23552, 47616, 95232), {"*": _PLACEMENTS}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "GH200-144GB",
        ("NVIDIA GH200 144G HBM3e",),
        ("0x234810DE",),
        147456, "Hopper",
        _eight_unit_profiles(
            _names("1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
            _memory(17920, 36096, None, None),
            {"*": _PLACEMENTS, "3g": _ALL_UNCONFIRMED, "4g": _ALL_UNCONFIRMED, "7g": _ALL_UNCONFIRMED}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "B200",
        ("NVIDIA B200",),
        ("0x290110DE",),
        184320, "Blackwell",
        _eight_unit_profiles(
            _names("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
            _memory(22528, 45312, None, None),
            {"*": _PLACEMENTS, "3g": ("memory_mib", "placements"), "4g": ("memory_mib", "placements"),
             "7g": ("memory_mib", "placements")}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "GB200",
        ("NVIDIA GB200",),
        ("0x294110DE",),
        189471, "Blackwell",  # total seen in a real 4-GPU nvidia-smi capture
        _eight_unit_profiles(
            _names("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
            _memory(22528, 46592, None, None),
            {"*": _PLACEMENTS, "3g": ("memory_mib", "placements"), "4g": ("memory_mib", "placements"),
             "7g": ("memory_mib", "placements")}),
    ),
    _eight_unit_model(
        "B300",
        ("NVIDIA B300 SXM6 AC",),
        ("0x318210DE",),
        294912, "Blackwell",
        _eight_unit_profiles(
            _names("1g.34gb", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"),
            _memory(None, None, None, None), {"*": _ALL_UNCONFIRMED}),
        memory_unconfirmed=True,
    ),
    _eight_unit_model(
        "GB300",
        ("NVIDIA GB300",),
        ("0x31C210DE", "0x31C310DE"),
        294912, "Blackwell",
        _eight_unit_profiles(
            _names("1g.35gb", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"),
            _memory(None, None, None, None), {"*": _ALL_UNCONFIRMED}),
        memory_unconfirmed=True,
    ),
    GpuModel(
        key="RTX-PRO-6000",
        product_names=("NVIDIA RTX PRO 6000 Blackwell Server Edition",),
        device_ids=("0x2BB510DE",),
        memory_mib=97887,
        architecture="Blackwell",
        mig_capable=True,
        profiles=_RTX_PRO_6000_PROFILES,
        placement_units=12,
        compute_slices=4,
        memory_slices=4,
    ),
    GpuModel(
        key="RTX-PRO-6000-WS",
        product_names=(
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        ),
        device_ids=("0x2BB110DE", "0x2BB410DE"),
        memory_mib=97887,
        architecture="Blackwell",
        mig_capable=True,
        profiles=_RTX_PRO_6000_PROFILES,
        placement_units=12,
        compute_slices=4,
        memory_slices=4,
    ),
    _plain_model("L4", ("NVIDIA L4",), ("0x27B810DE",), 23034, "Ada Lovelace"),
    _plain_model("L40S", ("NVIDIA L40S",), ("0x26B910DE",), 46068, "Ada Lovelace", memory_unconfirmed=False),
    _plain_model("L40", ("NVIDIA L40",), ("0x26B510DE",), 46068, "Ada Lovelace"),
    _plain_model("A10", ("NVIDIA A10",), ("0x223610DE",), 23028, "Ampere"),
    _plain_model("A40", ("NVIDIA A40",), ("0x223510DE",), 46068, "Ampere"),
)

MODELS: Dict[str, GpuModel] = {model.key: model for model in _CATALOG}

_NVIDIA_VENDOR = "10DE"
_DEVICE_ID = re.compile(r"^(?:0X)?(?P<device>[0-9A-F]{4})(?:10DE)?$|^10DE:(?P<lspci>[0-9A-F]{4})$")


def _normalise(text: str) -> str:
    """Upper case, spaces/underscores as dashes: 'NVIDIA H100 80GB HBM3' == GFD's 'NVIDIA-H100-80GB-HBM3'."""
    return re.sub(r"[\s_-]+", "-", text.strip()).upper()


def _build_index() -> Dict[str, GpuModel]:
    index: Dict[str, GpuModel] = {}
    for model in _CATALOG:
        names: List[str] = [model.key] + list(model.product_names)
        for name in names:
            normal = _normalise(name)
            index[normal] = model
            if normal.startswith("NVIDIA-"):
                index[normal[len("NVIDIA-"):]] = model
        for device_id in model.device_ids:
            index[device_id.upper()] = model  # "0X233010DE"
    return index


_INDEX = _build_index()


def canonical_device_id(text: str) -> Optional[str]:
    """'0x2330', '0x233010DE', '233010DE' or '10de:2330' -> '0x233010DE'; None if not a device ID."""
    candidate = text.strip().upper()
    if not (candidate.startswith("0X") or candidate.startswith("10DE:") or candidate.endswith(_NVIDIA_VENDOR)):
        return None  # a bare 4-hex name such as "B200" is a model key, not a device ID
    match = _DEVICE_ID.match(candidate)
    if not match:
        return None
    device = match.group("device") or match.group("lspci")
    return "0x%s%s" % (device, _NVIDIA_VENDOR)


def find(key_or_name_or_id: str) -> Optional[GpuModel]:
    """Like lookup() but returns None when nothing matches."""
    if not isinstance(key_or_name_or_id, str) or not key_or_name_or_id.strip():
        return None
    model = _INDEX.get(_normalise(key_or_name_or_id))
    if model is not None:
        return model
    device_id = canonical_device_id(key_or_name_or_id)
    if device_id is not None:
        return _INDEX.get(device_id.upper())
    return None


def lookup(key_or_product_name_or_pci_id: str) -> GpuModel:
    """The catalog model for a key, product name or PCI device ID (case-insensitive)."""
    model = find(key_or_product_name_or_pci_id)
    if model is None:
        raise ValueError(
            "unknown GPU model %r: use a catalog key (%s), a product name as nvidia-smi prints it, "
            "or a PCI device ID such as 0x2330" % (key_or_product_name_or_pci_id, ", ".join(MODELS))
        )
    return model


# --- memory the DRA driver publishes ------------------------------------------------------
#
# kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1, cmd/gpu-kubelet-plugin:
# - a full GPU: nvlib.go reads NVML ``device.GetMemoryInfo()`` and keeps ``memory.Total``;
#   partitions.go ``fullGpuCapacity`` publishes it as capacity ``memory`` in bytes.
# - a MIG device: mig.go ``CommonCapacitiesMig`` publishes the GPU-instance profile's
#   ``MemorySizeMB`` (MiB, from NVML) x 1 MiB as capacity ``memory``.
# NVML's total is below the size on the box (the H100 80GB reports 81559 MiB, not 81920),
# and a selector that asks for more than the device publishes is never satisfied: neither the
# scheduler nor Kueue (pkg/dra/claims.go evaluates the selectors against the ResourceSlices)
# would ever place the claim.
#
# Full-GPU totals seen in real ``nvidia-smi -q -x`` captures (fb_memory_usage/total, the same
# NVML total), by product name; files in the reference set's nvidia-smi/ directory.
CAPTURED_TOTAL_MIB: Dict[str, Tuple[int, str]] = {
    "NVIDIA H100 80GB HBM3": (81559, "h100-sxm5-80gb-x8-driver-580.xml"),
    "NVIDIA GB200": (189471, "gb200-x4-arm64-driver-580.xml"),
    "NVIDIA L40S": (46068, "l40s-x1-driver-595.xml"),
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": (97887, "rtx-pro-6000-blackwell-maxq-driver-590.xml"),
    "NVIDIA A100-SXM4-80GB": (81920, "a100-sxm4-80gb-mig-driver-535.xml"),
    "NVIDIA A100-SXM4-40GB": (40960, "netdata-a100-sxm4-40gb-mig.xml"),
}

# Where no capture confirms a figure: this share of the catalog's memory. Real NVML totals
# seen are 96-100 % of the catalog figure (A100 PCIe 40GB reports about 40536 of 40960 MiB).
UNCONFIRMED_MEMORY_PERCENT = 95


@dataclass(frozen=True)
class PublishedMemory:
    """What the DRA driver publishes as capacity ``memory`` for one device kind, in MiB."""

    mib: int
    confirmed: bool  # False: a deliberately low figure no real capture confirms
    source: str  # the capture, the catalog's NVML profile figure, or why it is an estimate


def _safe(mib: int) -> int:
    return mib * UNCONFIRMED_MEMORY_PERCENT // 100


def _product_memory(model: GpuModel, product: str) -> PublishedMemory:
    if product in CAPTURED_TOTAL_MIB:
        mib, capture = CAPTURED_TOTAL_MIB[product]
        return PublishedMemory(mib, True, "NVML total in the real capture %s" % capture)
    return PublishedMemory(_safe(model.memory_mib), False, "no real capture of %r: %d %% of the catalog's %d MiB"
                           % (product, UNCONFIRMED_MEMORY_PERCENT, model.memory_mib))


def published_memory(model: str, profile: Optional[str] = None) -> PublishedMemory:
    """The memory the NVIDIA DRA driver v0.4.1 publishes for a device, with its provenance.

    ``model`` is a catalog key, a product name or a PCI device ID (as ``lookup`` takes them).
    For a product name that a real capture covers, that product's figure; for a key (or an
    uncaptured product) the lowest figure any product of the key may publish, so that a
    selector written for the key's DeviceClass holds on every device the class matches.
    ``profile`` names a MIG profile of the model: its NVML memory size, where a real
    transcript confirms it, else a safe share of the catalog's (already low) estimate.
    ValueError for an unknown model or profile.
    """
    entry = lookup(model)
    if profile is not None:
        mig = entry.profile(profile)
        if "memory_mib" in mig.unconfirmed_fields:
            return PublishedMemory(_safe(mig.memory_mib), False, "%s on %s: no NVML transcript; %d %% of the "
                                   "catalog's estimate of %d MiB" % (mig.name, entry.key, UNCONFIRMED_MEMORY_PERCENT,
                                                                     mig.memory_mib))
        return PublishedMemory(mig.memory_mib, True, "%s on %s: NVML GPU-instance profile memory (MemorySizeMB)"
                               % (mig.name, entry.key))
    wanted = _normalise(model)
    for product in entry.product_names:
        if _normalise(product) == wanted or _normalise(product) == "NVIDIA-" + wanted:
            return _product_memory(entry, product)
    figures = [_product_memory(entry, product) for product in entry.product_names]
    lowest = min(figures, key=lambda figure: figure.mib)
    if len(figures) > 1 and not all(figure.confirmed for figure in figures):
        return PublishedMemory(lowest.mib, False, "lowest of the products of %s; %s" % (entry.key, lowest.source))
    return lowest


def published_memory_mib(model: str, profile: Optional[str] = None) -> int:
    """MiB the NVIDIA DRA driver v0.4.1 publishes as capacity ``memory`` (see ``published_memory``).

    Stable interface: the planner's memory floors and the rehearsal's simulated
    ResourceSlices both use it.
    """
    return published_memory(model, profile).mib


def mig_models() -> Iterable[GpuModel]:
    """Models that support MIG, in catalog order."""
    return tuple(model for model in _CATALOG if model.mig_capable)
