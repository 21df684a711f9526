#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_plan
short_description: Build the whole GPU sharing plan of the cluster
version_added: 0.1.0
description:
  - Builds the C(gpushare_plan) from the inventory and, when given, the GPU facts of the hosts;
    MIG layouts and mig-parted configs per node shape, device-plugin configs, node labels, team
    capacity and limits, every Kubernetes object of the queues, DRA and isolation layers, the
    Kueue Configuration parts, and warnings. The shape is documented in C(docs/plan.md).
  - Runs on the controller with no host access; it never changes anything and supports check mode.
  - Every problem in the inventory is reported at once (and nothing else is returned), each
    naming the host, GPU index and field.
author:
  - gpushare.cluster maintainers (@gpushare)
extends_documentation_fragment:
  - gpushare.cluster.plan_inputs
  - gpushare.cluster.plan_inputs.sharing
  - gpushare.cluster.plan_inputs.cluster
"""

EXAMPLES = r"""
- name: Build the plan on the controller
  gpushare.cluster.cluster_plan:
    teams: "{{ gpushare_teams }}"
    nodes: "{{ dict(groups['workers'] | zip(groups['workers'] | map('extract', hostvars, 'gpushare_gpus'))) }}"
    backend: "{{ gpushare_gpu_backend }}"
    distribution: "{{ gpushare_kubernetes_distribution }}"
    kubernetes_version: "{{ gpushare_kubernetes_version }}"
  delegate_to: localhost
  run_once: true
  register: __plan

- name: Keep it as the gpushare_plan fact
  ansible.builtin.set_fact:
    gpushare_plan: "{{ __plan.plan }}"
"""

RETURN = r"""
plan:
  description: The whole plan (version, backend, distribution, kubernetes_version, cohort, nodes,
    mig_parted, device_plugin_configs, teams, objects, kueue_configuration, oidc, warnings).
  returned: success
  type: dict
errors:
  description: Every problem found in the inventory.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.module_run import planned
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PLAN_INPUT_ARGUMENT_SPEC, build_plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            PLAN_INPUT_ARGUMENT_SPEC,
            distribution=dict(type="str", choices=["microk8s", "kubeadm"], required=True),
            kubernetes_version=dict(type="str", required=True),
            oidc=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    plan = planned(module, build_plan, params["teams"], params["nodes"], gpu_facts=params["gpu_facts"],
                   backend=params["backend"], distribution=params["distribution"],
                   kubernetes_version=params["kubernetes_version"], cohort=params["cohort"],
                   tolerations=params["tolerations"], oidc=params["oidc"])
    module.exit_json(changed=False, plan=plan)


if __name__ == "__main__":
    main()
