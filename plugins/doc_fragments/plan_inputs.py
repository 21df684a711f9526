# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options shared by the planner modules.

DOCUMENTATION: the inventory's teams and GPUs (cluster_plan, team_quotas).
SHARING: how GPUs are shared and queued (cluster_plan, team_quotas, plan_report).
CLUSTER: the Kubernetes the plan is for (cluster_plan).
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  teams:
    description:
      - The teams, as in C(gpushare_teams).
      - Each item has C(name), C(namespaces), C(priority) and optionally C(group), C(borrow),
        C(lend), C(cpu), C(memory) (see C(docs/quotas.md)) and C(namespace_quota) (see C(docs/security.md)).
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - Host name to the list of its GPU entries, as in the hosts' C(gpushare_gpus); hosts
        without GPUs may be left out.
    type: dict
    required: true
  gpu_facts:
    description:
      - Host name to its C(gpushare_gpu_facts) (from M(gpushare.cluster.gpu_facts)); used to fill in
        models left out of the inventory and the UUIDs that pin shared GPUs.
    type: dict
  tolerations:
    description:
      - Tolerations added to every GPU ResourceFlavor, for GPU nodes with taints.
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    description: Can run in check mode and return the same result.
    support: full
  diff_mode:
    description: Nothing is changed, so there is nothing to diff.
    support: none
"""

    SHARING = r"""
options:
  backend:
    description:
      - How GPUs reach pods (C(gpushare_gpu_backend)).
    type: str
    choices: [dra, device_plugin]
    default: dra
  cohort:
    description:
      - Name of the Kueue Cohort every team queue belongs to.
    type: str
    default: gpushare
"""

    CLUSTER = r"""
options:
  distribution:
    description:
      - Kubernetes distribution (C(gpushare_kubernetes_distribution)); the inventory must set it.
    type: str
    choices: [microk8s, kubeadm]
    required: true
  kubernetes_version:
    description:
      - Kubernetes version (C(gpushare_kubernetes_version)), 1.34 to 1.36; the inventory must set it.
      - A patch version (C(1.35.0)) is accepted; the plan records its minor (C(1.35)).
    type: str
    required: true
  oidc:
    description:
      - The identity provider the API server accepts tokens of (C(gpushare_oidc)), with C(issuer_url),
        C(client_id), C(username_claim), C(groups_claim), C(username_prefix), C(groups_prefix) and C(ca_file).
      - Team RoleBindings then name C(groups_prefix) + the team's C(group); empty means no identity provider.
    type: dict
    default: {}
"""
