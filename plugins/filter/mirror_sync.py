# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the air gap's mirror manifest and sync (plugins/module_utils/airgap/manifest.py); documented in
mirror_manifest.yml, mirror_sync_plan.yml and mirror_missing_images.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.airgap import manifest as mirror_manifest
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


class FilterModule:
    """gpushare.cluster mirror manifest filters."""

    def filters(self):
        return {
            "mirror_manifest": _wrap(mirror_manifest.build_manifest),
            "mirror_sync_plan": _wrap(mirror_manifest.sync_plan),
            "mirror_missing_images": _wrap(mirror_manifest.missing_images),
        }
