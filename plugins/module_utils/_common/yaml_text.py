# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML text of values files and manifests, in one style, fast.

The style: block style, keys in the order given, block lists indented under their key
(as yamllint's default ``indent-sequences`` expects), multi-line strings (embedded
configs, CSV, dashboards) as literal blocks, no line folding (a CEL expression stays on
one line). PyYAML's pure-Python emitter writes a plan of thousands of GPUs at about
1 MB/s; libyaml's emitter is several times faster but always writes a list at its key's
column. So, with libyaml present, its output is re-indented line by line; without it,
the pure-Python dumper writes the same text directly. Both give identical bytes (tested).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, List, Tuple

try:
    import yaml
except ImportError:  # ansible-core brings PyYAML; _dumpers() says so if it is missing
    yaml = None

# Wide enough that no scalar is ever folded onto a second line.
_WIDTH = 1 << 20
# A line (after any "- " and "key: ") that opens a literal or folded block scalar.
_BLOCK_HEADER = re.compile(r"(?:^|: )[|>][0-9+-]*$")


def _represent_str(dumper: Any, data: str) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


@functools.lru_cache(maxsize=None)
def _dumpers() -> Tuple[Any, Any]:
    """(libyaml dumper or None, pure-Python dumper), built once."""
    if yaml is None:
        raise ValueError("writing YAML needs the PyYAML Python package")

    class IndentedDumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
            return super().increase_indent(flow, False)

    IndentedDumper.add_representer(str, _represent_str)
    fast = None
    if getattr(yaml, "CSafeDumper", None) is not None:
        class LibyamlDumper(yaml.CSafeDumper):  # pylint: disable=too-few-public-methods
            pass

        LibyamlDumper.add_representer(str, _represent_str)
        fast = LibyamlDumper
    return fast, IndentedDumper


def indent_sequences(text: str) -> str:
    """Indent every block list written at its key's column (libyaml's style) by two spaces.

    Works on libyaml's block output: a list that is the value of ``key:`` starts on the
    next line with ``- `` at the key's column; it and everything nested in it moves right,
    nested lists adding up. Literal and folded block contents move with their key, so
    their text is unchanged.
    """
    out = []
    open_lists: List[int] = []  # columns of the lists being indented, outermost first
    block_key_column = -1       # >= 0 while inside a block scalar opened at that column
    key_column = -1             # column of the key when the last line ended in "key:"
    for line in text.split("\n"):
        content = line.lstrip(" ")
        column = len(line) - len(content)
        if block_key_column >= 0:
            if not content or column > block_key_column:
                out.append(" " * (2 * len(open_lists)) + line if content else line)
                continue
            block_key_column = -1
        if not content:
            out.append(line)
            continue
        item = content.startswith("- ") or content == "-"
        while open_lists and (column < open_lists[-1] or (column == open_lists[-1] and not item)):
            open_lists.pop()
        if item and column == key_column and not (open_lists and open_lists[-1] == column):
            open_lists.append(column)
        out.append(" " * (2 * len(open_lists)) + line)
        # Where the key of this line starts: after any "- " of list items opened on it.
        rest, key_column = content, column
        while rest.startswith("- "):
            rest, key_column = rest[2:], key_column + 2
        if _BLOCK_HEADER.search(rest):
            # A "- |" item's content is indented past the item; a "key: |" past the key.
            block_key_column = key_column - 2 if rest[0] in "|>" else key_column
        # Only a key with its value on the next lines ends a line with ":" (a plain
        # scalar ending in ":" is always quoted).
        key_column = key_column if rest.endswith(":") else -1
    return "\n".join(out)


def dump(data: Any) -> str:
    """One YAML document (no ``---``)."""
    fast, pure = _dumpers()
    if fast is not None:
        return _without_end_marker(indent_sequences(yaml.dump(data, Dumper=fast, default_flow_style=False,
                                                              sort_keys=False, width=_WIDTH)))
    return dump_pure(data)


def dump_pure(data: Any) -> str:
    """:func:`dump` with the pure-Python emitter (what runs without libyaml)."""
    return _without_end_marker(yaml.dump(data, Dumper=_dumpers()[1], default_flow_style=False, sort_keys=False,
                                         width=_WIDTH))


def _without_end_marker(text: str) -> str:
    # After a last scalar that keeps its trailing newlines ("|+"), the two emitters do not
    # agree on writing the "..." end marker; the next "---" or the end of file ends the
    # document anyway.
    return text[:-4] if text.endswith("\n...\n") else text


def dump_documents(documents: Iterable[Any]) -> str:
    """Several documents, each starting with ``---`` ("" for none), in the order given."""
    return "".join("---\n" + dump(document) for document in documents)
