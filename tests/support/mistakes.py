# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The corpus of mistaken inventories (tests/fixtures/mistaken_inventories/README.md).

Builds each case as a real inventory directory, reads one as Ansible does (InventoryManager
and VariableManager: group_vars, host_vars, groups), and pulls the error list out of a
playbook run.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "inventories" / "example"
CORPUS = REPO_ROOT / "tests" / "fixtures" / "mistaken_inventories"


def load_cases() -> List[Dict[str, Any]]:
    cases = []
    for path in sorted(CORPUS.glob("*.yml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            case = dict(case, kind=path.stem)
            cases.append(case)
    ids = [case["id"] for case in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique: %s" % ids
    return cases


def _merge(base: Any, extra: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(extra, Mapping):
        merged = dict(base)
        for key, value in extra.items():
            merged[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(extra)


def build(cases: Sequence[Mapping[str, Any]], dest: Path) -> Path:
    """The example inventory with the changes of every case applied, in order, written to dest."""
    shutil.copytree(EXAMPLE, dest)
    for case in cases:
        for relative, content in (case.get("files") or {}).items():
            path = dest / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
        for relative, extra in (case.get("merge") or {}).items():
            path = dest / relative
            current = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(_merge(current or {}, extra), sort_keys=False), encoding="utf-8")
        for relative, keys in (case.get("delete") or {}).items():
            path = dest / relative
            current = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for key in keys:
                current.pop(key, None)
            path.write_text(yaml.safe_dump(current, sort_keys=False), encoding="utf-8")
    return dest


def ansible_inputs(inventory: Path, host_variables: Sequence[str], controller_variables: Sequence[str]
                   ) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]], Dict[str, List[str]]]:
    """(controller vars, host -> vars, groups) of an inventory directory, as Ansible reads them."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    manager = InventoryManager(loader=loader, sources=[str(inventory)])
    variables = VariableManager(loader=loader, inventory=manager)
    groups = {name: [host.name for host in group.get_hosts()] for name, group in manager.groups.items()}
    hosts = {}
    for host in manager.get_hosts():
        values = variables.get_vars(host=host, include_hostvars=False)
        hosts[host.name] = {name: _plain(values[name]) for name in host_variables if name in values}
    localhost = manager.localhost or manager.get_host("localhost")
    values = variables.get_vars(host=localhost, include_hostvars=False)
    controller = {name: _plain(values[name]) for name in controller_variables if name in values}
    return controller, hosts, groups


def _plain(value: Any) -> Any:
    """Ansible's tagged YAML values as plain Python ones."""
    return yaml.safe_load(json.dumps(value, default=str))


_FATAL = re.compile(r"^fatal: \[localhost\]: FAILED! => (\{.*\})$", re.MULTILINE)


def reported_errors(stdout: str) -> List[str]:
    """The error list of the failed plan task of a playbook run."""
    match = _FATAL.search(stdout)
    assert match, stdout[-3000:]
    return json.loads(match.group(1))["errors"]


def missing(expected: Sequence[str], errors: Sequence[str]) -> List[str]:
    """Expected messages that start no reported error."""
    return [text for text in expected if not any(error.startswith(text) for error in errors)]
