# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mirror settings: validation, image and location rewriting, proxies, driver images."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as m

FULL = {
    "apt": {"ubuntu": "http://mirror.internal/ubuntu", "kubernetes": "http://mirror.internal/k8s",
            "nvidia": "http://mirror.internal/nvidia", "docker": "http://mirror.internal/docker"},
    "dnf": {"rocky": "http://mirror.internal/rocky", "kubernetes": "http://mirror.internal/k8s"},
    "registry": "registry.internal:5000",
    "registries": {"nvcr.io": "registry.internal:5000/nvcr"},
    "helm": {"oci": "oci://registry.internal:5000/charts"},
    "snap": {"proxy_url": "http://snaps.internal:8000", "proxy_id": "abc123"},
    "files": "http://mirror.internal/files/",
}


# --- validation ---------------------------------------------------------------------

def test_full_settings_are_valid_and_normalized():
    result = m.validate(FULL, {"http": "http://proxy:3128", "https": "http://proxy:3128", "no_proxy": "a,b"})
    assert result["mirrors"]["files"] == "http://mirror.internal/files"
    assert result["proxy"]["no_proxy"] == "a,b"


def test_empty_settings_mean_upstream():
    assert m.validate(None, None) == {"mirrors": {}, "proxy": {}}
    assert not m.is_mirrored({"apt": {}, "registry": ""})
    assert m.is_mirrored({"registry": "r.internal"})


def test_every_problem_is_reported_at_once():
    bad = {
        "apt": {"ubuntu": "mirror.internal/ubuntu", "debain": "http://x"},
        "registry": "https://registry.internal",
        "registries": {"nvcr.io/nvidia": "r.internal"},
        "helm": {"oci": "registry.internal/charts", "dir": "charts"},
        "snap": {"proxy_url": "http://snaps.internal"},
        "files": "ftp://files.internal",
        "regsitry": "typo",
    }
    with pytest.raises(m.MirrorError) as err:
        m.validate(bad, {"http": "proxy.internal:3128", "https_proxy": "x"})
    text = str(err.value)
    for field in ("gpushare_mirrors.apt.ubuntu", "gpushare_mirrors.apt.debain: unknown key",
                  "gpushare_mirrors.registry: 'https://registry.internal' must be HOST[:PORT][/PATH] without a scheme",
                  "gpushare_mirrors.registries['nvcr.io/nvidia']", "gpushare_mirrors.helm.oci",
                  "gpushare_mirrors.helm.dir", "gpushare_mirrors.snap.proxy_id: required",
                  "gpushare_mirrors.files", "gpushare_mirrors.regsitry: unknown key",
                  "gpushare_proxy.http: 'proxy.internal:3128' must be a URL with a scheme",
                  "gpushare_proxy.https_proxy: unknown key"):
        assert field in text, field


def test_proxy_error_suggests_a_proxy_url():
    errors = m.proxy_errors({"https": "proxy:3128"})
    assert errors and "http://proxy.example.com:3128" in errors[0]


@pytest.mark.parametrize("value", ["r.internal", "r.internal:5000", "r.internal:5000/a/b", "10.0.0.5:5000/x",
                                   "localhost:5000"])
def test_registry_forms_accepted(value):
    assert m.mirror_errors({"registry": value}) == []


@pytest.mark.parametrize("value", ["r.internal:99999", "r.internal/UPPER", "r.internal:5000//x", "-bad.host"])
def test_registry_forms_rejected(value):
    assert m.mirror_errors({"registry": value})


# --- images -------------------------------------------------------------------------

@pytest.mark.parametrize("reference, registry, repository, tag", [
    ("nvcr.io/nvidia/driver:595.91.07-ubuntu24.04", "nvcr.io", "nvidia/driver", "595.91.07-ubuntu24.04"),
    ("busybox", "docker.io", "library/busybox", None),
    ("grafana/grafana:12.1.0", "docker.io", "grafana/grafana", "12.1.0"),
    ("registry-1.docker.io/library/busybox:1", "docker.io", "library/busybox", "1"),
    ("localhost:5000/x/y:1", "localhost:5000", "x/y", "1"),
    ("registry.k8s.io/pause:3.10", "registry.k8s.io", "pause", "3.10"),
])
def test_parse_image(reference, registry, repository, tag):
    ref = m.parse_image(reference)
    assert (ref.registry, ref.repository, ref.tag) == (registry, repository, tag)


