# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kinds an add-on role lists before it prunes (plugins/module_utils/changes/prune.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: prune_kinds
short_description: The kinds an add-on role lists before it prunes
version_added: 0.1.0
description:
  - The C(api_version) and C(kind) of every kind the role applies from the plan, then C(ClusterQueue) and
    C(LocalQueue), which every role reads to judge whether a deletion would leave workloads without a queue.
  - List them with M(gpushare.cluster.k8s_list) (one module process for every kind; a loop of
    M(kubernetes.core.k8s_info) gives the same results) and pass the results to P(gpushare.cluster.prune_plan#filter).
extends_documentation_fragment:
  - gpushare.cluster.plan_filters.role
"""

EXAMPLES = r"""
# The whole sequence (list these kinds with gpushare.cluster.k8s_list, then prune) is the example of
# gpushare.cluster.prune_plan.
- name: Show which kinds the tenancy role reads before it prunes
  ansible.builtin.debug:
    msg: "{{ 'tenancy' | gpushare.cluster.prune_kinds | map(attribute='kind') | list }}"
"""

RETURN = r"""
_value:
  description: "C({api_version, kind, label_selectors}) per kind, the role's own first; the selector keeps the
    listing to the collection's objects (C(app.kubernetes.io/managed-by=gpushare.cluster))."
  type: list
  elements: dict
"""

from ansible_collections.gpushare.cluster.plugins.module_utils.changes import prune
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


class FilterModule:
    """gpushare.cluster prune_kinds filter."""

    def filters(self):
        return {"prune_kinds": _wrap(prune.list_kinds)}
