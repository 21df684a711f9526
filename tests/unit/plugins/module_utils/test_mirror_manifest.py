# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror manifest: content per distribution/backend, stability, and its image table
held against the pinned charts' values.yaml files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.airgap import manifest as mm
from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as m

MIRRORS = {"registry": "registry.internal:5000", "registries": {"nvcr.io": "nv.internal/nvcr"},
           "helm": {"oci": "oci://registry.internal:5000/charts"},
           "apt": {"ubuntu": "http://mirror.internal/ubuntu", "kubernetes": "http://mirror.internal/k8s",
                   "nvidia": "http://mirror.internal/nvidia", "docker": "http://mirror.internal/docker"},
           "dnf": {"rocky": "http://mirror.internal/rocky", "kubernetes": "http://mirror.internal/k8s-rpm",
                   "nvidia": "http://mirror.internal/nvidia-rpm", "docker": "http://mirror.internal/docker-rpm"},
           "snap": {"proxy_url": "http://snaps.internal", "proxy_id": "id1"},
           "files": "http://mirror.internal/files"}


def _images(manifest):
    return mm.image_list(manifest)


def test_microk8s_dra_example():
    manifest = mm.build_manifest({"distribution": "microk8s", "backend": "dra", "kubernetes_version": "1.35",
                                  "driver_os": ["ubuntu24.04"], "mirrors": MIRRORS})
    images = _images(manifest)
    assert "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04" in images
    assert "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1" in images
    assert "registry.k8s.io/kueue/kueue:v0.19.2" in images
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" in images      # GFD runs with both backends
    assert not any("/dcgm:" in image for image in images)              # embedded hostengine by default
    assert images == sorted(images) and len(images) == len(set(images))
    assert manifest["snaps"][0]["channel"] == "1.35/stable"
    assert [c["name"] for c in manifest["charts"]] == ["dra-driver-nvidia-gpu", "gpu-operator", "kube-prometheus-stack",
                                                       "kueue"]
    assert all(p["name"] != "kubernetes" for p in manifest["packages"])   # MicroK8s is a snap
    by_image = {entry["image"]: entry for entry in manifest["images"]}
    assert by_image["nvcr.io/nvidia/gpu-operator:v26.7.0"]["used_for"] == ["operator", "validator"]
    assert by_image["nvcr.io/nvidia/driver:595.91.07-ubuntu24.04"]["mirror"] == \
        "nv.internal/nvcr/nvidia/driver:595.91.07-ubuntu24.04"
    assert by_image["quay.io/prometheus/prometheus:v3.14.0-distroless"]["mirror"] == \
        "registry.internal:5000/prometheus/prometheus:v3.14.0-distroless"


def test_every_mirrored_location_names_no_upstream_host():
    manifest = mm.build_manifest({"distribution": "kubeadm", "backend": "device_plugin",
                                  "kubernetes_version": "1.35.2", "kube_vip": True,
                                  "driver_os": ["ubuntu22.04", "rocky9"], "os_families": ["apt", "dnf"],
                                  "mirrors": MIRRORS})
    mirrored = [e["mirror"] for section in ("images", "charts", "packages", "files") for e in manifest[section]]
    mirrored += [e["mirror"] for e in manifest["unresolved"]]
    assert mirrored and m.upstream_hosts_in("\n".join(mirrored)) == []


