# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the NVIDIA GPUs of a host from ``nvidia-smi -q -x`` or, before a driver exists,
from ``lspci -nn -D``, and map each one to the GPU catalog.

Pure parsing plus one ``discover`` function that takes the command runner as an argument,
so the gpu_facts module stays thin and everything here is testable without a GPU.
Runs on the managed host: Python 3.8+.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.catalog import canonical_device_id, find

# run(argv) -> (rc, stdout, stderr), as AnsibleModule.run_command returns it.
Runner = Callable[[List[str]], Tuple[int, str, str]]

_NOT_AVAILABLE = ("", "N/A", "NONE", "[N/A]", "REQUESTED FUNCTIONALITY HAS BEEN DEPRECATED")

# Display controller classes: 0300 VGA (workstation parts, e.g. RTX PRO 6000 Max-Q), 0302 3D.
# NVSwitch bridges (0680) and audio functions (0403) of the same vendor are not GPUs.
_GPU_CLASSES = ("0300", "0302")

_LSPCI_LINE = re.compile(
    r"^(?P<address>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
    r"(?:/[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|/[0-9a-fA-F]{2}\.[0-7])*)\s+"
    r"(?P<class_name>[^\[]*?)\s*\[(?P<class_id>[0-9a-fA-F]{4})\]:\s*"
    r"(?P<description>.*?)\s*\[10de:(?P<device>[0-9a-fA-F]{4})\]"
)


def _text(element: Optional[ElementTree.Element], path: str) -> Optional[str]:
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value.upper() in _NOT_AVAILABLE else value


def _mib(text: Optional[str]) -> Optional[int]:
    match = re.match(r"^\s*(\d+)\s*MiB\s*$", text or "")
    return int(match.group(1)) if match else None


def _mig_mode(text: Optional[str]) -> Optional[bool]:
    """'Enabled' -> True, 'Disabled' -> False, 'N/A' (no MIG on this GPU) -> None."""
    if text is None:
        return None
    return {"ENABLED": True, "DISABLED": False}.get(text.upper())


def parse_nvidia_smi_xml(document: str) -> Dict[str, Any]:
    """``nvidia-smi -q -x`` -> {driver_version, cuda_version, gpus: [...]}; ValueError if not that XML."""
    try:
        root = ElementTree.fromstring(document)
    except ElementTree.ParseError as error:
        raise ValueError("nvidia-smi -q -x output is not valid XML: %s" % error)
    if root.tag != "nvidia_smi_log":
        raise ValueError("nvidia-smi -q -x output has root <%s>, expected <nvidia_smi_log>" % root.tag)
    gpus = []
    # nvidia-smi lists GPUs in its own index order (PCI bus order), which is the index
    # mig-parted, the device plugin and CUDA_VISIBLE_DEVICES use.
    for index, element in enumerate(root.findall("gpu")):
        name = _text(element, "product_name")
        raw_device = _text(element, "pci/pci_device_id")
        device_id = canonical_device_id(raw_device) if raw_device else None
        model = (find(device_id) if device_id else None) or (find(name) if name else None)
        current = _mig_mode(_text(element, "mig_mode/current_mig"))
        pending = _mig_mode(_text(element, "mig_mode/pending_mig"))
        mig_devices = []
        for mig in element.findall("mig_devices/mig_device"):
            mig_devices.append({
                "index": int(_text(mig, "index") or len(mig_devices)),
                "gpu_instance_id": int(_text(mig, "gpu_instance_id") or -1),
                "compute_instance_id": int(_text(mig, "compute_instance_id") or -1),
                "memory_mib": _mib(_text(mig, "fb_memory_usage/total")),
                "multiprocessor_count": int(_text(mig, "device_attributes/shared/multiprocessor_count") or 0),
            })
        gpus.append({
            "index": index,
            "uuid": _text(element, "uuid"),
            "name": name,
            "model": model.key if model else None,
            "pci_device_id": device_id,
            "pci_bus_id": _text(element, "pci/pci_bus_id") or element.get("id"),
            "memory_mib": _mib(_text(element, "fb_memory_usage/total")),
            # Trust the catalog; a GPU it does not know is MIG-capable when the driver reports a mode.
            "mig_capable": model.mig_capable if model else current is not None,
            "mig_mode_current": current,
            "mig_mode_pending": pending,
            "mig_devices": mig_devices,
        })
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "gpus": gpus,
    }


