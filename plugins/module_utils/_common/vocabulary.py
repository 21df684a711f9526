# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names the collection shares with Kubernetes, Kueue and the NVIDIA DRA driver, each once.

Every module that writes or reads one of these labels, API versions or driver names imports it
from here, so that a renamed label cannot leave a copy behind.
"""

from __future__ import annotations

# Labels and annotations of the collection's own.
TEAM_LABEL = "gpushare.io/team"
# A node's planned GPUs: gpushare.io/gpu.<model>=<count> (sharing.model_label).
GPU_NODE_LABEL_PREFIX = "gpushare.io/gpu."
# The API group of the collection's own names (DeviceClasses, quota resources).
GPUSHARE_GROUP = "gpushare.io"
DESCRIPTION_ANNOTATION = "gpushare.io/description"
# The gpu_operator role's relabel marks the GPU pods it evicts with this label (roles/gpu_operator).
EVICT_FOR_RELABEL_LABEL = "gpushare.io/evict-for-relabel"
# ... and annotates a node it has relabelled until the node is back and uncordoned, so a later run
# finishes a node an earlier run left cordoned (a MIG layout that failed, a node that did not come back).
RELABEL_UNFINISHED_ANNOTATION = "gpushare.io/relabel-unfinished"

# Kubernetes' recommended labels the collection sets or selects on (the third, managed-by, is
# ownership.MANAGED_BY_LABEL).
APP_NAME_LABEL = "app.kubernetes.io/name"
PART_OF_LABEL = "app.kubernetes.io/part-of"

# Kueue's queue and priority labels (sigs.k8s.io/kueue, pkg/controller/constants).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"

# The GPU Operator's per-node labels: mig-manager applies the MIG layout named by
# MIG_CONFIG_LABEL and reports on MIG_CONFIG_STATE_LABEL, the device plugin reads its
# time-slicing configuration from DEVICE_PLUGIN_CONFIG_LABEL, and GPU feature discovery sets
# GPU_PRODUCT_LABEL (docs/backends.md, docs/quotas.md).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# The DRA driver's kubelet plugin runs where both DRA_PLUGIN_LABEL (set on every GPU node of a
# dra plan) and GPU_CLIENT_LABEL (set by the operator) are "true"; the operator's driver manager
# flips DRA_PLUGIN_LABEL to evict the plugin on driver upgrades (roles/dra_driver/README.md).
GPU_DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
GPU_CLIENT_LABEL = GPU_DEPLOY_LABEL_PREFIX + "client"
DRA_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"
# While it reloads the driver, k8s-driver-manager (v0.12.0, cmd/driver-manager/main.go,
# maybeSetPaused) turns each operand's deploy label "true" into this value, and any other
# value v into v + "_" + this value, then puts them back; NODE_LABEL_FOR_GPU_POD_EVICTION
# (DRA_PLUGIN_LABEL here) is one of them.
DRIVER_UPGRADE_PAUSED = "paused-for-driver-upgrade"

# The extended resources the device plugin advertises: a whole (or time-sliced) GPU, and one
# MIG profile each (nvidia.com/mig-1g.10gb) under the mixed strategy.
NVIDIA_RESOURCE_PREFIX = "nvidia.com/"
GPU_RESOURCE = NVIDIA_RESOURCE_PREFIX + "gpu"
# The suffix the device plugin's renameByDefault gives a time-sliced resource
# (nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb.shared; sharing.resource_name).
SHARED_SUFFIX = ".shared"
SHARED_GPU_RESOURCE = GPU_RESOURCE + SHARED_SUFFIX
MIG_RESOURCE_PREFIX = NVIDIA_RESOURCE_PREFIX + "mig-"

# Pod Security Admission's namespace labels (<prefix>enforce, warn, audit and their -version).
POD_SECURITY_LABEL_PREFIX = "pod-security.kubernetes.io/"
POD_SECURITY_ENFORCE_LABEL = POD_SECURITY_LABEL_PREFIX + "enforce"

# API groups and versions of the objects a plan holds.
RESOURCE_GROUP, RESOURCE_VERSION = "resource.k8s.io", "v1"
RESOURCE_API = RESOURCE_GROUP + "/" + RESOURCE_VERSION
# dcgm-exporter, as the pinned GPU Operator ships it, watches ResourceSlices through this older
# version, which the API server must be told to serve (kubernetes/topology.py).
RESOURCE_V1BETA1_API = RESOURCE_GROUP + "/v1beta1"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
KUEUE_API = KUEUE_GROUP + "/" + KUEUE_VERSION
# The GPU Operator's ClusterPolicy.
NVIDIA_OPERATOR_API = "nvidia.com/v1"
# The Kueue manager's own Configuration (its config file, not a cluster object).
KUEUE_CONFIG_API = "config." + KUEUE_API

# The NVIDIA DRA driver's name (its DeviceClasses select devices of this driver).
DRA_DRIVER = "gpu.nvidia.com"
