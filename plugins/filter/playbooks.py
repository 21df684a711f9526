# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the collection's playbooks use.

Example (a layer play targets no host unless --tags asks for it):
  hosts: "{{ 'control_plane:workers' if ansible_run_tags | gpushare.cluster.layer_selected(['prepare_hosts', 'host_prep']) else [] }}"
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import run_tags
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def layer_selected(tags, layer_tags):
    """``ansible_run_tags | layer_selected(['prepare_hosts', 'host_prep', ...])`` -> bool."""
    return run_tags.layer_selected(tags, layer_tags)


class FilterModule:
    """gpushare.cluster playbook filters."""

    def filters(self):
        return {"layer_selected": _wrap(layer_selected)}