def _bus_key(address: str) -> Tuple[int, int, int, int]:
    domain, rest = (address.split(":", 1) if address.count(":") == 2 else ("0000", address))
    bus, device_function = rest.split(":")
    device, function = device_function.split(".")
    return int(domain, 16), int(bus, 16), int(device, 16), int(function, 16)


def parse_lspci(output: str) -> List[Dict[str, Any]]:
    """NVIDIA GPUs in ``lspci -nn -D`` output (also without -D, and -PP bridge paths).

    SR-IOV virtual functions (any function other than device 00, function 0 of a bus)
    share the physical GPU's device ID and are left out; so are NVSwitch bridges.
    """
    found = []
    for line in output.splitlines():
        match = _LSPCI_LINE.match(line.strip())
        if not match or match.group("class_id") not in _GPU_CLASSES:
            continue
        path = match.group("address").split("/")
        domain = path[0].split(":")[0] if path[0].count(":") == 2 else "0000"
        last = path[-1]
        if last.count(":") == 0:  # "-PP" short form "dd.f" keeps the bus of the previous hop
            last = "%s:%s" % (path[-2].split(":")[-2], last)
        address = "%s:%s" % (domain, last if last.count(":") == 1 else last.split(":", 1)[1])
        key = _bus_key(address)
        if key[2:] != (0, 0):
            continue
        description = match.group("description")
        bracket = re.search(r"\[([^\]]+)\]\s*$", description)
        name = bracket.group(1) if bracket else None
        device_id = canonical_device_id("10de:" + match.group("device"))
        model = find(device_id) if device_id else None
        found.append((key, {
            "uuid": None,
            "name": name,
            "model": model.key if model else None,
            "pci_device_id": device_id,
            "pci_bus_id": "%04x:%02x:%02x.%x" % key,
            "memory_mib": model.memory_mib if model else None,
            "mig_capable": model.mig_capable if model else False,
            "mig_mode_current": None,
            "mig_mode_pending": None,
            "mig_devices": [],
        }))
    found.sort(key=lambda item: item[0])
    gpus = []
    for index, (_key, gpu) in enumerate(found):
        gpu["index"] = index  # nvidia-smi numbers GPUs in PCI bus order
        gpus.append(gpu)
    return gpus


def discover(run: Runner, nvidia_smi: Optional[str], lspci: Optional[str]) -> Tuple[Dict[str, Any], List[str]]:
    """Facts from nvidia-smi, else lspci, else nothing; plus warnings. Never raises for a missing tool."""
    warnings: List[str] = []
    if nvidia_smi:
        rc, out, err = run([nvidia_smi, "-q", "-x"])
        if rc == 0:
            try:
                facts = parse_nvidia_smi_xml(out)
                facts["source"] = "nvidia-smi"
                return facts, warnings
            except ValueError as error:
                warnings.append(str(error))
        else:
            # Typical before the driver is loaded: "couldn't communicate with the NVIDIA driver".
            warnings.append("%s -q -x failed (rc=%d): %s" % (nvidia_smi, rc, (err or out).strip()[:300]))
    if lspci:
        rc, out, err = run([lspci, "-nn", "-D"])
        if rc == 0:
            return {"source": "lspci", "driver_version": None, "cuda_version": None, "gpus": parse_lspci(out)}, warnings
        warnings.append("%s -nn -D failed (rc=%d): %s" % (lspci, rc, (err or out).strip()[:300]))
    return {"source": "none", "driver_version": None, "cuda_version": None, "gpus": []}, warnings
