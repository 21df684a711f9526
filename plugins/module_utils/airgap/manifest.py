# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an air-gapped site must mirror for the collection's pinned versions.

``build_manifest(settings)`` returns container images with tags, Helm charts with
versions, OS package repositories, snaps and files, for one distribution (microk8s or
kubeadm), backend (dra or device_plugin) and set of GPU node operating systems. The
image table below is compiled from the pinned charts' default values (GPU Operator
v26.7.0, dra-driver-nvidia-gpu 0.4.1, Kueue 0.19.2, kube-prometheus-stack 88.5.3) and
from what the GPU Operator deploys later (the driver image per node OS). Unit tests
cross-check it against those charts' values.yaml files; nothing is read at run time.

Sub-chart images are listed when the sub-chart's own source confirms the tag
(kube-state-metrics, node exporter). Entries whose tag no available source confirms (the
Grafana sub-chart's defaults, images chosen by kubeadm for an exact patch release, images
a CNI operator or MicroK8s pulls) are listed under ``unresolved`` with the command that
resolves them, never guessed. Output order is stable: the same settings give the same
manifest byte for byte.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.gpushare.cluster.plugins.module_utils.render import local_path
from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as mirror_lib
from ansible_collections.gpushare.cluster.plugins.module_utils._common import versions
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError

MANIFEST_VERSION = 1

# Pinned chart versions (the pins of _common/versions.py) and where upstream publishes them.
_PINS = versions.CHART_VERSIONS
CHARTS: Dict[str, Dict[str, str]] = {
    "gpu-operator": {"version": _PINS["gpu_operator_version"], "repository": "https://helm.ngc.nvidia.com/nvidia"},
    "dra-driver-nvidia-gpu": {"version": _PINS["dra_driver_version"].lstrip("v"),
                              "repository": "oci://registry.k8s.io/dra-driver-nvidia/charts"},
    "kueue": {"version": _PINS["kueue_version"], "repository": "oci://registry.k8s.io/kueue/charts"},
    "kube-prometheus-stack": {"version": _PINS["monitoring_version"],
                              "repository": "https://prometheus-community.github.io/helm-charts"},
    "tigera-operator": {"version": _PINS["kubeadm_calico_chart_version"], "repository": "https://docs.tigera.io/calico/charts"},
    "cilium": {"version": _PINS["kubeadm_cilium_chart_version"], "repository": "https://helm.cilium.io/"},
}

GPU_OPERATOR_DRIVER_VERSION = "595.91.07"
HELM_VERSION = versions.CHART_VERSIONS["kubernetes_common_helm_version"]
KUBE_VIP_VERSION = "v1.0.0"

