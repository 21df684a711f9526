"""containerd rendered for Rocky Linux 9 and 10 and both config layouts, without a host."""

from __future__ import annotations

import tomllib

import pytest
from ansible.errors import AnsibleError

from .host_layer_render import Renderer, by_name, debian_facts, rocky_facts

MIRRORS = {"registry": "registry.mirror.internal:5000/cache",
           "registries": {"nvcr.io": "nvcr.mirror.internal"},
           "dnf": {"docker": "http://dnf.mirror.internal"}, "apt": {"docker": "http://apt.mirror.internal"}}


def rocky(major: int, **extra) -> Renderer:
    return Renderer("containerd", rocky_facts(major), extra)


@pytest.fixture(params=[9, 10], ids=["rocky9", "rocky10"])
def major(request):
    return request.param


def config(renderer: Renderer, layout: str) -> dict:
    return tomllib.loads(renderer.template(f"config-v{layout}.toml.j2"))


def leaves(node: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in node.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(leaves(value, path))
        else:
            out[path] = value
    return out


def test_rocky_uses_dockers_repository_through_the_mirror(major):
    renderer = rocky(major, gpushare_mirrors=MIRRORS, containerd_version="1.7.28-1.el9")
    tasks = renderer.tasks("install.yml", {"__containerd_version_output": {"stdout": "containerd containerd.io v1.7.28 abc"}})
    repo = by_name(tasks, "Add Docker's package repository (dnf)")["args"]
    assert repo["baseurl"] == "http://dnf.mirror.internal/linux/rhel/$releasever/$basearch/stable"
    assert repo["gpgkey"] == "http://dnf.mirror.internal/linux/rhel/gpg"
    assert by_name(tasks, "Install the containerd package")["args"]["name"] == "containerd.io-1.7.28-1.el9"
    assert by_name(tasks, "Decide the config layout")["args"]["__containerd_layout"] == "2"


INSTALL_DEB822 = "Install python3-debian (deb822_repository needs it on the host)"
DOCKER_APT = "Add Docker's package repository (apt)"


def test_apt_docker_repository_gets_python3_debian_first():
    renderer = Renderer("containerd", debian_facts(), {"gpushare_mirrors": MIRRORS, "containerd_source": "docker"})
    tasks = renderer.tasks("install.yml")
    names = [t["name"] for t in tasks]
    install = by_name(tasks, INSTALL_DEB822)
    assert install["module"] == "ansible.builtin.apt" and install["args"]["name"] == "python3-debian"
    assert names.index(INSTALL_DEB822) < names.index(DOCKER_APT)
    assert by_name(tasks, DOCKER_APT)["args"]["uris"] == "http://apt.mirror.internal/linux/debian"


def test_no_python3_debian_without_dockers_apt_repository(major):
    debian_names = [t["name"] for t in Renderer("containerd", debian_facts()).tasks("install.yml")]
    rocky_names = [t["name"] for t in rocky(major, gpushare_mirrors=MIRRORS).tasks("install.yml")]
    assert INSTALL_DEB822 not in debian_names + rocky_names


@pytest.mark.parametrize("check_mode,support,runs", [
    (False, {"changed": True}, True),
    (True, {"changed": False}, True),
    (True, {"changed": True}, False),
    (True, {"changed": False, "failed": True}, False),
])
def test_docker_apt_repository_tolerates_missing_python3_debian_in_check_mode_only(check_mode, support, runs):
    renderer = Renderer("containerd", debian_facts(), {"containerd_source": "docker"})
    renderer.variables["ansible_check_mode"] = check_mode
    names = [t["name"] for t in renderer.tasks("install.yml", {"__containerd_deb822_support": support})]
    assert (DOCKER_APT in names) == runs


@pytest.mark.parametrize("registered,installs", [
    ({"__containerd_deb822_support": {"changed": True}}, False),     # python3-debian first
    ({"__containerd_deb822_support": {"failed": True}}, False),      # apt lists not fresh yet
    ({"__containerd_deb822_support": {"changed": False}, "__containerd_repo_apt": {"changed": True}}, False),
    ({"__containerd_deb822_support": {"changed": False}, "__containerd_repo_apt": {"changed": False}}, True),
])
def test_check_mode_does_not_resolve_a_package_of_a_repository_not_yet_defined(registered, installs):
    renderer = Renderer("containerd", debian_facts(), {"containerd_source": "docker"})
    renderer.variables["ansible_check_mode"] = True
    names = [t["name"] for t in renderer.tasks("install.yml", registered)]
    assert ("Install the containerd package" in names) == installs
    assert ("Say why check mode cannot resolve the containerd package" in names) != installs
    # No binary to ask for its version either, until the real run installed it.
    assert ("Read the installed containerd version" in names) == installs
    service = Renderer("containerd", debian_facts(), {"containerd_source": "docker"})
    service.variables["ansible_check_mode"] = True
    assert service.holds("not __containerd_check_mode_pending | bool",
                         **{**registered, "__containerd_package_result": {"changed": False}}) == installs


def test_rocky_check_mode_waits_for_dockers_repository(major):
    renderer = rocky(major)
    renderer.variables["ansible_check_mode"] = True
    names = [t["name"] for t in renderer.tasks("install.yml", {"__containerd_repo_dnf": {"changed": True}})]
    assert "Install the containerd package" not in names
    renderer.variables["ansible_check_mode"] = False
    names = [t["name"] for t in renderer.tasks("install.yml", {"__containerd_repo_dnf": {"changed": True}})]
    assert "Install the containerd package" in names


def test_rocky_refuses_a_distribution_package_it_does_not_have(major):
    failed = " ".join(rocky(major, containerd_source="distribution").failed_asserts("facts.yml"))
    assert "containerd_source=docker" in failed


@pytest.mark.parametrize("version_line,layout,warns", [
    ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1", "2", True),
    ("containerd containerd.io v1.7.28 b98a3aace656", "2", False),
    ("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7", "3", False),
])
def test_layout_follows_the_installed_version(version_line, layout, warns):
    renderer = Renderer("containerd", debian_facts())
    tasks = renderer.tasks("install.yml", {"__containerd_version_output": {"stdout": version_line}})
    assert by_name(tasks, "Decide the config layout")["args"]["__containerd_layout"] == layout
    assert ("Say what containerd 1.6 cannot do" in [t["name"] for t in tasks]) == warns


@pytest.mark.parametrize("layout,reference", [("2", "containerd-1.7-config.toml"), ("3", "containerd-2.x-config.toml")])
def test_config_has_every_setting_of_the_reference(major, layout, reference, reference_dir):
    ours = leaves(config(rocky(major), layout))
    expected = leaves(tomllib.loads((reference_dir / "k8s" / "kubeadm" / reference).read_text()))
    for key, value in expected.items():
        assert ours.get(key) == value, f"{key}: reference {value!r}, rendered {ours.get(key)!r}"


def test_v2_config_pause_image_and_registry_config_path(major):
    cri = config(rocky(major, gpushare_mirrors=MIRRORS), "2")["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.mirror.internal:5000/cache/pause:3.10.1"
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert cri["containerd"]["runtimes"]["runc"]["runtime_type"] == "io.containerd.runc.v2"


def test_v3_config_pause_image_and_registry_config_path(major):
    plugins = config(rocky(major, gpushare_mirrors=MIRRORS, containerd_cdi_enabled=False), "3")["plugins"]
    images = plugins["io.containerd.cri.v1.images"]
    assert images["pinned_images"]["sandbox"] == "registry.mirror.internal:5000/cache/pause:3.10.1"
    assert images["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert plugins["io.containerd.cri.v1.runtime"]["enable_cdi"] is False


def test_upstream_pause_image_without_mirrors(major):
    cri = config(rocky(major), "2")["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10.1"


def test_hosts_toml_per_mirrored_registry(major):
    renderer = rocky(major, gpushare_mirrors=MIRRORS)
    tasks = renderer.tasks("configure.yml", {"__containerd_layout": "3"})
    files = {item["dest"]: tomllib.loads(item["content"].split("\n", 1)[1])
             for item in by_name(tasks, "Point each registry at its mirror (hosts.toml)")["items"]}
    assert set(files) == {f"/etc/containerd/certs.d/{r}/hosts.toml"
                          for r in ("docker.io", "registry.k8s.io", "nvcr.io", "quay.io", "ghcr.io")}
    nvcr = files["/etc/containerd/certs.d/nvcr.io/hosts.toml"]
    assert nvcr["server"] == "https://nvcr.mirror.internal"
    k8s = files["/etc/containerd/certs.d/registry.k8s.io/hosts.toml"]
    assert k8s["host"]["https://registry.mirror.internal:5000/v2/cache"]["override_path"] is True
    assert by_name(tasks, "Write the containerd configuration (containerd parses it before it is used)")["args"][
        "validate"] == "containerd --config %s config dump"


def test_no_hosts_toml_without_mirrors(major):
    names = [t["name"] for t in rocky(major).tasks("configure.yml", {"__containerd_layout": "2"})]
    assert "Point each registry at its mirror (hosts.toml)" not in names


def test_proxy_dropin(major):
    proxy = {"http": "http://proxy.internal:3128", "no_proxy": "10.0.0.0/8"}
    renderer = rocky(major, gpushare_proxy=proxy)
    text = renderer.template("proxy-dropin.conf.j2")
    assert 'Environment="HTTP_PROXY=http://proxy.internal:3128"' in text
    assert 'Environment="NO_PROXY=10.0.0.0/8"' in text
    assert "HTTPS_PROXY" not in text


@pytest.mark.parametrize("extra,words", [
    ({"containerd_config_layout": "4"}, ["containerd_config_layout", "got 4"]),
    ({"containerd_source": "snap"}, ["containerd_source", "got snap"]),
])
def test_preflight_rejects_bad_choices(extra, words):
    message = " ".join(rocky(9, **extra).failed_asserts("preflight.yml"))
    for word in words:
        assert word in message


def test_preflight_rejects_a_proxy_without_scheme():
    with pytest.raises(AnsibleError, match=r"gpushare_proxy\.http"):
        rocky(9, gpushare_proxy={"http": "proxy.internal:3128"}).failed_asserts("preflight.yml")


PROBES = {"__containerd_version_output": {"stdout": "containerd containerd.io v2.1.4 abc", "rc": 0},
          "__containerd_layout": "3", "__containerd_package_result": {"changed": False}}


@pytest.mark.parametrize("task_file", ["preflight.yml", "facts.yml", "install.yml", "configure.yml"])
def test_every_task_file_renders_for_rocky(major, task_file):
    renderer = rocky(major, gpushare_mirrors=MIRRORS, gpushare_proxy={"https": "http://proxy.internal:3128"})
    assert renderer.tasks(task_file, PROBES), f"{task_file}: no task would run on Rocky {major}"


@pytest.mark.parametrize("template", ["config-v2.toml.j2", "config-v3.toml.j2", "proxy-dropin.conf.j2"])
def test_every_template_renders_for_rocky(major, template):
    text = rocky(major, gpushare_mirrors=MIRRORS, gpushare_proxy={"https": "http://proxy.internal:3128"}).template(template)
    assert text.startswith("# Ansible managed")
    if template.endswith(".toml.j2"):
        assert tomllib.loads(text)["version"] == int(template[8])
