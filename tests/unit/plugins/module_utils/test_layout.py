# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module_utils packages import only downwards (docs/architecture.md, "Where each concern lives")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
PREFIX = "ansible_collections.gpushare.cluster.plugins.module_utils"
# Bottom first: a package may import from itself and from the packages before it.
ORDER = ("_common", "gpu", "sources", "host", "kubernetes", "planner", "render", "preflight", "changes",
         "airgap", "report", "usage", "assess", "rehearsal")


def _imported_packages(path):
    """The module_utils packages a file imports, with the line of each import."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            rest = node.module[len(PREFIX):].lstrip(".")
            names = [rest] if rest else [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name[len(PREFIX):].lstrip(".") for a in node.names if a.name.startswith(PREFIX + ".")]
        found += [(name.split(".")[0], node.lineno) for name in names]
    return found


def test_every_module_lives_in_a_package():
    flat = {p.stem for p in ROOT.glob("*.py")}
    assert not flat, f"module_utils files outside a package: {sorted(flat)}"
    assert {p.name for p in ROOT.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(ORDER)
    for package in ORDER:
        assert (ROOT / package / "__init__.py").is_file(), package


def test_imports_only_point_down():
    wrong = []
    for package in ORDER:
        for path in sorted((ROOT / package).glob("*.py")):
            for imported, line in _imported_packages(path):
                if imported not in ORDER or ORDER.index(imported) > ORDER.index(package):
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert not wrong, wrong


def test_the_check_sees_an_upward_import(tmp_path):
    upward = tmp_path / "x.py"
    upward.write_text(f"from {PREFIX}.rehearsal import world\nfrom {PREFIX} import gpu\n", encoding="utf-8")
    assert _imported_packages(upward) == [("rehearsal", 1), ("gpu", 2)]


def _example_plan():
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan
    data = yaml.safe_load((ROOT.parents[1] / "tests" / "fixtures" / "inventories" / "four_gpu_example.yml").read_text())
    return build_plan(data["gpushare_teams"], data["nodes"])


def test_the_plan_contract_is_what_build_plan_writes_and_docs_plan_md_lists():
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract
    plan = _example_plan()
    assert set(plan) == set(contract.FIELDS)
    assert contract.check_plan(plan) is plan
    for node in plan["nodes"].values():
        assert set(node) == set(contract.PlanNode.__annotations__)
    for team in plan["teams"].values():
        assert set(team) <= set(contract.PlanTeam.__annotations__)
    documented = (ROOT.parents[1] / "docs" / "plan.md").read_text(encoding="utf-8")
    for field in contract.FIELDS:
        assert f"| `{field}` |" in documented, field


@pytest.mark.parametrize("change, message", [
    (lambda p: p.pop("nodes"), r"gpushare_plan\.nodes: missing"),
    (lambda p: p.update(backend="mps"), r"gpushare_plan\.backend: 'mps' is neither 'dra' nor 'device_plugin'"),
    (lambda p: p.update(distribution="k3s"), r"gpushare_plan\.distribution: 'k3s' is neither 'microk8s' nor 'kubeadm'"),
])
def test_check_plan_names_the_field(change, message):
    from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import PlanContractError
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract
    plan = _example_plan()
    change(plan)
    with pytest.raises(PlanContractError, match=message):
        contract.check_plan(plan)
    with pytest.raises(PlanContractError, match="gpushare_plan: missing or empty"):
        contract.check_plan({})


def test_check_plan_types_the_containers_and_names_what_an_empty_plan_lacks():
    from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import PlanContractError
    from ansible_collections.gpushare.cluster.plugins.module_utils.planner import contract
    plan = _example_plan()
    assert contract.check_plan(plan, ("objects", "teams")) is plan
    for field, value, word in (("objects", {}, "list"), ("nodes", [], "mapping"), ("teams", None, "mapping")):
        broken = dict(plan, **{field: value})
        with pytest.raises(PlanContractError, match=r"gpushare_plan\.%s: not a %s \(got %s\)"
                           % (field, word, type(value).__name__)):
            contract.check_plan(broken, (field,))
    # A field outside those asked for is not checked: prune reads only the objects.
    assert contract.check_plan(dict(plan, teams=None), ("objects",))["teams"] is None
    with pytest.raises(PlanContractError, match=r"gpushare_plan: missing or empty \(gpushare_plan\.objects: missing\)"):
        contract.check_plan({}, ("objects",))
    with pytest.raises(PlanContractError, match=r"\(gpushare_plan\.version: missing\)"):
        contract.check_plan(None)
