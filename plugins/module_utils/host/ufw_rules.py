# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ufw rules as the commands ufw itself prints, and what a run has to add.

Adding a rule with community.general.ufw starts the ``ufw`` program about five times (status,
version, dry run, the rule, status again), so fifteen rules cost minutes on a slow host and the
same again on every run that changes nothing. Here the wanted rules are written in the exact
form ``ufw show added`` prints them, read once, and only the missing ones are added.

The canonical form follows ufw 0.36.2 (Ubuntu 22.04 to 26.04, Debian 12 and 13):
``UFWCommandRule.get_command`` in ufw/parser.py prints a rule from any address to any address
with a port in the short syntax (``allow 6443/tcp``, ``allow OpenSSH``) and every other rule in
the full syntax (``allow from 10.0.0.0/8 to any port 10250 proto tcp``; ``to any`` only when
neither end is given); ``frontend.get_show_added`` prefixes route rules with ``route``.
Should a form ever differ from ufw's, the rule is added again and ufw answers "Skipping adding
existing rule", which is read as unchanged: the result stays right, only slower.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Iterable, List, Mapping, Sequence

RULE_ACTIONS = ("allow", "deny", "reject", "limit")
PROTOCOLS = ("tcp", "udp", "any")
_PORT = re.compile(r"^\d{1,5}([:-]\d{1,5})?$")
_APP = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")
ANY = "any"


class UfwRuleError(ValueError):
    """A rule the module cannot express; the message names the rule's index and field."""


def _address(value: object, where: str) -> str:
    text = str(value if value not in (None, "") else ANY).strip()
    if text == ANY:
        return ANY
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise UfwRuleError(f"{where}: {value!r} is not an address or network ({exc})") from None
    # ufw stores a single host without its prefix length and a network with it.
    if network.prefixlen == network.max_prefixlen:
        return str(network.network_address)
    return str(network)


def _port(value: object, where: str) -> str:
    text = str(value).strip()
    if not _PORT.match(text):
        raise UfwRuleError(f"{where}: {value!r} is not a port or a port range such as 30000:32767")
    bounds = [int(part) for part in re.split(r"[:-]", text)]
    if any(not 1 <= bound <= 65535 for bound in bounds) or bounds != sorted(bounds):
        raise UfwRuleError(f"{where}: {value!r} is outside 1-65535 or its range is reversed")
    return ":".join(str(bound) for bound in bounds)


def command(rule: Mapping[str, object], index: int = 0) -> str:
    """The rule as ``ufw show added`` prints it, without the leading ``ufw``.

    ``rule`` has community.general.ufw's option names: ``rule`` (allow), ``name`` (an
    application profile), ``port``, ``proto``, ``from_ip``, ``to_ip``, ``route``.
    """
    where = f"rules[{index}]"
    action = str(rule.get("rule") or "allow")
    if action not in RULE_ACTIONS:
        raise UfwRuleError(f"{where}.rule: {action!r} is not one of {', '.join(RULE_ACTIONS)}")
    route = bool(rule.get("route"))
    source = _address(rule.get("from_ip"), f"{where}.from_ip")
    destination = _address(rule.get("to_ip"), f"{where}.to_ip")
    app = str(rule.get("name") or "").strip()
    port = rule.get("port")
    proto = str(rule.get("proto") or ANY)
    if isinstance(port, str) and "/" in port:
        # ufw's own short form, "6443/tcp".
        port, _slash, port_proto = port.partition("/")
        if proto not in (ANY, port_proto):
            raise UfwRuleError(f"{where}.proto: {proto!r} contradicts the port's /{port_proto}")
        proto = port_proto
    if proto not in PROTOCOLS:
        raise UfwRuleError(f"{where}.proto: {proto!r} is not one of {', '.join(PROTOCOLS)}")
    if app and port not in (None, ""):
        raise UfwRuleError(f"{where}: give either name (an application profile) or port, not both")
    if app and not _APP.match(app):
        raise UfwRuleError(f"{where}.name: {app!r} is not an application profile name")
    if app and proto != ANY:
        raise UfwRuleError(f"{where}.proto: an application profile carries its own protocols")
    dport = ANY if port in (None, "") else _port(port, f"{where}.port")
    if ":" in dport and proto == ANY:
        raise UfwRuleError(f"{where}.proto: a port range needs tcp or udp")
    prefix = "route " if route else ""

    if source == ANY and destination == ANY and (app or dport != ANY):
        target = (f"'{app}'" if " " in app else app) if app else dport + ("" if proto == ANY else f"/{proto}")
        return f"{prefix}{action} {target}"

    text = action
    if source != ANY:
        text += f" from {source}"
    if destination != ANY or dport != ANY or app:
        text += f" to {destination}"
        if app:
            text += f" app '{app}'" if " " in app else f" app {app}"
        elif dport != ANY:
            text += f" port {dport}"
    if " to " not in text and " from " not in text:
        text += " to any"
    if proto != ANY and not app:
        text += f" proto {proto}"
    return prefix + text


def commands(rules: Sequence[Mapping[str, object]]) -> List[str]:
    """Every rule's canonical command, in order and without repeats; all errors at once."""
    result: List[str] = []
    errors: List[str] = []
    for index, rule in enumerate(rules):
        try:
            text = command(rule, index)
        except UfwRuleError as exc:
            errors.append(str(exc))
            continue
        if text not in result:
            result.append(text)
    if errors:
        raise UfwRuleError("; ".join(errors))
    return result


def added(show_added_output: str) -> List[str]:
    """The rules of ``ufw show added`` output, without the leading ``ufw``."""
    return [line[len("ufw "):].strip() for line in show_added_output.splitlines() if line.startswith("ufw ")]


def missing(wanted: Iterable[str], present: Iterable[str]) -> List[str]:
    """The wanted rules ufw does not have yet, in the order given."""
    have = set(present)
    return [rule for rule in wanted if rule not in have]


def rule_changed(ufw_output: str) -> bool:
    """Whether ``ufw <rule>`` changed anything: it prints "Skipping ..." for a rule it has."""
    lines = [line.strip() for line in ufw_output.splitlines() if line.strip()]
    return any(not line.startswith("Skipping") for line in lines)


def is_active(status_output: str) -> bool:
    """``ufw status`` prints "Status: active" or "Status: inactive" first."""
    first = next((line.strip() for line in status_output.splitlines() if line.strip()), "")
    return first == "Status: active"


def rule_argv(rule_command: str) -> List[str]:
    """The ``ufw`` arguments of a canonical command (an application name may hold spaces)."""
    parts: List[str] = []
    for index, chunk in enumerate(rule_command.split("'")):
        if index % 2:
            parts.append(chunk)
        else:
            parts.extend(chunk.split())
    return parts
