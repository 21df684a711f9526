# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes object names made from inventory text: valid, unique and stable.

Rules (Kubernetes v1.35.4, staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go):
a DNS-1123 label is at most 63 characters of ``[a-z0-9-]``, starting and ending with an
alphanumeric (``IsDNS1123Label``); a DNS-1123 subdomain is at most 253 characters of such
labels joined by dots (``IsDNS1123Subdomain``). Namespaces, Services and the containers of a
pod need labels; Deployments, ConfigMaps, ResourceClaims, DeviceClasses and Nodes need
subdomains.

A name is derived from its text by lower-casing it and replacing every other character by
``-``. Whenever that changes anything but the case of an already valid name, or the name is
too long, a short hash of the *original* text is appended, so two different texts never
collapse into one name (``model_a``, ``Model-A`` and ``model-a`` give three names) and the
same text gives the same name on every run. Non-ASCII letters are never kept.

Node names are not made here: Kubernetes picks them (the kubelet lower-cases the host name,
k8s.io/kubernetes v1.35.4 pkg/util/node/node.go ``GetHostname``), so :func:`node_name` only
reproduces that and :func:`node_name_error` says when the result is not a valid Node name.
"""

from __future__ import annotations

import hashlib
import re
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
HASH_LENGTH = 8

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NOT_LABEL_CHARS = re.compile(r"[^a-z0-9]+")


def is_dns_label(text: object) -> bool:
    return isinstance(text, str) and len(text) <= LABEL_MAX and bool(_LABEL.match(text))


def is_dns_subdomain(text: object) -> bool:
    return isinstance(text, str) and len(text) <= SUBDOMAIN_MAX and bool(_SUBDOMAIN.match(text))


def short_hash(text: str) -> str:
    """Eight hex digits of the SHA-256 of ``text``: stable across runs and Python versions."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def _clean(text: str) -> str:
    return _NOT_LABEL_CHARS.sub("-", text.lower()).strip("-")


def dns_label(*parts: object, max_length: int = LABEL_MAX) -> str:
    """A DNS-1123 label from ``parts`` joined by ``-`` (see the module docstring)."""
    if not 1 + HASH_LENGTH < max_length <= LABEL_MAX:
        raise ValueError("max_length must be between %d and %d" % (HASH_LENGTH + 2, LABEL_MAX))
    raw = "-".join(str(part) for part in parts)
    if is_dns_label(raw) and len(raw) <= max_length:
        return raw
    clean = _clean(raw)
    room = max_length - HASH_LENGTH - 1
    stem = clean[:room].strip("-")
    return "%s-%s" % (stem, short_hash(raw)) if stem else "x-%s" % short_hash(raw)


def dns_subdomain(*parts: object, max_length: int = SUBDOMAIN_MAX) -> str:
    """A DNS-1123 subdomain from ``parts`` joined by ``.``: each part becomes a label."""
    raw = ".".join(str(part) for part in parts)
    if is_dns_subdomain(raw) and len(raw) <= max_length:
        return raw
    labels = [part if is_dns_label(part) else dns_label(part) for part in (str(p) for p in parts)]
    joined = ".".join(labels)
    if len(joined) <= max_length:
        return joined
    return dns_label(raw)


def node_name(host: str, override: Optional[str] = None) -> str:
    """The Node name Kubernetes gives ``host``: ``override`` when set, else the short host name, lower case.

    The roles default their node name to the same (``inventory_hostname_short | lower`` when
    no hostname fact is known, roles/kubernetes_common/defaults/main.yml).
    """
    if override:
        return str(override)
    return str(host).split(".", 1)[0].lower()


def node_name_error(host: str, name: str) -> Optional[str]:
    if is_dns_subdomain(name):
        return None
    return ("host %s, field node name: %r is not a valid Kubernetes Node name (lower-case a-z, 0-9, '-' and '.', "
            "at most 253 characters); rename the host or set kubernetes_common_node_name" % (host, name))


def duplicates(kind: str, named: Iterable[Tuple[str, str]]) -> List[str]:
    """Errors for every name given to more than one source; ``named`` yields (name, source)."""
    seen: Dict[str, List[str]] = {}
    for name, source in named:
        seen.setdefault(name, []).append(source)
    return ["%s name %s: given to %s; every %s needs its own name" % (kind, name, " and ".join(sources), kind)
            for name, sources in sorted(seen.items()) if len(sources) > 1]


def invalid(kind: str, names: Mapping[str, str], label: bool = False) -> List[str]:
    """Errors for every name that is not a valid label (``label``) or subdomain; ``names``: name -> source."""
    check = is_dns_label if label else is_dns_subdomain
    return ["%s: %s name %r is not a valid DNS-1123 %s" % (source, kind, name, "label" if label else "subdomain")
            for name, source in sorted(names.items()) if not check(name)]