def test_parse_image_with_digest_keeps_it():
    digest = "sha256:" + "a" * 64
    ref = m.parse_image(f"quay.io/prometheus/prometheus:v3.14.0@{digest}")
    assert ref.digest == digest and ref.tag == "v3.14.0"
    assert m.mirror_image(str(ref), {"registry": "r.internal"}) == f"r.internal/prometheus/prometheus:v3.14.0@{digest}"


@pytest.mark.parametrize("bad", ["", "nvcr.io/", "nvcr.io//driver", "nvcr.io/NVIDIA/driver:1", None])
def test_parse_image_rejects(bad):
    with pytest.raises(m.MirrorError):
        m.parse_image(bad)


def test_per_registry_override_wins_over_registry():
    mirrors = {"registry": "r.internal:5000", "registries": {"nvcr.io": "nv.internal/nvcr"}}
    assert m.mirror_image("nvcr.io/nvidia/driver:580.1-ubuntu22.04", mirrors) == \
        "nv.internal/nvcr/nvidia/driver:580.1-ubuntu22.04"
    assert m.mirror_image("registry.k8s.io/kueue/kueue:v0.19.2", mirrors) == "r.internal:5000/kueue/kueue:v0.19.2"
    assert m.mirror_image("busybox:1.36", mirrors) == "r.internal:5000/library/busybox:1.36"


def test_only_per_registry_overrides_leave_other_registries_upstream():
    mirrors = {"registries": {"quay.io": "q.internal"}}
    assert m.mirror_image("quay.io/prometheus/prometheus:v3", mirrors) == "q.internal/prometheus/prometheus:v3"
    assert m.mirror_image("nvcr.io/nvidia/gpu-operator:v26.7.0", mirrors) == "nvcr.io/nvidia/gpu-operator:v26.7.0"


def test_mirror_repository():
    assert m.mirror_repository("nvcr.io/nvidia", {"registry": "r.internal/"}) == "r.internal/nvidia"
    assert m.mirror_repository("nvcr.io/nvidia", None) == "nvcr.io/nvidia"
    with pytest.raises(m.MirrorError, match="must not carry a tag"):
        m.mirror_repository("nvcr.io/nvidia/driver:1", {"registry": "r.internal"})


_component = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,5})?", fullmatch=True)


@given(registry=st.sampled_from(m.UPSTREAM_REGISTRIES), path=st.lists(_component, min_size=1, max_size=3),
       tag=st.from_regex(r"v?[0-9]{1,3}\.[0-9]{1,3}(-[a-z0-9.]{1,10})?", fullmatch=True),
       mirror=st.sampled_from(["r.internal", "r.internal:5000", "r.internal:5000/proxy/cache"]))
def test_rewrite_keeps_path_and_tag_and_drops_upstream(registry, path, tag, mirror):
    if registry == "docker.io" and len(path) == 1:
        path = ["library"] + path
    reference = f"{registry}/{'/'.join(path)}:{tag}"
    result = m.mirror_image(reference, {"registry": mirror})
    assert result == f"{mirror}/{'/'.join(path)}:{tag}"
    assert m.upstream_hosts_in(result) == []
    # Rewriting twice changes nothing more: a reference on the mirror stays there.
    assert m.mirror_image(result, {"registry": mirror}) == result
    assert m.mirror_repository(result.rsplit(":", 1)[0], {"registry": mirror}) == result.rsplit(":", 1)[0]


def test_containerd_hosts_toml():
    text = m.containerd_hosts_toml("nvcr.io", {"registry": "r.internal:5000"})
    assert text.splitlines()[0] == 'server = "https://r.internal:5000"'
    assert '[host."https://r.internal:5000"]' in text
    with_path = m.containerd_hosts_toml("nvcr.io", {"registry": "r.internal/cache"})
    assert "server =" not in with_path and "override_path = true" in with_path
    assert '[host."https://r.internal/v2/cache"]' in with_path
    assert m.containerd_hosts_toml("nvcr.io", {}) is None
    assert "skip_verify = true" in m.containerd_hosts_toml("quay.io", {"registry": "r"}, skip_verify=True)


# --- locations ----------------------------------------------------------------------

