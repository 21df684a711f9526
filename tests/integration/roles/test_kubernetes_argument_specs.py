"""Every default of the Kubernetes roles is declared, with the same default, in every entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
ENTRY_POINTS = {
    "kubeadm": {"main", "render", "upgrade", "reset", "backup"},
    "microk8s": {"main", "render", "upgrade", "reset"},
    "kubernetes_common": {"main", "helm"},
}


@pytest.mark.parametrize("role", sorted(ENTRY_POINTS))
def test_argument_specs_cover_defaults(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert set(specs) == ENTRY_POINTS[role]
    for entry, spec in specs.items():
        options = spec["options"]
        missing = set(defaults) - set(options)
        assert not missing, f"{role}/{entry}: defaults without argument spec: {sorted(missing)}"
        for name, value in defaults.items():
            assert options[name].get("description"), f"{role}/{entry}: {name} has no description"
            if "default" in options[name]:
                assert options[name]["default"] == value, f"{role}/{entry}: {name} default differs"
            else:
                assert isinstance(value, str) and "{{" in value, f"{role}/{entry}: {name} has no default in the spec"
        for name in set(options) - set(defaults):
            assert name.startswith(("gpushare_", "__kubernetes_common_")) or name == "kubernetes_common_cluster_hosts" \
                or name in defaults, f"{role}/{entry}: {name} declared but not a default or inventory variable"


@pytest.mark.parametrize("role", ["kubeadm", "microk8s"])
def test_every_option_has_its_own_description(role):
    """docs/inventory.md and ansible-doc show these one variable at a time: a comment heading a
    group of defaults, repeated for each variable, says nothing about most of them."""
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for entry, spec in specs.items():
        by_description = {}
        for name, option in spec["options"].items():
            by_description.setdefault(" ".join(str(option["description"]).split()), []).append(name)
        shared = {text: names for text, names in by_description.items() if len(names) > 1}
        assert not shared, f"{role}/{entry}: options sharing one description: {sorted(shared.values())}"
