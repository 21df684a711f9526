# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Memory quantities as people write them in an inventory, converted to MiB.

Accepted forms: Kubernetes binary (``10Gi``, ``512Mi``, ``1Ti``), Kubernetes decimal
(``40G``, ``500M``), the common ``10GiB``/``40GB``/``512MB`` spellings, and plain
integers, which mean MiB. Decimal units are converted exactly and rounded up to whole
MiB, so a need is never understated. Pure Python, runs on Python 3.8+.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Union

_BYTES_PER_MIB = 1024 * 1024

# Bytes per unit; GB/G are decimal (10^9), GiB/Gi binary (2^30), as in Kubernetes.
_UNITS = {
    "": _BYTES_PER_MIB,  # a bare number is MiB
    "KI": 1024, "KIB": 1024, "K": 1000, "KB": 1000,
    "MI": 1024 ** 2, "MIB": 1024 ** 2, "M": 1000 ** 2, "MB": 1000 ** 2,
    "GI": 1024 ** 3, "GIB": 1024 ** 3, "G": 1000 ** 3, "GB": 1000 ** 3,
    "TI": 1024 ** 4, "TIB": 1024 ** 4, "T": 1000 ** 4, "TB": 1000 ** 4,
}

_QUANTITY = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>[A-Za-z]*)\s*$")


def parse_memory_mib(value: Union[str, int, float]) -> int:
    """Return ``value`` in MiB (rounded up); raise ValueError when it is malformed."""
    if isinstance(value, bool):
        raise ValueError("memory quantity must be a number or a string such as '10Gi', not a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("memory quantity must be positive, got %d" % value)
        return value
    if isinstance(value, float):
        value = repr(value)
    if not isinstance(value, str):
        raise ValueError("memory quantity must be a string such as '10Gi' or an integer (MiB), got %r" % (value,))
    match = _QUANTITY.match(value)
    if not match:
        raise ValueError(
            "malformed memory quantity %r: expected a number with an optional unit "
            "(Mi, Gi, Ti, MiB, GiB, M, G, MB, GB; a bare number means MiB)" % value
        )
    unit = match.group("unit").upper()
    if unit not in _UNITS:
        raise ValueError(
            "malformed memory quantity %r: unknown unit %r (use Mi, Gi, Ti, MiB, GiB, M, G, MB, GB)"
            % (value, match.group("unit"))
        )
    total_bytes = Fraction(match.group("number")) * _UNITS[unit]
    mib = -(-total_bytes // _BYTES_PER_MIB)  # ceiling division on an exact fraction
    if mib <= 0:
        raise ValueError("memory quantity must be positive, got %r" % value)
    return int(mib)


def format_mib(mib: int) -> str:
    """Human form used in messages: '39.5 GiB' or '512 MiB'."""
    if mib >= 1024:
        gib = mib / 1024.0
        text = ("%.2f" % gib).rstrip("0").rstrip(".")
        return "%s GiB" % text
    return "%d MiB" % mib
