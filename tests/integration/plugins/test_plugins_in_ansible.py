# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's filters and modules called by Ansible itself: ansible-playbook and ansible
resolve them by their FQCN from the collection tree (tests/conftest.py) and pass them tagged
template values, as in a user's playbook. The same plugins' logic is unit-tested in tests/unit/plugins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


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


def test_fqcn_in_a_playbook(tmp_path: Path):
    """The filters resolve by their FQCN and accept Ansible's tagged template values."""
    collections_root = os.environ["GPUSHARE_COLLECTIONS_PATH"]
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  vars:\n"
        "    gpushare_mirrors: {registry: \"{{ 'registry.internal' }}:5000\"}\n"
        "  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ 'quay.io/prometheus/prometheus:v3' | gpushare.cluster.mirror_image(gpushare_mirrors) }}\"\n",
        encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_root, ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(playbook)],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    output = json.loads(result.stdout)
    msg = output["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]
    assert msg == "registry.internal:5000/prometheus/prometheus:v3"


def test_module_on_localhost_with_ansible(tmp_path):
    """The module runs through ansible itself (ad-hoc, local connection)."""
    ansible = Path(sys.executable).with_name("ansible")
    if not ansible.exists():
        pytest.skip("ansible command not installed next to the test interpreter")
    smi = tmp_path / "nvidia-smi"  # a stand-in that prints a real capture
    smi.write_text("#!/bin/sh\ncat '%s'\n" % (FIXTURES / "nvidia_smi" / "mixed-h100-l40s-mig-pending.xml"))
    smi.chmod(0o755)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ["GPUSHARE_COLLECTIONS_PATH"], ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="true", ANSIBLE_HOME=str(tmp_path / "home"))
    completed = subprocess.run(
        [str(ansible), "localhost", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
         "--check", "-m", "gpushare.cluster.gpu_facts", "-a", "nvidia_smi_path=%s" % smi],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(completed.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["ansible_facts"]["gpushare_gpu_facts"]["gpus"][2]["model"] == "L40S"
    assert result["changed"] is False
