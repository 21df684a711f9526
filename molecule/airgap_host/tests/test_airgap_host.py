"""host_prep and containerd installed everything from the local mirror, and nothing else."""

import os
import re
from pathlib import Path

import pytest

RUN_DIR = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "mirror"
HOST_PREP_PACKAGES = ["chrony", "conntrack", "socat", "ethtool", "curl", "gpg", "ca-certificates", "iproute2"]


@pytest.fixture(scope="module")
def mirror():
    port_file = RUN_DIR / "port"
    if not port_file.is_file():
        pytest.fail(f"{port_file} is missing: the mirror is not running (prepare starts it)")
    return f"http://127.0.0.1:{port_file.read_text().strip()}"


def installed_from(host, package):
    """The repository URL apt took the installed version of `package` from."""
    policy = host.check_output("apt-cache policy %s", package)
    installed = re.search(r"^\s+Installed: (\S+)", policy, re.M).group(1)
    # The version table: "*** <version> <prio>" then one indented line per source of it.
    block = policy.split(f"*** {installed} ", 1)[1].splitlines()[1:]
    sources = []
    for line in block:
        match = re.match(r"^\s{5,}\d+ (\S+)", line)
        if not match:
            break
        sources.append(match.group(1))
    return [s for s in sources if s != "/var/lib/dpkg/status"]


def test_upstream_names_point_nowhere(host):
    for name in ("deb.debian.org", "security.debian.org", "download.docker.com", "pkgs.k8s.io"):
        assert host.check_output("getent hosts %s", name).split()[0] == "127.0.0.2"
    # Nothing answers there: a download by name from upstream fails.
    assert host.run("curl -sSf --max-time 5 -o /dev/null http://deb.debian.org/debian/dists/bookworm/InRelease").rc != 0


def test_every_apt_source_is_the_mirror(host, mirror):
    # apt's own view: every index target it knows comes from the mirror.
    uris = host.check_output("apt-get indextargets --format '$(URI)'").split()
    assert uris, "apt knows no index at all"
    assert all(uri.startswith(mirror + "/") for uri in uris), uris
    # And every list on disk (the image's lists of deb.debian.org are gone).
    lists = host.check_output("find /var/lib/apt/lists -maxdepth 1 -type f ! -name lock -printf '%f\\n'").split()
    assert lists
    prefix = mirror.removeprefix("http://") + "_"
    assert all(name.startswith(prefix) for name in lists), lists


def test_roles_defined_their_repositories_on_the_mirror(host, mirror):
    kubernetes = host.file("/etc/apt/sources.list.d/kubernetes.sources").content_string
    assert f"URIs: {mirror}/core:/stable:/v1.35/deb/" in kubernetes.splitlines()
    docker = host.file("/etc/apt/sources.list.d/docker.sources").content_string
    assert f"URIs: {mirror}/linux/debian" in docker.splitlines()
    # The keys the roles fetched are the mirror's, and apt verified every repository with them.
    key = (RUN_DIR / "www" / "mirror.asc").read_text()
    for path in host.check_output("grep -h '^Signed-By:' /etc/apt/sources.list.d/*.sources").splitlines():
        assert host.file(path.split(":", 1)[1].strip()).content_string == key


def test_host_prep_pointed_the_stock_debian_sources_at_the_mirror(host, mirror):
    # The image's own list, untouched by the scenario, now names the mirror only.
    lines = [line.split() for line in host.file("/etc/apt/sources.list").content_string.splitlines()
             if line.startswith("deb")]
    assert {(line[1], line[2]) for line in lines} == {(f"{mirror}/debian", "bookworm"),
                                                      (f"{mirror}/debian", "bookworm-updates")}
    # The only other source files are the repositories the roles defined.
    files = host.check_output("find /etc/apt/sources.list.d -type f -printf '%f\\n'").split()
    assert sorted(files) == ["docker.sources", "kubernetes.sources"]


def test_refresh_from_the_mirror_alone_is_clean(host):
    result = host.run("apt-get update")
    assert result.rc == 0, result.stderr
    assert not re.search(r"^(W|E|Err):", result.stdout + result.stderr, re.M), result.stdout + result.stderr


@pytest.mark.parametrize("package", HOST_PREP_PACKAGES)
def test_host_prep_packages_from_the_mirror(host, mirror, package):
    assert host.package(package).is_installed
    sources = installed_from(host, package)
    # Packages the image already had (ca-certificates, iproute2) have no repository source
    # left besides the mirror's copy of the same version, if it holds one.
    assert all(s.startswith(mirror) for s in sources), sources


@pytest.mark.parametrize("package", ["python3-debian", "chrony", "conntrack", "socat", "ethtool", "curl"])
def test_new_packages_came_from_the_distribution_path(host, mirror, package):
    assert installed_from(host, package) == [f"{mirror}/debian"]


def test_containerd_from_the_docker_layout(host, mirror):
    assert installed_from(host, "containerd") == [f"{mirror}/linux/debian"]
    assert host.service("containerd").is_running


def test_each_new_package_was_downloaded_from_the_mirror(host):
    # The server's request log holds one GET per .deb apt fetched.
    log = (RUN_DIR / "access.log").read_text()
    fetched = set(re.findall(r'"GET /[^ ]*/pool/([^_ ]+)_[^ ]+\.deb HTTP', log))
    served = {p.name.split("_", 1)[0] for p in (RUN_DIR / "www").rglob("*.deb")}
    assert served, "the mirror holds no package"
    assert fetched == served
    for name in served:
        assert host.package(name).is_installed
