# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubeadm role's etcd snapshot script against a real etcd 3.6.16 with TLS client
authentication, as kubeadm runs it: snapshots are taken, kept to the retention count,
restored with etcdutl into a new data directory, and a second etcd started on it serves
the keys written before the snapshot.

etcd is the rehearsal's (roles/rehearsal, built into ~/.cache/gpushare/rehearsal/<key>/bin);
etcdctl and etcdutl of the same release are built from the Go modules of ./go
(tests/support/etcd_tools.py). Without those binaries (or go, openssl) the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests" / "integration" / "rehearsal"))

from rehearsal_env import GO_DIR, cache_root, rc  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import etcd_restore  # noqa: E402  pylint: disable=wrong-import-position
import etcd_tools  # noqa: E402  pylint: disable=wrong-import-position  # tests/support
import mistakes  # noqa: E402  pylint: disable=wrong-import-position  # tests/support
import runner  # noqa: E402  pylint: disable=wrong-import-position  # tests/support


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def binaries():
    etcd = Path(rc.bin_dir_for(str(GO_DIR), cache_root())) / "etcd"
    if not os.access(etcd, os.X_OK):
        pytest.skip(f"no rehearsal etcd at {etcd}: build the rehearsal binaries (make rehearsal-binaries)")
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the etcd certificates")
    return {"etcd": str(etcd), **etcd_tools.tools()}


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A kubeadm-shaped etcd PKI: ca, server (127.0.0.1) and healthcheck-client."""
    pki = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
             "-subj", "/CN=etcd-ca", cwd=pki)
    for name, cn, ext in (("server", "etcd", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth"),
                          ("healthcheck-client", "kube-etcd-healthcheck-client", "extendedKeyUsage=clientAuth")):
        (pki / f"{name}.ext").write_text(ext + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={cn}", cwd=pki)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "1", "-extfile", f"{name}.ext", cwd=pki)
    return pki


class Etcd:
    def __init__(self, binary, pki, data_dir, name="default"):
        self.port, peer = _free_port(), _free_port()
        self.endpoint = f"https://127.0.0.1:{self.port}"
        self.log = open(str(data_dir) + ".log", "w", encoding="utf-8")  # pylint: disable=consider-using-with
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            [binary, "--name", name, "--data-dir", str(data_dir), "--listen-client-urls", self.endpoint,
             "--advertise-client-urls", self.endpoint, "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"{name}=http://127.0.0.1:{peer}",
             "--cert-file", str(pki / "server.crt"), "--key-file", str(pki / "server.key"),
             "--client-cert-auth", "--trusted-ca-file", str(pki / "ca.crt"), "--unsafe-no-fsync"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def etcdctl(binaries, pki, endpoint, *args, check=True):
    return subprocess.run([binaries["etcdctl"], f"--endpoints={endpoint}", f"--cacert={pki / 'ca.crt'}",
                           f"--cert={pki / 'healthcheck-client.crt'}", f"--key={pki / 'healthcheck-client.key'}",
                           *args], capture_output=True, text=True, check=check, timeout=30)


def wait_healthy(binaries, pki, endpoint):
    deadline = time.time() + 30
    while time.time() < deadline:
        if etcdctl(binaries, pki, endpoint, "endpoint", "health", check=False).returncode == 0:
            return
        time.sleep(0.3)
    raise AssertionError(f"etcd at {endpoint} did not become healthy")


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    """The role's template rendered with its own defaults."""
    return etcd_tools.snapshot_script(tmp_path_factory.mktemp("script"))


