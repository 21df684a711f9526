# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one home of the collection's supported versions, defaults and pins.

Role defaults, argument specs, meta/main.yml, README.md and docs/inventory.md restate some of
these values because Ansible needs them as literals there; a test holds every copy against
this module so that they cannot drift.
"""

from __future__ import annotations

# Kubernetes minors the collection installs and plans for, oldest first.
SUPPORTED_KUBERNETES_MINORS = ("1.34", "1.35", "1.36")
# The minor used when gpushare_kubernetes_version is not set.
DEFAULT_KUBERNETES_VERSION = "1.35"

# Kubernetes distributions; the first is the default of gpushare_kubernetes_distribution.
DISTRIBUTIONS = ("microk8s", "kubeadm")
DEFAULT_DISTRIBUTION = DISTRIBUTIONS[0]

# GPU backends; the first is the default of gpushare_gpu_backend.
BACKENDS = ("dra", "device_plugin")
DEFAULT_BACKEND = BACKENDS[0]

# Host operating systems: distribution name (ansible_facts.distribution) -> major versions.
# Debian is the apt-family stand-in the Molecule scenarios run on, not a supported host.
SUPPORTED_HOST_OS = {
    "Ubuntu": ("22", "24", "26"),
    "Rocky": ("9", "10"),
}
TEST_HOST_OS = {"Debian": ("12",)}

# Oldest ansible-core every role and playbook runs on (meta/runtime.yml, meta/main.yml).
MIN_ANSIBLE_VERSION = "2.18"

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