def test_kubeadm_device_plugin_multinode():
    manifest = mm.build_manifest({
        "distribution": "kubeadm", "backend": "device_plugin", "kubernetes_version": "1.35.2",
        "nodes": [{"host": "hgx1", "distribution": "Ubuntu", "version": "24.04"},
                  {"host": "a100", "distribution": "Rocky", "version": "9.6"}],
        "cni": "calico", "kube_vip": True})
    images = _images(manifest)
    assert "nvcr.io/nvidia/driver:595.91.07-rocky9" in images
    assert "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04" in images
    assert "registry.k8s.io/kube-apiserver:v1.35.2" in images
    assert "ghcr.io/kube-vip/kube-vip:v1.0.0" in images
    assert "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1" not in images
    assert [c["name"] for c in manifest["charts"]] == ["gpu-operator", "kube-prometheus-stack", "kueue",
                                                       "tigera-operator"]
    assert {(p["manager"], p["name"]) for p in manifest["packages"]} >= {("apt", "kubernetes"), ("dnf", "kubernetes")}
    kube = [p for p in manifest["packages"] if p["name"] == "kubernetes" and p["manager"] == "apt"][0]
    assert kube["upstream"] == kube["mirror"] == "https://pkgs.k8s.io/core:/stable:/v1.35/deb/"
    mirrored = mm.build_manifest({"distribution": "kubeadm", "driver_os": ["rocky9"], "mirrors": MIRRORS})
    rpm = [p for p in mirrored["packages"] if p["name"] == "kubernetes"][0]
    assert rpm["mirror"] == "http://mirror.internal/k8s-rpm/core:/stable:/v1.35/rpm/"
    assert manifest["snaps"] == []
    # Without mirrors, every location is upstream.
    assert all(e["image"] == e["mirror"] for e in manifest["images"])


def test_minor_only_kubernetes_leaves_control_plane_tags_unresolved():
    manifest = mm.build_manifest({"distribution": "kubeadm", "driver_os": ["ubuntu24.04"]})
    unresolved = {e["repository"] for e in manifest["unresolved"]}
    assert "registry.k8s.io/kube-apiserver" in unresolved and "registry.k8s.io/pause" in unresolved
    assert not any("kube-apiserver" in image for image in _images(manifest))
    # The advice names the inventory variable that resolves it.
    (apiserver,) = [e for e in manifest["unresolved"] if e["repository"] == "registry.k8s.io/kube-apiserver"]
    assert 'set gpushare_kubernetes_version to it (e.g. "1.35.2")' in apiserver["resolve"]


def test_precompiled_driver_images_per_kernel():
    manifest = mm.build_manifest({"driver_precompiled": True, "nodes": [
        {"host": "gpu1", "distribution": "Ubuntu", "version": "24.04", "kernel": "6.8.0-60-generic"},
        {"host": "gpu2", "distribution": "Ubuntu", "version": "22.04", "kernel": "5.15.0-143-generic"}]})
    drivers = [i for i in _images(manifest) if "/driver:" in i]
    assert drivers == ["nvcr.io/nvidia/driver:595-5.15.0-143-generic-ubuntu22.04",
                       "nvcr.io/nvidia/driver:595-6.8.0-60-generic-ubuntu24.04"]


def test_driver_disabled_needs_no_node_os_and_drops_driver_images():
    manifest = mm.build_manifest({"driver_enabled": False})
    assert not any("/driver:" in i or "k8s-driver-manager" in i for i in _images(manifest))


def test_errors_are_collected():
    with pytest.raises(mm.ManifestError) as err:
        mm.build_manifest({"distribution": "k3s", "backend": "mps", "gpu_operator_version": "v26.8.0",
                           "nodes": [{"host": "gpu9", "distribution": "Debian", "version": "12"}],
                           "mirrors": {"registry": "https://r"}, "architectures": ["s390x"]})
    text = str(err.value)
    for part in ("distribution: 'k3s'", "backend: 'mps'", "gpu_operator_version: 'v26.8.0' has no image table",
                 "host gpu9: distribution", "gpushare_mirrors.registry", "architectures: 's390x'"):
        assert part in text, part


def test_precompiled_on_rocky_is_an_error_naming_host():
    with pytest.raises(mm.ManifestError, match="host a100: driver.usePrecompiled"):
        mm.build_manifest({"driver_precompiled": True,
                           "nodes": [{"host": "a100", "distribution": "Rocky", "version": "9.6",
                                      "kernel": "5.14.0-570-generic"}]})


def test_manifest_is_stable():
    settings = {"distribution": "kubeadm", "backend": "dra", "kubernetes_version": "1.35.2",
                "nodes": [{"host": "b", "distribution": "Rocky", "version": "10.0"},
                          {"host": "a", "distribution": "Ubuntu", "version": "24.04"}],
                "extra_images": ["busybox:1.36", "quay.io/x/y:1"], "mirrors": MIRRORS}
    first = json.dumps(mm.build_manifest(settings), sort_keys=False)
    reordered = dict(settings, nodes=list(reversed(settings["nodes"])),
                     extra_images=list(reversed(settings["extra_images"])))
    assert json.dumps(mm.build_manifest(reordered), sort_keys=False) == first
    assert "docker.io/library/busybox:1.36" in first


