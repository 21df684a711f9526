#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Discover the NVIDIA GPUs of a host
version_added: 0.1.0
description:
  - Reads C(nvidia-smi -q -x) when the NVIDIA driver is present, otherwise C(lspci -nn -D)
    (vendor 10de, VGA and 3D controller classes), and maps every GPU to the collection's
    GPU catalog by PCI device ID or product name.
  - Never changes the host. A missing C(nvidia-smi) or C(lspci) is not an error; when
    neither gives an answer the facts say C(source=none) and list no GPU.
  - GPU indices follow nvidia-smi's order (PCI bus order), the order MIG Manager and the
    device plugin use. From lspci, SR-IOV virtual functions and NVSwitch bridges are left out.
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  nvidia_smi_path:
    description:
      - Path of C(nvidia-smi). Searched on C(PATH) when not given.
    type: path
  lspci_path:
    description:
      - Path of C(lspci). Searched on C(PATH), C(/usr/sbin) and C(/sbin) when not given.
    type: path
extends_documentation_fragment:
  - gpushare.cluster.read_only
attributes:
  facts:
    description: Sets C(ansible_facts.gpushare_gpu_facts).
    support: full
notes:
  - Runs on the managed host; needs Python 3.8 or newer there.
"""

EXAMPLES = r"""
- name: Discover GPUs
  gpushare.cluster.gpu_facts:

- name: Show the models found
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpushare_gpu_facts.gpus | map(attribute='model') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts about the host's NVIDIA GPUs.
  returned: always
  type: dict
  contains:
    gpushare_gpu_facts:
      description: What was found and where it came from.
      returned: always
      type: dict
      contains:
        source:
          description: C(nvidia-smi), C(lspci) or C(none).
          type: str
          sample: nvidia-smi
        driver_version:
          description: NVIDIA driver version, null without nvidia-smi.
          type: str
          sample: "580.105.08"
        cuda_version:
          description: CUDA version the driver supports, null without nvidia-smi.
          type: str
          sample: "13.0"
        gpus:
          description: One entry per GPU, in nvidia-smi index order.
          type: list
          elements: dict
          sample:
            - index: 0
              uuid: GPU-00000000-0000-0000-0000-000000000000
              name: NVIDIA H100 80GB HBM3
              model: H100-80GB
              pci_device_id: "0x233010DE"
              pci_bus_id: "00000000:53:00.0"
              memory_mib: 81559
              mig_capable: true
              mig_mode_current: false
              mig_mode_pending: false
              mig_devices: []
discovery_warnings:
  description:
    - Why a tool was skipped, for example nvidia-smi failing before the driver is loaded.
      The same texts are also issued as Ansible warnings.
  returned: always
  type: list
  elements: str
  sample: []
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.discovery import discover


def _tool(module, given, name, extra_dirs):
    """The tool's path, or None (with a warning when a given path is unusable)."""
    if given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return given
        module.warn("%s not found at %s; skipping it" % (name, given))
        return None
    return module.get_bin_path(name, opt_dirs=extra_dirs)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            lspci_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    nvidia_smi = _tool(module, module.params["nvidia_smi_path"], "nvidia-smi", [])
    lspci = _tool(module, module.params["lspci_path"], "lspci", ["/usr/sbin", "/sbin"])

    def run(argv):
        # Read-only queries: safe, and needed, in check mode too.
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    facts, warnings = discover(run, nvidia_smi, lspci)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"gpushare_gpu_facts": facts}, discovery_warnings=warnings)


if __name__ == "__main__":
    main()
