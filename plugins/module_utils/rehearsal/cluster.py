# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal control plane: build its binaries, start and stop it on 127.0.0.1.

Python API (used by the ``rehearsal_cluster`` and ``rehearsal_binaries`` modules and by the
pytest fixtures under ``tests/integration/rehearsal``)::

    from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc

    built = rc.build(go_dir, cache_root="~/.cache/gpushare/rehearsal")   # -> {"bin_dir", "built", ...}
    info = rc.start("/tmp/r1", kueue_configuration={...}, bin_dir=built["bin_dir"])
    info["kubeconfig"]        # admin kubeconfig (absolute path), info["server"], info["pids"]
    rc.user_kubeconfig("/tmp/r1", "alice", ["team-data"])   # a team user's client certificate
    rc.stop_components("/tmp/r1", ["kube-apiserver", "etcd"])   # only these, in this order
    rc.start_components("/tmp/r1", ["etcd", "kube-apiserver"])  # the same command lines, each waited ready
    rc.stop("/tmp/r1")        # kills exactly the processes start() recorded; idempotent

The command line ``python tools/rehearsal.py build|start|stop|user`` (used by ``make rehearsal-binaries``)
wraps the same functions.

What runs for real: etcd, kube-apiserver, kube-controller-manager, kube-scheduler (built from the
published Go modules at the versions in :data:`DEFAULT_VERSIONS`), the Kueue manager and kwok.
Flags follow kubeadm's static pod manifests (k8s.io/kubernetes v1.35.4,
cmd/kubeadm/app/phases/controlplane/manifests.go: getAPIServerCommand,
getControllerManagerCommand, getSchedulerCommand); the few differences are listed in
:func:`apiserver_flags` and friends and in roles/rehearsal/README.md.

Errors are :class:`RehearsalError` (a ValueError) naming the component and, for a process
that did not become ready, the tail of its log. Needs the ``cryptography`` package.
"""

from __future__ import annotations

import base64
import copy
import datetime
import fcntl
import hashlib
import http.client
import ipaddress
import json
import os
import re
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import topology as k8s_topology
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from ansible_collections.gpushare.cluster.plugins.module_utils._common.yaml_text import yaml
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import KUEUE_API, KUEUE_CONFIG_API

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - reported by the modules
    HAS_CRYPTOGRAPHY = False

# PyYAML, imported (or None) where the collection's YAML writer imports it.
HAS_YAML = yaml is not None


class RehearsalError(GpushareError):
    """A rehearsal binary could not be built or a component did not start."""


# ---------------------------------------------------------------------------------------
# Versions and the build
# ---------------------------------------------------------------------------------------

#: The versions built by default; roles/rehearsal/defaults/main.yml holds the same values and
#: each component's go.mod requires exactly these (a unit test keeps the three in step).
DEFAULT_VERSIONS = {
    "kubernetes": "1.35.4",
    "etcd": "3.6.16",
    "kueue": "0.19.2",
    "kwok": "0.8.0",
}

DEFAULT_CACHE_ROOT = "~/.cache/gpushare/rehearsal"
BUILD_DATE = "1970-01-01T00:00:00Z"

#: component -> Go module required by roles/rehearsal/files/go/<component>/go.mod, packages
#: built, and the binary name of each package.
COMPONENTS = {
    "kubernetes": {
        "module": "k8s.io/kubernetes",
        "binaries": {
            "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
            "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
            "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
        },
    },
    "etcd": {"module": "go.etcd.io/etcd/server/v3", "binaries": {"etcd": "go.etcd.io/etcd/server/v3"}},
    "kueue": {"module": "sigs.k8s.io/kueue", "binaries": {"kueue": "sigs.k8s.io/kueue/cmd/kueue"}},
    "kwok": {"module": "sigs.k8s.io/kwok", "binaries": {"kwok": "sigs.k8s.io/kwok/cmd/kwok"}},
}

#: Files copied from the module cache next to the binaries (share/<component>/...), so that a
#: start needs no module cache: Kueue's CRDs, webhooks and manager RBAC of the release that
#: runs, and kwok's default stages.
SHARE_FILES = {
    "kueue": {
        "crd": "config/components/crd/bases",
        "crd-patches": "config/components/crd/patches",
        "crd-kustomization.yaml": "config/components/crd/kustomization.yaml",
        "webhook/manifests.yaml": "config/components/webhook/manifests.yaml",
        "webhook/kustomization.yaml": "config/components/webhook/kustomization.yaml",
        "rbac/role.yaml": "config/components/rbac/role.yaml",
        "rbac/metrics_auth_role.yaml": "config/components/rbac/metrics_auth_role.yaml",
        "rbac/manager_secrets_role.yaml": "config/components/rbac/manager_secrets_role.yaml",
    },
    "kwok": {
        "stages/node-initialize.yaml": "kustomize/stage/node/fast/node-initialize.yaml",
        "stages/node-heartbeat-with-lease.yaml": "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "stages/pod-ready.yaml": "kustomize/stage/pod/fast/pod-ready.yaml",
        "stages/pod-complete.yaml": "kustomize/stage/pod/fast/pod-complete.yaml",
        "stages/pod-delete.yaml": "kustomize/stage/pod/fast/pod-delete.yaml",
    },
}

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def _semver(component: str, version: object) -> Tuple[int, int, int]:
    match = _SEMVER.match(str(version))
    if not match:
        raise RehearsalError(f"versions.{component}: {version!r} is not a release version such as 1.35.4")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def ldflags(component: str, version: str) -> str:
    """The version ldflags each project's own release build sets.

    - Kubernetes: hack/lib/version.sh (k8s.io/component-base/version and client-go's copy).
    - etcd: the ``GitSHA`` of go.etcd.io/etcd/api/v3/version (the version itself is a
      constant there); the module tag stands in for the commit.
    - Kueue: its Makefile's ``LD_FLAGS`` (sigs.k8s.io/kueue/pkg/version). Kueue refuses a
      server version that is not semver, hence the ``v`` prefix.
    - kwok: hack/releases.sh (sigs.k8s.io/kwok/pkg/consts.Version).
    """
    major, minor, _patch = _semver(component, version)
    tag = "v" + str(version).lstrip("v")
    if component == "kubernetes":
        base = "k8s.io/component-base/version"
        flags = [
            f"-X {base}.gitVersion={tag}", f"-X {base}.gitMajor={major}", f"-X {base}.gitMinor={minor}",
            f"-X {base}.gitTreeState=clean", f"-X {base}.buildDate={BUILD_DATE}",
            f"-X k8s.io/client-go/pkg/version.gitVersion={tag}",
            f"-X k8s.io/client-go/pkg/version.gitMajor={major}", f"-X k8s.io/client-go/pkg/version.gitMinor={minor}",
        ]
    elif component == "etcd":
        flags = [f"-X go.etcd.io/etcd/api/v3/version.GitSHA={tag}"]
    elif component == "kueue":
        flags = [f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={tag}",
                 f"-X sigs.k8s.io/kueue/pkg/version.GitCommit={tag}",
                 f"-X sigs.k8s.io/kueue/pkg/version.BuildDate={BUILD_DATE}"]
    elif component == "kwok":
        flags = [f"-X sigs.k8s.io/kwok/pkg/consts.Version={tag}"]
    else:
        raise RehearsalError(f"unknown rehearsal component {component!r}")
    return " ".join(["-s", "-w"] + flags)


def required_version(go_mod_text: str, module: str) -> Optional[str]:
    """The version ``go.mod`` requires of ``module`` (``v1.35.4``), or None."""
    pattern = re.compile(r"^\s*(?:require\s+)?" + re.escape(module) + r"\s+(v\S+)", re.M)
    match = pattern.search(go_mod_text)
    return match.group(1) if match else None


def check_versions(go_dir: str, versions: Mapping[str, object]) -> Dict[str, str]:
    """Every component's go.mod must require the version asked for; returns the versions."""
    out: Dict[str, str] = {}
    for component, spec in COMPONENTS.items():
        wanted = str(versions.get(component, DEFAULT_VERSIONS[component])).lstrip("v")
        _semver(component, wanted)
        path = os.path.join(go_dir, component, "go.mod")
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise RehearsalError(f"{component}: cannot read {path}: {exc}") from exc
        have = required_version(text, str(spec["module"]))
        if have is None:
            raise RehearsalError(f"{component}: {path} does not require {spec['module']}")
        if have.lstrip("v") != wanted:
            raise RehearsalError(
                f"versions.{component}: {wanted} asked for, but {path} requires {spec['module']} {have}; "
                f"change the go.mod (and for kubernetes every k8s.io/* replace to v0.{wanted.split('.', 1)[1]}), "
                "run `go mod tidy` there and commit go.mod and go.sum")
        out[component] = wanted
    return out


def go_env(go: str = "go") -> Dict[str, str]:
    try:
        result = subprocess.run([go, "env", "-json", "GOVERSION", "GOOS", "GOARCH", "GOMODCACHE"],
                                capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RehearsalError(f"the Go toolchain ({go}) is needed to build the rehearsal binaries: {exc}") from exc
    return json.loads(result.stdout)


def cache_key(go_dir: str, versions: Mapping[str, str], env: Mapping[str, str]) -> str:
    """A key over every version, each component's go.mod and go.sum, the ldflags and the toolchain."""
    digest = hashlib.sha256()
    parts: Dict[str, Any] = {"go": [env.get("GOVERSION"), env.get("GOOS"), env.get("GOARCH")], "components": {}}
    for component in sorted(COMPONENTS):
        files = {}
        for name in ("go.mod", "go.sum"):
            with open(os.path.join(go_dir, component, name), "rb") as handle:
                files[name] = hashlib.sha256(handle.read()).hexdigest()
        parts["components"][component] = {"version": versions[component], "files": files,
                                          "ldflags": ldflags(component, versions[component])}
    digest.update(json.dumps(parts, sort_keys=True).encode())
    short = "-".join(f"{c}{versions[c]}" for c in ("kubernetes", "etcd", "kueue", "kwok"))
    return f"{short}-{digest.hexdigest()[:12]}"


def _module_dir(go: str, component_dir: str, module: str, env: Mapping[str, str]) -> str:
    result = subprocess.run([go, "list", "-m", "-json", module], cwd=component_dir, capture_output=True,
                            text=True, timeout=600, env=dict(os.environ, **env), check=False)
    if result.returncode != 0:
        raise RehearsalError(f"go list -m {module} failed in {component_dir}: {result.stderr.strip()[-2000:]}")
    info = json.loads(result.stdout)
    if not info.get("Dir"):
        raise RehearsalError(f"{module}: not in the module cache after `go list -m` in {component_dir}")
    return str(info["Dir"])


def _copy_share(component: str, module_dir: str, share_dir: str) -> None:
    for target, source in SHARE_FILES.get(component, {}).items():
        src = os.path.join(module_dir, source)
        dst = os.path.join(share_dir, component, target)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src):
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)
            for root, dirs, files in os.walk(dst):
                for name in dirs:
                    os.chmod(os.path.join(root, name), 0o755)
                for name in files:
                    os.chmod(os.path.join(root, name), 0o644)
        else:
            shutil.copyfile(src, dst)
            os.chmod(dst, 0o644)
        os.chmod(os.path.dirname(dst), 0o755)


