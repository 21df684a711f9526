"""kubernetes_common installs the pinned Helm only when the archive matches its checksum."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from .k8s_render import FIXTURES, collections_dir

ARCHIVE = "helm-v3.19.0-linux-amd64.tar.gz"


def _mirror(path: Path, checksum_of: bytes | None = None) -> None:
    path.mkdir(parents=True)
    script = b"#!/bin/sh\necho v3.19.0+stand-in\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("linux-amd64/helm")
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
        readme = b"not installed\n"
        info = tarfile.TarInfo("linux-amd64/README.md")
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
    data = buf.getvalue()
    (path / ARCHIVE).write_bytes(data)
    digest = hashlib.sha256(checksum_of if checksum_of is not None else data).hexdigest()
    (path / f"{ARCHIVE}.sha256sum").write_text(f"{digest}  {ARCHIVE}\n")


def _run(tmp: Path, mirror: Path):
    extra = {
        "gpushare_mirrors": {"files": f"file://{mirror}"},
        "kubernetes_common_controller_helm_install_dir": str(tmp / "share" / "helm"),
        "kubernetes_common_controller_helm_binary": str(tmp / "bin" / "helm"),
        "ansible_python_interpreter": sys.executable,
    }
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_dir(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp / "ansible-home"), ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False")
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-c", "local", "-e", json.dumps(extra),
         str(FIXTURES / "render" / "helm.yml")],
        env=env, capture_output=True, text=True, timeout=300, check=False)


def test_verified_helm_installed_once_and_linked(tmp_path):
    mirror = tmp_path / "mirror"
    _mirror(mirror)
    first = _run(tmp_path, mirror)
    assert first.returncode == 0, first.stdout
    link = tmp_path / "bin" / "helm"
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "share" / "helm" / "v3.19.0" / "helm")
    assert subprocess.run([str(link)], capture_output=True, text=True, check=True).stdout == "v3.19.0+stand-in\n"
    assert not (tmp_path / "share" / "helm" / "v3.19.0" / "README.md").exists()
    # The fact the add-on roles pass as binary_path, used from a later play.
    assert f"helm at {link} says v3.19.0+stand-in" in first.stdout
    second = _run(tmp_path, mirror)
    assert second.returncode == 0 and "changed=0" in second.stdout, second.stdout


def test_checksum_mismatch_installs_nothing(tmp_path):
    mirror = tmp_path / "mirror"
    _mirror(mirror, checksum_of=b"a different archive")
    result = _run(tmp_path, mirror)
    assert result.returncode != 0
    assert "checksum" in result.stdout.lower()
    assert not (tmp_path / "bin" / "helm").exists()
    assert not (tmp_path / "share" / "helm" / "v3.19.0" / "helm").exists()
