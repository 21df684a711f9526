# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils import manifests
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "inventories"


def objects():
    data = yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())
    return build_plan(data["gpushare_teams"], data["nodes"], backend="dra")["objects"]


def test_one_file_per_kind_in_apply_order_and_round_trip():
    files = manifests.render_files(objects(), by="kind")
    names = list(files)
    assert names == sorted(names)
    assert names[0] == "00-namespace.yaml" and names[-1] == "12-validating-admission-policy-binding.yaml"
    assert names.index("02-resource-flavor.yaml") < names.index("05-cluster-queue.yaml") < \
        names.index("06-local-queue.yaml")
    loaded = [doc for name in names for doc in yaml.safe_load_all(files[name])]
    assert sorted(map(repr, loaded)) == sorted(map(repr, objects()))
    assert all(doc["kind"] == "ClusterQueue" for doc in yaml.safe_load_all(files["05-cluster-queue.yaml"]))
    assert files["00-namespace.yaml"].startswith("---\napiVersion: v1\nkind: Namespace\n")


def test_one_file_per_layer_keeps_kind_order_inside():
    grouped = manifests.group_objects(objects(), by="layer")
    assert list(grouped) == ["0-tenancy.yaml", "1-dra.yaml", "2-kueue.yaml"]
    tenancy = [o["kind"] for o in grouped["0-tenancy.yaml"]]
    assert tenancy[0] == "Namespace" and tenancy[-1] == "ValidatingAdmissionPolicyBinding"
    assert [o["kind"] for o in grouped["1-dra.yaml"]][0] == "DeviceClass"


def test_yaml_is_lint_friendly_and_unknown_kinds_go_last():
    text = manifests.dump_documents([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                      "data": {"list": "a"}, "items": [{"a": 1}]}])
    assert "items:\n  - a: 1\n" in text
    grouped = manifests.group_objects([{"kind": "ConfigMap", "metadata": {"name": "x"}}])
    assert list(grouped) == ["13-config-map.yaml"]


def test_bad_grouping_and_objects_without_kind_are_refused():
    with pytest.raises(ValueError, match="group objects by 'kind' or 'layer'"):
        manifests.group_objects([], by="team")
    with pytest.raises(ValueError, match="object without kind"):
        manifests.group_objects([{"metadata": {"name": "x"}}])