def bin_dir_for(go_dir: str, cache_root: str = DEFAULT_CACHE_ROOT, versions: Optional[Mapping[str, object]] = None,
                go: str = "go") -> str:
    """Where :func:`build` puts (or has put) the binaries for these versions."""
    checked = check_versions(go_dir, versions or {})
    key = cache_key(go_dir, checked, go_env(go))
    return os.path.join(os.path.expanduser(cache_root), key, "bin")


def missing_binaries(bin_dir: str) -> List[str]:
    names = [name for spec in COMPONENTS.values() for name in spec["binaries"]]
    return [name for name in names if not os.access(os.path.join(bin_dir, name), os.X_OK)]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _build_component(go: str, go_dir: str, component: str, version: str, bin_dir: str, share_dir: str, key_dir: str,
                     log=None) -> Optional[Tuple[float, float]]:
    """Build one component's binaries unless they (and its share files) are there.

    Returns None when nothing was built, else (wall seconds, CPU seconds of the Go commands).
    """
    spec = COMPONENTS[component]
    names = spec["binaries"]
    component_dir = os.path.join(go_dir, component)
    share_ok = all(os.path.exists(os.path.join(share_dir, component, t)) for t in SHARE_FILES.get(component, {}))
    if all(os.access(os.path.join(bin_dir, n), os.X_OK) for n in names):
        if not share_ok:
            # Files copied from the module cache only: the binaries of this key stay.
            _copy_share(component, _module_dir(go, component_dir, str(spec["module"]), {}), share_dir)
        return None
    started, cpu_before = time.monotonic(), _children_cpu()
    tmp_out = os.path.join(key_dir, f".out-{component}")
    shutil.rmtree(tmp_out, ignore_errors=True)
    os.makedirs(tmp_out)
    for name, package in names.items():
        cmd = [go, "build", "-mod=readonly", "-trimpath", "-ldflags", ldflags(component, version),
               "-o", os.path.join(tmp_out, name), package]
        if log:
            log(f"rehearsal: building {name} {version} ({package})")
        result = subprocess.run(cmd, cwd=component_dir, capture_output=True, text=True,
                                env=dict(os.environ, GOFLAGS="-buildvcs=false"), check=False)
        if result.returncode != 0:
            raise RehearsalError(f"{component}: `go build ... {package}` failed in {component_dir}:\n"
                                 f"{result.stderr.strip()[-4000:]}")
    _copy_share(component, _module_dir(go, component_dir, str(spec["module"]), {}), share_dir)
    for name in names:
        os.replace(os.path.join(tmp_out, name), os.path.join(bin_dir, name))
    shutil.rmtree(tmp_out, ignore_errors=True)
    return round(time.monotonic() - started, 1), round(_children_cpu() - cpu_before, 1)


