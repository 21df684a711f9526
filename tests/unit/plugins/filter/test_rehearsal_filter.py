# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rehearsal_gpu_facts: what rehearse.yml sets as a GPU host's facts before it plans."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.filter.rehearsal import FilterModule
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import world

FILTER = FilterModule().filters()["rehearsal_gpu_facts"]


def test_each_gpu_gets_the_uuid_the_simulated_world_publishes():
    facts = FILTER([{"index": 0, "model": "RTX-PRO-6000", "team": "a", "use": "whole"},
                    {"index": 1, "model": "RTX-PRO-6000", "team": "a", "use": "shared", "replicas": 2}], "gpu1")
    assert facts["source"] == "rehearsal"
    assert [(g["index"], g["uuid"]) for g in facts["gpus"]] == [
        (0, world.gpu_uuid("gpu1", {"index": 0})), (1, world.gpu_uuid("gpu1", {"index": 1}))]
    assert facts["gpus"][0]["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def test_nothing_is_made_up_for_a_gpu_without_model():
    assert FILTER([{"index": 0, "team": "a", "use": "whole"}], "gpu1") is None
