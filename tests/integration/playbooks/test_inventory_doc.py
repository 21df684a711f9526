# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/inventory.md lists every variable: the global ones by hand, the roles' from their
meta/argument_specs.yml (generated; this test fails when they drift apart).

Regenerate the role section after changing an argument spec:

    .venv/bin/python tests/integration/playbooks/test_inventory_doc.py --write
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
DOC = REPO_ROOT / "docs" / "inventory.md"
BEGIN = "<!-- role variables: generated from roles/*/meta/argument_specs.yml -->"
END = "<!-- end of role variables -->"
# Facts and results the playbooks set, not inventory variables.
NOT_INVENTORY = {"gpushare_plan", "gpushare_gpu_facts"}


def _cell(text) -> str:
    text = " ".join(str(text).split())
    return text.replace("|", "\\|")


def _default(option) -> str:
    if "default" not in option:
        return ""
    value = option["default"]
    shown = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    if shown.endswith("..."):
        shown = shown[:-3].strip()
    return "`%s`" % _cell(shown) if shown != "" else "`''`"


def render_role_section() -> str:
    """Markdown tables of every role variable, by role, from the argument specs."""
    parts = [BEGIN, ""]
    for spec_file in sorted(REPO_ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = spec_file.parts[-3]
        specs = (yaml.safe_load(spec_file.read_text(encoding="utf-8")) or {}).get("argument_specs") or {}
        if str((specs.get("main") or {}).get("short_description", "")).startswith("Internal only"):
            # host_steps, kubernetes_steps: steps other roles include; nothing to set in an inventory.
            continue
        options = {}
        for entry in specs.values():
            for name, option in ((entry or {}).get("options") or {}).items():
                options.setdefault(name, option or {})
        if not options:
            continue
        parts += ["### %s" % role, "", "Entry points: %s. Details in `roles/%s/README.md`." % (
            ", ".join("`%s`" % name for name in specs), role), "",
            "| variable | type | default | description |", "|---|---|---|---|"]
        for name in sorted(options):
            option = options[name]
            description = option.get("description") or option.get("short_description") or ""
            if isinstance(description, list):
                description = " ".join(description)
            kind = option.get("type", "str")
            if kind == "list" and option.get("elements"):
                kind = "list of %s" % option["elements"]
            if option.get("choices"):
                kind += " (%s)" % ", ".join(str(choice) for choice in option["choices"])
            parts.append("| `%s` | %s | %s | %s |" % (name, _cell(kind), _default(option), _cell(description)))
        parts.append("")
    parts.append(END)
    return "\n".join(parts)


def _generated_part(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def test_role_variables_match_the_argument_specs():
    text = DOC.read_text(encoding="utf-8")
    assert _generated_part(text) == render_role_section(), (
        "docs/inventory.md is out of date: run .venv/bin/python tests/integration/playbooks/test_inventory_doc.py --write")


def test_every_global_variable_is_documented():
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"`(gpushare_[a-z_]+)`", text[:text.index(BEGIN)]))
    used = set()
    for folder in ("playbooks", "roles", "inventories"):
        for path in (REPO_ROOT / folder).rglob("*.yml"):
            used.update(re.findall(r"\b(gpushare_[a-z_]*[a-z])\b", path.read_text(encoding="utf-8")))
    missing = sorted(used - documented - NOT_INVENTORY)
    assert not missing, "global variables used but not in docs/inventory.md: %s" % ", ".join(missing)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    current = DOC.read_text(encoding="utf-8")
    DOC.write_text(current.replace(_generated_part(current), render_role_section()), encoding="utf-8")
    print("updated %s" % DOC)