def build(go_dir: str, cache_root: str = DEFAULT_CACHE_ROOT, versions: Optional[Mapping[str, object]] = None,
          go: str = "go", components: Optional[Sequence[str]] = None, log=None) -> Dict[str, Any]:
    """Build every missing binary into ``<cache_root>/<key>/bin``; nothing when all are there.

    The Go module directory of each component (``go_dir/<component>``, with go.mod and go.sum)
    is built with ``-trimpath``, ``-mod=readonly`` and the version ldflags. A lock file per
    component in the key directory keeps two concurrent builds of one binary apart. Returns ``bin_dir``,
    ``share_dir``, ``key``, ``built`` (components built now), ``seconds`` ({component: wall
    seconds of this build}), ``cold_seconds`` and ``cold_cpu_seconds`` (wall and CPU seconds
    of the Go build, recorded when each was built first into this key).
    """
    go_dir = os.path.abspath(os.path.expanduser(go_dir))
    checked = check_versions(go_dir, versions or {})
    env = go_env(go)
    key = cache_key(go_dir, checked, env)
    key_dir = os.path.join(os.path.abspath(os.path.expanduser(cache_root)), key)
    bin_dir = os.path.join(key_dir, "bin")
    share_dir = os.path.join(key_dir, "share")
    os.makedirs(bin_dir, exist_ok=True)
    record_path = os.path.join(key_dir, "build.json")
    built: List[str] = []
    seconds: Dict[str, float] = {}
    cpu: Dict[str, float] = {}
    for component in list(components or COMPONENTS):
        # One lock per component: two builds of the same key never build the same binary
        # at once, and different components may build side by side.
        with open(os.path.join(key_dir, f"build-{component}.lock"), "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            took = _build_component(go, go_dir, component, checked[component], bin_dir, share_dir, key_dir, log)
            if took:
                built.append(component)
                seconds[component], cpu[component] = took
                if log:
                    log(f"rehearsal: built {component} {checked[component]} in {seconds[component]} s "
                        f"({cpu[component]} s of CPU)")
    with open(os.path.join(key_dir, "build.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = _read_json(record_path) or {}
        record.update({"key": key, "versions": checked, "go": env.get("GOVERSION")})
        for component in built:
            record.setdefault("cold_seconds", {}).setdefault(component, seconds[component])
            record.setdefault("cold_cpu_seconds", {}).setdefault(component, cpu[component])
        record.setdefault("cold_seconds", {})
        with open(record_path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2, sort_keys=True)
        os.replace(record_path + ".tmp", record_path)
    return {"bin_dir": bin_dir, "share_dir": share_dir, "key": key, "versions": checked, "built": built,
            "seconds": seconds, "cold_seconds": record["cold_seconds"], "cold_cpu_seconds": record.get("cold_cpu_seconds", {}),
            "go": env.get("GOVERSION")}


# ---------------------------------------------------------------------------------------
# Certificates and kubeconfigs
# ---------------------------------------------------------------------------------------

def _require_crypto() -> None:
    if not HAS_CRYPTOGRAPHY:
        raise RehearsalError("the rehearsal needs the Python 'cryptography' package on the controller")


def _new_key():
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _cert_pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str, organizations: Sequence[str] = ()) -> "x509.Name":
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def make_ca(common_name: str, days: int = 30) -> Tuple[bytes, bytes]:
    """A self-signed CA: (certificate PEM, key PEM)."""
    _require_crypto()
    key = _new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    name = _name(common_name)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return _cert_pem(cert), _key_pem(key)


def issue_cert(ca_cert_pem: bytes, ca_key_pem: bytes, common_name: str, organizations: Sequence[str] = (),
               server: bool = False, client: bool = False, sans: Sequence[str] = (), days: int = 30) -> Tuple[bytes, bytes]:
    """A leaf certificate signed by the CA: (certificate PEM, key PEM).

    ``organizations`` become the Kubernetes groups of a client certificate; ``sans`` are DNS
    names or IP addresses of a serving certificate.
    """
    _require_crypto()
    if not server and not client:
        raise RehearsalError(f"certificate {common_name}: neither server nor client")
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    key = _new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
    builder = (x509.CertificateBuilder().subject_name(_name(common_name, organizations)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    if sans:
        names: List[Any] = []
        for san in sans:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                names.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return _cert_pem(builder.sign(ca_key, hashes.SHA256())), _key_pem(key)


def _write(path: str, data: bytes, mode: int = 0o600) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)
    return path


def kubeconfig_text(server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes, user: str, cluster: str = "rehearsal") -> str:
    """A kubeconfig with embedded CA, client certificate and key (JSON, which is YAML)."""
    b64 = base64.b64encode
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": b64(ca_pem).decode()}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(cert_pem).decode(),
                                          "client-key-data": b64(key_pem).decode()}}],
        "contexts": [{"name": f"{user}@{cluster}", "context": {"cluster": cluster, "user": user}}],
        "current-context": f"{user}@{cluster}",
    }
    return json.dumps(config, indent=2) + "\n"


# ---------------------------------------------------------------------------------------
# Flags and configurations (pure)
# ---------------------------------------------------------------------------------------

SERVICE_CIDR = "10.96.0.0/12"
POD_CIDR = "10.244.0.0/16"
DNS_DOMAIN = "cluster.local"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_ANNOTATION_VALUE = "fake"
#: kwok v0.8.0's default stages (pkg/kwokctl/runtime/cluster.go getDefaultNodeStages /
#: getDefaultPodStages) except pod-complete, which would finish every Job pod at once; a
#: rehearsal's Jobs run until they are deleted, as long training does.
DEFAULT_KWOK_STAGES = ["node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-delete"]
#: The Kueue Configuration fields the rehearsal sets because Kueue runs outside the cluster;
#: every other field is the caller's (the plan's rendered Configuration).
KUEUE_OVERRIDDEN_FIELDS = [
    "webhook.host", "webhook.port", "webhook.certDir", "health.healthProbeBindAddress", "metrics.bindAddress",
    "leaderElection.leaderElect", "internalCertManagement.enable", "featureGates.VisibilityOnDemand", "pprofBindAddress",
]


def _flag_list(args: Mapping[str, object]) -> List[str]:
    out = []
    for name, value in args.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        out.append(f"--{name}={value}")
    return out


def _merge_extra(base: Dict[str, object], extra: Optional[Mapping[str, object]], gates: Optional[Mapping[str, object]],
                 component: str) -> Dict[str, object]:
    """kubeadm's rule (kubeadmutil.ArgumentsToCommand): extra args override the defaults.

    Feature gates go through the same helper the kubeadm role uses for extraArgs
    (k8s_topology.extra_args_list), so a gate is spelled and checked in one place.
    """
    try:
        merged = k8s_topology.extra_args_list(dict(extra or {}), dict(gates or {}))
    except ValueError as exc:
        raise RehearsalError(f"{component}: {exc}") from exc
    out = dict(base)
    for item in merged:
        out[item["name"]] = item["value"]
    return out


def etcd_flags(d: Mapping[str, str], ports: Mapping[str, int]) -> List[str]:
    """etcd as kubeadm's local etcd (TLS, client certificate auth) on 127.0.0.1 only.

    Differences: peer traffic on a loopback http port (one member) and --unsafe-no-fsync
    (a rehearsal's data is thrown away; fsync dominates etcd's latency on small disks).
    """
    client = f"https://127.0.0.1:{ports['etcd']}"
    peer = f"http://127.0.0.1:{ports['etcd_peer']}"
    return _flag_list({
        "name": "rehearsal", "data-dir": d["etcd_data"],
        "listen-client-urls": client, "advertise-client-urls": client,
        "listen-peer-urls": peer, "initial-advertise-peer-urls": peer, "initial-cluster": f"rehearsal={peer}",
        "listen-metrics-urls": f"http://127.0.0.1:{ports['etcd_metrics']}",
        "cert-file": d["etcd_server_crt"], "key-file": d["etcd_server_key"], "client-cert-auth": True,
        "trusted-ca-file": d["etcd_ca_crt"], "unsafe-no-fsync": True, "snapshot-count": 10000,
        "log-level": "warn",
    })


def apiserver_flags(d: Mapping[str, str], ports: Mapping[str, int], feature_gates=None, extra=None) -> List[str]:
    """kubeadm's getAPIServerCommand defaults, on 127.0.0.1.

    Differences: --bind-address=127.0.0.1; no kubelet client certificate (no kubelet);
    --endpoint-reconciler-type=none (the ``kubernetes`` Service cannot point at a loopback
    address). The admission plugins are kubeadm's (NodeRestriction on top of the default set);
    the kubeadm and microk8s roles add none. Feature gates and extra args are the caller's.
    """
    base: Dict[str, object] = {
        "advertise-address": "127.0.0.1", "bind-address": "127.0.0.1", "secure-port": ports["apiserver"],
        "enable-admission-plugins": "NodeRestriction", "service-cluster-ip-range": SERVICE_CIDR,
        "service-account-key-file": d["sa_pub"], "service-account-signing-key-file": d["sa_key"],
        "service-account-issuer": f"https://kubernetes.default.svc.{DNS_DOMAIN}",
        "client-ca-file": d["ca_crt"], "tls-cert-file": d["apiserver_crt"], "tls-private-key-file": d["apiserver_key"],
        "enable-bootstrap-token-auth": True, "allow-privileged": True,
        "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
        "requestheader-username-headers": "X-Remote-User", "requestheader-group-headers": "X-Remote-Group",
        "requestheader-extra-headers-prefix": "X-Remote-Extra-", "requestheader-client-ca-file": d["front_proxy_ca_crt"],
        "requestheader-allowed-names": "front-proxy-client", "proxy-client-cert-file": d["front_proxy_client_crt"],
        "proxy-client-key-file": d["front_proxy_client_key"],
        "etcd-servers": f"https://127.0.0.1:{ports['etcd']}", "etcd-cafile": d["etcd_ca_crt"],
        "etcd-certfile": d["apiserver_etcd_client_crt"], "etcd-keyfile": d["apiserver_etcd_client_key"],
        "authorization-mode": "Node,RBAC", "endpoint-reconciler-type": "none",
        "cert-dir": d["pki"],
    }
    return _flag_list(_merge_extra(base, extra, feature_gates, "kube-apiserver"))


