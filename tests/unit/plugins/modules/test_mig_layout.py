# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""mig_layout through AnsibleModule."""
from __future__ import annotations

from module_runner import run_module
from ansible_collections.gpushare.cluster.plugins.modules import mig_layout


def _run(args, capsys):
    return run_module(mig_layout, args, capsys)


def test_design_example_node(capsys):
    gpus = [
        {"index": 0, "model": "RTX-PRO-6000", "team": "production", "use": "whole"},
        {"index": 1, "model": "RTX-PRO-6000", "team": "production", "use": "mig",
         "mig": {"instances": [{"name": "embeddings", "memory": "10GiB"}, {"name": "classifier", "memory": "10GiB"},
                               {"name": "speech-to-text", "memory": "20GiB"}]}},
        {"index": 2, "model": "RTX-PRO-6000", "team": "data", "use": "shared", "replicas": 5},
        {"index": 3, "model": "RTX-PRO-6000", "team": "training", "use": "whole"},
    ]
    code, result = _run({"gpus": gpus, "config_name": "gpushare-gpu1", "host": "gpu1", "_ansible_check_mode": True},
                        capsys)
    assert code == 0
    assert result["changed"] is False
    specs = result["mig_parted"]["mig-configs"]["gpushare-gpu1"]
    assert [s["devices"] for s in specs] == [[0], [1], [2], [3]]
    assert [s["mig-enabled"] for s in specs] == [False, True, False, False]
    assert specs[1]["mig-devices"] == {"1g.24gb": 4}
    assert all(s["device-filter"] == ["0x2BB510DE"] for s in specs)
    assert "mig-devices" not in specs[0]
    assert [i["name"] for i in result["gpus"][1]["instances"]] == ["embeddings", "classifier", "speech-to-text", None]


def test_failure_names_host_gpu_and_field(capsys):
    code, result = _run({"gpus": [{"index": 2, "model": "L40S", "use": "mig", "mig": {"profiles": {"1g.10gb": 1}}}],
                         "config_name": "x", "host": "gpu9"}, capsys)
    assert code == 1
    assert result["failed"] is True
    assert result["msg"].startswith("host gpu9, GPU 2 (L40S), field use: L40S does not support MIG")


def test_unconfirmed_geometry_is_a_warning(capsys):
    code, result = _run({"gpus": [{"index": 0, "model": "B200", "use": "mig", "mig": {"profiles": {"7g.180gb": 1}}}],
                         "config_name": "x"}, capsys)
    assert code == 0
    assert any("unconfirmed geometry" in w for w in result["mig_warnings"])
