# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_cert_expiry filter (plugins/module_utils/kubernetes/cert_expiry.py); documented in k8s_cert_expiry.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import cert_expiry
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_cert_expiry(output, distribution, threshold_days, now=None):
    """cert_expiry.report of kubeadm's or MicroK8s' expiry check output; ``now`` an ISO time (default: now)."""
    moment = cert_expiry.utc(str(now)) if now else None
    return cert_expiry.report(str(distribution), str(output), float(threshold_days), moment)


class FilterModule:
    """gpushare.cluster certificate filters."""

    def filters(self):
        return {"k8s_cert_expiry": _wrap(k8s_cert_expiry)}
