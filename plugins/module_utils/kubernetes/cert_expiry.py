# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which control-plane certificates expire soon, from what the distributions' own tools print.

kubeadm: ``kubeadm certs check-expiration -o json`` prints an
``output.kubeadm.k8s.io/v1alpha3`` ``CertificateExpirationInfo`` (kubernetes v1.35.4,
cmd/kubeadm/app/apis/output/v1alpha3/types.go: ``certificates`` and
``certificateAuthorities``, each ``{name, expirationDate, residualTime (seconds),
externallyManaged, caName, missing}``). The text form (cmd/kubeadm/app/cmd/certs.go,
certTextPrinter: a tabwriter table, dates as ``Jan 02, 2006 15:04 MST``, ``!MISSING! <name>``
rows) is parsed too, for output saved by hand. ``kubeadm certs renew all`` renews the leaf
certificates and kubeconfig files, never a CA, and the control-plane components read them
only after a restart (the same certs.go prints that after renewing).

MicroK8s: ``microk8s refresh-certs --check`` prints one line per file it manages
(``ca.crt``, ``server.crt``, ``front-proxy-client.crt``): ``The <label> certificate will
expire in <n> days.``; ``refresh-certs -e <file>`` renews one of them (canonical/microk8s,
scripts/wrappers/refresh_certs.py).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any, Dict, List, Optional

KUBEADM_DATE = "%b %d, %Y %H:%M UTC"
# refresh_certs.py: file -> the label its check prints.
MICROK8S_CERTS = {"ca.crt": "CA", "server.crt": "server", "front-proxy-client.crt": "front proxy client"}
MICROK8S_CA = "ca.crt"
_MICROK8S_LINE = re.compile(r"^The (?P<label>.+?) certificate will expire in (?P<days>-?\d+) days?\.?\s*$")


def utc(value: str) -> _dt.datetime:
    """An RFC 3339 time (``Z`` or an offset; none = UTC) as an aware datetime."""
    text = value.strip().replace("Z", "+00:00")
    parsed = _dt.datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.timezone.utc)


def _entry(name: str, expires: Optional[_dt.datetime], now: _dt.datetime, authority: bool, ca: str = "",
           externally_managed: bool = False, missing: bool = False) -> Dict[str, Any]:
    days = None if expires is None else (expires - now).total_seconds() / 86400.0
    return {"name": name, "authority": authority, "ca": ca, "externally_managed": externally_managed,
            "missing": missing, "expires": expires.strftime("%Y-%m-%dT%H:%M:%SZ") if expires else None,
            "days_left": None if days is None else round(days, 2)}


def _kubeadm_json(info: Dict[str, Any], now: _dt.datetime) -> List[Dict[str, Any]]:
    if info.get("kind") != "CertificateExpirationInfo":
        raise ValueError("kubeadm certs check-expiration: expected kind CertificateExpirationInfo, got %r"
                         % (info.get("kind"),))
    entries = []
    for key, authority in (("certificates", False), ("certificateAuthorities", True)):
        for cert in info.get(key) or []:
            missing = bool(cert.get("missing"))
            expires = None if missing or not cert.get("expirationDate") else utc(str(cert["expirationDate"]))
            entries.append(_entry(str(cert["name"]), expires, now, authority, str(cert.get("caName") or ""),
                                  bool(cert.get("externallyManaged")), missing))
    return entries


def _kubeadm_text(text: str, now: _dt.datetime) -> List[Dict[str, Any]]:
    entries: List[Dict[str, Any]] = []
    authority = None
    for line in text.splitlines():
        if line.startswith("CERTIFICATE AUTHORITY"):
            authority = True
            continue
        if line.startswith("CERTIFICATE"):
            authority = False
            continue
        if authority is None or not line.strip():
            continue
        if line.startswith("!MISSING! "):
            entries.append(_entry(line.split()[1], None, now, authority, missing=True))
            continue
        # tabwriter pads columns with at least three spaces (certs.go: padding 3).
        cells = re.split(r"\s{3,}", line.strip())
        expected = 4 if authority else 5
        if len(cells) != expected:
            raise ValueError("kubeadm certs check-expiration: cannot read the row %r" % line.strip())
        expires = _dt.datetime.strptime(cells[1], KUBEADM_DATE).replace(tzinfo=_dt.timezone.utc)
        entries.append(_entry(cells[0], expires, now, authority, "" if authority else cells[3],
                              cells[-1].strip() == "yes"))
    if authority is None:
        raise ValueError("kubeadm certs check-expiration: no CERTIFICATE table in the output")
    return entries


def parse_kubeadm(output: str, now: _dt.datetime) -> List[Dict[str, Any]]:
    """Certificates of ``kubeadm certs check-expiration`` (JSON or text output)."""
    stripped = output.strip()
    start = stripped.find("{")
    if start >= 0 and stripped.rstrip().endswith("}"):
        return _kubeadm_json(json.loads(stripped[start:]), now)
    return _kubeadm_text(output, now)


def parse_microk8s(output: str, now: _dt.datetime) -> List[Dict[str, Any]]:
    """Certificates of ``microk8s refresh-certs --check``."""
    by_label = {label: name for name, label in MICROK8S_CERTS.items()}
    entries = []
    for line in output.splitlines():
        match = _MICROK8S_LINE.match(line.strip())
        if not match:
            continue
        name = by_label.get(match.group("label"))
        if name is None:
            raise ValueError("microk8s refresh-certs --check: unknown certificate %r" % match.group("label"))
        expires = now + _dt.timedelta(days=int(match.group("days")))
        entries.append(_entry(name, expires, now, name == MICROK8S_CA))
    if not entries:
        raise ValueError("microk8s refresh-certs --check: no certificate line in the output")
    return entries


def report(distribution: str, output: str, threshold_days: float, now: Optional[_dt.datetime] = None
           ) -> Dict[str, Any]:
    """What expires within ``threshold_days`` and what to do about it.

    ``renew``: leaf certificates the distribution's tool renews (kubeadm: not externally
    managed; one ``kubeadm certs renew all`` covers them). ``authorities``: CAs within the
    threshold, which no renewal here replaces (a CA rotation is a manual procedure).
    ``missing``: certificates kubeadm expects but did not find.
    """
    if threshold_days is None or float(threshold_days) <= 0:
        raise ValueError("threshold_days: must be a positive number of days, got %r" % (threshold_days,))
    now = now or _dt.datetime.now(_dt.timezone.utc)
    if distribution == "kubeadm":
        entries = parse_kubeadm(output, now)
    elif distribution == "microk8s":
        entries = parse_microk8s(output, now)
    else:
        raise ValueError("distribution: must be kubeadm or microk8s, got %r" % (distribution,))
    soon = [entry for entry in entries if entry["days_left"] is not None and entry["days_left"] < float(threshold_days)]
    return {
        "certificates": entries,
        "renew": sorted(entry["name"] for entry in soon if not entry["authority"] and not entry["externally_managed"]),
        "authorities": sorted(entry["name"] for entry in soon if entry["authority"]),
        "externally_managed": sorted(entry["name"] for entry in soon
                                     if entry["externally_managed"] and not entry["authority"]),
        "missing": sorted(entry["name"] for entry in entries if entry["missing"]),
        "soonest_days": min((entry["days_left"] for entry in entries if entry["days_left"] is not None), default=None),
    }
