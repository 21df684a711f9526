# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where every download comes from: upstream, or the mirrors of ``gpushare_mirrors``.

Pure functions over the ``gpushare_mirrors`` / ``gpushare_proxy`` inventory settings
(shape in the collection's conventions). They validate the settings, rewrite container
image references and repository, chart, snap and file locations to the mirror, build
proxy environments, and name the GPU Operator driver image a node will pull. No I/O and
no Ansible imports; errors are ``MirrorError`` (a ``ValueError``) naming the field.

Image rewriting keeps the upstream path and replaces the registry host:
``nvcr.io/nvidia/driver:595.91.07-ubuntu24.04`` with ``registry: mirror.example:5000``
becomes ``mirror.example:5000/nvidia/driver:595.91.07-ubuntu24.04``; a per-registry
override (``registries: {nvcr.io: ...}``) wins over ``registry``. This is the layout
``skopeo copy``/``podman push`` produce when the path is kept, and the one pull-through
caches (Harbor proxy projects, registry:2 proxies with a path prefix) serve.
"""

from __future__ import annotations

import re
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit


class MirrorError(GpushareError):
    """A ``gpushare_mirrors`` / ``gpushare_proxy`` setting or an image name is wrong."""


# Registries the collection's charts and operators pull from. ``docker.io`` also stands
# for references without a registry (``busybox`` = ``docker.io/library/busybox``).
UPSTREAM_REGISTRIES: Tuple[str, ...] = (
    "docker.io",
    "ghcr.io",
    "nvcr.io",
    "quay.io",
    "registry.k8s.io",
    "us-central1-docker.pkg.dev",
)

# Every upstream host a rendered artifact of the collection could name. A file rendered
# with mirrors set must mention none of them (see ``upstream_hosts_in``).
UPSTREAM_HOSTS: Tuple[str, ...] = UPSTREAM_REGISTRIES + (
    "api.snapcraft.io",
    "archive.ubuntu.com",
    "depot.ciq.com",
    "developer.download.nvidia.com",
    "dl.fedoraproject.org",
    "dl.k8s.io",
    "dl.rockylinux.org",
    "docs.tigera.io",
    "download.docker.com",
    "download.nvidia.com",
    "get.helm.sh",
    "github.com",
    "grafana-community.github.io",
    "helm.cilium.io",
    "helm.ngc.nvidia.com",
    "k8s.gcr.io",
    "mirrors.rockylinux.org",
    "nvidia.github.io",
    "objects.githubusercontent.com",
    "pkgs.k8s.io",
    "prometheus-community.github.io",
    "raw.githubusercontent.com",
    "registry-1.docker.io",
    "security.ubuntu.com",
    "snapcraft.io",
    "storage.googleapis.com",
)

# Known keys of gpushare_mirrors; anything else is a typo the user should hear about.
# `debian` is the distribution archive of Debian hosts (the apt family's test stand-in).
APT_KEYS = ("ubuntu", "debian", "kubernetes", "nvidia", "docker")
DNF_KEYS = ("rocky", "epel", "kubernetes", "nvidia", "docker")
TOP_KEYS = ("apt", "dnf", "registry", "registries", "helm", "snap", "files")
HELM_KEYS = ("oci", "dir")
SNAP_KEYS = ("proxy_url", "proxy_id", "files_dir")
PROXY_KEYS = ("http", "https", "no_proxy")

_URL_SCHEMES = ("http", "https", "file")
_REGISTRY_RE = re.compile(
    r"^(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:]+\])(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<path>(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)$"
)
_IMAGE_RE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._:/\[\]-]*?)(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z0-9]+:[A-Fa-f0-9]{32,}))?$"
)


# --- validation -----------------------------------------------------------------------

def _url_error(field: str, value: Any, schemes: Sequence[str] = _URL_SCHEMES) -> Optional[str]:
    if not isinstance(value, str) or not value.strip():
        return f"{field}: must be a non-empty URL string, got {value!r}"
    parts = urlsplit(value)
    if parts.scheme not in schemes:
        return (f"{field}: {value!r} must be a URL with a scheme ({', '.join(s + '://' for s in schemes)}), "
                f"e.g. http://mirror.example.com/ubuntu")
    if parts.scheme != "file" and not parts.hostname:
        return f"{field}: {value!r} has no host name"
    return None


def _registry_error(field: str, value: Any) -> Optional[str]:
    if not isinstance(value, str) or not value.strip():
        return f"{field}: must be HOST[:PORT][/PATH], got {value!r}"
    if "://" in value:
        return (f"{field}: {value!r} must be HOST[:PORT][/PATH] without a scheme "
                f"(container images name a registry, not a URL), e.g. mirror.example.com:5000/upstream")
    match = _REGISTRY_RE.match(value.rstrip("/"))
    if not match:
        return f"{field}: {value!r} is not HOST[:PORT][/PATH] (lower-case path components)"
    if match.group("port") and not 0 < int(match.group("port")) < 65536:
        return f"{field}: port {match.group('port')} of {value!r} is out of range"
    return None


def _unknown_keys(field: str, value: Mapping[str, Any], known: Sequence[str]) -> List[str]:
    return [f"{field}.{key}: unknown key (known: {', '.join(known)})" for key in value if key not in known]


def mirror_errors(mirrors: Any) -> List[str]:
    """Every problem in a ``gpushare_mirrors`` value, as messages naming the field."""
    if mirrors is None:
        return []
    if not isinstance(mirrors, Mapping):
        return [f"gpushare_mirrors: must be a mapping, got {type(mirrors).__name__}"]
    errors = _unknown_keys("gpushare_mirrors", mirrors, TOP_KEYS)
    for family, keys in (("apt", APT_KEYS), ("dnf", DNF_KEYS)):
        section = mirrors.get(family)
        if section in (None, {}):
            continue
        if not isinstance(section, Mapping):
            errors.append(f"gpushare_mirrors.{family}: must be a mapping of {', '.join(keys)} to URLs")
            continue
        errors += _unknown_keys(f"gpushare_mirrors.{family}", section, keys)
        for key in keys:
            if section.get(key):
                error = _url_error(f"gpushare_mirrors.{family}.{key}", section[key])
                if error:
                    errors.append(error)
    if mirrors.get("registry"):
        error = _registry_error("gpushare_mirrors.registry", mirrors["registry"])
        if error:
            errors.append(error)
    registries = mirrors.get("registries")
    if registries not in (None, {}):
        if not isinstance(registries, Mapping):
            errors.append("gpushare_mirrors.registries: must be a mapping of upstream registry to mirror")
        else:
            for upstream, target in registries.items():
                field = f"gpushare_mirrors.registries[{upstream!r}]"
                if _registry_error(field, upstream) or "/" in str(upstream):
                    errors.append(f"{field}: the key must be an upstream registry host such as nvcr.io")
                    continue
                if target:
                    error = _registry_error(field, target)
                    if error:
                        errors.append(error)
    helm = mirrors.get("helm")
    if helm not in (None, {}):
        if not isinstance(helm, Mapping):
            errors.append("gpushare_mirrors.helm: must be a mapping with oci and/or dir")
        else:
            errors += _unknown_keys("gpushare_mirrors.helm", helm, HELM_KEYS)
            if helm.get("oci") and not str(helm["oci"]).startswith("oci://"):
                errors.append(f"gpushare_mirrors.helm.oci: {helm['oci']!r} must start with oci://, "
                              f"e.g. oci://mirror.example.com/charts")
            if helm.get("dir") and not str(helm["dir"]).startswith("/"):
                errors.append(f"gpushare_mirrors.helm.dir: {helm['dir']!r} must be an absolute path on the controller")
    snap = mirrors.get("snap")
    if snap not in (None, {}):
        if not isinstance(snap, Mapping):
            errors.append("gpushare_mirrors.snap: must be a mapping with proxy_url/proxy_id or files_dir")
        else:
            errors += _unknown_keys("gpushare_mirrors.snap", snap, SNAP_KEYS)
            if snap.get("proxy_url"):
                error = _url_error("gpushare_mirrors.snap.proxy_url", snap["proxy_url"], ("http", "https"))
                if error:
                    errors.append(error)
                if not snap.get("proxy_id"):
                    errors.append("gpushare_mirrors.snap.proxy_id: required with proxy_url "
                                  "(the store id printed by `snap-proxy status`)")
            elif snap.get("proxy_id"):
                errors.append("gpushare_mirrors.snap.proxy_url: required with proxy_id")
            if snap.get("files_dir") and not str(snap["files_dir"]).startswith("/"):
                errors.append(f"gpushare_mirrors.snap.files_dir: {snap['files_dir']!r} must be an absolute "
                              f"path on the controller")
    if mirrors.get("files"):
        error = _url_error("gpushare_mirrors.files", mirrors["files"])
        if error:
            errors.append(error)
    return errors


def proxy_errors(proxy: Any) -> List[str]:
    """Every problem in a ``gpushare_proxy`` value, as messages naming the field."""
    if proxy is None:
        return []
    if not isinstance(proxy, Mapping):
        return [f"gpushare_proxy: must be a mapping, got {type(proxy).__name__}"]
    errors = _unknown_keys("gpushare_proxy", proxy, PROXY_KEYS)
    for key in ("http", "https"):
        if proxy.get(key):
            error = _url_error(f"gpushare_proxy.{key}", proxy[key], ("http", "https"))
            if error:
                errors.append(error.replace("e.g. http://mirror.example.com/ubuntu", "e.g. http://proxy.example.com:3128"))
    no_proxy = proxy.get("no_proxy")
    if no_proxy not in (None, "") and not isinstance(no_proxy, (str, list, tuple)):
        errors.append("gpushare_proxy.no_proxy: must be a comma-separated string or a list of hosts/CIDRs")
    return errors


def validate(mirrors: Any = None, proxy: Any = None) -> Dict[str, Any]:
    """Check both settings together; raise one ``MirrorError`` listing every problem.

    Returns the normalized settings ``{"mirrors": {...}, "proxy": {...}}`` (empty
    sections dropped, trailing slashes removed).
    """
    errors = mirror_errors(mirrors) + proxy_errors(proxy)
    if errors:
        raise MirrorError("invalid air-gap settings:\n- " + "\n- ".join(errors))
    return {"mirrors": normalize_mirrors(mirrors), "proxy": dict(proxy or {})}


def normalize_mirrors(mirrors: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Drop empty values and trailing slashes so that "set" always means non-empty."""
    def clean(value: Any) -> Any:
        if isinstance(value, Mapping):
            out = {str(k): clean(v) for k, v in value.items()}
            return {k: v for k, v in out.items() if v not in (None, "", {}, [])}
        if isinstance(value, str):
            return value.strip().rstrip("/") if value.strip() != "/" else value.strip()
        return value
    return clean(mirrors or {})


def is_mirrored(mirrors: Optional[Mapping[str, Any]]) -> bool:
    """True when any mirror is configured."""
    return bool(normalize_mirrors(mirrors))


# --- container images -----------------------------------------------------------------

class ImageRef:
    """A parsed image reference: ``registry/repository[:tag][@digest]``."""

    __slots__ = ("registry", "repository", "tag", "digest")

    def __init__(self, registry: str, repository: str, tag: Optional[str] = None, digest: Optional[str] = None):
        self.registry = registry
        self.repository = repository
        self.tag = tag
        self.digest = digest

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.repository}"

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    def __repr__(self) -> str:
        return f"ImageRef({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ImageRef) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def parse_image(reference: str) -> ImageRef:
    """Split an image reference the way container runtimes do.

    A first component without ``.`` or ``:`` (and not ``localhost``) is a Docker Hub
    path: ``busybox`` -> ``docker.io/library/busybox``.
    """
    if not isinstance(reference, str) or not reference.strip():
        raise MirrorError(f"image: {reference!r} is not an image reference")
    text = reference.strip()
    match = _IMAGE_RE.match(text)
    if not match or match.group("name").endswith("/") or "//" in match.group("name"):
        raise MirrorError(f"image: {reference!r} is not an image reference (registry/path[:tag][@digest])")
    name = match.group("name")
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        registry, repository = first, rest
    else:
        registry, repository = "docker.io", name
    if registry in ("docker.io", "index.docker.io", "registry-1.docker.io"):
        registry = "docker.io"
        if "/" not in repository:
            repository = f"library/{repository}"
    if repository != repository.lower():
        raise MirrorError(f"image: {reference!r}: the repository path must be lower case")
    return ImageRef(registry, repository, match.group("tag"), match.group("digest"))


