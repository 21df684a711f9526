# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts through AnsibleModule, with fake tools on disk."""
from __future__ import annotations

import stat
from pathlib import Path

from module_runner import run_module
from ansible_collections.gpushare.cluster.plugins.modules import gpu_facts

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"


def _fake_tool(tmp_path, name, output_file=None, rc=0, stderr=""):
    script = tmp_path / name
    body = "#!/bin/sh\n"
    if output_file:
        body += "cat '%s'\n" % output_file
    if stderr:
        body += 'echo "%s" >&2\n' % stderr
    body += "exit %d\n" % rc
    script.write_text(body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _run(args, capsys):
    return run_module(gpu_facts, args, capsys)[1]


def test_nvidia_smi_facts(tmp_path, capsys):
    smi = _fake_tool(tmp_path, "nvidia-smi", FIXTURES / "mixed-h100-l40s-mig-pending.xml")
    result = _run({"nvidia_smi_path": smi, "lspci_path": "/nonexistent/lspci", "_ansible_check_mode": True}, capsys)
    facts = result["ansible_facts"]["gpushare_gpu_facts"]
    assert result["changed"] is False
    assert facts["source"] == "nvidia-smi"
    assert [g["model"] for g in facts["gpus"]] == ["H100-80GB", "H100-80GB", "L40S"]
    assert facts["gpus"][0]["mig_mode_pending"] is True


def test_lspci_fallback_and_missing_tools(tmp_path, capsys):
    smi = _fake_tool(tmp_path, "nvidia-smi", rc=9, stderr="couldn't communicate with the NVIDIA driver")
    lspci = _fake_tool(tmp_path, "lspci", FIXTURES / "lspci-mixed-host.txt")
    result = _run({"nvidia_smi_path": smi, "lspci_path": lspci}, capsys)
    facts = result["ansible_facts"]["gpushare_gpu_facts"]
    assert facts["source"] == "lspci"
    assert [g["model"] for g in facts["gpus"]] == ["H100-80GB", "H100-80GB", "RTX-PRO-6000-WS", "L40S"]
    assert "couldn't communicate" in result["discovery_warnings"][0]

    result = _run({"nvidia_smi_path": str(tmp_path / "absent"), "lspci_path": str(tmp_path / "absent2")}, capsys)
    assert result["ansible_facts"]["gpushare_gpu_facts"]["source"] == "none"
    assert result["discovery_warnings"] == []  # the given paths do not exist: skipped, not failed
    assert "failed" not in result or result["failed"] is False