def controller_manager_flags(d: Mapping[str, str], ports: Mapping[str, int], feature_gates=None, extra=None) -> List[str]:
    """kubeadm's getControllerManagerCommand defaults (with kubeadm's pod and service CIDRs).

    Every controller runs (``*,bootstrapsigner,tokencleaner``): resourceclaim, job,
    replicaset, deployment, statefulset, namespace, garbage collector, serviceaccount and
    token, CSR signing with the cluster CA, ... Each acts as its own service account
    (--use-service-account-credentials), e.g. system:serviceaccount:kube-system:resource-claim-controller.
    Difference: --leader-elect=false (one instance; no 15 s lease wait after a restart).
    """
    kubeconfig = d["kcm_kubeconfig"]
    base: Dict[str, object] = {
        "bind-address": "127.0.0.1", "secure-port": ports["controller_manager"], "leader-elect": False,
        "kubeconfig": kubeconfig, "authentication-kubeconfig": kubeconfig, "authorization-kubeconfig": kubeconfig,
        "client-ca-file": d["ca_crt"], "requestheader-client-ca-file": d["front_proxy_ca_crt"], "root-ca-file": d["ca_crt"],
        "service-account-private-key-file": d["sa_key"], "cluster-signing-cert-file": d["ca_crt"],
        "cluster-signing-key-file": d["ca_key"], "use-service-account-credentials": True,
        "controllers": "*,bootstrapsigner,tokencleaner", "allocate-node-cidrs": True, "cluster-cidr": POD_CIDR,
        "service-cluster-ip-range": SERVICE_CIDR, "tls-cert-file": d["kcm_serving_crt"],
        "tls-private-key-file": d["kcm_serving_key"],
    }
    return _flag_list(_merge_extra(base, extra, feature_gates, "kube-controller-manager"))


def scheduler_flags(d: Mapping[str, str], ports: Mapping[str, int], feature_gates=None, extra=None) -> List[str]:
    """kubeadm's getSchedulerCommand defaults. Difference: --leader-elect=false (one instance)."""
    kubeconfig = d["scheduler_kubeconfig"]
    base: Dict[str, object] = {
        "bind-address": "127.0.0.1", "secure-port": ports["scheduler"], "leader-elect": False,
        "kubeconfig": kubeconfig, "authentication-kubeconfig": kubeconfig, "authorization-kubeconfig": kubeconfig,
        "tls-cert-file": d["scheduler_serving_crt"], "tls-private-key-file": d["scheduler_serving_key"],
    }
    return _flag_list(_merge_extra(base, extra, feature_gates, "kube-scheduler"))


def kwok_flags(d: Mapping[str, str], ports: Mapping[str, int]) -> List[str]:
    """kwok manages only Nodes annotated ``kwok.x-k8s.io/node: fake`` (and their pods)."""
    return _flag_list({
        "kubeconfig": d["kwok_kubeconfig"], "config": d["kwok_config"],
        "manage-all-nodes": False,
        "manage-nodes-with-annotation-selector": f"{KWOK_ANNOTATION}={KWOK_ANNOTATION_VALUE}",
        "node-ip": "127.0.0.1", "server-address": f"127.0.0.1:{ports['kwok']}", "node-lease-duration-seconds": 40,
    })


def _set_path(config: Dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = config
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def kueue_config(configuration: Optional[Mapping[str, Any]], d: Mapping[str, str], ports: Mapping[str, int]) -> Dict[str, Any]:
    """The caller's Kueue Configuration with only the out-of-cluster fields overridden.

    Overridden (:data:`KUEUE_OVERRIDDEN_FIELDS`): the webhook server on 127.0.0.1 with the
    rehearsal's certificate (certDir), the health probe and metrics on loopback ports,
    leader election off (one replica, no lease wait), internal certificate management off (the
    rehearsal's CA signs the webhook certificate and fills caBundle), the VisibilityOnDemand
    gate off (its extension API server reads a fixed /visibility certificate directory and
    would need an APIService; pending workloads stay readable as Workload objects), and no
    pprof listener. Everything else (namespace selector, waitForPodsReady, integrations,
    fair sharing, resources, ...) is the caller's and reaches Kueue unchanged.
    """
    config: Dict[str, Any] = copy.deepcopy(dict(configuration or {}))
    if config.get("apiVersion") not in (None, KUEUE_CONFIG_API):
        raise RehearsalError(f"kueue_configuration.apiVersion: {config.get('apiVersion')!r}; "
                             "the rehearsal runs Kueue with " + KUEUE_CONFIG_API)
    if config.get("kind") not in (None, "Configuration"):
        raise RehearsalError(f"kueue_configuration.kind: {config.get('kind')!r}, expected Configuration")
    config["apiVersion"] = KUEUE_CONFIG_API
    config["kind"] = "Configuration"
    config.pop("pprofBindAddress", None)
    _set_path(config, "webhook.host", "127.0.0.1")
    _set_path(config, "webhook.port", ports["kueue_webhook"])
    _set_path(config, "webhook.certDir", d["kueue_cert_dir"])
    _set_path(config, "health.healthProbeBindAddress", f"127.0.0.1:{ports['kueue_health']}")
    _set_path(config, "metrics.bindAddress", f"127.0.0.1:{ports['kueue_metrics']}")
    _set_path(config, "leaderElection.leaderElect", False)
    _set_path(config, "internalCertManagement.enable", False)
    _set_path(config, "featureGates.VisibilityOnDemand", False)
    return config


def _load_yaml_docs(path: str) -> List[Dict[str, Any]]:
    if not HAS_YAML:
        raise RehearsalError("the rehearsal needs PyYAML")
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def kueue_crds(share_dir: str, webhook_url: str, ca_pem: bytes) -> List[Dict[str, Any]]:
    """Kueue's CRDs (config/components/crd/bases) with the conversion webhook that its own
    kustomization patches in (config/components/crd/kustomization.yaml, patches/webhook_in_*),
    pointed at ``webhook_url`` + the patch's path, with the rehearsal CA as caBundle."""
    base = os.path.join(share_dir, "kueue")
    with open(os.path.join(base, "crd-kustomization.yaml"), encoding="utf-8") as handle:
        kustomization = yaml.safe_load(handle)
    conversions: Dict[str, Dict[str, Any]] = {}
    for patch in kustomization.get("patches") or []:
        for doc in _load_yaml_docs(os.path.join(base, "crd-patches", os.path.basename(patch["path"]))):
            conversion = copy.deepcopy(doc["spec"]["conversion"])
            service = conversion["webhook"]["clientConfig"].pop("service")
            conversion["webhook"]["clientConfig"] = {"url": webhook_url + service.get("path", "/convert"),
                                                     "caBundle": base64.b64encode(ca_pem).decode()}
            conversions[doc["metadata"]["name"]] = conversion
    crds = []
    for name in kustomization.get("resources") or []:
        for doc in _load_yaml_docs(os.path.join(base, "crd", os.path.basename(name))):
            if doc["metadata"]["name"] in conversions:
                doc["spec"]["conversion"] = conversions[doc["metadata"]["name"]]
            crds.append(doc)
    return crds


def kueue_webhooks(share_dir: str, webhook_url: str, ca_pem: bytes) -> List[Dict[str, Any]]:
    """Kueue's webhook configurations (config/components/webhook/manifests.yaml) as its
    kustomization makes them (names prefixed ``kueue-``, the namespaceSelector that keeps
    kube-system and kueue-system out copied to every job webhook), with clientConfig.url on
    127.0.0.1 and the rehearsal CA instead of the in-cluster Service."""
    base = os.path.join(share_dir, "kueue", "webhook")
    docs = _load_yaml_docs(os.path.join(base, "manifests.yaml"))
    with open(os.path.join(base, "kustomization.yaml"), encoding="utf-8") as handle:
        kustomization = yaml.safe_load(handle)
    selector = None
    for patch in kustomization.get("patches") or []:
        text = patch.get("patch") if isinstance(patch, dict) else None
        if text:
            for doc in yaml.safe_load_all(text):
                for hook in (doc or {}).get("webhooks") or []:
                    if hook.get("namespaceSelector"):
                        selector = hook["namespaceSelector"]
    targets = set()
    for replacement in kustomization.get("replacements") or []:
        for target in replacement.get("targets") or []:
            for field in target.get("fieldPaths") or []:
                match = re.match(r"webhooks\.\[name=([^\]]+)\]\.namespaceSelector", field)
                if match:
                    targets.add(match.group(1))
    bundle = base64.b64encode(ca_pem).decode()
    for doc in docs:
        doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
        for hook in doc.get("webhooks") or []:
            path = hook["clientConfig"].get("service", {}).get("path", "")
            hook["clientConfig"] = {"url": webhook_url + path, "caBundle": bundle}
            if selector and hook["name"] in targets:
                hook["namespaceSelector"] = copy.deepcopy(selector)
    return docs


def kueue_rbac(share_dir: str, user: str, namespace: str = "kueue-system") -> List[Dict[str, Any]]:
    """Kueue's manager ClusterRole, metrics-auth ClusterRole and secrets Role
    (config/components/rbac), named as its kustomization names them, bound to the
    rehearsal's Kueue user."""
    out: List[Dict[str, Any]] = []
    for doc in _load_yaml_docs(os.path.join(share_dir, "kueue", "rbac", "manager_secrets_role.yaml")):
        # Namespaced (Kueue's own namespace): the manager watches Secrets there.
        doc["metadata"].update(name="kueue-" + doc["metadata"]["name"], namespace=namespace)
        out.append(doc)
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": doc["metadata"]["name"] + "-rehearsal", "namespace": namespace},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": doc["metadata"]["name"]},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    for name in ("role.yaml", "metrics_auth_role.yaml"):
        for doc in _load_yaml_docs(os.path.join(share_dir, "kueue", "rbac", name)):
            doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
            out.append(doc)
            out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                        "metadata": {"name": doc["metadata"]["name"] + "-rehearsal"},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": doc["metadata"]["name"]},
                        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    return out