def test_repository_url():
    assert m.repository_url("apt", "kubernetes", "https://pkgs.k8s.io/core:/stable:/v1.35/deb/", FULL) == \
        "http://mirror.internal/k8s/core:/stable:/v1.35/deb/"
    assert m.repository_url("apt", "nvidia", "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/",
                            FULL) == "http://mirror.internal/nvidia/compute/cuda/repos/ubuntu2404/x86_64/"
    assert m.repository_url("apt", "ubuntu", "http://archive.ubuntu.com/ubuntu", FULL) == "http://mirror.internal/ubuntu/ubuntu"
    assert m.repository_url("dnf", "nvidia", "https://nvidia.github.io/x", FULL) == "https://nvidia.github.io/x"
    with pytest.raises(m.MirrorError, match="not an absolute URL"):
        m.repository_url("apt", "docker", "download.docker.com/linux", FULL)
    with pytest.raises(m.MirrorError, match="gpushare_mirrors.apt.rocky"):
        m.repository_url("apt", "rocky", "x", FULL)
    with pytest.raises(m.MirrorError, match="not apt or dnf"):
        m.repository_url("zypper", "rocky", "x", FULL)


def test_debian_archive_is_a_known_apt_mirror():
    debian = {"apt": {"debian": "http://127.0.0.1:8080"}}
    assert m.mirror_errors(debian) == []
    assert m.repository_url("apt", "debian", "http://deb.debian.org/debian", debian) == "http://127.0.0.1:8080/debian"
    assert m.repository_url("apt", "debian", "http://security.debian.org/debian-security", debian) == \
        "http://127.0.0.1:8080/debian-security"
    # Not a dnf repository, and the Ubuntu setting does not move Debian's archive.
    assert any("gpushare_mirrors.dnf.debian: unknown key" in e for e in m.mirror_errors({"dnf": {"debian": "http://x"}}))
    assert m.repository_url("apt", "debian", "http://deb.debian.org/debian", {"apt": {"ubuntu": "http://u"}}) == \
        "http://deb.debian.org/debian"


def test_chart_location_order_dir_then_oci_then_upstream():
    upstream = "https://helm.ngc.nvidia.com/nvidia"
    assert m.chart_location("gpu-operator", "v26.7.0", upstream, None) == {
        "chart_ref": "gpu-operator", "chart_repo_url": upstream, "chart_version": "v26.7.0", "source": "upstream"}
    oci = m.chart_location("gpu-operator", "v26.7.0", upstream, {"helm": {"oci": "oci://r.internal/charts/"}})
    assert oci["chart_ref"] == "oci://r.internal/charts/gpu-operator" and oci["chart_repo_url"] is None
    both = {"helm": {"oci": "oci://r.internal/charts", "dir": "/srv/charts"}}
    assert m.chart_location("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts", both)["chart_ref"] == \
        "/srv/charts/kueue-0.19.2.tgz"
    assert m.chart_location("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts", None)["chart_ref"] == \
        "oci://registry.k8s.io/kueue/charts/kueue"


def test_snap_settings():
    assert m.snap_settings(None) == {"mode": "store"}
    proxy = m.snap_settings(FULL)
    assert proxy["mode"] == "proxy" and proxy["assertions_url"] == "http://snaps.internal:8000/v2/auth/store/assertions"
    assert m.snap_settings({"snap": {"files_dir": "/srv/snaps/"}}) == {"mode": "files", "files_dir": "/srv/snaps"}


def test_file_url():
    upstream = "https://get.helm.sh/helm-v3.19.0-linux-amd64.tar.gz"
    assert m.file_url(upstream, None) == upstream
    assert m.file_url(upstream, FULL) == "http://mirror.internal/files/helm-v3.19.0-linux-amd64.tar.gz"
    assert m.file_url("https://depot.ciq.com/x/depot.rpm", FULL, "depot/depot.rpm") == \
        "http://mirror.internal/files/depot/depot.rpm"


# --- proxies ------------------------------------------------------------------------

def test_proxy_env_sets_both_spellings_and_merges_no_proxy():
    env = m.proxy_env({"http": "http://p:3128", "https": "http://p:3128", "no_proxy": "localhost, .internal"},
                      ["10.96.0.0/12", "localhost"])
    assert env["http_proxy"] == env["HTTP_PROXY"] == "http://p:3128"
    assert env["NO_PROXY"] == env["no_proxy"] == "localhost,.internal,10.96.0.0/12"


def test_proxy_env_empty_without_proxy():
    assert m.proxy_env(None) == {}
    assert m.proxy_env({"no_proxy": "a"}) == {}


# --- scanning -----------------------------------------------------------------------

def test_upstream_hosts_in_finds_hosts_not_lookalikes():
    text = "\n".join([
        "repository: nvcr.io/nvidia",
        "url: https://pkgs.k8s.io/core:/stable:/v1.35/deb/",
        "repository: mirror.nvcr.io.internal/nvidia",
        "repository: my-nvcr.io/x",
        "image: quay.io.mirror/x",
        '"registry.k8s.io"',
    ])
    found = [(line, host) for line, host, _text in m.upstream_hosts_in(text)]
    assert found == [(1, "nvcr.io"), (2, "pkgs.k8s.io"), (6, "registry.k8s.io")]