def registry_mirror(upstream_registry: str, mirrors: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The mirror (HOST[:PORT][/PATH]) serving ``upstream_registry``, or None for upstream."""
    mirrors = normalize_mirrors(mirrors)
    registries = mirrors.get("registries") or {}
    upstream = "docker.io" if upstream_registry in ("index.docker.io", "registry-1.docker.io") else upstream_registry
    return registries.get(upstream) or mirrors.get("registry") or None


def mirror_image(reference: str, mirrors: Optional[Mapping[str, Any]]) -> str:
    """Rewrite an image reference to the mirror; unchanged when no mirror applies."""
    image = parse_image(reference)
    target = registry_mirror(image.registry, mirrors)
    if not target or _on_mirror(image, mirrors):
        return reference.strip()
    return str(ImageRef(target, image.repository, image.tag, image.digest))


def _on_mirror(image: ImageRef, mirrors: Optional[Mapping[str, Any]]) -> bool:
    """True when ``image`` already points at one of the configured mirrors."""
    mirrors = normalize_mirrors(mirrors)
    targets = [mirrors.get("registry")] + list((mirrors.get("registries") or {}).values())
    return any(t and (image.name == t or image.name.startswith(t + "/")) for t in targets)


def mirror_repository(repository: str, mirrors: Optional[Mapping[str, Any]]) -> str:
    """Rewrite an image repository without a tag (``nvcr.io/nvidia``, a Helm value)."""
    image = parse_image(repository)
    if image.tag or image.digest:
        raise MirrorError(f"image repository: {repository!r} must not carry a tag or digest")
    target = registry_mirror(image.registry, mirrors)
    if not target or _on_mirror(image, mirrors):
        return repository.strip()
    return f"{target}/{image.repository}"


def containerd_hosts_toml(upstream_registry: str, mirrors: Optional[Mapping[str, Any]],
                          skip_verify: bool = False) -> Optional[str]:
    """``/etc/containerd/certs.d/<upstream>/hosts.toml`` sending pulls to the mirror.

    A mirror without a path is also the ``server``, so containerd never falls back to
    the upstream registry. A mirror with a path uses ``override_path`` (the URL is then
    the full API prefix, as containerd's hosts.md describes for path-based mirrors);
    ``server`` cannot carry such a prefix, so it is left out and the upstream registry
    stays the (unreachable, offline) last resort. Returns None when no mirror applies.
    """
    target = registry_mirror(upstream_registry, mirrors)
    if not target:
        return None
    host, _sep, path = target.partition("/")
    url = f"https://{host}/v2/{path}" if path else f"https://{host}"
    lines = [] if path else [f'server = "{url}"', ""]
    lines += [f'[host."{url}"]', '  capabilities = ["pull", "resolve"]']
    if path:
        lines.append("  override_path = true")
    if skip_verify:
        lines.append("  skip_verify = true")
    return "\n".join(lines) + "\n"


# --- packages, charts, snaps, files ---------------------------------------------------

def repository_url(manager: str, name: str, upstream: str, mirrors: Optional[Mapping[str, Any]]) -> str:
    """URL of an OS package repository (``manager`` apt|dnf, ``name`` e.g. kubernetes).

    The mirror replaces the upstream's ``scheme://host`` and keeps its path, the rule
    images follow too and the layout a pull-through cache or an rsync/reposync copy of
    the upstream tree has: with ``apt.kubernetes: http://mirror.internal/k8s``,
    ``https://pkgs.k8s.io/core:/stable:/v1.35/deb/`` becomes
    ``http://mirror.internal/k8s/core:/stable:/v1.35/deb/``. One setting thus serves
    every Kubernetes minor (upgrades) and both NVIDIA hosts (container toolkit and CUDA).
    """
    if manager not in ("apt", "dnf"):
        raise MirrorError(f"package manager: {manager!r} is not apt or dnf")
    known = APT_KEYS if manager == "apt" else DNF_KEYS
    if name not in known:
        raise MirrorError(f"gpushare_mirrors.{manager}.{name}: unknown repository (known: {', '.join(known)})")
    mirror = (normalize_mirrors(mirrors).get(manager) or {}).get(name)
    if not mirror:
        return upstream
    parts = urlsplit(upstream)
    if not parts.scheme or not parts.netloc:
        raise MirrorError(f"{manager} repository {name}: upstream {upstream!r} is not an absolute URL")
    rest = upstream[len(f"{parts.scheme}://{parts.netloc}"):]
    return f"{mirror}{rest}"


def chart_location(name: str, version: str, upstream: str, mirrors: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Where Helm takes chart ``name`` at ``version``.

    ``upstream`` is an HTTP chart repository URL or an ``oci://`` prefix (without the
    chart name). ``helm.dir`` (archives on the controller, as ``helm pull`` names them)
    wins over ``helm.oci``. Returns ``chart_ref``, ``chart_repo_url`` (None for OCI and
    files), ``chart_version`` (None for a file) and ``source`` (upstream|oci|dir).
    """
    helm = normalize_mirrors(mirrors).get("helm") or {}
    if helm.get("dir"):
        return {"chart_ref": f"{helm['dir']}/{name}-{version}.tgz", "chart_repo_url": None,
                "chart_version": None, "source": "dir"}
    if helm.get("oci"):
        return {"chart_ref": f"{helm['oci']}/{name}", "chart_repo_url": None,
                "chart_version": version, "source": "oci"}
    if upstream.startswith("oci://"):
        return {"chart_ref": f"{upstream.rstrip('/')}/{name}", "chart_repo_url": None,
                "chart_version": version, "source": "upstream"}
    return {"chart_ref": name, "chart_repo_url": upstream, "chart_version": version, "source": "upstream"}


def snap_settings(mirrors: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """How snapd gets snaps: ``{"mode": "store"|"proxy"|"files", ...}``.

    ``proxy``: ``proxy_url`` and ``proxy_id`` go to ``snap set system proxy.store=<id>``
    after ``snap ack`` of the store assertion from ``<proxy_url>/v2/auth/store/assertions``.
    ``files``: ``<files_dir>/<name>_<revision>.snap`` plus ``.assert``, side-loaded.
    """
    snap = normalize_mirrors(mirrors).get("snap") or {}
    if snap.get("proxy_url"):
        return {"mode": "proxy", "proxy_url": snap["proxy_url"], "proxy_id": snap.get("proxy_id", ""),
                "assertions_url": f"{snap['proxy_url']}/v2/auth/store/assertions"}
    if snap.get("files_dir"):
        return {"mode": "files", "files_dir": snap["files_dir"]}
    return {"mode": "store"}


def file_url(upstream_url: str, mirrors: Optional[Mapping[str, Any]], path: Optional[str] = None) -> str:
    """A download: ``<files>/<path>`` (``path`` defaults to the file name) or upstream."""
    base = normalize_mirrors(mirrors).get("files")
    if not base:
        return upstream_url
    name = path or urlsplit(upstream_url).path.rsplit("/", 1)[-1]
    if not name:
        raise MirrorError(f"file: {upstream_url!r} names no file; pass the path under gpushare_mirrors.files")
    return f"{base}/{name.lstrip('/')}"


# --- proxies ---------------------------------------------------------------------------

def no_proxy_list(proxy: Optional[Mapping[str, Any]], extra: Iterable[str] = ()) -> List[str]:
    """``no_proxy`` entries of the setting followed by ``extra`` (cluster CIDRs...), deduplicated."""
    value = (proxy or {}).get("no_proxy") or []
    items = value.split(",") if isinstance(value, str) else list(value)
    seen: List[str] = []
    for item in list(items) + list(extra):
        item = str(item).strip()
        if item and item not in seen:
            seen.append(item)
    return seen


def proxy_env(proxy: Optional[Mapping[str, Any]], extra_no_proxy: Iterable[str] = ()) -> Dict[str, str]:
    """Environment for package managers, snapd, containerd and kubelet.

    Both spellings are set: curl and apt read the lower-case names, Go programs
    (containerd, kubelet, snapd) the upper-case ones. Empty when no proxy is set, so
    ``environment:`` stays a no-op.
    """
    proxy = proxy or {}
    env: Dict[str, str] = {}
    for key in ("http", "https"):
        if proxy.get(key):
            env[f"{key}_proxy"] = str(proxy[key])
            env[f"{key.upper()}_PROXY"] = str(proxy[key])
    if env:
        no_proxy = ",".join(no_proxy_list(proxy, extra_no_proxy))
        if no_proxy:
            env["no_proxy"] = no_proxy
            env["NO_PROXY"] = no_proxy
    return env


# --- scanning rendered files -----------------------------------------------------------

def _host_pattern(hosts: Sequence[str]) -> "re.Pattern[str]":
    alternatives = "|".join(re.escape(h) for h in sorted(hosts, key=len, reverse=True))
    # A host counts when it is not part of a longer host name (mirror.nvcr.io.example is
    # a different host; nvcr.io/nvidia and "nvcr.io" are the upstream one).
    return re.compile(r"(?<![A-Za-z0-9.-])(" + alternatives + r")(?![A-Za-z0-9-]|\.[A-Za-z0-9])")


_DEFAULT_HOST_PATTERN = _host_pattern(UPSTREAM_HOSTS)


def upstream_hosts_in(text: str, hosts: Optional[Sequence[str]] = None) -> List[Tuple[int, str, str]]:
    """Upstream hosts named in ``text``: ``[(line number, host, line)]``."""
    pattern = _host_pattern(hosts) if hosts else _DEFAULT_HOST_PATTERN
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in pattern.finditer(line):
            found.append((number, match.group(1), line.strip()))
    return found


# --- GPU Operator driver images -------------------------------------------------------

# OS tags of the GPU Operator's conventional driver images. Ubuntu keeps the release
# (ubuntu24.04); from operator 26.7.0 RHEL and Rocky use the major version only
# (rocky9, rocky10; platform-support "Starting with version 26.7.0 ...").
DRIVER_OS = {
    "ubuntu": ("22.04", "24.04", "26.04"),
    "rocky": ("8", "9", "10"),
    "rhel": ("8", "9", "10"),
}
# Precompiled driver images exist for Ubuntu only; validated combinations
# (platform-support "Supported Precompiled Drivers") by OS tag: kernel series -> branches.
PRECOMPILED_VALIDATED = {
    "ubuntu22.04": {"5.15": ("580", "595"), "6.8": ("580", "595")},
    "ubuntu24.04": {"6.8": ("580", "595")},
    "ubuntu26.04": {"7.0": ("595",)},
}
PRECOMPILED_FLAVORS = ("generic", "nvidia", "azure", "azure-fde", "aws", "oracle")
_KERNEL_RE = re.compile(r"^(?P<series>[0-9]+\.[0-9]+)\.[0-9]+-[0-9]+-(?P<flavor>[a-z][a-z0-9-]*)$")
_DRIVER_VERSION_RE = re.compile(r"^(?P<branch>[0-9]{3})(?:\.[0-9]+){0,2}$")


def driver_os_tag(distribution: str, version: str, host: Optional[str] = None) -> str:
    """The OS tag of the driver image for a node (``Ubuntu``/``24.04`` -> ``ubuntu24.04``).

    ``distribution`` is ``ansible_distribution`` or os-release ``ID`` (case-insensitive);
    ``version`` the full version (``24.04``, ``9.6``).
    """
    where = f"host {host}: " if host else ""
    os_id = str(distribution or "").strip().lower()
    os_id = {"redhat": "rhel", "red hat enterprise linux": "rhel", "rocky linux": "rocky"}.get(os_id, os_id)
    if os_id not in DRIVER_OS:
        raise MirrorError(f"{where}distribution: {distribution!r} has no GPU Operator driver image "
                          f"(supported: Ubuntu {', '.join(DRIVER_OS['ubuntu'])}; Rocky/RHEL 8, 9, 10)")
    text = str(version or "").strip()
    release = text if os_id == "ubuntu" else text.split(".", maxsplit=1)[0]
    if release not in DRIVER_OS[os_id]:
        raise MirrorError(f"{where}distribution version: {os_id} {text!r} has no GPU Operator driver image "
                          f"(supported: {', '.join(DRIVER_OS[os_id])})")
    return f"{os_id}{release}"


def driver_branch(driver_version: str) -> str:
    """``595.91.07`` -> ``595`` (also accepts a bare branch)."""
    match = _DRIVER_VERSION_RE.match(str(driver_version or "").strip())
    if not match:
        raise MirrorError(f"driver version: {driver_version!r} is not a driver version such as 595.91.07 or a branch such as 595")
    return match.group("branch")


def driver_image(driver_version: str, os_tag: str, precompiled: bool = False, kernel: Optional[str] = None,
                 repository: str = "nvcr.io/nvidia/driver", host: Optional[str] = None) -> Dict[str, Any]:
    """The driver image the GPU Operator pulls on one node.

    Conventional: ``<repository>:<driver version>-<os tag>`` (``595.91.07-ubuntu24.04``).
    Precompiled (``driver.usePrecompiled``, ``driver.version`` = branch):
    ``<repository>:<branch>-<kernel>-<os tag>`` (``595-6.8.0-60-generic-ubuntu24.04``),
    Ubuntu only. Returns ``{"image", "tag", "warnings"}``; combinations outside NVIDIA's
    validated table are warnings (a custom precompiled build may exist in the mirror),
    a precompiled image for a non-Ubuntu OS or a malformed kernel is an error.
    """
    where = f"host {host}: " if host else ""
    warnings: List[str] = []
    if os_tag not in {f"{os_id}{rel}" for os_id, rels in DRIVER_OS.items() for rel in rels}:
        raise MirrorError(f"{where}driver os tag: {os_tag!r} is not one of the GPU Operator's driver image tags")
    if not precompiled:
        version = str(driver_version or "").strip()
        if not re.match(r"^[0-9]{3}\.[0-9]+(\.[0-9]+)?$", version):
            raise MirrorError(f"{where}driver version: {driver_version!r} must be a full driver version such as "
                              f"595.91.07 for conventional driver images")
        tag = f"{version}-{os_tag}"
        return {"image": f"{repository}:{tag}", "tag": tag, "warnings": warnings}
    branch = driver_branch(driver_version)
    if os_tag not in PRECOMPILED_VALIDATED:
        raise MirrorError(f"{where}driver.usePrecompiled: precompiled driver images exist for Ubuntu only, "
                          f"not {os_tag}; use conventional driver images (usePrecompiled: false)")
    match = _KERNEL_RE.match(str(kernel or "").strip())
    if not match:
        raise MirrorError(f"{where}kernel: {kernel!r} must be an Ubuntu kernel release such as 6.8.0-60-generic "
                          f"(uname -r) to name a precompiled driver image")
    series, flavor = match.group("series"), match.group("flavor")
    if flavor not in PRECOMPILED_FLAVORS:
        warnings.append(f"{where}kernel flavor {flavor!r}: NVIDIA builds precompiled images for "
                        f"{', '.join(PRECOMPILED_FLAVORS)} only; the mirror must hold a custom build")
    elif flavor == "azure-fde" and os_tag == "ubuntu22.04":
        warnings.append(f"{where}kernel flavor azure-fde: not built for ubuntu22.04; the mirror must hold a custom build")
    branches = PRECOMPILED_VALIDATED[os_tag].get(series)
    if branches is None:
        warnings.append(f"{where}kernel {kernel}: series {series} is not validated for precompiled drivers on "
                        f"{os_tag} (validated: {', '.join(sorted(PRECOMPILED_VALIDATED[os_tag]))})")
    elif branch not in branches:
        warnings.append(f"{where}driver branch {branch}: not validated for precompiled drivers on {os_tag} "
                        f"kernel {series} (validated: R{', R'.join(branches)})")
    tag = f"{branch}-{kernel}-{os_tag}"
    return {"image": f"{repository}:{tag}", "tag": tag, "warnings": warnings}