def kwok_config_docs(share_dir: str, stages: Sequence[str]) -> List[Dict[str, Any]]:
    docs = []
    for stage in stages:
        path = os.path.join(share_dir, "kwok", "stages", f"{stage}.yaml")
        if not os.path.exists(path):
            raise RehearsalError(f"kwok_stages: {stage!r} is not one of kwok's default stages "
                                 f"({', '.join(sorted(p[:-5] for p in os.listdir(os.path.dirname(path))))})")
        docs.extend(_load_yaml_docs(path))
    return docs


# ---------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------

START_ORDER = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue"]
_CHILDREN: Dict[int, subprocess.Popen] = {}


def free_ports(names: Sequence[str]) -> Dict[str, int]:
    """One free 127.0.0.1 port per name (all held open until every one is chosen)."""
    sockets = []
    ports = {}
    try:
        for name in names:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
            ports[name] = sock.getsockname()[1]
    finally:
        for sock in sockets:
            sock.close()
    return ports


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _proc_start_time(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == "Z":
        return None
    return fields[19]


def _alive(pid: int, start_time: Optional[str]) -> bool:
    current = _proc_start_time(pid)
    return current is not None and (start_time is None or current == start_time)


def log_tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _spawn(name: str, argv: List[str], log_path: str, state: Dict[str, Any], state_path: str) -> None:
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, cwd=state["dir"])
    _CHILDREN[proc.pid] = proc
    state["processes"][name] = {"pid": proc.pid, "start_time": _proc_start_time(proc.pid), "argv0": argv[0], "argv": list(argv),
                                "log": log_path}
    _save_state(state_path, state)


def _save_state(path: str, state: Mapping[str, Any]) -> None:
    _write(path, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode(), 0o600)


def _kill(entry: Mapping[str, Any], grace: float) -> bool:
    pid = int(entry["pid"])
    if not _alive(pid, entry.get("start_time")):
        _reap(pid)
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not _alive(pid, entry.get("start_time")):
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    for _attempt in range(50):
        _reap(pid)
        if not _alive(pid, entry.get("start_time")):
            break
        time.sleep(0.1)
    return True


def _reap(pid: int) -> None:
    proc = _CHILDREN.get(pid)
    if proc is not None and proc.poll() is not None:
        _CHILDREN.pop(pid, None)


def stop(directory: str, grace: float = 10.0) -> Dict[str, Any]:
    """Stop the processes recorded in ``directory/state.json``, newest first.

    Only pids recorded by :func:`start` are signalled, and only while their /proc start time
    is the recorded one (a pid reused by another process is left alone). Idempotent: returns
    ``changed`` False when nothing was running.
    """
    directory = os.path.abspath(os.path.expanduser(directory))
    state_path = os.path.join(directory, "state.json")
    state = _read_json(state_path)
    if not state:
        return {"changed": False, "dir": directory, "stopped": []}
    stopped = []
    for name in reversed(list(state.get("processes", {}))):
        if _kill(state["processes"][name], grace):
            stopped.append(name)
    state["running"] = False
    _save_state(state_path, state)
    return {"changed": bool(stopped), "dir": directory, "stopped": stopped}


def stop_components(directory: str, names: Sequence[str], grace: float = 10.0) -> List[str]:
    """Stop only the components ``names`` of the rehearsal in ``directory``, in that order, and
    leave the others running: what a kubelet does to the static pods whose manifests leave
    /etc/kubernetes/manifests (playbooks/etcd_restore.yml stops the API server, the controller
    manager and the scheduler, then etcd). Returns the names that were running.
    :func:`start_components` starts them again."""
    directory = os.path.abspath(os.path.expanduser(directory))
    state = _read_json(os.path.join(directory, "state.json")) or {}
    unknown = [name for name in names if name not in (state.get("processes") or {})]
    if unknown:
        raise RehearsalError(f"{directory}: no recorded {', '.join(unknown)} to stop")
    return [name for name in names if _kill(state["processes"][name], grace)]


def start_components(directory: str, names: Sequence[str], timeout: float = 120.0) -> Dict[str, Any]:
    """Start the stopped components ``names`` again, in that order, each with the command line
    :func:`start` gave it (same ports, data directory and certificates), and wait until each is
    ready as :func:`start` waits for it. A component still running is refused. Returns :func:`info`."""
    directory = os.path.abspath(os.path.expanduser(directory))
    d = _layout(directory)
    state = _read_json(d["state"])
    if not state:
        raise RehearsalError(f"{directory}: no rehearsal recorded there")
    deadline = time.monotonic() + float(timeout)
    for name in names:
        entry = (state.get("processes") or {}).get(name)
        if not entry or not entry.get("argv"):
            raise RehearsalError(f"{directory}: no command line of {name} recorded to start it again")
        if _alive(int(entry["pid"]), entry.get("start_time")):
            raise RehearsalError(f"{directory}: {name} is still running (pid {entry['pid']}); stop it first")
        check = _ready_check(name, d, state["ports"], state["server"])
        _spawn(name, list(entry["argv"]), entry["log"], state, d["state"])
        _wait(name, check, deadline, entry["log"], state["processes"][name])
    return _info(d, state)


def running(directory: str) -> Dict[str, bool]:
    """{component: alive} for the processes recorded in ``directory``."""
    state = _read_json(os.path.join(os.path.abspath(os.path.expanduser(directory)), "state.json")) or {}
    return {name: _alive(int(entry["pid"]), entry.get("start_time")) for name, entry in (state.get("processes") or {}).items()}


# ---------------------------------------------------------------------------------------
# Talking to the API server (http.client + client certificates; no Kubernetes client needed)
# ---------------------------------------------------------------------------------------

