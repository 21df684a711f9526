# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.filter import gpu_catalog, quantities

FILTERS = dict(gpu_catalog.FilterModule().filters(), **quantities.FilterModule().filters())


def test_gpu_model_by_device_id():
    model = FILTERS["gpu_model"]("0x2330")
    assert model["key"] == "H100-80GB"
    assert model["device_ids"][0] == "0x233010DE"
    profile = next(p for p in model["profiles"] if p["name"] == "3g.40gb")
    assert profile == {"name": "3g.40gb", "id": 9, "memory_mib": 40448, "compute_slices": 3, "memory_slices": 4,
                       "max_count": 2, "starts": [0, 4], "size": 4, "unconfirmed": False,
                       "unconfirmed_fields": [], "media": ""}
    json.dumps(model)  # plain data, safe for templates and facts


def test_key_profile_and_memory():
    assert FILTERS["gpu_model_key"]("NVIDIA-H100-80GB-HBM3") == "H100-80GB"
    assert FILTERS["mig_profile"]("B200", "3g.90gb")["unconfirmed_fields"] == ["memory_mib", "placements"]
    assert FILTERS["memory_mib"]("10Gi") == 10240


@pytest.mark.parametrize("call", [
    lambda: FILTERS["gpu_model"]("H999"),
    lambda: FILTERS["gpu_model"](42),
    lambda: FILTERS["mig_profile"]("H100-80GB", "3g.20gb"),
    lambda: FILTERS["memory_mib"]("ten"),
])
def test_errors_become_filter_errors(call):
    with pytest.raises(AnsibleFilterError):
        call()
