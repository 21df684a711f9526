# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names docs/, README.md and the role READMEs quote point at things that exist.

A ``gpushare.cluster.<name>`` is a module, action, filter, doc fragment, role or playbook of the
collection; a path with ``playbooks/<file>.yml`` is a file of the repository (a bare
``playbooks/...`` from the repository root). Each failure names the page and the name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Set, Tuple

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(REPO.glob("docs/**/*.md")) + sorted(REPO.glob("roles/*/README.md")) + [REPO / "README.md"]
FQCN = re.compile(r"gpushare\.cluster\.([a-z_][a-z0-9_]*)\b(?!\.)")
PLAYBOOK_PATH = re.compile(r"(?<![\w./-])([\w./-]*playbooks/[\w./-]+\.ya?ml)\b")


def _collection_names() -> Set[str]:
    names = {path.stem for path in REPO.glob("plugins/*/*.py") if path.stem != "__init__"}
    # every filter has its documentation file, named after the filter (plugins/filter/<name>.yml)
    names |= {path.stem for path in REPO.glob("plugins/filter/*.yml")
              if (yaml.safe_load(path.read_text()) or {}).get("DOCUMENTATION", {}).get("name") == path.stem}
    names |= {path.name for path in REPO.glob("roles/*") if path.is_dir()}
    names |= {path.stem for path in REPO.glob("playbooks/*.yml")}
    return names


def _quoted(pattern: "re.Pattern[str]") -> Iterator[Tuple[str, str]]:
    for page in PAGES:
        for match in pattern.finditer(page.read_text()):
            yield str(page.relative_to(REPO)), match.group(1)


def test_pages_are_found():
    assert len(PAGES) > 20 and (REPO / "docs" / "rehearsal.md") in PAGES


def test_every_quoted_gpushare_cluster_name_exists():
    known = _collection_names()
    missing = sorted({"%s: gpushare.cluster.%s" % (page, name) for page, name in _quoted(FQCN) if name not in known})
    assert not missing, "no module, action, filter, doc fragment, role or playbook of that name:\n" + "\n".join(missing)


def test_every_quoted_playbook_path_exists():
    quoted = list(_quoted(PLAYBOOK_PATH))
    assert quoted
    missing = sorted({"%s: %s" % (page, path) for page, path in quoted if not (REPO / path).is_file()})
    assert not missing, "no such file in the repository:\n" + "\n".join(missing)


@pytest.mark.parametrize("text, found", [
    ("run `gpushare.cluster.rehearsal_day` then", ["rehearsal_day"]),
    ("from ansible_collections.gpushare.cluster.plugins.module_utils", []),
])
def test_the_name_pattern(text, found):
    assert [m.group(1) for m in FQCN.finditer(text)] == found
