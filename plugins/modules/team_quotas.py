#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: team_quotas
short_description: Compute team GPU quotas and the Kueue, DRA and isolation objects that enforce them
version_added: 0.1.0
description:
  - From the teams and the GPUs of every node, computes what each team owns and the Kubernetes
    objects that make Kueue (v0.19, C(kueue.x-k8s.io/v1beta2)) enforce it, plus the team
    isolation objects.
  - Objects returned are Namespaces labelled with their team, ResourceFlavors, one Cohort, one
    ClusterQueue per team, a LocalQueue per team namespace, WorkloadPriorityClasses, a Role and
    RoleBinding per team namespace and ValidatingAdmissionPolicies with their bindings; with the
    C(dra) backend also DeviceClasses, ResourceClaimTemplates and the ResourceClaims of shared GPUs.
  - For every flavor and resource, the nominal quotas add up exactly to the capacity in the
    inventory; every team reclaims what it lent from any borrower (C(reclaimWithinCohort=Any)) and a
    borrowing workload may preempt only lower-priority borrowers (C(borrowWithinCohort=LowerPriority));
    a ClusterQueue admits only its own team's namespaces.
  - Pure computation with no host access; it never changes anything and supports check mode.
  - Every problem in the input is reported at once, each naming the host, GPU index and field.
author:
  - gpushare.cluster maintainers (@gpushare)
extends_documentation_fragment:
  - gpushare.cluster.plan_inputs
  - gpushare.cluster.plan_inputs.sharing
"""

EXAMPLES = r"""
- name: Compute team quotas for the four-GPU server
  gpushare.cluster.team_quotas:
    teams: "{{ gpushare_teams }}"
    nodes:
      gpu1: "{{ hostvars['gpu1'].gpushare_gpus }}"
    backend: dra
  register: quotas

- name: Show what each team owns
  ansible.builtin.debug:
    var: quotas.capacity
"""

RETURN = r"""
capacity:
  description: Team name to quota resource to the number of units the team owns.
  returned: success
  type: dict
  sample: {"production": {"gpushare.io/rtx-pro-6000": 1, "gpushare.io/rtx-pro-6000-mig-1g.24gb": 4}}
objects:
  description: Kubernetes objects (dicts with apiVersion, kind, metadata ...), in apply order by kind.
  returned: success
  type: list
  elements: dict
kueue_configuration:
  description: The parts of the Kueue Configuration the objects need (C(resources), C(managedJobsNamespaceSelector)).
  returned: success
  type: dict
  sample: {"resources": {"quotaCheckStrategy": "IgnoreUndeclared", "deviceClassMappings": []}}
warnings_list:
  description: Things the user should know about the plan (also emitted as warnings).
  returned: success
  type: list
  elements: str
errors:
  description: Every problem found in the input.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.planner.module_run import planned
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PLAN_INPUT_ARGUMENT_SPEC, team_quotas


def main():
    module = AnsibleModule(
        argument_spec=dict(PLAN_INPUT_ARGUMENT_SPEC),
        supports_check_mode=True,
    )
    params = module.params
    result = planned(module, team_quotas, params["teams"], params["nodes"], backend=params["backend"],
                     cohort=params["cohort"], gpu_facts=params["gpu_facts"], tolerations=params["tolerations"])
    module.exit_json(changed=False, capacity=result["capacity"], objects=result["objects"],
                     kueue_configuration=result["kueue_configuration"], warnings_list=result["warnings"])


if __name__ == "__main__":
    main()
