"""Join tokens and certificate keys reach the join files but never Ansible's output (-vvv).

A stand-in ``kubeadm`` on PATH prints what the real one prints for ``token create
--print-join-command`` and ``init phase upload-certs``, and keeps a copy of the config that
``kubeadm join --config`` receives; the role's own task files run unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys

import yaml
from pathlib import Path

from .k8s_render import FIXTURES, collections_dir

TOKEN = "q7x2pz.s3cr3tt0k3nv4lue"
CERT_KEY = "8f4c1e0b9d2a7c6e5f3b1a0d9c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e"
CA_HASH = "sha256:" + "ab" * 32

STUB = f"""#!/bin/sh
case "$1 $2" in
  "token create") echo "kubeadm join 192.0.2.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {CA_HASH} " ;;
  "init phase") echo "[upload-certs] Storing the certificates in Secret kubeadm-certs"; echo "[upload-certs] Using certificate key:"; echo "{CERT_KEY}" ;;
  "join --config") cp "$3" "$STUB_OUT/$(basename "$(dirname "$3")").yaml" ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
"""


def test_secrets_stay_out_of_verbose_output(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "kubeadm"
    stub.write_text(STUB)
    stub.chmod(0o755)
    captured = tmp_path / "captured"
    captured.mkdir()
    hosts = {}
    for name, group, os_name, address in (("cp1", "control_plane", "ubuntu-24.04", "192.0.2.11"),
                                          ("cp2", "control_plane", "ubuntu-24.04", "192.0.2.12"),
                                          ("cp3", "control_plane", "ubuntu-24.04", "192.0.2.13"),
                                          ("gpu1", "workers", "rocky-9", "192.0.2.21")):
        hosts.setdefault(group, {"hosts": {}})["hosts"][name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "fixture_facts_file": str(FIXTURES / "facts" / f"{os_name}.yml"),
            "host_facts": {"hostname": name, "default_ipv4": {"address": address}},
            "kubeadm_config_dir": str(tmp_path / "config" / name),
        }
    for name in ("cp1", "cp2", "cp3", "gpu1"):
        (tmp_path / "config" / name).mkdir(parents=True)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": hosts, "vars": {"kubeadm_vip_address": "192.0.2.10"}}}))
    env = dict(os.environ)
    env.update(PATH=f"{bin_dir}:{env['PATH']}", STUB_OUT=str(captured), ANSIBLE_COLLECTIONS_PATH=collections_dir(),
               ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-vvv", "-i", str(inventory), str(FIXTURES / "render" / "join.yml")],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    # The secrets went where they belong ...
    cp2 = yaml.safe_load((captured / "cp2.yaml").read_text())
    gpu1 = yaml.safe_load((captured / "gpu1.yaml").read_text())
    assert cp2["discovery"]["bootstrapToken"]["token"] == gpu1["discovery"]["bootstrapToken"]["token"] == TOKEN
    assert cp2["discovery"]["bootstrapToken"]["caCertHashes"] == [CA_HASH]
    assert cp2["controlPlane"]["certificateKey"] == CERT_KEY
    assert "controlPlane" not in gpu1
    # ... never stay on disk after the join ...
    assert not any((tmp_path / "config" / name / "join.yaml").exists() for name in ("cp2", "gpu1"))
    # ... and never into Ansible's output, even at -vvv.
    assert "s3cr3tt0k3nv4lue" not in output
    assert CERT_KEY not in output
    assert "the output has been hidden due to the fact that 'no_log: true'" in output
