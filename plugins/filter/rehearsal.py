# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal_gpu_facts filter (plugins/module_utils/rehearsal/world.py); documented in rehearsal_gpu_facts.yml."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal.world import simulated_gpu_facts


def rehearsal_gpu_facts(entries, host):
    """The gpushare_gpu_facts of a rehearsal host: its inventory GPUs with the UUIDs the rehearsal publishes."""
    return simulated_gpu_facts(str(host), entries)


class FilterModule:
    """gpushare.cluster rehearsal filters."""

    def filters(self):
        return {"rehearsal_gpu_facts": rehearsal_gpu_facts}
