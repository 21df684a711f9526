# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_filter_in_a_playbook(tmp_path):
    playbook_bin = Path(sys.executable).with_name("ansible-playbook")
    if not playbook_bin.exists():
        pytest.skip("ansible-playbook not installed next to the test interpreter")
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.assert:\n        that:\n"
        "          - \"'0x2330' | gpushare.cluster.gpu_model_key == 'H100-80GB'\"\n"
        "          - \"('H100-80GB' | gpushare.cluster.mig_profile('3g.40gb')).memory_mib == 40448\"\n"
        "          - \"('20Gi' | gpushare.cluster.memory_mib) == 20480\"\n"
        "    - gpushare.cluster.mig_layout:\n"
        "        gpus: [{index: 0, model: H100-80GB, use: mig, mig: {profiles: {'7g.80gb': 1}}}]\n"
        "        config_name: test\n"
        "      register: layout\n"
        "    - ansible.builtin.assert:\n        that:\n"
        "          - \"layout.mig_parted['mig-configs'].test[0]['mig-devices'] == {'7g.80gb': 1}\"\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ["GPUSHARE_COLLECTIONS_PATH"], ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_HOME=str(tmp_path / "home"))
    completed = subprocess.run(
        [str(playbook_bin), "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
         str(playbook)], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
