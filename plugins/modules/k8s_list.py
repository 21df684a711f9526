#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_list
short_description: List the objects of several kinds with one Kubernetes API client
version_added: 0.1.0
description:
  - Lists the objects of every query in O(queries), in order, with one API client, and returns one result per
    query shaped like a registered loop of M(kubernetes.core.k8s_info) (RV(results[].item),
    RV(results[].resources), RV(results[].api_found)), so filters written for such a loop read it unchanged.
  - A loop of M(kubernetes.core.k8s_info) starts one module process per kind, each importing the Kubernetes
    client and discovering the API again; the prune of the C(tenancy) role lists twelve kinds, so this module
    is the difference between twelve of those start-ups and one.
  - Each query goes through the lookup of M(kubernetes.core.k8s_info) (C(K8sService.find) of kubernetes.core), so a
    kind the server does not serve gives RV(results[].api_found=false) and no objects, not an error.
  - Only reads; check mode lists the same objects.
  - Not part of the C(kubernetes.core.k8s) module defaults group; pass O(kubeconfig) (or another
    authentication option) on the task.
author:
  - gpushare.cluster maintainers (@gpushare)
attributes:
  check_mode:
    description: Only reads, so check mode returns the same objects.
    support: full
  diff_mode:
    description: Nothing changes, so there is no diff.
    support: none
options:
  queries:
    description: What to list, one entry per kind; the results keep this order.
    type: list
    elements: dict
    required: true
    suboptions:
      api_version:
        description: API group and version of the kind, for example V(kueue.x-k8s.io/v1beta2).
        type: str
        default: v1
      kind:
        description: The kind to list, for example V(ClusterQueue).
        type: str
        required: true
      namespace:
        description: Only this namespace; all namespaces (or a cluster-scoped kind) when not set.
        type: str
      label_selectors:
        description: Label selectors every listed object matches, for example V(app.kubernetes.io/managed-by=gpushare.cluster).
        type: list
        elements: str
        default: []
      field_selectors:
        description: Field selectors every listed object matches, for example V(spec.nodeName=gpu-1).
        type: list
        elements: str
        default: []
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
requirements:
  - kubernetes >= 24.2.0
  - PyYAML >= 3.11
seealso:
  - module: kubernetes.core.k8s_info
  - ref: gpushare.cluster.prune_plan filter <ansible_collections.gpushare.cluster.prune_plan_filter>
    description: Reads the RV(results) of this module as it reads a loop of M(kubernetes.core.k8s_info).
"""

EXAMPLES = r"""
- name: List the collection's Kueue objects and every Workload with one client
  gpushare.cluster.k8s_list:
    kubeconfig: /etc/gpushare/admin.conf
    queries:
      - api_version: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        label_selectors:
          - app.kubernetes.io/managed-by=gpushare.cluster
      - api_version: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        label_selectors:
          - app.kubernetes.io/managed-by=gpushare.cluster
      - api_version: kueue.x-k8s.io/v1beta2
        kind: Workload
  register: listed

- name: Show how many objects of each kind there are
  ansible.builtin.debug:
    msg: "{{ item.item.kind }}: {{ item.resources | length }}"
  loop: "{{ listed.results }}"
  loop_control:
    label: "{{ item.item.kind }}"
"""

RETURN = r"""
results:
  description: One entry per query, in the order of O(queries).
  returned: success
  type: list
  elements: dict
  contains:
    item:
      description: The query, with its defaults filled in.
      type: dict
      returned: always
      sample: {"api_version": "v1", "kind": "Namespace", "namespace": null, "label_selectors": [], "field_selectors": []}
    resources:
      description: The objects listed, as the API server returned them.
      type: list
      elements: dict
      returned: always
    api_found:
      description: Whether the server serves the kind at that API version.
      type: bool
      returned: always
"""

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import K8sService

QUERY_SPEC = {
    "api_version": {"type": "str", "default": "v1"},
    "kind": {"type": "str", "required": True},
    "namespace": {"type": "str"},
    "label_selectors": {"type": "list", "elements": "str", "default": []},
    "field_selectors": {"type": "list", "elements": "str", "default": []},
}


def argument_spec():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec["queries"] = {"type": "list", "elements": "dict", "required": True, "options": QUERY_SPEC}
    return spec


def list_all(service, queries):
    """One k8s_info-shaped result per query, all through the same client."""
    results = []
    for query in queries:
        found = service.find(query["kind"], query["api_version"], namespace=query["namespace"],
                             label_selectors=query["label_selectors"], field_selectors=query["field_selectors"])
        results.append({"item": query, "resources": found.get("resources", []),
                        "api_found": found.get("api_found", True)})
    return results


def main():
    module = AnsibleK8SModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        service = K8sService(get_api_client(module), module)
        module.exit_json(changed=False, results=list_all(service, module.params["queries"]))
    except CoreException as error:
        module.fail_from_exception(error)


if __name__ == "__main__":
    main()
