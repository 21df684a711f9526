# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names the collection shares with Kubernetes, Kueue and the NVIDIA DRA driver, each once.

Every module that writes or reads one of these labels, API versions or driver names imports it
from here, so that a renamed label cannot leave a copy behind.
"""

from __future__ import annotations

# Labels.
TEAM_LABEL = "gpushare.io/team"
# Kueue's queue and priority labels (sigs.k8s.io/kueue, pkg/controller/constants).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"

# API versions of the objects a plan holds.
RESOURCE_API = "resource.k8s.io/v1"
KUEUE_API = "kueue.x-k8s.io/v1beta2"

# The NVIDIA DRA driver's name (its DeviceClasses select devices of this driver).
DRA_DRIVER = "gpu.nvidia.com"
