# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge arguments into MicroK8s args files (``/var/snap/microk8s/current/args/<service>``).

An args file holds one ``--flag=value`` (or bare ``--flag``) per line plus comments. MicroK8s
already sets some flags, ``--feature-gates`` among them (1.35's kube-apiserver ships one), and a
second ``--feature-gates`` line would silently replace the first. So the merge edits lines in
place, folds every ``--feature-gates`` into one line and leaves everything else untouched.
Pure functions: the role reads the file, calls ``merge_args`` and writes the result.
"""

from __future__ import annotations

import re
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from typing import Any, Dict, List, Mapping, Optional, Tuple

FEATURE_GATES = "feature-gates"
_FLAG_RE = re.compile(r"^--(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)(?:=(?P<value>.*))?$")
_GATE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


class ArgsError(GpushareError):
    """Bad argument name/value or unreadable args file."""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_line(line: str) -> Optional[Tuple[str, Optional[str]]]:
    """'--a=b' -> ('a', 'b'); '--flag' -> ('flag', None); comments/blank -> None."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    match = _FLAG_RE.match(text)
    if not match:
        raise ArgsError(f"args file line {line!r} is not of the form --name=value")
    return match.group("name"), match.group("value")


def parse_gates(value: str, field: str = FEATURE_GATES) -> Dict[str, bool]:
    """'A=true,B=false' (quotes allowed) -> {'A': True, 'B': False}, order kept."""
    gates: Dict[str, bool] = {}
    for item in _unquote(value.strip()).split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, flag = item.partition("=")
        name, flag = name.strip(), flag.strip().lower()
        if not sep or not _GATE_RE.match(name) or flag not in ("true", "false"):
            raise ArgsError(f"{field}: {item!r} is not of the form GateName=true|false")
        gates[name] = flag == "true"
    return gates


def format_gates(gates: Mapping[str, bool]) -> str:
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in gates.items())


def _format_value(value: object) -> Optional[str]:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def merge_args(
    text: str,
    args: Optional[Mapping[str, object]] = None,
    feature_gates: Optional[Mapping[str, bool]] = None,
    remove: Optional[List[str]] = None,
    service: str = "args",
) -> str:
    """Return ``text`` with ``args`` set, ``feature_gates`` merged and ``remove`` flags dropped.

    - ``args``: {name: value}; names without leading dashes; value ``None`` writes a bare
      ``--name``. An existing line for the name is replaced in place (the first one; later
      duplicates are dropped), a new one is appended.
    - ``feature_gates``: {Gate: bool} merged into the file's gates: existing gates keep their
      position, ours win on conflict, new ones are appended in sorted order. A
      ``feature-gates`` entry in ``args`` is merged the same way, never written as a
      second line.
    - Comments, blank lines and unrelated flags are kept byte for byte, so merging twice
      gives the same file.
    """
    args = dict(args or {})
    wanted_gates: Dict[str, bool] = {}
    if FEATURE_GATES in args:
        wanted_gates.update(parse_gates(str(args.pop(FEATURE_GATES)), f"{service}: feature-gates"))
    for name, on in (feature_gates or {}).items():
        if not _GATE_RE.match(str(name)) or not isinstance(on, bool):
            raise ArgsError(f"{service}: feature gate {name!r}={on!r} must be GateName: true|false")
        wanted_gates[str(name)] = on
    for name in args:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", str(name)):
            raise ArgsError(f"{service}: {name!r} is not an argument name (write it without leading dashes)")
    removed = set(remove or [])
    if FEATURE_GATES in removed and wanted_gates:
        raise ArgsError(f"{service}: feature-gates cannot be both removed and merged")

    lines = text.splitlines()
    out: List[str] = []
    written = set()
    gates_index: Optional[int] = None
    gates: Dict[str, bool] = {}
    for line in lines:
        parsed = parse_line(line)
        if parsed is None:
            out.append(line)
            continue
        name, value = parsed
        if name in removed:
            continue
        if name == FEATURE_GATES:
            gates.update(parse_gates(value or "", f"{service}: existing --feature-gates"))
            if gates_index is None:
                gates_index = len(out)
                out.append(line)
            continue
        if name in args:
            if name in written:
                continue
            written.add(name)
            new_value = args[name]
            out.append(f"--{name}" if new_value is None else f"--{name}={_format_value(new_value)}")
            continue
        out.append(line)

    for name in sorted(args):
        if name not in written:
            new_value = args[name]
            out.append(f"--{name}" if new_value is None else f"--{name}={_format_value(new_value)}")

    if wanted_gates or gates_index is not None:
        merged = dict(gates)
        for name in sorted(wanted_gates):
            merged[name] = wanted_gates[name]
        if gates_index is not None:
            # Rewrite only when a gate changes, so quoting and order of an unchanged line stay.
            if merged != gates:
                out[gates_index] = f"--{FEATURE_GATES}={format_gates(merged)}"
        else:
            out.append(f"--{FEATURE_GATES}={format_gates(merged)}")

    result = "\n".join(out)
    return result + "\n" if result else result