@pytest.mark.parametrize("distribution", mm.DISTRIBUTIONS)
@pytest.mark.parametrize("backend", mm.BACKENDS)
@pytest.mark.parametrize("kubernetes_version", ["1.35", "1.35.2"])
@pytest.mark.parametrize("cni", mm.CNIS)
def test_every_listed_image_has_an_explicit_tag(distribution, backend, kubernetes_version, cni):
    manifest = mm.build_manifest({"distribution": distribution, "backend": backend, "cni": cni,
                                  "kubernetes_version": kubernetes_version, "kube_vip": True,
                                  "dcgm_enabled": True, "driver_os": ["ubuntu24.04", "rocky9"],
                                  "mirrors": MIRRORS})
    assert manifest["images"]
    for entry in manifest["images"]:
        for reference in (entry["image"], entry["mirror"]):
            ref = m.parse_image(reference)
            assert ref.tag and ref.tag != "latest", reference
    # What has no tag is in "unresolved", never in "images", and says how to resolve it.
    listed = {m.parse_image(e["image"]).name for e in manifest["images"]}
    for entry in manifest["unresolved"]:
        assert entry["resolve"]
        if not entry["repository"].startswith("("):
            ref = m.parse_image(entry["repository"])
            assert not ref.tag and not ref.digest and ref.name not in listed, entry


def test_image_table_rows_carry_tags():
    for chart, _path, image, _when, source in mm.IMAGE_TABLE:
        assert m.parse_image(image).tag, image
        assert source and chart in mm.CHARTS


def test_extra_images_need_a_tag():
    with pytest.raises(mm.ManifestError) as err:
        mm.build_manifest({"driver_os": ["ubuntu24.04"],
                           "extra_images": ["quay.io/prometheus/node-exporter", "quay.io/ok/image:1", "Bad Ref"]})
    text = str(err.value)
    assert "extra_images[0]: 'quay.io/prometheus/node-exporter' has no tag or digest" in text
    assert "extra_images[2]:" in text and "extra_images[1]" not in text


def test_pinning_an_unresolved_repository_resolves_it():
    base = {"driver_os": ["ubuntu24.04"], "mirrors": MIRRORS}
    before = mm.build_manifest(base)
    open_repos = [e["repository"] for e in before["unresolved"]]
    assert {"docker.io/grafana/grafana", "quay.io/kiwigrid/k8s-sidecar"} <= set(open_repos)
    after = mm.build_manifest(dict(base, extra_images=["quay.io/kiwigrid/k8s-sidecar:9.9.9",
                                                       "grafana/grafana:99.0.0"]))
    assert [e["repository"] for e in after["unresolved"]] == \
        [r for r in open_repos if r not in ("quay.io/kiwigrid/k8s-sidecar", "docker.io/grafana/grafana")]
    by_image = {e["image"]: e for e in after["images"]}
    assert by_image["docker.io/grafana/grafana:99.0.0"]["mirror"] == "registry.internal:5000/grafana/grafana:99.0.0"
    assert by_image["quay.io/kiwigrid/k8s-sidecar:9.9.9"]["components"] == ["extra"]
    # Without monitoring, its sub-chart images are neither listed nor unresolved.
    quiet = mm.build_manifest(dict(base, monitoring_enabled=False))
    assert not any(e["component"] == "kube-prometheus-stack" for e in quiet["unresolved"])
    assert not any("prometheus" in image for image in _images(quiet))