def _ssl_context(ca_file: str, cert_file: Optional[str] = None, key_file: Optional[str] = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def _http(method: str, url: str, context: Optional[ssl.SSLContext] = None, data: Optional[bytes] = None,
          headers: Optional[Mapping[str, str]] = None, timeout: float = 3.0) -> Tuple[int, str]:
    """One HTTP(S) request to a rehearsal component on loopback: (status, body text).

    http.client rather than urllib: these requests carry the rehearsal's own CA and client
    certificates, and go nowhere but 127.0.0.1.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    try:
        connection.request(method, target, body=data, headers=dict(headers or {}))
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


def http_get(url: str, context: Optional[ssl.SSLContext] = None, timeout: float = 3.0) -> Tuple[int, str]:
    return _http("GET", url, context, timeout=timeout)


def api_request(info: Mapping[str, Any], method: str, path: str, body: Optional[Any] = None,
                cert: Optional[Tuple[str, str]] = None, content_type: str = "application/json",
                timeout: float = 10.0) -> Tuple[int, Any]:
    """One request to the rehearsal API server as the admin (or as ``cert`` = (crt, key) files).

    Returns (HTTP status, decoded JSON body or text).
    """
    crt, key = cert or (info["pki"]["admin_crt"], info["pki"]["admin_key"])
    context = _ssl_context(info["pki"]["ca_crt"], crt, key)
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    status, text = _http(method, info["server"] + path, context, data,
                         {"Content-Type": content_type, "Accept": "application/json"}, timeout)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def _resource_of(info: Mapping[str, Any], api_version: str, kind: str,
                 discovered: Dict[str, Dict[str, Any]]) -> Tuple[str, Mapping[str, Any]]:
    """The path of ``api_version`` and the API resource (plural ``name``, ``namespaced``) serving
    ``kind`` there, from the API server's discovery document of it (read once per apply)."""
    base = ("/apis/" if "/" in api_version else "/api/") + api_version
    if base not in discovered:
        status, body = api_request(info, "GET", base)
        if status != 200 or not isinstance(body, dict):
            raise RehearsalError(f"apply: the API server serves no {api_version} (discovery of {base}: HTTP {status})")
        # Subresources (``pods/status``) share their parent's kind; only the parents are applied.
        discovered[base] = {r["kind"]: r for r in body.get("resources") or [] if "/" not in r["name"]}
    resource = discovered[base].get(kind)
    if resource is None:
        raise RehearsalError(f"apply: the API server serves no kind {kind} in {api_version}")
    return base, resource


def apply_objects(info: Mapping[str, Any], objects: List[Mapping[str, Any]], field_manager: str = "gpushare-rehearsal") -> None:
    """Server-side apply each object, in order, as the admin, taking over conflicting fields.

    The same request ``kubectl apply --server-side --force-conflicts`` sends: a PATCH of type
    ``application/apply-patch+yaml`` (JSON is YAML) with ``fieldManager`` and ``force=true``
    (https://kubernetes.io/docs/reference/using-api/server-side-apply/), so the rehearsal needs
    no kubectl binary.
    """
    discovered: Dict[str, Dict[str, Any]] = {}
    query = urllib.parse.urlencode({"fieldManager": field_manager, "force": "true"})
    for obj in objects:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            raise RehearsalError(f"apply: a {obj.get('kind')} without metadata.name")
        base, resource = _resource_of(info, str(obj["apiVersion"]), str(obj["kind"]), discovered)
        scope = f"/namespaces/{meta.get('namespace') or 'default'}" if resource.get("namespaced") else ""
        path = f"{base}{scope}/{resource['name']}/{urllib.parse.quote(name)}?{query}"
        status, body = api_request(info, "PATCH", path, obj, content_type="application/apply-patch+yaml", timeout=60)
        if status not in (200, 201):
            message = body.get("message") if isinstance(body, dict) else str(body)[-3000:]
            raise RehearsalError(f"apply {obj['kind']} {meta.get('namespace') + '/' if meta.get('namespace') else ''}{name}: "
                                 f"HTTP {status}: {message}")


# ---------------------------------------------------------------------------------------
# Start
# ---------------------------------------------------------------------------------------

def _layout(directory: str) -> Dict[str, str]:
    pki = os.path.join(directory, "pki")
    d = {"dir": directory, "pki": pki, "logs": os.path.join(directory, "logs"),
         "etcd_data": os.path.join(directory, "etcd"), "state": os.path.join(directory, "state.json"),
         "kubeconfig": os.path.join(directory, "admin.kubeconfig"),
         "kcm_kubeconfig": os.path.join(directory, "kubeconfigs", "controller-manager.kubeconfig"),
         "scheduler_kubeconfig": os.path.join(directory, "kubeconfigs", "scheduler.kubeconfig"),
         "kwok_kubeconfig": os.path.join(directory, "kubeconfigs", "kwok.kubeconfig"),
         "kueue_kubeconfig": os.path.join(directory, "kubeconfigs", "kueue.kubeconfig"),
         "kwok_config": os.path.join(directory, "kwok", "kwok.yaml"),
         "kueue_config": os.path.join(directory, "kueue", "config.yaml"),
         "kueue_cert_dir": os.path.join(directory, "kueue", "certs"),
         "kueue_etc_upper": os.path.join(directory, "kueue", "etc-upper"),
         "kueue_etc_work": os.path.join(directory, "kueue", "etc-work")}
    for name in ("ca", "etcd_ca", "front_proxy_ca", "apiserver", "apiserver_etcd_client", "etcd_server", "front_proxy_client",
                 "admin", "kcm", "scheduler", "kcm_serving", "scheduler_serving", "kwok", "kueue", "kueue_serving"):
        d[f"{name}_crt"] = os.path.join(pki, f"{name.replace('_', '-')}.crt")
        d[f"{name}_key"] = os.path.join(pki, f"{name.replace('_', '-')}.key")
    d["sa_key"] = os.path.join(pki, "sa.key")
    d["sa_pub"] = os.path.join(pki, "sa.pub")
    return d


KUEUE_USER = "gpushare:rehearsal:kueue-manager"


def _make_pki(d: Mapping[str, str]) -> Dict[str, bytes]:
    ca_crt, ca_key = make_ca("gpushare-rehearsal-ca")
    etcd_ca_crt, etcd_ca_key = make_ca("gpushare-rehearsal-etcd-ca")
    fp_ca_crt, fp_ca_key = make_ca("gpushare-rehearsal-front-proxy-ca")
    for name, crt, key in (("ca", ca_crt, ca_key), ("etcd_ca", etcd_ca_crt, etcd_ca_key), ("front_proxy_ca", fp_ca_crt, fp_ca_key)):
        _write(d[f"{name}_crt"], crt, 0o644)
        _write(d[f"{name}_key"], key)
    local = ["127.0.0.1", "localhost"]
    api_sans = local + ["10.96.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                        f"kubernetes.default.svc.{DNS_DOMAIN}"]
    leaves = [
        ("apiserver", ca_crt, ca_key, "kube-apiserver", (), True, False, api_sans),
        ("apiserver_etcd_client", etcd_ca_crt, etcd_ca_key, "kube-apiserver-etcd-client", (), False, True, ()),
        ("etcd_server", etcd_ca_crt, etcd_ca_key, "etcd", (), True, True, local),
        ("front_proxy_client", fp_ca_crt, fp_ca_key, "front-proxy-client", (), False, True, ()),
        ("admin", ca_crt, ca_key, "kubernetes-admin", ("system:masters",), False, True, ()),
        ("kcm", ca_crt, ca_key, "system:kube-controller-manager", (), False, True, ()),
        ("scheduler", ca_crt, ca_key, "system:kube-scheduler", (), False, True, ()),
        ("kcm_serving", ca_crt, ca_key, "kube-controller-manager", (), True, False, local),
        ("scheduler_serving", ca_crt, ca_key, "kube-scheduler", (), True, False, local),
        # kwok stands in for every simulated node's kubelet; it writes node and pod status of
        # all of them, which no single system:node identity may (NodeRestriction).
        ("kwok", ca_crt, ca_key, "gpushare:rehearsal:kwok", ("system:masters",), False, True, ()),
        ("kueue", ca_crt, ca_key, KUEUE_USER, (), False, True, ()),
        ("kueue_serving", ca_crt, ca_key, "kueue-webhook", (), True, False, local),
    ]
    for name, issuer_crt, issuer_key, cn, orgs, server, client, sans in leaves:
        crt, key = issue_cert(issuer_crt, issuer_key, cn, orgs, server=server, client=client, sans=sans)
        _write(d[f"{name}_crt"], crt, 0o644)
        _write(d[f"{name}_key"], key)
    sa = _new_key()
    _write(d["sa_key"], _key_pem(sa))
    _write(d["sa_pub"], sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    # Kueue's webhook server (controller-runtime) reads tls.crt/tls.key from webhook.certDir; its
    # metrics server reads the fixed /etc/kueue/metrics/certs (cmd/kueue/main.go, v0.19.2),
    # which the rehearsal provides inside Kueue's own mount namespace only.
    with open(d["kueue_serving_crt"], "rb") as handle:
        serving_crt = handle.read()
    with open(d["kueue_serving_key"], "rb") as handle:
        serving_key = handle.read()
    for base in (d["kueue_cert_dir"], os.path.join(d["kueue_etc_upper"], "kueue", "metrics", "certs")):
        _write(os.path.join(base, "tls.crt"), serving_crt, 0o644)
        _write(os.path.join(base, "tls.key"), serving_key)
    return {"ca": ca_crt}


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _wait(component: str, check, deadline: float, log_path: Optional[str], entry: Optional[Mapping[str, Any]] = None,
          what: str = "ready") -> None:
    last = ""
    while time.monotonic() < deadline:
        if entry is not None and not _alive(int(entry["pid"]), entry.get("start_time")):
            raise RehearsalError(f"{component} exited before it was {what}; log tail ({log_path}):\n{log_tail(log_path or '')}")
        try:
            ok, last = check()
        except (OSError, ssl.SSLError, http.client.HTTPException, RehearsalError, subprocess.SubprocessError) as exc:
            ok, last = False, str(exc)
        if ok:
            return
        time.sleep(0.25)
    raise RehearsalError(f"{component} not {what} in time (last answer: {last[-500:]}); log tail ({log_path}):\n"
                         f"{log_tail(log_path or '')}")


def _probe_objects() -> List[Tuple[str, str, Dict[str, Any]]]:
    """(description, API path, object) created with dryRun=All: each passes one Kueue webhook."""
    ns = "default"
    return [
        ("ResourceFlavor", f"/apis/{KUEUE_API}/resourceflavors",
         {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "rehearsal-probe"}}),
        ("ClusterQueue", f"/apis/{KUEUE_API}/clusterqueues",
         {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": "rehearsal-probe"},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
              {"name": "rehearsal-probe", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}}),
        ("LocalQueue", f"/apis/{KUEUE_API}/namespaces/{ns}/localqueues",
         {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": "rehearsal-probe", "namespace": ns},
          "spec": {"clusterQueue": "rehearsal-probe"}}),
        ("Cohort", f"/apis/{KUEUE_API}/cohorts",
         {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": "rehearsal-probe"}}),
        ("Job", f"/apis/batch/v1/namespaces/{ns}/jobs",
         {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "rehearsal-probe", "namespace": ns},
          "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
              {"name": "c", "image": "rehearsal.invalid/none", "resources": {"requests": {"cpu": "1m"}}}]}}}}),
    ]


