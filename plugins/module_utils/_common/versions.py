# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one home of the collection's supported versions, defaults and pins.

Role defaults, argument specs, meta/main.yml, meta/runtime.yml, the playbooks' defaults,
README.md and docs/inventory.md restate some of these values because Ansible needs them as
literals there; tests/unit/test_single_source.py holds every copy against this module so that
they cannot drift.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

# Kubernetes minors the collection installs and plans for, oldest first.
SUPPORTED_KUBERNETES_MINORS = ("1.34", "1.35", "1.36")
# The minor used when gpushare_kubernetes_version is not set. The planner (and so the preflight
# of every cluster playbook) requires gpushare_kubernetes_version and
# gpushare_kubernetes_distribution (docs/inventory.md, Required); these defaults are what the
# roles used on their own, playbooks/mirror.yml and the playbooks' fallbacks
# (playbooks/vars/cluster_settings.yml) take, and what README.md names as the default.
DEFAULT_KUBERNETES_VERSION = "1.35"

# Kubernetes distributions; the first is the default of gpushare_kubernetes_distribution.
DISTRIBUTIONS = ("microk8s", "kubeadm")
DEFAULT_DISTRIBUTION = DISTRIBUTIONS[0]

# GPU backends; the first is the default of gpushare_gpu_backend.
BACKENDS = ("dra", "device_plugin")
DEFAULT_BACKEND = BACKENDS[0]

# Host operating systems: distribution name (ansible_facts.distribution) -> major versions.
# Debian is the apt-family stand-in the Molecule scenarios run on, not a supported host: the
# host roles accept it (their supported-OS tables), README.md and meta/main.yml do not list it.
SUPPORTED_HOST_OS = {
    "Ubuntu": ("22", "24", "26"),
    "Rocky": ("9", "10"),
}
TEST_HOST_OS = {"Debian": ("12",)}
# The same hosts as Galaxy names them in meta/main.yml (galaxy_info.platforms): Ubuntu by
# release codename, Rocky Linux as EL.
UBUNTU_CODENAMES = {"22": "jammy", "24": "noble", "26": "resolute"}
GALAXY_PLATFORMS = {
    "Ubuntu": tuple(UBUNTU_CODENAMES[major] for major in SUPPORTED_HOST_OS["Ubuntu"]),
    "EL": SUPPORTED_HOST_OS["Rocky"],
}
# The rehearsal role runs on the controller, not on a cluster host.
CONTROLLER_PLATFORMS = {
    "Debian": ("bookworm", "trixie"),
    "Ubuntu": ("jammy", "noble"),
}

# Oldest ansible-core every role and playbook runs on (meta/runtime.yml requires_ansible,
# meta/main.yml min_ansible_version, README.md). Not 2.18: with ansible-core 2.18.19 the add-on
# roles (gpu_operator, dra_driver, kueue, tenancy, monitoring) fail in their render step
# (gpushare.cluster.render_addon: yaml RepresenterError on a 2.18 unsafe string) when the plan
# is a templated variable; the toolchain installs and tests 2.19 only (requirements.txt).
# That failure is left unfixed on purpose: ansible-core 2.18 reached its end of life in November
# 2026 (the ansible-core release matrix), so no supported controller runs it.
MIN_ANSIBLE_VERSION = "2.19"

