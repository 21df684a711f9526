#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_layout
short_description: Plan valid MIG layouts for the GPUs of one node
version_added: 0.1.0
description:
  - Pure planner, touches no host. From the inventory entries of one node's GPUs it
    computes, for every GPU with C(use=mig), GPU instances whose profiles and placements are
    valid on that GPU model, and a complete mig-parted configuration that NVIDIA MIG Manager
    applies.
  - For C(mig.instances) (needs), it picks for each need the smallest profile whose real
    usable memory and compute slices hold it; larger profiles are tried only when the
    smallest ones cannot be placed together. The search is exhaustive, so a layout is found
    whenever one exists. With C(fill=true) (the default) free slices become extra instances
    of the smallest profile.
  - For C(mig.profiles) (explicit counts) the layout is placed exactly as asked or rejected.
  - Fails with one message naming host, GPU index, model, field and reason for every bad
    entry of the node.
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  gpus:
    description:
      - The node's GPU entries as in C(gpushare_gpus), one per index (expand C(count)
        shorthand first).
      - Each entry has C(index) (int), C(model) (catalog key, product name or PCI device ID),
        C(use) (C(whole), C(mig) or C(shared); default C(whole)) and, for C(use=mig), C(mig)
        with either C(instances) (list of C(name), C(memory), optional C(compute) and
        C(media)) and optional C(fill), or C(profiles) (profile name to count).
      - Other keys (C(team), C(replicas), ...) are ignored.
    type: list
    elements: dict
    required: true
  config_name:
    description:
      - Name of the layout in the returned mig-parted config; the value for the node label
        C(nvidia.com/mig.config).
    type: str
    required: true
  host:
    description:
      - Host name used in messages.
    type: str
extends_documentation_fragment:
  - gpushare.cluster.read_only
seealso:
  - module: gpushare.cluster.gpu_facts
"""

EXAMPLES = r"""
- name: Plan the MIG layout of this node
  gpushare.cluster.mig_layout:
    gpus: "{{ gpushare_gpus }}"
    config_name: "gpushare-{{ inventory_hostname }}"
    host: "{{ inventory_hostname }}"
  delegate_to: localhost
  register: __layout

- name: Explicit profiles
  gpushare.cluster.mig_layout:
    gpus:
      - index: 0
        model: H100-80GB
        use: mig
        mig:
          profiles: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}
    config_name: custom
  delegate_to: localhost
"""

RETURN = r"""
gpus:
  description: Per GPU, sorted by index; instances in creation order (largest first).
  returned: success
  type: list
  elements: dict
  sample:
    - index: 1
      model: RTX-PRO-6000
      mig_enabled: true
      instances:
        - {profile: 1g.24gb, start: 0, size: 3, memory_mib: 24192, name: embeddings}
        - {profile: 1g.24gb, start: 9, size: 3, memory_mib: 24192, name: null}
mig_parted:
  description:
    - A complete mig-parted config, C(version=v1), one spec per MIG-capable GPU with
      C(devices=[index]) and C(device-filter) set to the model's PCI device IDs. GPUs
      without MIG support get no spec, so mig-parted leaves them alone; a node without
      any MIG-capable GPU gets an empty C(mig-configs).
  returned: success
  type: dict
  sample:
    version: v1
    mig-configs:
      gpushare-gpu1:
        - device-filter: ["0x2BB510DE"]
          devices: [0]
          mig-enabled: false
        - device-filter: ["0x2BB510DE"]
          devices: [1]
          mig-enabled: true
          mig-devices: {"1g.24gb": 4}
mig_warnings:
  description: Layouts resting on unconfirmed geometry, upgraded needs, driver requirements.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu.mig_solver import plan_node_layout


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type="list", elements="dict", required=True),
            config_name=dict(type="str", required=True),
            host=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    try:
        result = plan_node_layout(module.params["gpus"], module.params["config_name"], host=module.params["host"])
    except ValueError as error:
        module.fail_json(msg=str(error))
    for warning in result["warnings"]:
        module.warn(warning)
    module.exit_json(changed=False, gpus=result["gpus"], mig_parted=result["mig_parted"],
                     mig_warnings=result["warnings"])


if __name__ == "__main__":
    main()
