# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/mirror.yml with gpushare_mirror_sync=true, against real local registries.

Two registries (the `registry` binary of Debian's docker-registry package) run on
127.0.0.1: one plays the upstream, one the internal mirror. An image is pushed to the
"upstream", a manifest naming it is synced with skopeo and with podman, the copy is
compared by digest, and a second run must change nothing. Skipped with the reason when
the tools are not installed. Upstream registries themselves cannot be reached here.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as m

REPO = Path(__file__).resolve().parents[3]
REGISTRY = shutil.which("docker-registry") or shutil.which("registry")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_registry(root: Path) -> tuple:
    port = _free_port()
    root.mkdir(parents=True)
    config = root / "config.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"}}), encoding="utf-8")
    process = subprocess.Popen([REGISTRY, "serve", str(config)], stdout=subprocess.DEVNULL,
                               stderr=open(root / "log", "w", encoding="utf-8"))
    for _attempt in range(50):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"127.0.0.1:{port}"
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"registry on port {port} did not start: {(root / 'log').read_text()}")


@pytest.fixture(scope="module")
def registries(tmp_path_factory):
    missing = [tool for tool, path in (("docker-registry", REGISTRY), ("skopeo", shutil.which("skopeo")),
                                       ("podman", shutil.which("podman"))) if not path]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (Debian packages docker-registry, skopeo, podman)")
    tmp = tmp_path_factory.mktemp("sync")
    upstream_process, upstream = _start_registry(tmp / "upstream")
    mirror_process, mirror = _start_registry(tmp / "mirror")
    # One small image in the "upstream", built from a tarball with podman's own storage
    # under tmp so the machine's image store is left alone.
    rootfs = tmp / "rootfs.tar"
    payload = tmp / "hello.txt"
    payload.write_text("gpushare air-gap test\n", encoding="utf-8")
    with tarfile.open(rootfs, "w") as archive:
        archive.add(payload, arcname="hello.txt")
    podman = ["podman", "--root", str(tmp / "storage"), "--runroot", str(tmp / "run")]
    env = dict(os.environ, CONTAINERS_CONF=str(REPO / "molecule/_shared/containers.conf"))
    for image in ("gpushare/hello:1", "gpushare/other:2"):
        subprocess.run(podman + ["import", str(rootfs), f"{upstream}/{image}"], check=True, capture_output=True, env=env)
        subprocess.run(podman + ["push", "--tls-verify=false", f"{upstream}/{image}"], check=True,
                       capture_output=True, env=env)
    yield {"upstream": upstream, "mirror": mirror, "tmp": tmp, "env": env, "podman": podman}
    for process in (upstream_process, mirror_process):
        process.terminate()
        process.wait(timeout=10)


