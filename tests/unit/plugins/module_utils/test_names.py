# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""names: valid, unique and stable Kubernetes names, and the planner's objects that use them."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.render import examples as example_workloads
from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils._common import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

# The rules as Kubernetes v1.35.4 writes them (apimachinery/pkg/util/validation/validation.go).
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
TEAMS = [{"name": "production", "namespaces": ["production"], "priority": 100},
         {"name": "data", "namespaces": ["data"], "priority": 10}]
TEXT = st.text(min_size=1, max_size=120)


@settings(max_examples=400)
@given(st.lists(TEXT, min_size=1, max_size=3))
def test_a_label_is_always_valid_and_stable(parts):
    name = names.dns_label(*parts)
    assert len(name) <= 63 and LABEL.match(name), name
    assert name.isascii()
    assert names.dns_label(*parts) == name


@settings(max_examples=400)
@given(TEXT, TEXT)
def test_different_texts_never_share_a_label(first, second):
    if first != second:
        assert names.dns_label(first) != names.dns_label(second)


@given(st.lists(TEXT, min_size=1, max_size=4))
def test_a_subdomain_is_always_valid(parts):
    name = names.dns_subdomain(*parts)
    assert len(name) <= 253 and SUBDOMAIN.match(name), name


def test_valid_names_are_kept_and_others_get_a_hash():
    assert names.dns_label("shared", "gpu1", "gpu2") == "shared-gpu1-gpu2"
    assert names.dns_label("model_a") == "model-a-%s" % names.short_hash("model_a")
    assert len({names.dns_label(text) for text in ("model_a", "Model-A", "model-a")}) == 3
    assert names.dns_label("Überwachung") == "berwachung-%s" % names.short_hash("Überwachung")
    assert names.dns_label("日本") == "x-%s" % names.short_hash("日本")
    # The hash is of the text itself: the same on every run and every Python.
    assert names.short_hash("model_a") == __import__("hashlib").sha256(b"model_a").hexdigest()[:8]


def test_node_names_are_what_the_kubelet_registers():
    assert names.node_name("GPU1.Example.COM") == "gpu1"
    assert names.node_name("gpu1", "rack2-gpu1") == "rack2-gpu1"
    assert names.node_name_error("gpu_1", "gpu_1").startswith("host gpu_1, field node name: 'gpu_1' is not")
    assert names.node_name_error("gpu1", "gpu1") is None


def _plan(nodes, backend="dra"):
    return build_plan(TEAMS, nodes, backend=backend, distribution="microk8s", kubernetes_version="1.35")


def _objects(plan):
    return plan["objects"] + example_workloads.build_examples(plan) + helm_values.node_objects(plan)


def _assert_valid_and_unique(objects):
    keys = [(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]) for obj in objects]
    assert len(keys) == len(set(keys)), sorted(keys)
    for kind, _namespace, name in keys:
        assert len(name) <= 253 and SUBDOMAIN.match(name), (kind, name)


def test_two_shared_gpus_of_a_long_host_name_get_two_claims():
    host = "gpu-" + "x" * 70
    plan = _plan({host: [{"index": 0, "model": "L40S", "team": "data", "use": "shared", "replicas": 2},
                         {"index": 1, "model": "L40S", "team": "data", "use": "shared", "replicas": 2}]})
    claims = [obj["metadata"]["name"] for obj in plan["objects"] if obj["kind"] == "ResourceClaim"]
    assert len(claims) == len(set(claims)) == 2
    assert all(len(name) <= 63 and LABEL.match(name) for name in claims)
    _assert_valid_and_unique(_objects(plan))


def test_hosts_that_differ_after_sixty_characters_get_their_own_claims():
    stem = "gpu-" + "a" * 60
    shared = [{"index": 0, "model": "L40S", "team": "data", "use": "shared", "replicas": 2}]
    plan = _plan({stem + "-one": shared, stem + "-two": shared})
    claims = {obj["metadata"]["name"] for obj in plan["objects"] if obj["kind"] == "ResourceClaim"}
    assert len(claims) == 2


def test_mig_needs_that_clean_to_one_name_give_two_deployments():
    mig = {"instances": [{"name": "model_a", "memory": "10GiB"}, {"name": "Model-A", "memory": "10GiB"}]}
    plan = _plan({"gpu1": [{"index": 0, "model": "H100-80GB", "team": "production", "use": "mig", "mig": mig}]})
    deployments = [obj["metadata"]["name"] for obj in example_workloads.build_examples(plan)
                   if obj["kind"] == "Deployment"]
    assert len(deployments) == len(set(deployments)) == 2
    _assert_valid_and_unique(_objects(plan))


def test_node_label_manifests_name_the_node_in_lower_case():
    plan = _plan({"GPU1": [{"index": 0, "model": "L40S", "team": "data", "use": "whole"}]})
    assert [obj["metadata"]["name"] for obj in helm_values.node_objects(plan)] == ["gpu1"]


def _valid_node_names(hosts):
    return all(names.is_dns_subdomain(names.node_name(host)) for host in hosts)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcXYZ_.-é0123456789", min_size=1, max_size=80), min_size=1, max_size=4,
                unique_by=names.node_name).filter(_valid_node_names),
       st.sampled_from(["dra", "device_plugin"]))
def test_every_generated_object_has_a_valid_unique_name(hosts, backend):
    gpus = [{"index": 0, "model": "H100-80GB", "team": "production", "use": "mig",
             "mig": {"instances": [{"name": "Serve_Ä", "memory": "10GiB"}, {"name": "serve-ä", "memory": "10GiB"}]}},
            {"index": 1, "model": "H100-80GB", "team": "data", "use": "shared", "replicas": 3}]
    plan = _plan({host: gpus for host in hosts}, backend)
    _assert_valid_and_unique(_objects(plan))


def test_relabel_steps_compare_the_nodes_by_their_node_names():
    plan = _plan({"GPU1.example.com": [{"index": 0, "model": "L40S", "team": "data", "use": "whole"}]})
    [step] = helm_values.relabel_steps(plan, {"gpu1": {}})
    assert step["node"] == "gpu1"