def test_images_in_finds_every_shape():
    document = {
        "operator": {"repository": "r/nvidia", "image": "gpu-operator", "version": "v26.7.0"},
        "prometheus": {"prometheusSpec": {"image": {"registry": "quay.io", "repository": "prometheus/prometheus",
                                                    "tag": "v3"}}},
        "image": {"repository": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu", "tag": ""},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}},
        "notAnImage": {"image": "plain"},
    }
    assert mm.images_in(document) == ["busybox:1.36", "quay.io/prometheus/prometheus:v3",
                                      "r/nvidia/gpu-operator:v26.7.0",
                                      "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"]


def test_uncovered_images():
    manifest = mm.build_manifest({"driver_os": ["ubuntu24.04"], "mirrors": MIRRORS})
    assert mm.uncovered_images(["nv.internal/nvcr/nvidia/gpu-operator:v26.7.0",
                                "registry.internal:5000/dra-driver-nvidia/dra-driver-nvidia-gpu",
                                "registry.internal:5000/grafana/grafana"], manifest) == []
    assert mm.uncovered_images(["nvcr.io/nvidia/gpu-operator:v26.8.0", "quay.io/other/thing"], manifest) == \
        ["nvcr.io/nvidia/gpu-operator:v26.8.0", "quay.io/other/thing"]


def test_sync_plan_commands():
    manifest = mm.build_manifest({"driver_os": ["ubuntu24.04"], "mirrors": {"registry": "r.internal"}})
    steps = mm.sync_plan(manifest, "skopeo", tls_verify=False)
    assert len(steps) == len(manifest["images"])
    first = steps[0]["commands"][0]
    assert first[:3] == ["skopeo", "copy", "--all"] and first[-1].startswith("docker://r.internal/")
    podman = mm.sync_plan(manifest, "podman")[0]["commands"]
    assert [c[1] for c in podman] == ["pull", "tag", "push"]
    assert podman[0] == ["podman", "pull", "--tls-verify=true", manifest["images"][0]["image"]]
    assert mm.sync_plan(mm.build_manifest({"driver_os": ["ubuntu24.04"]}), "skopeo") == []
    with pytest.raises(mm.ManifestError):
        mm.sync_plan(manifest, "docker")


# --- the table against the pinned charts ------------------------------------------------

def _load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_gpu_operator_rows_match_values(reference_dir):
    values = _load(reference_dir / "gpu-operator" / "values.yaml")
    sources = (reference_dir / "gpu-operator" / "SOURCES.md").read_text(encoding="utf-8")
    assert "tag v26.7.0" in sources            # values.yaml is the one of the pinned release
    rows = mm.table_rows("gpu-operator")
    assert len(rows) >= 8
    for path, image in rows:
        assert mm.value_image(values, path, mm.CHARTS["gpu-operator"]["version"]) == image, path
    assert values["driver"]["version"] == mm.GPU_OPERATOR_DRIVER_VERSION
    assert f"{values['driver']['repository']}/{values['driver']['image']}" == "nvcr.io/nvidia/driver"
    chart = _load(reference_dir / "gpu-operator" / "Chart.yaml")
    nfd = [d for d in chart["dependencies"] if d["name"] == "node-feature-discovery"][0]
    assert f"registry.k8s.io/nfd/node-feature-discovery:v{nfd['version']}" in \
        [image for _c, _p, image, _w, _s in mm.IMAGE_TABLE]
    assert values["dcgm"]["enabled"] is False and values["sandboxWorkloads"]["enabled"] is False
    for key in ("gds", "gdrcopy", "nodeStatusExporter", "vgpuManager"):
        assert values[key]["enabled"] is False, key


def test_gpu_operator_enabled_images_are_all_in_the_table(reference_dir):
    """Every enabled component of the chart with an image is either in the table or
    explained in NOT_MIRRORED (sandbox-only components)."""
    values = _load(reference_dir / "gpu-operator" / "values.yaml")
    table_paths = {path for path, _image in mm.table_rows("gpu-operator")}
    explained = set(re.findall(r"[a-zA-Z]+", " ".join(mm.NOT_MIRRORED)))
    with_image = {key for key, section in values.items()
                  if isinstance(section, dict) and "image" in section and "repository" in section}
    # "driver" is named per node OS by mirrors.driver_image, not by a table row.
    assert "driver" in with_image
    assert with_image - table_paths - {"driver"} - explained == set()


def test_dra_driver_row_matches_values(reference_dir):
    values = _load(reference_dir / "dra-driver" / "values.yaml")
    chart = _load(reference_dir / "dra-driver" / "Chart.yaml")
    assert chart["version"] == mm.CHARTS["dra-driver-nvidia-gpu"]["version"]
    for path, image in mm.table_rows("dra-driver-nvidia-gpu"):
        assert mm.value_image(values, path, "v" + chart["appVersion"]) == image


def test_kueue_row_matches_values_and_packaging(reference_dir):
    values = _load(reference_dir / "kueue" / "values.yaml")
    sources = (reference_dir / "kueue" / "SOURCES.md").read_text(encoding="utf-8")
    [(path, image)] = mm.table_rows("kueue")
    in_git = mm.value_image(values, path, "")
    assert in_git.endswith("/kueue/kueue:release-0.19")
    assert f"`{image}`" in sources          # the image the published chart is packaged with
    assert values["enableKueueViz"] is False


def test_kube_prometheus_stack_rows_match_values(reference_dir):
    values = _load(reference_dir / "monitoring" / "kube-prometheus-stack-values.yaml")
    crd_sources = (reference_dir / "crds" / "prometheus-operator" / "SOURCES.md").read_text(encoding="utf-8")
    app_version = re.search(r"Chart 88\.5\.3 has `appVersion: (v[0-9.]+)`", crd_sources).group(1)
    for path, image in mm.table_rows("kube-prometheus-stack"):
        assert mm.value_image(values, path, app_version) == image, path
    notes = (reference_dir / "monitoring" / "NOTES.md").read_text(encoding="utf-8")
    assert "kube-state-metrics 8.4.0 (app 2.20.0)" in notes
    assert values["crds"]["upgradeJob"]["enabled"] is False
    assert values["prometheusOperator"]["admissionWebhooks"]["deployment"]["enabled"] is False
    assert values["thanosRuler"]["enabled"] is False


def test_kube_prometheus_stack_subcharts_match_the_reference(reference_dir):
    """The sub-chart versions named in the manifest are those of the pinned chart, every
    enabled sub-chart's images are listed or unresolved, and the disabled one is named in
    not_mirrored."""
    notes = (reference_dir / "monitoring" / "NOTES.md").read_text(encoding="utf-8")
    deps = re.search(r"chart \*\*88\.5\.3\*\*.*?Deps: (.*)", notes).group(1)
    for name, chart in mm.SUBCHARTS.items():
        assert f"{name} {chart['version']}" in deps, name
    assert chart_host(mm.SUBCHARTS["grafana"]["repository"]) in deps
    values = _load(reference_dir / "monitoring" / "kube-prometheus-stack-values.yaml")
    for name, chart in mm.SUBCHARTS.items():
        switch, _enabled = chart["condition"].split(".")
        enabled = values[switch]["enabled"]
        if name == "prometheus-windows-exporter":
            assert enabled is False
            assert any(name in text for text in mm.NOT_MIRRORED)
        else:
            assert enabled is True, name
    manifest = mm.build_manifest({"driver_os": ["ubuntu24.04"]})
    unresolved = {e["repository"]: e["resolve"] for e in manifest["unresolved"]}
    ksm = mm.SUBCHARTS["kube-state-metrics"]["version"]
    app = re.search(rf"kube-state-metrics {re.escape(ksm)} \(app ([0-9.]+)\)", notes).group(1)
    assert f"registry.k8s.io/kube-state-metrics/kube-state-metrics:v{app}" in _images(manifest)
    for repository in ("docker.io/grafana/grafana", "quay.io/kiwigrid/k8s-sidecar"):
        assert f"grafana sub-chart {mm.SUBCHARTS['grafana']['version']}" in unresolved[repository]
    assert values["grafana"]["sidecar"]["dashboards"]["enabled"] is True


def test_node_exporter_row_follows_the_subchart_and_the_pinned_values(reference_dir):
    """The node exporter image is the one the 4.56.1 sub-chart builds from the pinned
    values: "v" + appVersion 1.12.1, plus "-distroless" because kube-prometheus-stack 88.5.3
    asks for the distroless image and sets no tag of its own."""
    values = _load(reference_dir / "monitoring" / "kube-prometheus-stack-values.yaml")
    image_values = values["prometheus-node-exporter"]["image"]
    assert image_values == {"distroless": True}             # no tag, registry or repository override
    assert not values["global"]["imageRegistry"]            # no global registry rewrite either
    rows = [(path, image, source) for chart, path, image, _when, source in mm.IMAGE_TABLE
            if chart == "kube-prometheus-stack" and "/node-exporter:" in image]
    assert len(rows) == 1
    path, image, source = rows[0]
    assert path is None                                     # a sub-chart image, not a values path
    assert image == "quay.io/prometheus/node-exporter:v1.12.1-distroless"
    assert f"sub-chart {mm.SUBCHARTS['prometheus-node-exporter']['version']}" in source
    manifest = mm.build_manifest({"driver_os": ["ubuntu24.04"], "mirrors": MIRRORS})
    by_image = {e["image"]: e for e in manifest["images"]}
    assert by_image[image]["mirror"] == "registry.internal:5000/prometheus/node-exporter:v1.12.1-distroless"
    assert by_image[image]["components"] == ["kube-prometheus-stack"]
    assert not any(e["repository"] == "quay.io/prometheus/node-exporter" for e in manifest["unresolved"])
    # The rendered values name the repository without a tag; the listed tag covers it.
    assert mm.uncovered_images(["registry.internal:5000/prometheus/node-exporter"], manifest) == []


def test_still_unresolved_entries_say_how_to_resolve_them():
    """What no source confirmed stays open, per distribution and CNI, with its reason."""
    monitoring = mm.build_manifest({"driver_os": ["ubuntu24.04"]})
    open_monitoring = {e["repository"]: e["resolve"] for e in monitoring["unresolved"]}
    assert "grafana sub-chart 12.11.1" in open_monitoring["docker.io/grafana/grafana"]
    assert "helm template" in open_monitoring["quay.io/kiwigrid/k8s-sidecar"]
    snap = {e["repository"]: e["resolve"] for e in monitoring["unresolved"] if e["component"] == "microk8s"}
    assert "build-scripts/images.txt on the 1.35 branch" in snap["(MicroK8s add-on images: calico, coredns, pause)"]
    for cni, version in (("calico", "v3.32.0"), ("cilium", "1.18.0")):
        kubeadm = mm.build_manifest({"distribution": "kubeadm", "cni": cni, "kubernetes_version": "1.35.2",
                                     "driver_os": ["ubuntu24.04"]})
        open_kubeadm = {e["repository"]: e["resolve"] for e in kubeadm["unresolved"] if e["component"] == "kubeadm"}
        assert set(open_kubeadm) == {"registry.k8s.io/etcd", "registry.k8s.io/coredns/coredns", "registry.k8s.io/pause"}
        assert all("kubeadm config images list" in reason for reason in open_kubeadm.values())
        [cni_entry] = [e for e in kubeadm["unresolved"] if e["component"] == cni]
        assert version in cni_entry["resolve"]
        assert "registry.k8s.io/kube-apiserver:v1.35.2" in _images(kubeadm)


def chart_host(url):
    return url.split("//", 1)[1].split("/", 1)[0]


def test_pinned_chart_versions_match_the_collection_pins():
    # The one home of the pins is _common/versions.py (docs/architecture.md).
    from ansible_collections.gpushare.cluster.plugins.module_utils._common.versions import CHART_VERSIONS
    for name, variable in (("gpu-operator", "gpu_operator_version"), ("dra-driver-nvidia-gpu", "dra_driver_version"),
                           ("kueue", "kueue_version"), ("kube-prometheus-stack", "monitoring_version")):
        assert mm.CHARTS[name]["version"].lstrip("v") == CHART_VERSIONS[variable].lstrip("v"), name


def test_missing_images_from_probes():
    skopeo = {"image": "a", "commands": [["skopeo"]], "expect": None}
    podman = {"image": "b", "commands": [["podman"]], "expect": "v1"}
    listing = "NAME                 TAG\nr.internal/x/b  v0\nr.internal/x/b  v1\n"
    assert mm.missing_images([{"rc": 0, "stdout": "", "item": skopeo}, {"rc": 0, "stdout": listing, "item": podman}]) == []
    assert mm.missing_images([{"rc": 1, "stdout": "", "item": skopeo},
                              {"rc": 0, "stdout": listing.replace("v1", "v2"), "item": podman},
                              {"rc": 125, "stdout": "", "item": podman}]) == [skopeo, podman, podman]
