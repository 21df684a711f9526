# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_list's own logic: one result per query, in order, shaped like a k8s_info loop. Its lookups
against a real API server are in tests/integration/rehearsal (test_plan_compare, test_day_two)."""
from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.modules import k8s_list


class Service:
    """Answers as K8sService.find answers: a kind it does not serve has api_found false."""

    def __init__(self, served):
        self.served, self.asked = served, []

    def find(self, kind, api_version, **selection):
        self.asked.append((kind, api_version, selection))
        if kind not in self.served:
            return {"resources": [], "api_found": False, "msg": "Failed to find API for resource"}
        return {"resources": self.served[kind], "api_found": True}


def _query(kind, **more):
    return {"api_version": "v1", "kind": kind, "namespace": None, "label_selectors": [], "field_selectors": [], **more}


def test_every_query_is_answered_in_order_as_a_k8s_info_loop_would_be():
    pods = [{"metadata": {"name": "p"}}]
    service = Service({"Namespace": [], "Pod": pods})
    queries = [_query("Pod", namespace="data", field_selectors=["spec.nodeName=gpu-1"]), _query("Workload"),
               _query("Namespace", label_selectors=["a=b"])]
    results = k8s_list.list_all(service, queries)
    assert [r["item"] for r in results] == queries
    assert [(r["resources"], r["api_found"]) for r in results] == [(pods, True), ([], False), ([], True)]
    assert service.asked == [
        ("Pod", "v1", {"namespace": "data", "label_selectors": [], "field_selectors": ["spec.nodeName=gpu-1"]}),
        ("Workload", "v1", {"namespace": None, "label_selectors": [], "field_selectors": []}),
        ("Namespace", "v1", {"namespace": None, "label_selectors": ["a=b"], "field_selectors": []})]


def test_the_options_are_kubernetes_core_s_authentication_and_the_queries():
    spec = k8s_list.argument_spec()
    assert {"kubeconfig", "context", "host", "api_key"} <= set(spec)
    assert spec["queries"]["options"]["kind"]["required"] is True
    assert spec["queries"]["options"]["api_version"]["default"] == "v1"