# (chart, values path in that chart's values.yaml, image, when). ``when`` names the
# condition under which the image is pulled (see ``_wanted``). Values paths let the tests
# compare each row with the pinned values.yaml; ``None`` marks rows that come from a
# sub-chart or from the chart's packaging, explained in ``source``.
ImageRow = Tuple[str, Optional[str], str, str, str]
IMAGE_TABLE: Tuple[ImageRow, ...] = (
    # GPU Operator v26.7.0: values.yaml at the tag; "version" unset = chart appVersion.
    ("gpu-operator", "operator", "nvcr.io/nvidia/gpu-operator:v26.7.0", "always", "values"),
    ("gpu-operator", "validator", "nvcr.io/nvidia/gpu-operator:v26.7.0", "always", "values"),
    ("gpu-operator", "driver.manager", "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0", "driver", "values"),
    ("gpu-operator", "toolkit", "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0", "always", "values"),
    ("gpu-operator", "devicePlugin", "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "device_plugin", "values"),
    ("gpu-operator", "gfd", "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "always", "values"),
    ("gpu-operator", "dcgm", "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04", "dcgm", "values"),
    ("gpu-operator", "dcgmExporter", "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless", "always", "values"),
    ("gpu-operator", "migManager", "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0", "always", "values"),
    ("gpu-operator", None, "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", "always",
     "node-feature-discovery sub-chart 0.19.0 (Chart.yaml dependency), image tag = its appVersion"),
    # Standalone DRA driver 0.4.1: tag "" = "v" + appVersion.
    ("dra-driver-nvidia-gpu", "image",
     "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1", "dra", "values"),
    # Kueue 0.19.2: the git values name a staging image; the published OCI chart is
    # packaged with the release image (hack/helm-chart-package.sh), which is what installs.
    ("kueue", "controllerManager.manager.image", "registry.k8s.io/kueue/kueue:v0.19.2", "always",
     "published chart (packaging rewrites the staging image to the release image)"),
    # kube-prometheus-stack 88.5.3: tag "" = appVersion v0.93.1 (Prometheus Operator).
    ("kube-prometheus-stack", "prometheusOperator.image",
     "quay.io/prometheus-operator/prometheus-operator:v0.93.1", "monitoring", "values"),
    ("kube-prometheus-stack", "prometheusOperator.prometheusConfigReloader.image",
     "quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1", "monitoring", "values"),
    ("kube-prometheus-stack", "prometheusOperator.admissionWebhooks.patch.image",
     "ghcr.io/jkroepke/kube-webhook-certgen:1.8.7", "monitoring", "values"),
    ("kube-prometheus-stack", "prometheus.prometheusSpec.image",
     "quay.io/prometheus/prometheus:v3.14.0-distroless", "monitoring", "values"),
    ("kube-prometheus-stack", "alertmanager.alertmanagerSpec.image",
     "quay.io/prometheus/alertmanager:v0.34.0", "monitoring", "values"),
    ("kube-prometheus-stack", None, "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.20.0", "monitoring",
     "kube-state-metrics sub-chart 8.4.0, appVersion 2.20.0"),
    # prometheus-node-exporter sub-chart 4.56.1 (node_exporter 1.12.1), with
    # prometheus-node-exporter.image.distroless: true set by kube-prometheus-stack 88.5.3.
    # The tag the sub-chart builds: prometheus-community/helm-charts
    # charts/prometheus-node-exporter/templates/_helpers.tpl @ a3ac4a2ba76fe9146ad44d6b89255b154092ad7c,
    # define "prometheus-node-exporter.image": (image.tag or "v" + .Chart.AppVersion) followed by
    # (ternary "-distroless" "" .Values.image.distroless). The same commit's
    # unittests/daemonset_image_semver_test.yaml expects the default image
    # quay.io/prometheus/node-exporter:v1.12.1, i.e. appVersion 1.12.1, the node_exporter
    # release 4.56.1 moved to (release notes of tag prometheus-node-exporter-4.56.1). The
    # Chart.yaml of that commit is not stored, so the chart version is matched through its
    # appVersion; the distroless switch predates 4.56.1 (kube-prometheus-stack only turned it
    # on after the sub-chart gained it, and 88.5.3 still depends on 4.56.1).
    ("kube-prometheus-stack", None, "quay.io/prometheus/node-exporter:v1.12.1-distroless", "monitoring",
     "prometheus-node-exporter sub-chart 4.56.1 (appVersion 1.12.1) with image.distroless: true: tag "
     "v<appVersion>-distroless (charts/prometheus-node-exporter/templates/_helpers.tpl)"),
)

# kube-prometheus-stack 88.5.3's dependencies (its Chart.yaml, as recorded with the pinned
# values); unit tests compare them with that record. Each sub-chart picks its images.
SUBCHARTS: Dict[str, Dict[str, str]] = {
    "grafana": {"version": "12.11.1", "repository": "https://grafana-community.github.io/helm-charts",
                "condition": "grafana.enabled"},
    "kube-state-metrics": {"version": "8.4.0", "repository": "https://prometheus-community.github.io/helm-charts",
                           "condition": "kubeStateMetrics.enabled"},
    "prometheus-node-exporter": {"version": "4.56.1",
                                 "repository": "https://prometheus-community.github.io/helm-charts",
                                 "condition": "nodeExporter.enabled"},
    "prometheus-windows-exporter": {"version": "0.12.*",
                                    "repository": "https://prometheus-community.github.io/helm-charts",
                                    "condition": "windowsMonitoring.enabled"},
}

_RENDER = ("`helm template monitoring kube-prometheus-stack-88.5.3.tgz | grep 'image:'` on the pulled chart, "
           "then pin the tag with gpushare_mirror_extra_images")

# Images a chart pulls whose tag its pinned values do not fix: listed, not guessed. An
# entry disappears from ``unresolved`` once extra_images pins a tag of its repository.
UNRESOLVED_TABLE: Tuple[Tuple[str, str, str, str], ...] = (
    # grafana 12.11.1 (grafana-community/helm-charts): the Grafana image tag follows the chart's
    # appVersion (and, in some chart versions, a "-distroless" suffix). No Chart.yaml or
    # values.yaml of 12.11.1 was found: the stored charts/grafana/Chart.yaml versions are
    # 11.1.0 (01096d92db7c1239d94374c14406e6b753b36f43), 11.1.7
    # (12e12d954e7314bd394564c03dca2f6b9f449963) and 13.1.0
    # (039681200c2e104c80d96549cce1cf94813a2f04, whose values.yaml sets
    # tag: "{{ .Chart.AppVersion }}-distroless"); grafana/helm-charts stopped at 8.x-10.x.
    ("kube-prometheus-stack", "docker.io/grafana/grafana", "monitoring",
     "grafana sub-chart 12.11.1, tag = that chart's appVersion, which the collection could not confirm "
     "(neighbouring chart versions also differ in the tag form): " + _RENDER),
    # The dashboard/datasource sidecar (grafana.sidecar.*.enabled: true in the pinned values)
    # takes its tag from the grafana 12.11.1 values.yaml, not found either (see above).
    ("kube-prometheus-stack", "quay.io/kiwigrid/k8s-sidecar", "monitoring",
     "grafana sub-chart 12.11.1's sidecar.image default, which the collection could not confirm: " + _RENDER),
)

# Images deployed only on request; named so users see why they are absent.
NOT_MIRRORED = (
    "gpu-operator sandbox workloads (vgpuDeviceManager, sandboxDevicePlugin, kataSandboxDevicePlugin, "
    "ccManager, vfioManager): sandboxWorkloads.enabled is false",
    "gpu-operator gds, gdrcopy, nodeStatusExporter, vgpuManager: disabled in the chart defaults",
    "gpu-operator draDriver (nvcr.io/nvidia/dra-driver-nvidia-gpu): the collection installs the standalone "
    "DRA driver chart instead",
    "kube-prometheus-stack thanos, busybox (crds.upgradeJob), admission-webhook deployment: disabled by default",
    "kube-prometheus-stack prometheus-windows-exporter sub-chart: windowsMonitoring.enabled is false",
    "kueue kueueviz-backend/frontend: enableKueueViz is false",
)

KUBEADM_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")

PACKAGE_REPOSITORIES: Dict[str, Dict[str, Dict[str, str]]] = {
    "apt": {
        "ubuntu": {"upstream": "http://archive.ubuntu.com/ubuntu",
                   "purpose": "Ubuntu archive (and security.ubuntu.com): base packages, kernel headers"},
        "kubernetes": {"upstream": "https://pkgs.k8s.io/core:/stable:/v{minor}/deb/",
                       "purpose": "kubelet, kubeadm, kubectl, cri-tools, kubernetes-cni"},
        "nvidia": {"upstream": "https://nvidia.github.io/libnvidia-container/stable/deb/",
                   "purpose": "NVIDIA Container Toolkit (and the CUDA repository of developer.download.nvidia.com "
                              "when drivers are installed on the host)"},
        "docker": {"upstream": "https://download.docker.com/linux/ubuntu",
                   "purpose": "containerd.io when containerd comes from Docker's repository"},
    },
    "dnf": {
        "rocky": {"upstream": "https://dl.rockylinux.org/pub/rocky",
                  "purpose": "Rocky Linux BaseOS/AppStream/CRB, kernel-devel"},
        "kubernetes": {"upstream": "https://pkgs.k8s.io/core:/stable:/v{minor}/rpm/",
                       "purpose": "kubelet, kubeadm, kubectl, cri-tools, kubernetes-cni"},
        "nvidia": {"upstream": "https://nvidia.github.io/libnvidia-container/stable/rpm",
                   "purpose": "NVIDIA Container Toolkit (and the CUDA repository of developer.download.nvidia.com "
                              "when drivers are installed on the host)"},
        "docker": {"upstream": "https://download.docker.com/linux/rhel",
                   "purpose": "containerd.io when containerd comes from Docker's repository"},
    },
}

DISTRIBUTIONS = versions.DISTRIBUTIONS
BACKENDS = versions.BACKENDS
CNIS = ("calico", "cilium", "none")
ARCHITECTURES = ("amd64", "arm64")


class ManifestError(GpushareError):
    """The manifest settings are wrong or ask for versions without an image table."""


def _minor(version: str) -> str:
    parsed = versions.parse_kubernetes_version(version)
    if parsed is None:
        raise ManifestError(f"kubernetes_version: {version!r} is not a Kubernetes version such as 1.35 or 1.35.2")
    return f"{parsed.major}.{parsed.minor}"


def _check_versions(settings: Mapping[str, Any], errors: List[str]) -> None:
    pinned = {"gpu_operator_version": CHARTS["gpu-operator"]["version"],
              "dra_driver_version": CHARTS["dra-driver-nvidia-gpu"]["version"],
              "kueue_version": CHARTS["kueue"]["version"],
              "kube_prometheus_stack_version": CHARTS["kube-prometheus-stack"]["version"]}
    for key, version in pinned.items():
        asked = settings.get(key)
        if asked and str(asked).lstrip("v") != version.lstrip("v"):
            errors.append(f"{key}: {asked!r} has no image table in this collection (pinned: {version}); "
                          f"list its images with `helm template` and pass them as extra_images")


def _node_os_tags(settings: Mapping[str, Any], errors: List[str]) -> List[Dict[str, Any]]:
    """GPU nodes as ``[{host, os_tag, kernel}]`` from ``nodes`` or ``driver_os``."""
    result: List[Dict[str, Any]] = []
    for node in settings.get("nodes") or []:
        host = node.get("host")
        try:
            os_tag = node.get("os_tag") or mirror_lib.driver_os_tag(node.get("distribution", ""),
                                                                    node.get("version", ""), host)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        result.append({"host": host, "os_tag": os_tag, "kernel": node.get("kernel")})
    for os_tag in settings.get("driver_os") or []:
        result.append({"host": None, "os_tag": str(os_tag), "kernel": None})
    return result


def _wanted(when: str, settings: Mapping[str, Any]) -> bool:
    return {
        "always": True,
        "driver": bool(settings.get("driver_enabled", True)),
        "device_plugin": settings.get("backend") == "device_plugin",
        "dra": settings.get("backend") == "dra",
        "dcgm": bool(settings.get("dcgm_enabled", False)),
        "monitoring": bool(settings.get("monitoring_enabled", True)),
    }[when]


def _add_image(images: Dict[str, Dict[str, Any]], reference: str, component: str, purpose: str,
               source: str, mirrors: Mapping[str, Any]) -> None:
    canonical = str(mirror_lib.parse_image(reference))
    entry = images.setdefault(canonical, {"image": canonical, "mirror": mirror_lib.mirror_image(canonical, mirrors),
                                          "components": [], "used_for": [], "source": source})
    if component not in entry["components"]:
        entry["components"].append(component)
        entry["components"].sort()
    if purpose not in entry["used_for"]:
        entry["used_for"].append(purpose)
        entry["used_for"].sort()


def build_manifest(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """The mirror manifest for ``settings``.

    settings: ``distribution`` (microk8s|kubeadm), ``backend`` (dra|device_plugin),
    ``kubernetes_version`` (``1.35`` or exact ``1.35.2``), ``nodes`` (GPU nodes:
    ``[{host, distribution, version, kernel?}]``) and/or ``driver_os`` (OS tags such as
    ``ubuntu24.04``), ``driver_enabled`` (operator installs the driver, default true),
    ``driver_version``, ``driver_precompiled``, ``dcgm_enabled``, ``monitoring_enabled``,
    ``cni`` (kubeadm: calico|cilium|none), ``kube_vip`` (bool), ``os_families``
    (``["apt", "dnf"]`` subset; default from ``nodes``), ``architectures``,
    ``extra_images`` (tagged references; one pins an ``unresolved`` repository),
    ``local_path_provisioner`` (the monitoring volumes' provisioner may be installed, default true),
    ``mirrors`` (``gpushare_mirrors``), and optional ``*_version`` keys that must equal the pinned ones.
    Raises ``ManifestError`` listing every problem.
    """
    errors: List[str] = []
    distribution, backend, cni, architectures = _check_choices(settings, errors)
    _check_versions(settings, errors)
    mirrors = settings.get("mirrors") or {}
    errors += mirror_lib.mirror_errors(mirrors)
    try:
        kubernetes_version = str(settings.get("kubernetes_version", "1.35"))
        minor = _minor(kubernetes_version)
    except ManifestError as exc:
        errors.append(str(exc))
        minor, kubernetes_version = "", ""
    nodes = _node_os_tags(settings, errors)
    driver_enabled = bool(settings.get("driver_enabled", True))
    if driver_enabled and not nodes:
        errors.append("nodes/driver_os: the GPU Operator installs the driver, so the GPU nodes' operating "
                      "systems are needed to name the driver images (e.g. driver_os: [ubuntu24.04])")
    _raise_if(errors)
    mirrors = mirror_lib.normalize_mirrors(mirrors)
    flags = dict(settings)
    flags.update({"backend": backend, "distribution": distribution})

    images: Dict[str, Dict[str, Any]] = {}
    warnings: List[str] = []
    _add_chart_images(images, settings, flags, mirrors)
    if driver_enabled:
        warnings += _add_driver_images(images, settings, nodes, mirrors, errors)
    unresolved: List[Dict[str, str]] = []
    for chart, repository, when, reason in UNRESOLVED_TABLE:
        if _wanted(when, flags):
            unresolved.append({"component": chart, "repository": repository,
                               "mirror": mirror_lib.mirror_repository(repository, mirrors), "resolve": reason})
    if distribution == "kubeadm":
        unresolved += _kubeadm_images(images, settings, kubernetes_version, minor, cni, mirrors)
    else:
        unresolved.append(_microk8s_images(minor))
    _add_extra_images(images, settings, mirrors, errors)
    _raise_if(errors)
    # A repository pinned through extra_images is resolved: it is listed with its tag.
    pinned = {mirror_lib.parse_image(key).name for key in images}
    unresolved = [entry for entry in unresolved
                  if entry["repository"].startswith("(")
                  or mirror_lib.parse_image(entry["repository"]).name not in pinned]

    ordered_images = [images[key] for key in sorted(images)]
    return {
        "version": MANIFEST_VERSION,
        "settings": {"distribution": distribution, "backend": backend, "kubernetes_version": kubernetes_version,
                     "driver_os": sorted({node["os_tag"] for node in nodes}), "architectures": architectures},
        "images": ordered_images,
        "unresolved": sorted(unresolved, key=lambda item: (item["component"], item["repository"])),
        "charts": _charts(settings, distribution, backend, cni, mirrors),
        "packages": _packages(settings, distribution, minor, nodes, mirrors),
        "snaps": _snaps(distribution, minor),
        "files": _files(architectures, mirrors),
        "not_mirrored": list(NOT_MIRRORED),
        "warnings": sorted(set(warnings)),
    }


def _raise_if(errors: List[str]) -> None:
    if errors:
        raise ManifestError("cannot build the mirror manifest:\n- " + "\n- ".join(errors))


def _check_choices(settings: Mapping[str, Any], errors: List[str]) -> Tuple[str, str, str, List[str]]:
    """distribution, backend, cni and architectures of ``settings``; unknown ones go to ``errors``."""
    distribution = settings.get("distribution", "microk8s")
    backend = settings.get("backend", "dra")
    if distribution not in DISTRIBUTIONS:
        errors.append(f"distribution: {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
    if backend not in BACKENDS:
        errors.append(f"backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    cni = settings.get("cni", "calico")
    if distribution == "kubeadm" and cni not in CNIS:
        errors.append(f"cni: {cni!r} is not one of {', '.join(CNIS)}")
    architectures = list(settings.get("architectures") or ["amd64"])
    for arch in architectures:
        if arch not in ARCHITECTURES:
            errors.append(f"architectures: {arch!r} is not one of {', '.join(ARCHITECTURES)}")
    return distribution, backend, cni, architectures


def _add_chart_images(images: Dict[str, Dict[str, Any]], settings: Mapping[str, Any], flags: Mapping[str, Any],
                      mirrors: Mapping[str, Any]) -> None:
    """The images the pinned charts' values name, and the monitoring volumes' provisioner."""
    for chart, path, reference, when, source in IMAGE_TABLE:
        if _wanted(when, flags):
            _add_image(images, reference, chart, path or "sub-chart", source if source != "values" else
                       f"{chart} {CHARTS[chart]['version']} values.yaml", mirrors)

    # The monitoring volumes' provisioner, unless monitoring_storage_provisioner is none
    # (local_path_provisioner false); plugins/module_utils/render/local_path.py pins both images.
    if settings.get("monitoring_enabled", True) and settings.get("local_path_provisioner", True):
        for reference in local_path.images():
            _add_image(images, reference, "local-path-provisioner", "monitoring volumes",
                       f"local-path-provisioner {local_path.VERSION} (plugins/module_utils/render/local_path.py)",
                       mirrors)


def _add_driver_images(images: Dict[str, Dict[str, Any]], settings: Mapping[str, Any], nodes: List[Dict[str, Any]],
                       mirrors: Mapping[str, Any], errors: List[str]) -> List[str]:
    """The GPU Operator's driver image of each GPU node's OS; returns the warnings."""
    warnings: List[str] = []
    version = str(settings.get("driver_version") or GPU_OPERATOR_DRIVER_VERSION)
    precompiled = bool(settings.get("driver_precompiled", False))
    for node in nodes:
        try:
            found = mirror_lib.driver_image(version, node["os_tag"], precompiled, node["kernel"],
                                            host=node["host"])
        except ValueError as exc:
            errors.append(str(exc))
            continue
        warnings += found["warnings"]
        _add_image(images, found["image"], "gpu-operator",
                   f"driver ({node['os_tag']}{', precompiled' if precompiled else ''})",
                   "GPU Operator driver image naming for the node OS", mirrors)
    return warnings


def _kubeadm_images(images: Dict[str, Dict[str, Any]], settings: Mapping[str, Any], kubernetes_version: str,
                    minor: str, cni: str, mirrors: Mapping[str, Any]) -> List[Dict[str, str]]:
    """kubeadm's control-plane images (listed when the version is exact) and kube-vip; returns what stays unresolved."""
    unresolved: List[Dict[str, str]] = []
    exact = kubernetes_version.lstrip("v")
    if exact.count(".") == 2:
        for name in KUBEADM_IMAGES:
            _add_image(images, f"registry.k8s.io/{name}:v{exact}", "kubeadm", "control plane",
                       "kubeadm, exact Kubernetes version", mirrors)
    else:
        for name in KUBEADM_IMAGES:
            unresolved.append({"component": "kubeadm", "repository": f"registry.k8s.io/{name}",
                               "mirror": mirror_lib.mirror_repository(f"registry.k8s.io/{name}", mirrors),
                               "resolve": f"tag = the exact patch release of {minor}; set "
                                          f"gpushare_kubernetes_version to it (e.g. \"{minor}.2\"): the "
                                          f"kubeadm role then installs that release and these tags are listed"})
    # etcd, CoreDNS and pause come from kubeadm's cmd/kubeadm/app/constants/constants.go
    # (DefaultEtcdVersion/SupportedEtcdVersion, CoreDNSVersion, PauseVersion) of the exact
    # kubeadm release. Those constants move within a minor: etcd's own guide for bumping
    # etcd in Kubernetes (etcd-io/etcd) changes SupportedEtcdVersion for 1.34, 1.35 and 1.36
    # together, from 3.6.8-0 to 3.6.9-0, so a minor alone does not name the tag. The only
    # stored constants.go of kubernetes/kubernetes (3301161c36ac9c27854a7b4636139d4ebde43e72)
    # is of the 1.31 line (SupportedEtcdVersion 29-31, etcd 3.5.15-0, CoreDNS v1.11.3, pause
    # 3.10), and build/dependencies.yaml (991b78f93068755236e3eeff83205f048f3d51b8) of the
    # 1.33 line: neither is release-1.34/1.35/1.36, so no tag is taken from them.
    for name in ("etcd", "coredns/coredns", "pause"):
        unresolved.append({"component": "kubeadm", "repository": f"registry.k8s.io/{name}",
                           "mirror": mirror_lib.mirror_repository(f"registry.k8s.io/{name}", mirrors),
                           "resolve": "`kubeadm config images list --kubernetes-version <version>` on a "
                                      "connected machine (kubeadm's constants of that exact release "
                                      "name the tag; they change between patch releases)"})
    if settings.get("kube_vip"):
        _add_image(images, f"ghcr.io/kube-vip/kube-vip:{settings.get('kube_vip_version', KUBE_VIP_VERSION)}",
                   "kubeadm", "control-plane VIP", "kubeadm role default", mirrors)
    # The CNI chart's operator picks its images. Not found for the pinned charts: the stored
    # projectcalico/calico charts/tigera-operator/values.yaml
    # (fb5809a90ae8581f09b955a3f5873f2063a47005) and tigera/operator config/calico_versions.yml
    # (02b8311d5df046df694e8859a5317e0f08fc0cdb) are master ("version: master"), not
    # v3.32.0; cilium/cilium install/kubernetes/cilium/values.yaml
    # (c547745f2c39e349a250f3952591af147d31245d) is main (quay.io/cilium/cilium-ci:latest) and
    # the stored Chart.yaml is 1.8.0-rc3, not 1.18.0.
    if cni != "none":
        unresolved.append({"component": cni, "repository": "(CNI images)", "mirror": "",
                           "resolve": f"the {cni} chart and operator choose them; `helm template` the pulled "
                                      f"chart and list the operator's images for {CHARTS['tigera-operator' if cni == 'calico' else 'cilium']['version']}"})
    return unresolved


def _microk8s_images(minor: str) -> Dict[str, str]:
    """MicroK8s brings its add-on images itself: what to look up for the channel."""
    # canonical/microk8s keeps the list per release branch in build-scripts/images.txt
    # (written by build-scripts/update-images.sh from a running snap of that channel).
    # The only stored copy (d787b597d33da2b62fe992df431e3f790df08d79) is not the 1.35
    # branch (it names Calico v3.28.1, CoreDNS 1.10.1, pause 3.10), so no tag for 1.35 is
    # taken from it.
    return {"component": "microk8s", "repository": "(MicroK8s add-on images: calico, coredns, pause)",
            "mirror": "",
            "resolve": f"build-scripts/images.txt on the {minor} branch of canonical/microk8s lists "
                       "them; or `microk8s ctr images ls` on a connected node of the same channel, "
                       "or `microk8s images export-local` there and `microk8s images import` offline"}


def _add_extra_images(images: Dict[str, Dict[str, Any]], settings: Mapping[str, Any], mirrors: Mapping[str, Any],
                      errors: List[str]) -> None:
    """The inventory's extra_images, each with a tag or digest."""
    for index, reference in enumerate(settings.get("extra_images") or []):
        try:
            parsed = mirror_lib.parse_image(str(reference))
        except ValueError as exc:
            errors.append(f"extra_images[{index}]: {exc}")
            continue
        if not (parsed.tag or parsed.digest):
            errors.append(f"extra_images[{index}]: {reference!r} has no tag or digest; the mirror needs the exact "
                          f"image (e.g. {parsed.name}:<tag>)")
            continue
        _add_image(images, str(reference), "extra", "extra_images", "inventory", mirrors)


def _charts(settings: Mapping[str, Any], distribution: str, backend: str, cni: str,
            mirrors: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The pinned charts the settings install."""
    charts = []
    wanted_charts = ["gpu-operator", "kueue"]
    if backend == "dra":
        wanted_charts.append("dra-driver-nvidia-gpu")
    if settings.get("monitoring_enabled", True):
        wanted_charts.append("kube-prometheus-stack")
    if distribution == "kubeadm" and cni != "none":
        wanted_charts.append("tigera-operator" if cni == "calico" else "cilium")
    for name in sorted(wanted_charts):
        chart = CHARTS[name]
        location = mirror_lib.chart_location(name, chart["version"], chart["repository"], mirrors)
        charts.append({"name": name, "version": chart["version"], "repository": chart["repository"],
                       "archive": f"{name}-{chart['version']}.tgz", "mirror": location["chart_ref"]})
    return charts


def _packages(settings: Mapping[str, Any], distribution: str, minor: str, nodes: List[Dict[str, Any]],
              mirrors: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The package repositories of each OS family of the nodes."""
    families = settings.get("os_families") or sorted(
        {"dnf" if node["os_tag"].startswith(("rocky", "rhel")) else "apt" for node in nodes} or {"apt"})
    packages = []
    for family in families:
        for name, repo in sorted(PACKAGE_REPOSITORIES[family].items()):
            if name == "kubernetes" and distribution != "kubeadm":
                continue
            upstream = repo["upstream"].format(minor=minor)
            packages.append({"manager": family, "name": name, "upstream": upstream, "purpose": repo["purpose"],
                             "mirror": mirror_lib.repository_url(family, name, upstream, mirrors)})
    return packages


def _snaps(distribution: str, minor: str) -> List[Dict[str, Any]]:
    """The MicroK8s snap of the minor's channel."""
    snaps = []
    if distribution == "microk8s":
        snaps.append({"name": "microk8s", "channel": f"{minor}/stable", "classic": True,
                      "note": "download with `snap download microk8s --channel=<channel>` (gives .snap and "
                              ".assert) together with its base snap (`snap info --verbose microk8s`) and snapd"})
    return snaps


def _files(architectures: List[str], mirrors: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Helm's release archive per architecture."""
    files = []
    for arch in architectures:
        name = f"helm-{HELM_VERSION}-linux-{arch}.tar.gz"
        upstream = f"https://get.helm.sh/{name}"
        files.append({"name": name, "upstream": upstream, "checksum_url": f"{upstream}.sha256sum",
                      "mirror": mirror_lib.file_url(upstream, mirrors)})
    return files


def image_list(manifest: Mapping[str, Any]) -> List[str]:
    """The upstream image references, one per line in the plain list file."""
    return [entry["image"] for entry in manifest.get("images", [])]


# --- images named by rendered values and manifests ------------------------------------

def _image_from_mapping(node: Mapping[str, Any]) -> Optional[str]:
    """An image written as separate fields, in the shapes the pinned charts use."""
    repository = node.get("repository")
    if not isinstance(repository, str) or not repository:
        return None
    tag = node.get("tag") or node.get("version")
    if isinstance(node.get("image"), str) and node.get("image") and "/" not in node["image"]:
        repository = f"{repository.rstrip('/')}/{node['image']}"      # GPU Operator style
    elif isinstance(node.get("registry"), str) and node.get("registry"):
        repository = f"{node['registry'].rstrip('/')}/{repository}"    # kube-prometheus-stack style
    return f"{repository}:{tag}" if tag else repository


def images_in(document: Any) -> List[str]:
    """Every image a values file or Kubernetes object names, sorted and unique.

    Finds ``image: <reference>`` strings (containers, CRs) and the split forms of chart
    values (``repository`` + ``image`` + ``version``; ``registry`` + ``repository`` +
    ``tag``; ``repository`` + ``tag``). A split form without a tag is returned as a
    bare repository: its tag comes from the chart.
    """
    found = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            split = _image_from_mapping(node)
            if split:
                found.add(split)
            for key, value in node.items():
                if key == "image" and isinstance(value, str) and value and ("/" in value or ":" in value):
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    walk(document)
    return sorted(found)


def uncovered_images(referenced: Iterable[str], manifest: Mapping[str, Any]) -> List[str]:
    """Referenced images the manifest does not list (compared as mirrored or upstream).

    A bare repository counts as covered when the manifest lists any tag of it (listed or
    unresolved).
    """
    listed = set()
    repositories = set()
    for entry in manifest.get("images", []):
        for name in (entry["image"], entry["mirror"]):
            ref = mirror_lib.parse_image(name)
            listed.add(str(ref))
            repositories.add(ref.name)
    for entry in manifest.get("unresolved", []):
        for name in (entry.get("repository"), entry.get("mirror")):
            if name and not name.startswith("("):
                repositories.add(mirror_lib.parse_image(name).name)
    missing = []
    for reference in referenced:
        ref = mirror_lib.parse_image(reference)
        if ref.tag or ref.digest:
            if str(ref) not in listed:
                missing.append(reference)
        elif ref.name not in repositories:
            missing.append(reference)
    return sorted(set(missing))


def sync_plan(manifest: Mapping[str, Any], tool: str = "skopeo", tls_verify: bool = True) -> List[Dict[str, Any]]:
    """Commands copying every listed image to its mirror (argv lists, no shell).

    ``tls_verify`` false accepts plain-HTTP or self-signed registries on both sides
    (test and lab mirrors).

    ``tool`` skopeo: one ``skopeo copy --all`` per image (all architectures, digests kept).
    ``tool`` podman: pull, tag and push (current architecture only, as podman can).
    """
    if tool not in ("skopeo", "podman"):
        raise ManifestError(f"sync tool: {tool!r} is not skopeo or podman")
    steps = []
    verify = "true" if tls_verify else "false"
    for entry in manifest.get("images", []):
        source, target = entry["image"], entry["mirror"]
        if source == target:
            continue
        if tool == "skopeo":
            commands = [["skopeo", "copy", "--all", "--retry-times", "3", f"--src-tls-verify={verify}",
                         f"--dest-tls-verify={verify}", f"docker://{source}", f"docker://{target}"]]
        else:
            commands = [["podman", "pull", f"--tls-verify={verify}", source], ["podman", "tag", source, target],
                        ["podman", "push", f"--tls-verify={verify}", target]]
        if tool == "skopeo":
            check, expect = ["skopeo", "inspect", "--raw", f"--tls-verify={verify}", f"docker://{target}"], None
        else:
            # podman 4 cannot inspect a remote single-architecture image; listing the
            # repository's tags can (the tag must then appear in the listing).
            ref = mirror_lib.parse_image(target)
            check = ["podman", "search", "--list-tags", "--limit", "100000", f"--tls-verify={verify}",
                     f"{ref.registry}/{ref.repository}"]
            expect = ref.tag
        steps.append({"image": source, "mirror": target, "commands": commands, "check": check, "expect": expect})
    return steps


def missing_images(probes: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The sync steps whose image the mirror lacks, from the probe results.

    ``probes``: one result per step of ``sync_plan`` (``rc``, ``stdout``, ``item`` =
    the step), as Ansible registers a looped command. An image is present when its
    probe succeeded and, for a tag listing, the listing names the tag.
    """
    missing = []
    for probe in probes:
        step = dict(probe.get("item") or {})
        present = probe.get("rc") == 0
        if present and step.get("expect"):
            tags = {line.split()[-1] for line in str(probe.get("stdout", "")).splitlines()[1:] if line.split()}
            present = step["expect"] in tags
        if not present:
            missing.append(step)
    return missing


def _dotted(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def table_rows(chart: str) -> List[Tuple[str, str]]:
    """``(values path, image)`` rows of ``chart`` that come straight from its values."""
    return [(path, image) for c, path, image, _when, _source in IMAGE_TABLE if c == chart and path]


def value_image(values: Mapping[str, Any], path: str, app_version: str) -> str:
    """The image chart ``values`` name at ``path``, with an empty tag meaning ``app_version``.

    Used by the tests that hold the table against the pinned values.yaml files.
    """
    node = _dotted(values, path)
    if not isinstance(node, Mapping):
        raise KeyError(path)
    filled = dict(node)
    if not (filled.get("tag") or filled.get("version")):
        filled["tag"] = app_version
    image = _image_from_mapping(filled)
    if image is None:
        raise KeyError(path)
    return image
