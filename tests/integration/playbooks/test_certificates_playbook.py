# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/certificates.yml end to end on a local host whose kubeadm, crictl and kubectl
are stand-ins: kubeadm prints the check-expiration JSON of the fixtures and records a
renewal, crictl reports a static pod running while its manifest is in the manifest
directory (as the kubelet would), kubectl answers /readyz."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mistakes  # tests/support
import runner  # tests/support


FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "cert_expiry" / "kubeadm-1.35.json"
PODS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


@pytest.fixture
def host(tmp_path):
    bin_dir, manifests, log = tmp_path / "bin", tmp_path / "manifests", tmp_path / "calls.log"
    bin_dir.mkdir()
    manifests.mkdir()
    for pod in PODS:
        (manifests / f"{pod}.yaml").write_text(f"# {pod}\n")
    scripts = {
        "kubeadm": f"""echo "kubeadm $*" >> {log}
case "$*" in
  "certs check-expiration -o json") cat {FIXTURE} ;;
  "certs renew all") echo renewed ;;
  *) exit 3 ;;
esac""",
        # crictl ps --name ^<pod>$ (or ^(<pod>)$) --state running --quiet
        "crictl": f"""pod=$(echo "$3" | tr -d '^$()'); echo "crictl $pod $(ls {manifests} | tr '\\n' ' ')" >> {log}
[ -e {manifests}/$pod.yaml ] && echo 0123456789ab; exit 0""",
        "kubectl": f'echo "kubectl $*" >> {log}',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    inventory = mistakes.build([], tmp_path / "inventory")
    return {"bin": bin_dir, "manifests": manifests, "log": log, "inventory": inventory, "tmp": tmp_path}


def run(host, *args):
    extra = {"ansible_connection": "local", "ansible_become": False, "ansible_python_interpreter": sys.executable,
             "gpushare_discover": False, "gpushare_kubernetes_distribution": "kubeadm",
             "__manifests": str(host["manifests"]), "__paused": str(host["tmp"] / "paused"),
             "gpushare_certificates_wait_seconds": 10, "gpushare_certificates_now": "2026-12-03T12:00:00Z"}
    env = runner.ansible_env(PATH="%s:%s" % (host["bin"], runner.os.environ["PATH"]))
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(host["inventory"]),
               str(runner.PLAYBOOKS / "certificates.yml"), "-e", json.dumps(extra), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)


def calls(host):
    return host["log"].read_text().splitlines() if host["log"].exists() else []


def test_check_mode_reports_and_changes_nothing(host):
    result = run(host, "--check")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "due within 30 days: admin.conf, apiserver-etcd-client" in result.stdout
    assert "externally managed (renew them yourself): front-proxy-client" in result.stdout
    assert "missing: super-admin.conf" in result.stdout
    assert calls(host) == ["kubeadm certs check-expiration -o json"]


def test_due_certificates_are_renewed_and_every_static_pod_restarted(host):
    result = run(host)
    assert result.returncode == 0, result.stdout[-3000:]
    log = calls(host)
    assert log[:2] == ["kubeadm certs check-expiration -o json", "kubeadm certs renew all"]
    for pod in PODS:
        # stopped (its manifest gone from the directory), then running again
        seen = [line for line in log if line.startswith(f"crictl {pod} ")]
        assert len(seen) == 2 and f"{pod}.yaml" not in seen[0] and f"{pod}.yaml" in seen[1], seen
    assert sorted(path.name for path in host["manifests"].iterdir()) == sorted(f"{pod}.yaml" for pod in PODS)
    assert sum("kubectl" in line and "/readyz" in line for line in log) == 2  # after etcd and the API server


def test_kube_vip_is_restarted_too_so_it_drops_the_old_admin_certificate(host):
    (host["manifests"] / "kube-vip.yaml").write_text("# kube-vip\n")
    result = run(host)
    assert result.returncode == 0, result.stdout[-3000:]
    seen = [line for line in calls(host) if line.startswith("crictl kube-vip ")]
    assert len(seen) == 2 and "kube-vip.yaml" not in seen[0] and "kube-vip.yaml" in seen[1], seen
    assert (host["manifests"] / "kube-vip.yaml").exists()


def test_nothing_due_renews_nothing(host):
    result = run(host, "-e", "gpushare_certificates_threshold_days=1")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "due within 1 days: none" in result.stdout
    assert calls(host) == ["kubeadm certs check-expiration -o json"]


def test_a_certificate_authority_due_fails_with_its_name(host):
    result = run(host, "-e", "gpushare_certificates_threshold_days=70")
    assert result.returncode != 0
    assert "the certificate authorities etcd-ca expire within 70 days" in result.stdout
    assert "kubeadm certs renew all" not in calls(host)
