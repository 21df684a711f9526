# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast YAML writer gives the same bytes as the pure-Python one, and reads back as the data."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.module_utils._common import yaml_text
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"


def load(name):
    return yaml.safe_load((FIXTURES / name).read_text())


pytestmark = pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False),
                                reason="libyaml is not built into PyYAML here: only the pure-Python writer runs")

KEYS = st.text(alphabet="abcxyz-_./:* 'éQ", min_size=1, max_size=8)
SCALARS = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
           | st.text(alphabet="ab :-#|>'\"\n\t{}[],&*!%@`é\u2028", max_size=24)
           | st.sampled_from(["yes", "no", "on", "null", "~", "1.5", "0x1F", "- a", "a: b", "|", "- |\n  x", " lead",
                              "trail ", "line\n", "two\nlines\n", "\n", "tab\there", "a:\n- b\n"]))
DATA = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=30)
# Values files and manifests are mappings (lists for completeness); a bare scalar is no document here.
DOCUMENTS = st.dictionaries(KEYS, DATA, max_size=5) | st.lists(DATA, max_size=4)


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_fast_writer_gives_the_pure_writers_bytes(data):
    assert yaml_text.dump(data) == yaml_text.dump_pure(data)


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_written_text_reads_back_as_the_data(data):
    assert yaml.safe_load(yaml_text.dump(data)) == data


def test_lists_are_indented_under_their_key_and_text_blocks_kept():
    data = {"spec": {"containers": [{"name": "a", "args": ["--x", "--y"], "script": "set -e\n- not a list\nrun:\n"}],
                     "nested": [[1, 2], {"k": ["v"]}]}}
    text = yaml_text.dump(data)
    assert text == (
        "spec:\n"
        "  containers:\n"
        "    - name: a\n"
        "      args:\n"
        "        - --x\n"
        "        - --y\n"
        "      script: |\n"
        "        set -e\n"
        "        - not a list\n"
        "        run:\n"
        "  nested:\n"
        "    - - 1\n"
        "      - 2\n"
        "    - k:\n"
        "        - v\n")
    assert yaml.safe_load(text) == data


def test_long_expressions_stay_on_one_line():
    expression = " && ".join("device.attributes['gpu.nvidia.com'].x%d == 'value'" % n for n in range(20))
    text = yaml_text.dump({"cel": {"expression": expression}})
    assert text.splitlines()[1] == "  expression: " + expression


@pytest.mark.parametrize(("fixture", "backend"), [
    ("four_gpu_example.yml", "dra"),
    ("four_gpu_example.yml", "device_plugin"),
    ("fleet_device_plugin.yml", "device_plugin"),
])
def test_every_object_of_a_real_plan_is_written_as_the_pure_writer_does(fixture, backend):
    data = load(fixture)
    plan = build_plan(data["gpushare_teams"], data["nodes"], backend=backend, distribution="kubeadm",
                      kubernetes_version="1.35")
    documents = list(plan["objects"]) + helm_values.node_objects(plan) + [plan["mig_parted"]]
    assert documents
    for document in documents:
        assert yaml_text.dump(document) == yaml_text.dump_pure(document)
    assert yaml_text.dump_documents(documents).count("---\n") == len(documents)
