# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that say what an add-on apply left not ready (plugins/module_utils/render/helm_values.py); documented in
cluster_queue_problems.yml and not_available.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


class FilterModule:
    """gpushare.cluster readiness filters."""

    def filters(self):
        return {
            "cluster_queue_problems": _wrap(helm_values.cluster_queue_problems),
            "not_available": _wrap(helm_values.not_available),
        }