# Helm chart and add-on pins: role variable -> version.
CHART_VERSIONS = {
    "gpu_operator_version": "v26.7.0",
    "dra_driver_version": "v0.4.1",
    "kueue_version": "0.19.2",
    "monitoring_version": "88.5.3",
    "kubeadm_calico_chart_version": "v3.32.0",
    "kubeadm_cilium_chart_version": "1.18.0",
    "kubeadm_vip_version": "v1.0.0",
    "kubernetes_common_helm_version": "v3.19.0",
}
# Where upstream publishes each chart: role variable -> repository.
CHART_REPOSITORIES = {
    "gpu_operator_chart_repo": "https://helm.ngc.nvidia.com/nvidia",
    "dra_driver_chart_repo": "oci://registry.k8s.io/dra-driver-nvidia/charts",
    "kueue_chart_repo": "oci://registry.k8s.io/kueue/charts",
    "monitoring_chart_repo": "https://prometheus-community.github.io/helm-charts",
    "kubeadm_calico_chart_repo": "https://docs.tigera.io/calico/charts",
    "kubeadm_cilium_chart_repo": "https://helm.cilium.io/",
}
# The mirror manifest (playbooks/mirror.yml) lists each chart by its own name: chart ->
# (version variable, repository variable) of CHART_VERSIONS and CHART_REPOSITORIES.
MIRROR_CHARTS = {
    "gpu-operator": ("gpu_operator_version", "gpu_operator_chart_repo"),
    "dra-driver-nvidia-gpu": ("dra_driver_version", "dra_driver_chart_repo"),
    "kueue": ("kueue_version", "kueue_chart_repo"),
    "kube-prometheus-stack": ("monitoring_version", "monitoring_chart_repo"),
    "tigera-operator": ("kubeadm_calico_chart_version", "kubeadm_calico_chart_repo"),
    "cilium": ("kubeadm_cilium_chart_version", "kubeadm_cilium_chart_repo"),
}
# The dra-driver-nvidia-gpu chart's own version has no "v" (its Chart.yaml says 0.4.1); the
# role passes dra_driver_version (also the image tag, v0.4.1) and Helm reads both the same.
UNPREFIXED_CHARTS = ("dra-driver-nvidia-gpu",)


def mirror_chart_version(chart: str) -> str:
    """The version the mirror manifest lists for ``chart`` (e.g. ``0.4.1`` for the DRA driver)."""
    version = CHART_VERSIONS[MIRROR_CHARTS[chart][0]]
    return version.lstrip("v") if chart in UNPREFIXED_CHARTS else version


# The GPU Operator's driver release the mirror manifest lists images of
# (playbooks/mirror.yml gpushare_mirror_driver_version).
GPU_OPERATOR_DRIVER_VERSION = "595.91.07"

# The rehearsal's control plane (roles/rehearsal defaults; each is the version its
# roles/rehearsal/files/go/<component>/go.mod requires). Kubernetes is a patch release of the
# default minor and Kueue the collection's own pin.
REHEARSAL_VERSIONS = {
    "kubernetes": "1.35.4",
    "etcd": "3.6.16",
    "kueue": CHART_VERSIONS["kueue_version"],
    "kwok": "0.8.0",
}


class KubernetesVersion(NamedTuple):
    """A Kubernetes version split into its parts: ``v1.35.2-1.1`` -> 1, 35, 2, ``"-1.1"``."""

    major: int
    minor: int
    patch: Optional[int]
    # What follows the numbers: a pre-release (``-rc.1``), build or package revision (``-1.1``).
    suffix: str


_KUBERNETES_VERSION = re.compile(r"^v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?(?P<suffix>[-+].*)?$")


def parse_kubernetes_version(version: object) -> Optional[KubernetesVersion]:
    """The one Kubernetes version parser: ``'1.35'``, ``'v1.35.2'``, ``'1.35.2-1.1'`` -> its parts.

    None when ``version`` is not a version; each caller says in its own words what it accepts
    (the planner only 1.x without a suffix, the Kubernetes roles package revisions too).
    """
    match = _KUBERNETES_VERSION.match(str(version).strip())
    if not match:
        return None
    patch = match.group("patch")
    return KubernetesVersion(int(match.group("major")), int(match.group("minor")),
                             None if patch is None else int(patch), match.group("suffix") or "")


# The supported minors as numbers (35 for "1.35").
SUPPORTED_KUBERNETES_MINOR_NUMBERS = tuple(
    parse_kubernetes_version(minor).minor for minor in SUPPORTED_KUBERNETES_MINORS)  # type: ignore[union-attr]
