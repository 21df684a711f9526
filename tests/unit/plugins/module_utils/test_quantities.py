# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils._common.quantities import format_mib, parse_memory_mib


@pytest.mark.parametrize(
    "value, expected",
    [
        ("10Gi", 10240),
        ("10GiB", 10240),
        ("10gib", 10240),
        ("512Mi", 512),
        ("512MiB", 512),
        ("1Ti", 1024 * 1024),
        ("39.5Gi", 40448),
        ("40G", 38147),  # 40e9 bytes = 38146.97 MiB, rounded up
        ("40GB", 38147),
        ("500M", 477),
        (" 24 Gi ", 24576),
        ("2048", 2048),
        (2048, 2048),
        ("0.5Gi", 512),
    ],
)
def test_parse_memory_mib_accepts_kubernetes_and_common_forms(value, expected):
    assert parse_memory_mib(value) == expected


@pytest.mark.parametrize("value", ["", "Gi", "10 Gx", "ten", "-1Gi", "10Gi10", "1e3", None, True, [], "0", 0, -5])
def test_parse_memory_mib_rejects_malformed(value):
    with pytest.raises(ValueError):
        parse_memory_mib(value)


def test_error_message_lists_units():
    with pytest.raises(ValueError, match="unknown unit 'Gx'"):
        parse_memory_mib("10Gx")


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=10 ** 6))
def test_binary_units_are_exact(gib):
    assert parse_memory_mib("%dGi" % gib) == gib * 1024
    assert parse_memory_mib("%dGiB" % gib) == gib * 1024


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=10 ** 6))
def test_decimal_units_never_understate(gigabytes):
    mib = parse_memory_mib("%dG" % gigabytes)
    assert mib * 1024 * 1024 >= gigabytes * 10 ** 9 > (mib - 1) * 1024 * 1024


def test_format_mib():
    assert format_mib(40448) == "39.5 GiB"
    assert format_mib(512) == "512 MiB"
    assert format_mib(10240) == "10 GiB"