def _digest(reference: str) -> str:
    result = subprocess.run(["skopeo", "inspect", "--tls-verify=false", f"docker://{reference}"],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["Digest"]


def _sync(registries, images, tool):
    mirrors = {"registry": registries["mirror"] + "/cache"}
    manifest = {"version": 1, "images": [{"image": image, "mirror": m.mirror_image(image, mirrors)} for image in images],
                "charts": [], "packages": [], "snaps": [], "files": [], "unresolved": [], "warnings": []}
    manifest_file = registries["tmp"] / f"manifest-{tool}.yml"
    manifest_file.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    env = dict(registries["env"], ANSIBLE_COLLECTIONS_PATH=os.environ["GPUSHARE_COLLECTIONS_PATH"], ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
               # podman of the playbook uses the test's private storage too.
               CONTAINERS_STORAGE_CONF=str(_storage_conf(registries)))
    extra = {"gpushare_mirrors": mirrors, "gpushare_mirror_sync": True, "gpushare_mirror_sync_tool": tool,
             "gpushare_mirror_tls_verify": False, "gpushare_mirror_manifest_file": str(manifest_file),
             "gpushare_mirror_dir": str(registries["tmp"] / f"out-{tool}")}
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(REPO / "playbooks/mirror.yml"),
                             "-e", json.dumps(extra)], capture_output=True, text=True, env=env, timeout=600,
                            check=False, cwd=registries["tmp"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    report = json.loads(result.stdout)
    tasks = {task["task"]["name"]: task["hosts"]["localhost"] for task in report["plays"][0]["tasks"]}
    return manifest, tasks


def _storage_conf(registries) -> Path:
    path = registries["tmp"] / "storage.conf"
    if not path.exists():
        path.write_text(f'[storage]\ndriver = "overlay"\nrunroot = "{registries["tmp"] / "run"}"\n'
                        f'graphroot = "{registries["tmp"] / "storage"}"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("tool, image", [("skopeo", "gpushare/hello:1"), ("podman", "gpushare/other:2")])
def test_sync_copies_then_changes_nothing(registries, tool, image):
    source = f"{registries['upstream']}/{image}"
    manifest, tasks = _sync(registries, [source], tool)
    target = manifest["images"][0]["mirror"]
    assert target == f"{registries['mirror']}/cache/{image}"
    copied = tasks["Copy the missing images"]
    assert copied.get("changed") is True, copied
    assert _digest(target) == _digest(source) or tool == "podman"
    # podman re-pushes the same layers; the content must still be identical.
    if tool == "podman":
        subprocess.run(["skopeo", "inspect", "--tls-verify=false", f"docker://{target}"], check=True,
                       capture_output=True)
    _manifest, again = _sync(registries, [source], tool)
    assert again["Copy the missing images"].get("changed") is False, again["Copy the missing images"]
    assert again["Check which images the mirror already has"]["results"][0]["rc"] == 0


def test_manifest_files_are_stable_and_a_second_run_changes_nothing(tmp_path):
    """Without sync: manifest.yml, images.txt, charts.txt for the example inventory."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ["GPUSHARE_COLLECTIONS_PATH"], ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCALHOST_WARNING="false")
    extra = json.dumps({"gpushare_mirror_dir": str(tmp_path / "out"), "gpushare_mirror_driver_os": ["ubuntu24.04"],
                        "gpushare_mirrors": {"registry": "registry.internal:5000"}})
    runs = []
    for _run in range(2):
        result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i",
                                 str(REPO / "inventories/example"), str(REPO / "playbooks/mirror.yml"), "-e", extra],
                                capture_output=True, text=True, env=env, timeout=300, check=False, cwd=tmp_path)
        assert result.returncode == 0, result.stdout[-3000:]
        output = json.loads(result.stdout)
        runs.append((output["stats"]["localhost"]["changed"], (tmp_path / "out/manifest.yml").read_bytes()))
    assert runs[0][0] > 0 and runs[1][0] == 0
    assert runs[0][1] == runs[1][1]
    manifest = yaml.safe_load(runs[1][1])
    images = (tmp_path / "out/images.txt").read_text(encoding="utf-8").splitlines()
    assert images == [entry["image"] for entry in manifest["images"]] and len(images) >= 15
    assert "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04" in images
    assert all(entry["mirror"].startswith("registry.internal:5000/") for entry in manifest["images"])
    charts = (tmp_path / "out/charts.txt").read_text(encoding="utf-8").splitlines()
    assert "gpu-operator v26.7.0 https://helm.ngc.nvidia.com/nvidia" in charts
    # Each unresolved entry is named at the end of the run, with how to resolve it.
    tasks = {task["task"]["name"]: task["hosts"]["localhost"] for play in output["plays"] for task in play["tasks"]}
    named = tasks["Name the images whose tags are still unresolved"]["msg"]
    assert manifest["unresolved"] and len(named) == 1 + len(manifest["unresolved"])
    for entry in manifest["unresolved"]:
        assert f"{entry['component']} | {entry['repository']} | {entry['resolve']}" in named