def run_script(script, binaries, pki, endpoint, backup_dir, keep):
    env = dict(os.environ, ETCDCTL=binaries["etcdctl"], ENDPOINT=endpoint, PKI=str(pki), BACKUP_DIR=str(backup_dir),
               KEEP=str(keep))
    return subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_shellcheck_finds_nothing(script):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    result = subprocess.run(["shellcheck", "-s", "sh", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_snapshots_are_kept_to_the_count_and_restore_to_a_working_etcd(binaries, pki, script, tmp_path):
    source = Etcd(binaries["etcd"], pki, tmp_path / "etcd")
    try:
        wait_healthy(binaries, pki, source.endpoint)
        etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/teams", "production,data,training")
        names = []
        for number in range(3):
            etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/run", str(number))
            result = run_script(script, binaries, pki, source.endpoint, tmp_path / "backups", keep=2)
            assert result.returncode == 0, result.stdout + result.stderr
            names.append(result.stdout.split("snapshot ", 1)[1].split()[0])
            time.sleep(1.1)  # names carry the second
        kept = sorted(path.name for path in (tmp_path / "backups").iterdir())
        assert kept == sorted(Path(name).name for name in names[1:]), kept  # the oldest went
        assert "removed" in result.stdout
        etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/after", "not in the snapshot")
    finally:
        source.stop()

    newest = names[-1]
    status = subprocess.run([binaries["etcdutl"], "snapshot", "status", newest, "-w", "json"], capture_output=True,
                            text=True, check=True)
    assert '"totalKey"' in status.stdout
    restored_dir = tmp_path / "restored"
    subprocess.run([binaries["etcdutl"], "snapshot", "restore", newest, "--data-dir", str(restored_dir),
                    "--name", "restored", "--initial-cluster", "restored=http://127.0.0.1:2380",
                    "--initial-advertise-peer-urls", "http://127.0.0.1:2380"],
                   capture_output=True, text=True, check=True)
    restored = Etcd(binaries["etcd"], pki, restored_dir, name="restored")
    try:
        wait_healthy(binaries, pki, restored.endpoint)
        get = etcdctl(binaries, pki, restored.endpoint, "get", "--prefix", "/registry/gpushare/", "--print-value-only")
        assert get.stdout.split() == ["production,data,training", "2"] or \
            sorted(get.stdout.split()) == sorted(["production,data,training", "2"]), get.stdout
        assert "not in the snapshot" not in get.stdout
    finally:
        restored.stop()


def test_the_restore_etcd_restore_yml_runs_bumps_and_compacts_the_revisions(binaries, pki, script, tmp_path):
    """etcd_restore.yml's etcdutl command (k8s_etcd_restore_commands, from a kubeadm-shaped etcd
    manifest) against the real etcd: what was in the snapshot is back, what came after is gone,
    the revision is past anything a client saw before, and reading at an old revision answers
    "compacted", which makes every watch from before the restore list again."""
    source = Etcd(binaries["etcd"], pki, tmp_path / "etcd")
    try:
        wait_healthy(binaries, pki, source.endpoint)
        for number in range(5):
            etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/team", f"revision {number}")
        result = run_script(script, binaries, pki, source.endpoint, tmp_path / "backups", keep=2)
        assert result.returncode == 0, result.stdout + result.stderr
        snapshot = result.stdout.split("snapshot ", 1)[1].split()[0]
        etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/after", "not in the snapshot")
        seen = json.loads(etcdctl(binaries, pki, source.endpoint, "endpoint", "status", "-w", "json").stdout)
        seen_revision = seen[0]["Status"]["header"]["revision"]
    finally:
        source.stop()
    snapshot_revision = json.loads(subprocess.run([binaries["etcdutl"], "snapshot", "status", snapshot, "-w", "json"],
                                                  capture_output=True, text=True, check=True).stdout)["revision"]
    assert snapshot_revision < seen_revision

    data_dir = tmp_path / "var-lib-etcd"
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "etcd"}, "spec": {"containers": [{
        "name": "etcd", "image": "registry.k8s.io/etcd:3.6.16-0",
        "command": ["etcd", "--name=cp1", f"--data-dir={data_dir}", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                    "--initial-cluster=cp1=http://127.0.0.1:2380"]}]}})
    commands = etcd_restore.restore_commands({"cp1": manifest}, snapshot, "gpushare-restore-test", binaries["etcdutl"])
    restore = subprocess.run(commands["cp1"]["argv"], capture_output=True, text=True, check=False)
    assert restore.returncode == 0, restore.stderr
    Path(commands["cp1"]["restored_dir"]).rename(data_dir)  # the playbook's swap
    restored = Etcd(binaries["etcd"], pki, data_dir, name="cp1")
    try:
        wait_healthy(binaries, pki, restored.endpoint)
        get = etcdctl(binaries, pki, restored.endpoint, "get", "--prefix", "/registry/gpushare/", "--print-value-only")
        assert get.stdout.split("\n")[0] == "revision 4" and "not in the snapshot" not in get.stdout, get.stdout
        status = json.loads(etcdctl(binaries, pki, restored.endpoint, "endpoint", "status", "-w", "json").stdout)
        revision = status[0]["Status"]["header"]["revision"]
        assert revision >= snapshot_revision + etcd_restore.BUMP_REVISION > seen_revision, (revision, snapshot_revision)
        old = etcdctl(binaries, pki, restored.endpoint, "get", "/registry/gpushare/team", f"--rev={seen_revision}",
                      check=False)
        assert old.returncode != 0 and "compacted" in old.stderr, old.stdout + old.stderr
        # A write after the restore gets a revision no client saw before it.
        etcdctl(binaries, pki, restored.endpoint, "put", "/registry/gpushare/new", "after the restore")
        status = json.loads(etcdctl(binaries, pki, restored.endpoint, "endpoint", "status", "-w", "json").stdout)
        assert status[0]["Status"]["header"]["revision"] > revision
    finally:
        restored.stop()


