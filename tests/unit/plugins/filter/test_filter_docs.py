# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every filter is documented the way ansible-doc reads it (plugins/filter/<name>.yml beside the
plugin, or DOCUMENTATION in a plugin file named after its only filter, with the doc fragments it
extends merged in as ansible-doc merges them), its documented options are the function's parameters,
and no documentation is left for a filter that is gone."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
import yaml
from ansible.utils.plugin_docs import add_fragments

FILTER_DIR = Path(__file__).resolve().parents[4] / "plugins" / "filter"
FRAGMENT_DIR = FILTER_DIR.parent / "doc_fragments"
PACKAGE = "ansible_collections.gpushare.cluster.plugins.filter"
COLLECTION = "gpushare.cluster"


class _Fragments:
    """The doc fragment loader ansible-doc uses, for this checkout: gpushare.cluster.<name> is
    plugins/doc_fragments/<name>.py (any other name is unknown, and add_fragments fails on it)."""

    def get(self, name):
        collection, _dot, stem = name.rpartition(".")
        if collection != COLLECTION or not (FRAGMENT_DIR / ("%s.py" % stem)).is_file():
            return None
        module = importlib.import_module("ansible_collections.gpushare.cluster.plugins.doc_fragments.%s" % stem)
        return type(stem, (module.ModuleDocFragment,), {"ansible_name": name})


def _filters():
    found = {}
    for path in sorted(FILTER_DIR.glob("*.py")):
        module = importlib.import_module("%s.%s" % (PACKAGE, path.stem))
        for name, function in module.FilterModule().filters().items():
            assert name not in found, "filter %s defined twice (%s, %s)" % (name, found[name][0], path.name)
            found[name] = (path.name, module, function)
    return found


FILTERS = _filters()


def _docs(name, module):
    yml = FILTER_DIR / ("%s.yml" % name)
    if yml.exists():
        docs = yaml.safe_load(yml.read_text(encoding="utf-8"))
    else:
        assert module.__name__.endswith("." + name), \
            "filter %s: no %s.yml and its file is not %s.py" % (name, name, name)
        yml = FILTER_DIR / ("%s.py" % name)
        docs = {key: yaml.safe_load(getattr(module, key)) for key in ("DOCUMENTATION", "EXAMPLES", "RETURN")}
    add_fragments(docs["DOCUMENTATION"], str(yml), _Fragments())
    return docs


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filter_is_documented(name):
    _file, module, function = FILTERS[name]
    docs = _docs(name, module)
    documentation = docs["DOCUMENTATION"]
    assert documentation["name"] == name
    assert documentation["short_description"] and documentation["description"]
    assert "gpushare.cluster.%s" % name in str(docs["EXAMPLES"])
    assert "_value" in docs["RETURN"]
    options = documentation["options"]
    parameters = list(inspect.signature(function).parameters)
    assert "_input" in options
    # The first parameter is the piped value (_input); the others are documented by their names.
    assert sorted(set(options) - {"_input"}) == sorted(p for p in parameters[1:] if not p.startswith("*")), name
    for option, spec in options.items():
        assert spec.get("description") and spec.get("type"), "%s: option %s lacks description or type" % (name, option)


def test_shared_options_come_from_the_fragment():
    """The fragment's options reach every filter that extends it, and its own options stay."""
    prune_plan = _docs("prune_plan", FILTERS["prune_plan"][1])["DOCUMENTATION"]["options"]
    assert prune_plan["_input"]["type"] == "dict" and prune_plan["role"]["choices"] == ["dra_driver", "kueue", "tenancy"]
    assert "listed" in prune_plan
    prune_kinds = _docs("prune_kinds", FILTERS["prune_kinds"][1])["DOCUMENTATION"]["options"]
    assert prune_kinds["_input"]["choices"] == ["dra_driver", "kueue", "tenancy"]


def test_an_unknown_fragment_is_an_error():
    with pytest.raises(Exception, match="unknown doc_fragment"):
        add_fragments({"extends_documentation_fragment": ["gpushare.cluster.absent"]}, "x.py", _Fragments())


def test_no_documentation_without_a_filter():
    stale = sorted(path.stem for path in FILTER_DIR.glob("*.yml") if path.stem not in FILTERS)
    assert stale == []
