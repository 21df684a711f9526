# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every label, annotation key, resource name and API version the collection shares with
Kubernetes, Kueue and the NVIDIA components has one home: plugins/module_utils/_common/
vocabulary.py, and ownership.py for the ownership labels.

Python code imports them, so a second literal in a plugin is a copy that can drift. Ansible
YAML cannot import Python, so roles and playbooks state some of them as literals; each such
literal must be a name the vocabulary defines, so that renaming one there fails here until
the roles follow.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils._common import ownership, vocabulary

REPO = Path(__file__).resolve().parents[2]
HOMES = (vocabulary, ownership)
HOME_FILES = {Path(module.__file__).name for module in HOMES}
# The API groups whose names the vocabulary holds; a name of another group is not its concern.
GROUPS = ("gpushare.io", "nvidia.com", "kueue.x-k8s.io", "config.kueue.x-k8s.io", "resource.k8s.io",
          "pod-security.kubernetes.io", "app.kubernetes.io")
# A name in YAML or a template: a group, a slash and the rest, not part of a longer host name
# (helm.ngc.nvidia.com/nvidia is a URL).
NAME_IN_TEXT = re.compile(r"(?<![\w.-])((?:%s)/[\w.-]*)" % "|".join(re.escape(group) for group in GROUPS))


def _defined() -> List[Tuple[str, str]]:
    """(module.CONSTANT, value) of every name the homes define: the string constants with a
    domain in them (labels, API versions, gpu.nvidia.com), not the bare versions such as v1."""
    return [("%s.%s" % (module.__name__.rsplit(".", 1)[1], constant), value)
            for module in HOMES for constant, value in vars(module).items()
            if constant.isupper() and isinstance(value, str) and "." in value]


def _names() -> Dict[str, str]:
    return {value: constant for constant, value in _defined()}


NAMES = _names()
# Names ending in "." or "-" are prefixes: gpushare.io/gpu.<model>, nvidia.com/mig-<profile>.
PREFIXES = tuple(value for value in NAMES if value.endswith((".", "-")))


def _plugin_sources() -> Iterator[Path]:
    for path in sorted((REPO / "plugins").rglob("*.py")):
        if path.name not in HOME_FILES or path.parent.name != "_common":
            yield path


def _string_literals(path: Path) -> Iterator[ast.Constant]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node


def _role_texts() -> Iterator[Path]:
    """The files Ansible reads: role and playbook YAML and templates (not the READMEs)."""
    for folder in ("roles", "playbooks"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".yml", ".yaml", ".j2"):
                yield path


def test_the_homes_define_each_name_once():
    values = [value for _constant, value in _defined()]
    assert len(values) == len(set(values)), sorted(value for value in values if values.count(value) > 1)
    assert "vocabulary.MIG_CONFIG_LABEL" in NAMES.values() and "ownership.MANAGED_BY_LABEL" in NAMES.values()


def test_no_plugin_restates_a_name_of_the_vocabulary():
    copies = ["%s:%d: %r is %s; import it" % (path.relative_to(REPO), node.lineno, node.value, NAMES[node.value])
              for path in _plugin_sources() for node in _string_literals(path) if node.value in NAMES]
    assert not copies, "\n".join(copies)


def test_every_name_the_roles_state_is_one_the_vocabulary_defines():
    unknown = []
    for path in _role_texts():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in NAME_IN_TEXT.finditer(line):
                # A sentence's full stop is not part of the name; "nvidia.com/mig-*" names the prefix.
                name = match.group(1).rstrip(".")
                if name not in NAMES and not name.startswith(PREFIXES):
                    unknown.append("%s:%d: %s" % (path.relative_to(REPO), number, name))
    assert not unknown, "names the vocabulary does not define (add them there, or fix the copy):\n" + "\n".join(unknown)


def test_the_checks_find_a_copy():
    # The scans above must be able to fail: a literal copy and an unknown name are both found.
    tree = ast.parse('LABEL = "nvidia.com/mig.config"\nOTHER = "nvidia.com/mig.config.X"')
    found = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in NAMES]
    assert found == ["nvidia.com/mig.config"]
    line = "selectors: [nvidia.com/mig.confg=all, nvidia.com/mig-1g.10gb, https://helm.ngc.nvidia.com/nvidia]"
    names = [match.group(1).rstrip(".") for match in NAME_IN_TEXT.finditer(line)]
    assert names == ["nvidia.com/mig.confg", "nvidia.com/mig-1g.10gb"]
    assert names[0] not in NAMES and names[1].startswith(PREFIXES)
