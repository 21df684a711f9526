# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which cluster objects the collection owns, and which plan wrote them.

Every object the collection renders from a plan carries ``MANAGED_BY_LABEL: MANAGED_BY``
(the recommended label of https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/)
and ``GENERATION_LABEL``: a short hash of the plan that wrote it. Pruning deletes only objects
with the first label, so an object someone else created is never touched; comparing two plans
ignores the second, which changes whenever anything in the plan does.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Dict, Iterable, List, Mapping

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpushare.cluster"
GENERATION_LABEL = "gpushare.io/plan-generation"


def generation(objects: Iterable[Mapping[str, Any]]) -> str:
    """Twelve hex digits naming the plan generation: a hash of ``objects`` without the two
    ownership labels, so stamped and unstamped objects have the same generation."""
    text = json.dumps([_unstamped(obj) for obj in objects], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def stamp(objects: Iterable[Mapping[str, Any]], plan_generation: str) -> List[Dict[str, Any]]:
    """Copies of ``objects`` carrying the ownership label and ``plan_generation``."""
    stamped = []
    for obj in objects:
        copied = copy.deepcopy(dict(obj))
        labels = copied.setdefault("metadata", {}).setdefault("labels", {})
        labels[MANAGED_BY_LABEL] = MANAGED_BY
        labels[GENERATION_LABEL] = plan_generation
        stamped.append(copied)
    return stamped


def generation_of(objects: Iterable[Mapping[str, Any]]) -> str:
    """The generation the stamped ``objects`` carry (the first one's label), else their hash:
    objects made from the plan's other sections (the tenancy boundaries) take the plan's own."""
    objects = list(objects)
    for obj in objects:
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(GENERATION_LABEL)
        if label:
            return str(label)
    return generation(objects)


def is_owned(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` (as rendered or as read from the cluster) is one of the collection's."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY


def _unstamped(obj: Mapping[str, Any]) -> Dict[str, Any]:
    copied = copy.deepcopy(dict(obj))
    metadata = copied.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    if isinstance(labels, dict):
        labels.pop(GENERATION_LABEL, None)
        labels.pop(MANAGED_BY_LABEL, None)
        if not labels:
            del metadata["labels"]
    return copied
