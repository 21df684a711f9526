# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prune_plan filter: what applying a plan deletes (plugins/module_utils/changes/prune.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: prune_plan
short_description: The collection's objects a plan no longer holds, in deletion order, and what is refused
version_added: 0.1.0
description:
  - Given the plan and the live objects of one add-on role's kinds (read with M(gpushare.cluster.k8s_list),
    label selector C(app.kubernetes.io/managed-by=gpushare.cluster)), returns the objects to delete with
    M(kubernetes.core.k8s) C(state=absent), in a safe order, and the deletions refused because they would
    disrupt running work.
  - Only objects labelled C(app.kubernetes.io/managed-by=gpushare.cluster) are ever returned; an object
    without that label is never deleted, whatever its name.
  - "Order: admission policy bindings and policies, RBAC, namespace boundaries, ResourceClaims,
    ResourceClaimTemplates, DeviceClasses, ClusterQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses,
    LocalQueues, and Namespaces last (docs/operations.md)."
  - "Refused unless O(confirm): a LocalQueue or ClusterQueue that admitted or pending Workloads use, and
    every other object of that team; a Namespace that still holds Workloads or running Pods; a
    ResourceClaim reserved by pods."
  - Objects already being deleted (C(deletionTimestamp)) are left alone, so a second run changes nothing.
extends_documentation_fragment:
  - gpushare.cluster.plan_filters
options:
  listed:
    description:
      - The live objects, as the RV(gpushare.cluster.k8s_list#module:results) of P(gpushare.cluster.prune_kinds#filter)
        (or the results of M(kubernetes.core.k8s_info) looped over them, or plain objects).
      - Items without C(kind) take the kind of their loop item.
    type: list
    elements: dict
    required: true
  workloads:
    description: The cluster's Kueue Workloads (a M(kubernetes.core.k8s_info) result or objects).
    type: list
    elements: dict
    default: []
  pods:
    description: The Pods of the namespaces to delete (the C(namespaces) of an earlier call).
    type: list
    elements: dict
    default: []
  confirm:
    description: C(gpushare_confirm_disruptive); true deletes what would be refused, and reports it as C(confirmed).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: List the collection's objects of the role's kinds, in one module process
  gpushare.cluster.k8s_list:
    queries: "{{ 'kueue' | gpushare.cluster.prune_kinds }}"
  register: listed

- name: Work out what to delete
  ansible.builtin.set_fact:
    prune: "{{ gpushare_plan | gpushare.cluster.prune_plan('kueue', listed.results, confirm=false) }}"

- name: Delete what the plan no longer holds
  kubernetes.core.k8s:
    api_version: "{{ item.api_version }}"
    kind: "{{ item.kind }}"
    name: "{{ item.name }}"
    namespace: "{{ item.namespace or omit }}"
    state: absent
  loop: "{{ prune.delete }}"
  when: prune.refused | length == 0
"""

RETURN = r"""
_value:
  description: What to delete and what is refused.
  type: dict
  contains:
    delete:
      description: "Objects to delete, in order: C(api_version), C(kind), C(name), C(namespace) (null when
        cluster-scoped), C(generation) (the plan generation that wrote it) and C(where) (C(Kind ns/name))."
      type: list
      elements: dict
    delete_objects:
      description: The objects of C(delete), in the same order, as C(apiVersion), C(kind) and C(metadata)
        (C(name), C(namespace) when namespaced), for one M(kubernetes.core.k8s) call with C(state=absent).
      type: list
      elements: dict
    namespaces:
      description: Names of the Namespaces in C(delete), whose Pods the caller lists for a second call.
      type: list
      elements: str
    terminating:
      description: Objects the plan no longer holds that are already being deleted (C(Kind ns/name)).
      type: list
      elements: str
    refused:
      description: One sentence per refused deletion; empty with O(confirm).
      type: list
      elements: str
    confirmed:
      description: With O(confirm), what would have been refused and is deleted anyway.
      type: list
      elements: str
    message:
      description: The failure to print when C(refused) is not empty (names the confirmation variable), else empty.
      type: str
"""

from ansible_collections.gpushare.cluster.plugins.module_utils.changes import prune
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def prune_plan(plan, role, listed, workloads=None, pods=None, confirm=False):
    return prune.prune_role(plan, role, list(listed or []), list(workloads or []), list(pods or []), bool(confirm))


class FilterModule:
    """gpushare.cluster prune_plan filter."""

    def filters(self):
        return {
            "prune_plan": _wrap(prune_plan),
        }