def start(directory: str, kueue_configuration: Optional[Mapping[str, Any]] = None, bin_dir: Optional[str] = None,
          feature_gates: Optional[Mapping[str, bool]] = None, apiserver_args: Optional[Mapping[str, object]] = None,
          controller_manager_args: Optional[Mapping[str, object]] = None,
          scheduler_args: Optional[Mapping[str, object]] = None, kwok_stages: Optional[Sequence[str]] = None,
          timeout: float = 180.0, share_dir: Optional[str] = None) -> Dict[str, Any]:
    """Start the control plane in ``directory`` (made if missing) and wait until it is ready.

    ``bin_dir`` holds the binaries :func:`build` made (its sibling ``share`` the Kueue and kwok
    files). Ready means: etcd /health, kube-apiserver /readyz, controller manager and scheduler
    /healthz, kwok /healthz, Kueue /readyz, Kueue's CRDs established and one dry-run object
    through each Kueue webhook kind. On any failure everything started is stopped again and a
    :class:`RehearsalError` names the component with its log tail. A directory whose recorded
    processes still run is refused (stop it first). Returns the :func:`info` dict.
    """
    _require_crypto()
    directory = os.path.abspath(os.path.expanduser(directory))
    if not bin_dir:
        raise RehearsalError("bin_dir: the directory of the rehearsal binaries is required (see build())")
    bin_dir = os.path.abspath(os.path.expanduser(bin_dir))
    share_dir = os.path.abspath(os.path.expanduser(share_dir or os.path.join(os.path.dirname(bin_dir), "share")))
    missing = missing_binaries(bin_dir)
    if missing:
        raise RehearsalError(f"bin_dir {bin_dir}: missing {', '.join(missing)} (build them first: make rehearsal-binaries)")
    if any(running(directory).values()):
        raise RehearsalError(f"{directory}: a rehearsal recorded there is still running; stop it first")
    deadline = time.monotonic() + float(timeout)
    d = _layout(directory)
    for sub in ("etcd_data", "kueue_etc_work"):
        shutil.rmtree(d[sub], ignore_errors=True)
    shutil.rmtree(d["kueue_etc_upper"], ignore_errors=True)
    os.makedirs(directory, exist_ok=True)
    os.makedirs(d["etcd_data"], mode=0o700, exist_ok=True)
    os.makedirs(d["kueue_etc_work"], exist_ok=True)
    ports = free_ports(["etcd", "etcd_peer", "etcd_metrics", "apiserver", "controller_manager", "scheduler", "kwok",
                        "kueue_webhook", "kueue_health", "kueue_metrics"])
    server = f"https://127.0.0.1:{ports['apiserver']}"
    versions = _read_json(os.path.join(os.path.dirname(bin_dir), "build.json")) or {}
    state: Dict[str, Any] = {"dir": directory, "server": server, "ports": ports, "bin_dir": bin_dir, "share_dir": share_dir,
                             "processes": {}, "running": True, "versions": versions.get("versions", {})}
    _save_state(d["state"], state)
    pem = _make_pki(d)
    for path, name, user in ((d["kubeconfig"], "admin", "kubernetes-admin"), (d["kcm_kubeconfig"], "kcm", "system:kube-controller-manager"),
                             (d["scheduler_kubeconfig"], "scheduler", "system:kube-scheduler"),
                             (d["kwok_kubeconfig"], "kwok", "kwok"), (d["kueue_kubeconfig"], "kueue", "kueue")):
        _write(path, kubeconfig_text(server, pem["ca"], _read(d[f"{name}_crt"]), _read(d[f"{name}_key"]), user).encode())
    info = _info(d, state)
    try:
        _start_all(d, ports, state, info, bin_dir, share_dir, deadline, kueue_configuration, feature_gates or {},
                   apiserver_args, controller_manager_args, scheduler_args, kwok_stages)
    except BaseException:
        stop(directory, grace=3.0)
        raise
    state["ready_seconds"] = round(float(timeout) - (deadline - time.monotonic()), 1)
    _save_state(d["state"], state)
    return _info(d, state)


