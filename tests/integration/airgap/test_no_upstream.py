# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""With gpushare_mirrors set, nothing the collection renders names an upstream host.

The bundled example (MicroK8s) and multinode (kubeadm) inventories are rendered for real
with ansible-playbook: the plan (cluster_plan), then the ``render`` entry point of every
add-on role (Helm values and manifests) and of the Kubernetes role (kubeadm files or
MicroK8s args). Every file written is scanned for upstream hosts; a control run without
mirrors must find them, so the scan is known to see what it looks for. Finally the mirror
manifest must list every image the rendered values make the charts pull.

Host-level files written only on a host (apt/dnf sources, proxy drop-ins, containerd
hosts.toml) have no render entry point and are not covered here.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.airgap import manifest as mm
from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors as m

REPO = Path(__file__).resolve().parents[3]
ADDON_ROLES = ("gpu_operator", "dra_driver", "kueue", "tenancy", "monitoring")

MIRRORS = {
    "apt": {"ubuntu": "http://mirror.internal/ubuntu", "kubernetes": "http://mirror.internal/k8s-deb",
            "nvidia": "http://mirror.internal/nvidia-deb", "docker": "http://mirror.internal/docker-deb"},
    "dnf": {"rocky": "http://mirror.internal/rocky", "kubernetes": "http://mirror.internal/k8s-rpm",
            "nvidia": "http://mirror.internal/nvidia-rpm", "docker": "http://mirror.internal/docker-rpm"},
    "registry": "registry.internal:5000",
    "helm": {"oci": "oci://registry.internal:5000/charts"},
    "snap": {"proxy_url": "http://snaps.internal:8000", "proxy_id": "STOREID"},
    "files": "http://mirror.internal/files",
}
PROXY = {"http": "http://proxy.internal:3128", "https": "http://proxy.internal:3128",
         "no_proxy": "localhost,127.0.0.1,.internal"}

PLAN_PLAY = """
- name: Plan, then render the add-ons
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Plan
      gpushare.cluster.cluster_plan:
        teams: "{{ gpushare_teams }}"
        nodes: "{{ dict(__hosts | zip(__hosts | map('extract', hostvars, 'gpushare_gpus'))) }}"
        backend: "{{ gpushare_gpu_backend | default('dra') }}"
        distribution: "{{ gpushare_kubernetes_distribution | default('microk8s') }}"
        kubernetes_version: "{{ gpushare_kubernetes_version | default('1.35') | string }}"
      vars:
        __hosts: >-
          {{ groups['all'] | map('extract', hostvars) | selectattr('gpushare_gpus', 'defined')
             | map(attribute='inventory_hostname') | list }}
      register: __plan
    - name: Keep the plan
      ansible.builtin.set_fact:
        gpushare_plan: "{{ __plan.plan }}"
    - name: Render each add-on
      ansible.builtin.include_role:
        name: "gpushare.cluster.{{ item }}"
        tasks_from: render
      loop: %(roles)s
"""
NODE_PLAY = PLAN_PLAY.replace("loop: %(roles)s", "loop: []") + """
- name: Render the Kubernetes node files
  hosts: all
  connection: local
  gather_facts: false
  vars:
    gpushare_plan: "{{ hostvars['localhost']['gpushare_plan'] }}"
  tasks:
    - name: Render
      ansible.builtin.include_role:
        name: "gpushare.cluster.{{ gpushare_kubernetes_distribution }}"
        tasks_from: render
"""

INVENTORIES = {
    # The example's Grafana password is vaulted with the same demo password (the roles'
    # argument specs decrypt it).
    "example": {"args": ["--vault-password-file", str(REPO / "inventories/multinode/vault-password.txt")],
                "distribution": "microk8s"},
    # The multinode inventory leaves the control-plane VIP and node addresses to the user.
    "multinode": {"args": ["--vault-password-file", str(REPO / "inventories/multinode/vault-password.txt"),
                           "-e", "kubeadm_vip_address=198.51.100.10", "-e", "kubeadm_vip_interface=eth0",
                           "-e", "kubeadm_advertise_address={{ ansible_host }}"],
                  "distribution": "kubeadm"},
}