def test_an_unreachable_etcd_fails_and_keeps_the_old_snapshots(binaries, pki, script, tmp_path):
    backups = tmp_path / "backups"
    backups.mkdir()
    (backups / "etcd-cp1-20260101T000000Z.db").write_bytes(b"old")
    result = run_script(script, binaries, pki, f"https://127.0.0.1:{_free_port()}", backups, keep=1)
    assert result.returncode != 0
    assert sorted(path.name for path in backups.iterdir()) == ["etcd-cp1-20260101T000000Z.db"]


def test_a_bad_retention_count_is_refused(script, tmp_path):
    result = subprocess.run(["sh", str(script)], env=dict(os.environ, KEEP="0", BACKUP_DIR=str(tmp_path), ETCDCTL="true"),
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "KEEP must be a positive number" in result.stderr


@pytest.fixture
def restore_host(binaries, pki, script, tmp_path):
    """A kubeadm control plane on this machine for playbooks/etcd_restore.yml: its etcd data
    directory (a real etcd wrote it; a snapshot was taken, then one more key written), the four
    static pod manifests kubeadm writes, and stand-ins for crictl (a static pod runs while its
    manifest is in the manifest directory, as the kubelet would have it) and kubectl."""
    data_dir, manifests, bin_dir, log = tmp_path / "var-lib-etcd", tmp_path / "manifests", tmp_path / "bin", tmp_path / "calls.log"
    source = Etcd(binaries["etcd"], pki, data_dir, name="gpu1")
    try:
        wait_healthy(binaries, pki, source.endpoint)
        etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/team", "in the snapshot")
        result = run_script(script, binaries, pki, source.endpoint, tmp_path / "backups", keep=2)
        assert result.returncode == 0, result.stdout + result.stderr
        snapshot = result.stdout.split("snapshot ", 1)[1].split()[0]
        etcdctl(binaries, pki, source.endpoint, "put", "/registry/gpushare/after", "not in the snapshot")
    finally:
        source.stop()
    manifests.mkdir()
    bin_dir.mkdir()
    etcd_container = {
        "name": "etcd", "image": "registry.k8s.io/etcd:3.6.16-0",
        "command": ["etcd", "--name=gpu1", f"--data-dir={data_dir}", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                    "--initial-cluster=gpu1=http://127.0.0.1:2380"]}
    etcd_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "etcd"}, "spec": {"containers": [etcd_container]}}
    (manifests / "etcd.yaml").write_text(yaml.safe_dump(etcd_pod))
    for pod in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        (manifests / f"{pod}.yaml").write_text(f"# {pod}\n")
    stubs = {
        # crictl ps --name <regex> --state running --quiet
        "crictl": f"""echo "crictl $3 $(ls {manifests} | tr '\\n' ' ')" >> {log}
for f in {manifests}/*.yaml; do basename "$f" .yaml | grep -Eq "$3" && echo 0123456789ab; done
exit 0""",
        "kubectl": f"""echo "kubectl $*" >> {log}
case "$*" in
  *"--namespace kube-system rollout"*|*"--namespace kueue-system rollout"*) echo "deployment.apps/controller restarted" ;;
  *rollout*) echo "No resources found in that namespace." >&2 ;;
esac
exit 0""",
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    return {"data_dir": data_dir, "manifests": manifests, "bin": bin_dir, "log": log, "snapshot": snapshot,
            "tmp": tmp_path, "binaries": binaries, "pki": pki}


def run_restore(host, *args, **variables):
    inventory = host["tmp"] / "inventory"
    if not inventory.exists():
        mistakes.build([], inventory)
    extra = {"ansible_connection": "local", "ansible_become": False, "ansible_python_interpreter": sys.executable,
             "gpushare_discover": False, "gpushare_kubernetes_distribution": "kubeadm",
             "__manifests": str(host["manifests"]), "__paused": str(host["tmp"] / "paused"),
             "__etcd_restore_dir": str(host["tmp"] / "restore"), "gpushare_etcd_restore_wait_seconds": 10,
             "gpushare_etcd_restore_snapshot": host["snapshot"], "gpushare_etcd_restore_etcdutl": host["binaries"]["etcdutl"],
             "gpushare_etcd_restore_confirm": True, **variables}
    env = runner.ansible_env(PATH="%s:%s" % (host["bin"], os.environ["PATH"]))
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
               str(runner.PLAYBOOKS / "etcd_restore.yml"), "-e", json.dumps(extra), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_etcd_restore_yml_stops_restores_and_starts_in_order(restore_host):
    """The playbook end to end on this machine, but for the kubelet restart (no systemd here)."""
    host = restore_host
    result = run_restore(host, "--skip-tags", "etcd_restore_kubelets")
    assert result.returncode == 0, result.stdout[-5000:]
    # a crictl call as the pod name pattern it asked for, a kubectl call as its command line
    steps = [line.split(" ")[1] if line.startswith("crictl ") else line for line in host["log"].read_text().splitlines()]
    everyone = "^(kube-apiserver|kube-controller-manager|kube-scheduler)$"
    # stopped: the API server and the controllers, then etcd; started: etcd, the API server
    # (then /readyz), then the controllers; then the Deployments of every namespace
    assert steps.index(everyone) < steps.index("^(etcd)$") < steps.index("^etcd$") < steps.index("^kube-apiserver$")
    readyz = steps.index("kubectl --kubeconfig /etc/kubernetes/admin.conf get --raw /readyz")
    assert steps.index("^kube-apiserver$") < readyz < steps.index("^kube-controller-manager$")
    restarts = [step for step in steps if "rollout restart" in step]
    assert [s.split("--namespace ")[1].split()[0] for s in restarts] == [
        "kube-system", "kueue-system", "gpu-operator", "nvidia-dra-driver-gpu", "monitoring"]
    assert sorted(p.name for p in host["manifests"].iterdir()) == [
        "etcd.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"]
    kept = [p for p in host["tmp"].iterdir() if p.name.startswith("var-lib-etcd.before-restore-")]
    assert len(kept) == 1 and (kept[0] / "member").is_dir(), kept
    assert "--bump-revision 1000000000 --mark-compacted" in result.stdout

    restored = Etcd(host["binaries"]["etcd"], host["pki"], host["data_dir"], name="gpu1")
    try:
        wait_healthy(host["binaries"], host["pki"], restored.endpoint)
        get = etcdctl(host["binaries"], host["pki"], restored.endpoint, "get", "--prefix", "/registry/gpushare/",
                      "--print-value-only")
        assert get.stdout.split("\n")[0] == "in the snapshot" and "not in the snapshot" not in get.stdout, get.stdout
        status = json.loads(etcdctl(host["binaries"], host["pki"], restored.endpoint, "endpoint", "status", "-w",
                                    "json").stdout)
        assert status[0]["Status"]["header"]["revision"] > etcd_restore.BUMP_REVISION
    finally:
        restored.stop()


def test_etcd_restore_yml_refuses_without_confirmation_and_check_mode_stops_nothing(restore_host):
    host = restore_host
    result = run_restore(host, gpushare_etcd_restore_confirm=False)
    assert result.returncode != 0
    assert "-e gpushare_etcd_restore_confirm=true (every object written after the snapshot is lost)" in " ".join(
        result.stdout.split())
    assert not host["log"].exists() and not (host["tmp"] / "restore").exists()

    result = run_restore(host, "--check")
    assert result.returncode == 0, result.stdout[-5000:]
    assert "etcd member gpu1 from the snapshot at revision" in result.stdout
    assert not host["log"].exists(), host["log"].read_text()
    assert sorted(p.name for p in host["tmp"].iterdir() if p.name.startswith("var-lib-etcd")) == ["var-lib-etcd",
                                                                                                  "var-lib-etcd.log"]