def _start_all(d, ports, state, info, bin_dir, share_dir, deadline, kueue_configuration, gates, apiserver_args,
               controller_manager_args, scheduler_args, kwok_stages) -> None:
    logs = d["logs"]

    def b(name: str) -> str:
        return os.path.join(bin_dir, name)

    def logp(name: str) -> str:
        return os.path.join(logs, f"{name}.log")

    _spawn("etcd", [b("etcd")] + etcd_flags(d, ports), logp("etcd"), state, d["state"])
    _wait("etcd", _ready_check("etcd", d, ports, info["server"]), deadline, logp("etcd"), state["processes"]["etcd"])

    _spawn("kube-apiserver", [b("kube-apiserver")] + apiserver_flags(d, ports, gates, apiserver_args), logp("kube-apiserver"),
           state, d["state"])
    _wait("kube-apiserver", _ready_check("kube-apiserver", d, ports, info["server"]), deadline, logp("kube-apiserver"),
          state["processes"]["kube-apiserver"])

    _spawn("kube-controller-manager", [b("kube-controller-manager")] + controller_manager_flags(d, ports, gates, controller_manager_args),
           logp("kube-controller-manager"), state, d["state"])
    _spawn("kube-scheduler", [b("kube-scheduler")] + scheduler_flags(d, ports, gates, scheduler_args), logp("kube-scheduler"),
           state, d["state"])

    # kwok: its default stages, read from the kwok module of the release built.
    stages = list(kwok_stages if kwok_stages is not None else DEFAULT_KWOK_STAGES)
    _write(d["kwok_config"], "\n---\n".join(json.dumps(doc) for doc in kwok_config_docs(share_dir, stages)).encode(), 0o644)
    _spawn("kwok", [b("kwok")] + kwok_flags(d, ports), logp("kwok"), state, d["state"])

    # Kueue: CRDs (with the conversion webhook on 127.0.0.1) and RBAC before the manager starts.
    webhook_url = f"https://127.0.0.1:{ports['kueue_webhook']}"
    ca_pem = _read(d["ca_crt"])
    crds = kueue_crds(share_dir, webhook_url, ca_pem)
    apply_objects(info, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": _kueue_namespace(kueue_configuration)}}]
                  + crds + kueue_rbac(share_dir, KUEUE_USER, _kueue_namespace(kueue_configuration)))
    for crd in crds:
        name = crd["metadata"]["name"]
        _wait(f"kube-apiserver (CRD {name} established)",
              lambda n=name: _condition(api_request(info, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{n}"),
                                        "Established"),
              deadline, logp("kube-apiserver"), state["processes"]["kube-apiserver"], what="serving")
    config = kueue_config(kueue_configuration, d, ports)
    _write(d["kueue_config"], (json.dumps(config, indent=2) + "\n").encode(), 0o644)
    _spawn("kueue", _kueue_argv(b("kueue"), d), logp("kueue"), state, d["state"])

    for name in ("kube-controller-manager", "kube-scheduler", "kwok", "kueue"):
        _wait(name, _ready_check(name, d, ports, info["server"]), deadline, logp(name), state["processes"][name])
    apply_objects(info, kueue_webhooks(share_dir, webhook_url, ca_pem))
    for kind, path, obj in _probe_objects():
        _wait(f"kueue ({kind} webhook)", lambda p=path, o=obj: _created(api_request(info, "POST", p + "?dryRun=All", o)),
              deadline, logp("kueue"), state["processes"]["kueue"], what="answering")
    # The default ServiceAccount appears once the serviceaccount controller runs: a sign that
    # the controllers (acting as their own service accounts) are working.
    _wait("kube-controller-manager (serviceaccount controller)",
          lambda: _ok(api_request(info, "GET", "/api/v1/namespaces/default/serviceaccounts/default")),
          deadline, logp("kube-controller-manager"), state["processes"]["kube-controller-manager"], what="working")


def _ready_check(name: str, d: Mapping[str, str], ports: Mapping[str, int], server: str):
    """What :func:`start` waits on for component ``name``: a callable answering (ready, last answer).

    etcd /health (with the API server's etcd client certificate), kube-apiserver /readyz (as the
    admin), the controller manager's and the scheduler's /healthz, kwok's /healthz, Kueue's /readyz.
    """
    if name == "etcd":
        context = _ssl_context(d["etcd_ca_crt"], d["apiserver_etcd_client_crt"], d["apiserver_etcd_client_key"])
        return lambda: _ok(http_get(f"https://127.0.0.1:{ports['etcd']}/health", context), '"health":"true"')
    if name == "kube-apiserver":
        context = _ssl_context(d["ca_crt"], d["admin_crt"], d["admin_key"])
        return lambda: _ok(http_get(f"{server}/readyz", context))
    if name in ("kube-controller-manager", "kube-scheduler"):
        port = ports["controller_manager" if name == "kube-controller-manager" else "scheduler"]
        context = _ssl_context(d["ca_crt"])
        return lambda: _ok(http_get(f"https://127.0.0.1:{port}/healthz", context))
    if name in ("kwok", "kueue"):
        url = f"http://127.0.0.1:{ports['kwok']}/healthz" if name == "kwok" else f"http://127.0.0.1:{ports['kueue_health']}/readyz"
        return lambda: _ok(http_get(url))
    raise RehearsalError(f"{name!r} is not a rehearsal component ({', '.join(START_ORDER)})")


def _kueue_namespace(configuration: Optional[Mapping[str, Any]]) -> str:
    return str((configuration or {}).get("namespace") or "kueue-system")


def _kueue_argv(binary: str, d: Mapping[str, str]) -> List[str]:
    """Kueue in a private mount namespace whose /etc is an overlay adding kueue/metrics/certs.

    Kueue v0.19.2 reads its metrics certificate from the fixed /etc/kueue/metrics/certs when
    internal certificate management is off (cmd/kueue/main.go); the overlay shows the
    rehearsal's certificate there to Kueue alone and changes nothing on the machine. As root a
    mount namespace suffices; otherwise a user namespace maps the caller to root.
    """
    mount = (f"mount -t overlay overlay -o lowerdir=/etc,upperdir={d['kueue_etc_upper']},workdir={d['kueue_etc_work']} /etc"
             f' && exec "$0" --config={d["kueue_config"]} --kubeconfig={d["kueue_kubeconfig"]} --zap-log-level=info')
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    return prefix + ["sh", "-c", mount, binary]


def _ok(answer: Tuple[int, Any], needle: Optional[str] = None) -> Tuple[bool, str]:
    status, body = answer
    text = body if isinstance(body, str) else json.dumps(body)
    return status == 200 and (needle is None or needle in text.replace(" ", "")), f"HTTP {status}: {text[:300]}"


def _condition(answer: Tuple[int, Any], kind: str) -> Tuple[bool, str]:
    status, body = answer
    conditions = (body.get("status") or {}).get("conditions") or [] if isinstance(body, dict) else []
    ok = status == 200 and any(c.get("type") == kind and c.get("status") == "True" for c in conditions)
    return ok, f"HTTP {status}: conditions {conditions}"


def _created(answer: Tuple[int, Any]) -> Tuple[bool, str]:
    status, body = answer
    text = body if isinstance(body, str) else json.dumps(body)
    return status in (200, 201), f"HTTP {status}: {text[:500]}"


def _info(d: Mapping[str, str], state: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "dir": d["dir"], "kubeconfig": d["kubeconfig"], "server": state["server"], "bin_dir": state["bin_dir"],
        "share_dir": state["share_dir"], "ports": dict(state["ports"]), "versions": dict(state.get("versions") or {}),
        "pids": {name: entry["pid"] for name, entry in state["processes"].items()},
        "logs": {name: entry["log"] for name, entry in state["processes"].items()},
        "pki": {"ca_crt": d["ca_crt"], "ca_key": d["ca_key"], "admin_crt": d["admin_crt"], "admin_key": d["admin_key"],
                "etcd_ca_crt": d["etcd_ca_crt"], "etcd_client_crt": d["apiserver_etcd_client_crt"],
                "etcd_client_key": d["apiserver_etcd_client_key"]},
        "commands": {name: list(entry.get("argv") or []) for name, entry in state["processes"].items()},
        "kwok_node_annotation": {KWOK_ANNOTATION: KWOK_ANNOTATION_VALUE},
        "kueue_config": d["kueue_config"], "ready_seconds": state.get("ready_seconds"),
    }


def info(directory: str) -> Dict[str, Any]:
    """The :func:`start` result of the rehearsal recorded in ``directory``."""
    directory = os.path.abspath(os.path.expanduser(directory))
    state = _read_json(os.path.join(directory, "state.json"))
    if not state:
        raise RehearsalError(f"{directory}: no rehearsal recorded there")
    return _info(_layout(directory), state)


def user_kubeconfig(directory: str, user: str, groups: Sequence[str] = (), path: Optional[str] = None) -> str:
    """Write a kubeconfig for ``user`` in ``groups`` with a client certificate signed by the
    rehearsal CA (as the CSR signer would issue it); RBAC then applies to that user for real.
    Returns the kubeconfig path (default ``<dir>/users/<user>.kubeconfig``)."""
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9:._@-]*$", user or ""):
        raise RehearsalError(f"user_kubeconfig: {user!r} is not a user name")
    if "system:masters" in groups:
        raise RehearsalError("user_kubeconfig: a team user never gets system:masters")
    found = info(directory)
    d = _layout(found["dir"])
    crt, key = issue_cert(_read(d["ca_crt"]), _read(d["ca_key"]), user, list(groups), client=True)
    path = path or os.path.join(d["dir"], "users", f"{user.replace(':', '_')}.kubeconfig")
    safe = user.replace(":", "_")
    _write(os.path.join(d["dir"], "users", f"{safe}.crt"), crt, 0o644)
    _write(os.path.join(d["dir"], "users", f"{safe}.key"), key)
    _write(path, kubeconfig_text(found["server"], _read(d["ca_crt"]), crt, key, user).encode())
    return path


def user_cert_files(directory: str, user: str) -> Tuple[str, str]:
    """(crt, key) files :func:`user_kubeconfig` wrote for ``user`` (for :func:`api_request`)."""
    safe = user.replace(":", "_")
    base = os.path.join(os.path.abspath(os.path.expanduser(directory)), "users")
    return os.path.join(base, f"{safe}.crt"), os.path.join(base, f"{safe}.key")