def _run(playbook_text: str, inventory: str, out: Path, with_mirrors: bool, tmp: Path) -> subprocess.CompletedProcess:
    playbook = tmp / f"render-{out.name}.yml"
    playbook.write_text(playbook_text, encoding="utf-8")
    variables = {"gpushare_render_dir": str(out)}
    if with_mirrors:
        variables.update({"gpushare_mirrors": MIRRORS, "gpushare_proxy": PROXY})
    vars_file = tmp / f"vars-{out.name}.yml"
    vars_file.write_text(yaml.safe_dump(variables), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ["GPUSHARE_COLLECTIONS_PATH"], ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="false")
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(REPO / "inventories" / inventory),
               str(playbook), "-e", f"@{vars_file}"] + INVENTORIES[inventory]["args"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False, cwd=tmp)


def _roles_with_render(roles) -> List[str]:
    return [role for role in roles if (REPO / "roles" / role / "tasks" / "render.yml").is_file()]


@pytest.fixture(scope="module", params=sorted(INVENTORIES))
def rendered(request, tmp_path_factory) -> Dict[str, Any]:
    inventory = request.param
    tmp = tmp_path_factory.mktemp(f"airgap-{inventory}")
    roles = _roles_with_render(ADDON_ROLES)
    addons = _run(PLAN_PLAY % {"roles": roles}, inventory, tmp / "addons", True, tmp)
    nodes = _run(NODE_PLAY, inventory, tmp / "nodes", True, tmp)
    return {"inventory": inventory, "roles": roles, "addons": addons, "nodes": nodes,
            "addons_dir": tmp / "addons", "nodes_dir": tmp / "nodes", "tmp": tmp}