def get_args(text: str) -> Dict[str, Optional[str]]:
    """{name: value} of an args file (the last line wins, as for the services themselves)."""
    found: Dict[str, Optional[str]] = {}
    for line in text.splitlines():
        parsed = parse_line(line)
        if parsed:
            found[parsed[0]] = parsed[1]
    return found


_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_LINE_RE = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=")


def merge_env(text: str, env: Optional[Mapping[str, object]] = None, field: str = "containerd-env") -> str:
    """Return ``text`` (a shell environment file such as ``args/containerd-env``) with ``env`` set.

    An existing ``NAME=`` (or ``export NAME=``) line is replaced in place, later duplicates are
    dropped, missing names are appended in sorted order. Comments, ``ulimit`` lines and other
    variables stay as they are, so merging twice gives the same file.
    """
    wanted: Dict[str, str] = {}
    for name, value in (env or {}).items():
        if not _ENV_NAME_RE.match(str(name)):
            raise ArgsError(f"{field}: {name!r} is not an environment variable name")
        text_value = str(value)
        if "\n" in text_value or "'" in text_value:
            raise ArgsError(f"{field}: the value of {name} must not contain a newline or a single quote")
        wanted[str(name)] = text_value

    def assignment(name: str) -> str:
        value = wanted[name]
        # Quote only when the shell would split the value; plain URLs stay readable.
        return f"{name}={value}" if re.match(r"^[A-Za-z0-9_./:@,%+=-]*$", value) else f"{name}='{value}'"

    out: List[str] = []
    written = set()
    for line in text.splitlines():
        match = _ENV_LINE_RE.match(line)
        name = match.group("name") if match else None
        if name in wanted:
            if name not in written:
                written.add(name)
                out.append(assignment(name))
            continue
        out.append(line)
    out += [assignment(name) for name in sorted(wanted) if name not in written]
    result = "\n".join(out)
    return result + "\n" if result else result


_CRI_SECTION_V2 = '[plugins."io.containerd.grpc.v1.cri"]'
_CRI_SECTION_V3 = "[plugins.'io.containerd.cri.v1.runtime']"


def enable_cdi(template: str, spec_dirs: Tuple[str, ...] = ("/etc/cdi", "/var/run/cdi")) -> str:
    """Turn on CDI in a MicroK8s containerd template (containerd 1.7 has it off by default).

    Sets ``enable_cdi = true`` and ``cdi_spec_dirs`` right under the CRI plugin section of a
    config version 2 (containerd 1.7) or 3 (containerd 2.x) template, replacing existing
    settings; the rest of the template (including ``${RUNTIME}``-style placeholders) is kept.
    """
    lines = template.splitlines()
    header = None
    for index, line in enumerate(lines):
        if line.strip() in (_CRI_SECTION_V2, _CRI_SECTION_V3):
            header = index
            break
    if header is None:
        raise ArgsError(
            "containerd-template.toml: no [plugins.\"io.containerd.grpc.v1.cri\"] or "
            "[plugins.'io.containerd.cri.v1.runtime'] section to enable CDI in"
        )
    end = len(lines)
    for index in range(header + 1, len(lines)):
        if lines[index].lstrip().startswith("["):
            end = index
            break
    indent = "  "
    for line in lines[header + 1:end]:
        if line.strip() and not line.strip().startswith("#"):
            indent = line[: len(line) - len(line.lstrip())]
            break
    body = [
        line for line in lines[header + 1:end]
        if not re.match(r"^\s*(enable_cdi|cdi_spec_dirs)\s*=", line)
    ]
    dirs = ", ".join(f'"{d}"' for d in spec_dirs)
    wanted = [f"{indent}enable_cdi = true", f"{indent}cdi_spec_dirs = [{dirs}]"]
    new_lines = lines[: header + 1] + wanted + body + lines[end:]
    result = "\n".join(new_lines)
    return result + "\n"


def snap_list_entry(text: str, name: str = "microk8s") -> Dict[str, Any]:
    """The row of snap ``name`` in ``snap list`` output, ``{}`` when it is not there.

    snapd prints the columns ``Name Version Rev Tracking Publisher Notes`` (cmd/snap/cmd_list.go);
    Tracking is ``-`` for a side-loaded snap, Notes is ``-`` or a comma-separated list
    (cmd/snap/notes.go, ``Notes.String``), in which ``held`` marks a snap whose refreshes are held
    (snapd 2.59 and later).
    Returns version, revision, channel, publisher, notes (a list) and held.
    """
    for line in str(text or "").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0] == name:
            fields += ["-"] * (6 - len(fields))
            notes = [] if fields[5] == "-" else fields[5].split(",")
            return {"version": fields[1], "revision": fields[2], "channel": fields[3], "publisher": fields[4],
                    "notes": notes, "held": "held" in notes}
    return {}