# --- GPU Operator driver images -----------------------------------------------------

@pytest.mark.parametrize("distribution, version, tag", [
    ("Ubuntu", "22.04", "ubuntu22.04"), ("ubuntu", "24.04", "ubuntu24.04"),
    ("Rocky", "9.6", "rocky9"), ("Rocky Linux", "10.1", "rocky10"), ("RedHat", "9.8", "rhel9"),
])
def test_driver_os_tag(distribution, version, tag):
    assert m.driver_os_tag(distribution, version) == tag


@pytest.mark.parametrize("distribution, version, field", [
    ("Debian", "12", "distribution"), ("Ubuntu", "20.04", "distribution version"), ("Rocky", "7.9", "distribution version"),
])
def test_driver_os_tag_rejects_with_host(distribution, version, field):
    with pytest.raises(m.MirrorError, match=f"host gpu1: {field}"):
        m.driver_os_tag(distribution, version, host="gpu1")


def test_conventional_driver_image():
    assert m.driver_image("595.91.07", "ubuntu24.04")["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04"
    assert m.driver_image("595.91.07", "rocky10")["tag"] == "595.91.07-rocky10"
    with pytest.raises(m.MirrorError, match="full driver version"):
        m.driver_image("595", "ubuntu24.04")


def test_precompiled_driver_image():
    found = m.driver_image("595.91.07", "ubuntu24.04", precompiled=True, kernel="6.8.0-60-generic")
    assert found == {"image": "nvcr.io/nvidia/driver:595-6.8.0-60-generic-ubuntu24.04",
                     "tag": "595-6.8.0-60-generic-ubuntu24.04", "warnings": []}
    legacy = m.driver_image("580", "ubuntu22.04", precompiled=True, kernel="5.15.0-143-aws")
    assert legacy["tag"] == "580-5.15.0-143-aws-ubuntu22.04" and legacy["warnings"] == []


def test_precompiled_outside_validated_table_warns():
    assert "not validated" in m.driver_image("580", "ubuntu26.04", True, "7.0.0-10-generic")["warnings"][0]
    assert "series 6.5" in m.driver_image("595", "ubuntu22.04", True, "6.5.0-45-generic")["warnings"][0]
    assert "custom build" in m.driver_image("595", "ubuntu24.04", True, "6.8.0-60-lowlatency")["warnings"][0]


def test_precompiled_errors_name_host_and_field():
    with pytest.raises(m.MirrorError, match="host gpu2: driver.usePrecompiled: .*Ubuntu only"):
        m.driver_image("595", "rocky9", True, "5.14.0-570.el9.x86_64", host="gpu2")
    with pytest.raises(m.MirrorError, match="host gpu2: kernel"):
        m.driver_image("595", "ubuntu24.04", True, None, host="gpu2")


def _docs(reference_dir: Path, name: str) -> str:
    return (reference_dir / "gpu-operator" / "docs" / name).read_text(encoding="utf-8")


def test_driver_naming_matches_operator_docs(reference_dir):
    precompiled = _docs(reference_dir, "precompiled-drivers.rst")
    assert "<driver-branch>-<linux-kernel-version>-<os-tag>" in precompiled
    # The docs' own example tag is produced by the function.
    assert "525-5.15.0-69-generic-ubuntu22.04" in precompiled
    for flavor in m.PRECOMPILED_FLAVORS:
        assert f"``{flavor}``" in precompiled
    platform = _docs(reference_dir, "platform-support.rst")
    assert "``ID=rocky`` and ``VERSION_ID=10.1`` produce ``rocky10``" in platform
    assert m.driver_os_tag("rocky", "10.1") == "rocky10" and m.driver_os_tag("rhel", "9.8") == "rhel9"
    # The validated precompiled table: OS, kernel series and branches as in the docs.
    table = platform.split(".. _supported-precompiled-drivers:")[1].split("Partner Validated")[0]
    rows = re.findall(r"\* - Ubuntu (\d\d\.\d\d)\n\s+- [^\n]+\n\s+- ([^\n]+)\n\s+- ([^\n]+)", table)
    parsed = {}
    for os_release, kernels, branches in rows:
        supported = tuple(branch.strip().lstrip("R") for branch in branches.split(","))
        parsed[f"ubuntu{os_release}"] = {kernel.strip(): supported for kernel in kernels.split(",")}
    assert parsed == m.PRECOMPILED_VALIDATED
