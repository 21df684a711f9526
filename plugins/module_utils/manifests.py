# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes objects -> YAML manifest files, one file per kind or per layer.

File names carry an order prefix, so applying the files in name order creates what
others refer to first (Namespaces before the objects inside them, DeviceClasses and
ResourceFlavors before the queues and claims that name them, policies before bindings).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping

from ansible_collections.gpushare.cluster.plugins.module_utils._common import yaml_text

# (kind, layer) in apply order.
KIND_ORDER = (
    ("Namespace", "tenancy"),
    ("DeviceClass", "dra"),
    ("ResourceFlavor", "kueue"),
    ("Cohort", "kueue"),
    ("WorkloadPriorityClass", "kueue"),
    ("ClusterQueue", "kueue"),
    ("LocalQueue", "kueue"),
    ("Role", "tenancy"),
    ("RoleBinding", "tenancy"),
    ("ResourceClaimTemplate", "dra"),
    ("ResourceClaim", "dra"),
    ("ValidatingAdmissionPolicy", "tenancy"),
    ("ValidatingAdmissionPolicyBinding", "tenancy"),
)
LAYER_ORDER = ("tenancy", "dra", "kueue")
_KIND_RANK = {pair[0]: rank for rank, pair in enumerate(KIND_ORDER)}
_KIND_LAYER = dict(KIND_ORDER)


def _kebab(kind: str) -> str:
    out = []
    for position, char in enumerate(kind):
        if char.isupper() and position:
            out.append("-")
        out.append(char.lower())
    return "".join(out)


def dump_documents(objects: Iterable[Mapping[str, Any]]) -> str:
    """Objects as one multi-document YAML text (keys in the order given)."""
    return yaml_text.dump_documents(dict(o) for o in objects)


def group_objects(objects: Iterable[Mapping[str, Any]], by: str = "kind") -> Dict[str, List[Mapping[str, Any]]]:
    """File name -> objects. ``by`` is ``kind`` (``05-cluster-queue.yaml``) or ``layer`` (``1-dra.yaml``)."""
    if by not in ("kind", "layer"):
        raise ValueError("group objects by 'kind' or 'layer', not %r" % (by,))
    grouped: Dict[str, List[Mapping[str, Any]]] = {}
    for obj in objects:
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ValueError("object without kind: %r" % (obj.get("metadata"),))
        if by == "kind":
            rank = _KIND_RANK.get(kind, len(KIND_ORDER))
            name = "%02d-%s.yaml" % (rank, _kebab(kind))
        else:
            layer = _KIND_LAYER.get(kind, "other")
            rank = LAYER_ORDER.index(layer) if layer in LAYER_ORDER else len(LAYER_ORDER)
            name = "%d-%s.yaml" % (rank, layer)
        grouped.setdefault(name, []).append(obj)
    if by == "layer":
        # Inside a layer file, still apply in kind order.
        for name, items in grouped.items():
            grouped[name] = sorted(items, key=lambda o: _KIND_RANK.get(o["kind"], len(KIND_ORDER)))
    return dict(sorted(grouped.items()))


def render_files(objects: Iterable[Mapping[str, Any]], by: str = "kind") -> Dict[str, str]:
    """File name -> YAML text, ready to be written under a manifests directory."""
    return {name: dump_documents(items) for name, items in group_objects(objects, by).items()}
