# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan_objects filter: the plan's objects one add-on role applies (plugins/module_utils/render/helm_values.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: plan_objects
short_description: The plan's Kubernetes objects that one add-on role applies
version_added: 0.1.0
description:
  - The objects of C(gpushare_plan.objects) whose kind the role applies, in the plan's order (the order they
    are applied in).
  - The objects are the plan's own, not copies; read them, do not change them.
  - Fails naming the field when the plan is missing or empty, lacks C(version), C(backend), C(distribution) or
    C(nodes), or holds an item that is not a Kubernetes object.
extends_documentation_fragment:
  - gpushare.cluster.plan_filters
"""

EXAMPLES = r"""
- name: Apply the plan's Kueue objects
  kubernetes.core.k8s:
    definition: "{{ item }}"
    apply: true
  loop: "{{ gpushare_plan | gpushare.cluster.plan_objects('kueue') }}"
"""

RETURN = r"""
_value:
  description: Kubernetes objects (C(apiVersion), C(kind), C(metadata), ...), in the plan's order.
  type: list
  elements: dict
"""

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


class FilterModule:
    """gpushare.cluster plan_objects filter."""

    def filters(self):
        return {"plan_objects": _wrap(helm_values.objects_for)}
