# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the GPU node relabel, one node at a time (plugins/module_utils/render/helm_values.py); documented in
relabel_steps.yml, gpu_pods.yml and node_back_problems.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.render import helm_values
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


class FilterModule:
    """gpushare.cluster node relabel filters."""

    def filters(self):
        return {
            "relabel_steps": _wrap(helm_values.relabel_steps),
            "gpu_pods": _wrap(helm_values.gpu_pods),
            "node_back_problems": _wrap(helm_values.node_back_problems),
        }