def _files(directory: Path) -> List[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def _scan(directory: Path) -> List[Tuple[str, int, str, str]]:
    found = []
    for path in _files(directory):
        for line, host, text in m.upstream_hosts_in(path.read_text(encoding="utf-8", errors="replace")):
            found.append((str(path.relative_to(directory)), line, host, text[:160]))
    return found


def test_every_addon_role_has_a_render_entry_point(rendered):
    missing = sorted(set(ADDON_ROLES) - set(rendered["roles"]))
    assert missing == [], f"add-on roles without tasks/render.yml (not covered by the scan): {missing}"


def test_addon_render_names_only_mirrors(rendered):
    result = rendered["addons"]
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    files = _files(rendered["addons_dir"])
    names = {p.name for p in files}
    for expected in ("gpu-operator.yaml", "kueue.yaml"):
        assert expected in names, f"{expected} was not rendered: {sorted(names)}"
    assert len(files) >= 8
    assert _scan(rendered["addons_dir"]) == []
    text = "\n".join(p.read_text(encoding="utf-8") for p in files)
    assert "registry.internal:5000" in text


def test_node_render_names_only_mirrors(rendered):
    result = rendered["nodes"]
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    files = _files(rendered["nodes_dir"])
    assert files, "the Kubernetes role rendered no file"
    assert _scan(rendered["nodes_dir"]) == []
    text = "\n".join(p.read_text(encoding="utf-8") for p in files)
    if INVENTORIES[rendered["inventory"]]["distribution"] == "kubeadm":
        assert "imageRepository: registry.internal:5000" in text
        assert "http://mirror.internal/k8s-deb/core:/stable:/v1.35/deb/" in text


def test_scan_finds_upstream_hosts_without_mirrors(tmp_path):
    """Control: the same render without mirrors names the upstream registries."""
    roles = _roles_with_render(("gpu_operator", "dra_driver", "kueue"))
    result = _run(PLAN_PLAY % {"roles": roles}, "example", tmp_path / "upstream", False, tmp_path)
    assert result.returncode == 0, result.stdout[-4000:]
    hosts = {host for _path, _line, host, _text in _scan(tmp_path / "upstream")}
    assert {"nvcr.io", "registry.k8s.io"} <= hosts


# --- the manifest lists every image the rendered values make the charts pull ----------

def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = copy.deepcopy(base)
        for key, value in override.items():
            merged[key] = _merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def _repository_paths(node: Any, prefix: str = "") -> List[str]:
    paths = []
    if isinstance(node, dict):
        if isinstance(node.get("repository"), str):
            paths.append(prefix.rstrip("."))
        for key, value in node.items():
            paths += _repository_paths(value, f"{prefix}{key}.")
    return paths


def _get(values: Dict[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        node = node[part]
    return node


def _chart_images(reference_dir: Path, values_dir: Path, os_tag: str) -> List[str]:
    """Images the pinned charts pull with the rendered values (enabled components only)."""
    charts = {
        "gpu-operator.yaml": ("gpu-operator/values.yaml", mm.CHARTS["gpu-operator"]["version"], "gpu-operator"),
        "dra-driver-nvidia-gpu.yaml": ("dra-driver/values.yaml", "v" + mm.CHARTS["dra-driver-nvidia-gpu"]["version"],
                                       "dra-driver-nvidia-gpu"),
        "kueue.yaml": ("kueue/values.yaml", "v" + mm.CHARTS["kueue"]["version"], "kueue"),
        "kube-prometheus-stack.yaml": ("monitoring/kube-prometheus-stack-values.yaml", "v0.93.1",
                                       "kube-prometheus-stack"),
    }
    images = []
    for file_name, (reference, app_version, chart) in charts.items():
        path = values_dir / file_name
        if not path.is_file():
            continue
        rendered = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        effective = _merge(yaml.safe_load((reference_dir / reference).read_text(encoding="utf-8")), rendered)
        global_registry = (effective.get("global") or {}).get("imageRegistry")
        paths = set(_repository_paths(rendered)) | {p for p, _image in mm.table_rows(chart)}
        for value_path in sorted(paths):
            node = dict(_get(effective, value_path))
            section = _get(effective, value_path.split(".")[0])
            if isinstance(section, dict) and section.get("enabled") is False:
                continue
            if global_registry and "registry" in node:
                node["registry"] = global_registry
            default_tag = "v0.19.0" if value_path.startswith("node-feature-discovery") else app_version
            image = mm.value_image({"x": node}, "x", default_tag)
            if value_path == "driver":
                image = f"{image}-{os_tag}"          # the operator appends the node's OS tag
            images.append(image)
        if global_registry:
            for _chart, repository, _when, _reason in mm.UNRESOLVED_TABLE:
                images.append(f"{global_registry}/{m.parse_image(repository).repository}")
    return sorted(set(images))


def test_manifest_lists_every_rendered_image(rendered, reference_dir):
    assert rendered["addons"].returncode == 0, rendered["addons"].stdout[-4000:]
    inventory = rendered["inventory"]
    group_vars = yaml.safe_load((REPO / "inventories" / inventory / "group_vars/all/gpushare.yml").read_text())
    manifest = mm.build_manifest({"distribution": group_vars["gpushare_kubernetes_distribution"],
                                  "backend": group_vars["gpushare_gpu_backend"],
                                  "kubernetes_version": str(group_vars["gpushare_kubernetes_version"]),
                                  "driver_os": ["ubuntu24.04"], "mirrors": MIRRORS})
    referenced = _chart_images(reference_dir, rendered["addons_dir"] / "values", "ubuntu24.04")
    for manifest_file in (rendered["addons_dir"] / "manifests").rglob("*.yaml"):
        for document in yaml.safe_load_all(manifest_file.read_text(encoding="utf-8")):
            referenced += mm.images_in(document)
    assert len(referenced) >= 10
    assert all(ref.startswith("registry.internal:5000/") for ref in referenced), referenced
    assert mm.uncovered_images(referenced, manifest) == []
