# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_etcd_restore_commands filter (plugins/module_utils/kubernetes/etcd_restore.py);
documented in k8s_etcd_restore_commands.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import etcd_restore
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def k8s_etcd_restore_commands(manifests, snapshot, token, etcdutl="etcdutl", manifest=etcd_restore.MANIFEST):
    return etcd_restore.restore_commands({str(k): str(v) for k, v in dict(manifests or {}).items()},
                                         str(snapshot), str(token), str(etcdutl), str(manifest))


class FilterModule:
    """gpushare.cluster etcd restore filter."""

    def filters(self):
        return {"k8s_etcd_restore_commands": _wrap(k8s_etcd_restore_commands)}
