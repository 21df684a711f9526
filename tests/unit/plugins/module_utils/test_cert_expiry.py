# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cert_expiry on the output forms of the distributions' tools.

The fixtures (tests/fixtures/cert_expiry) are written in the forms the pinned sources
print: kubeadm v1.35.4's JSON (cmd/kubeadm/app/apis/output/v1alpha3/types.go field names)
and text table (cmd/kubeadm/app/cmd/certs.go certTextPrinter: tabwriter padding 3, dates
"Jan 02, 2006 15:04 MST", "!MISSING! <name>" rows, the [check-expiration] preamble), and
MicroK8s' refresh-certs --check lines; both kubeadm files describe the same certificates.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import cert_expiry

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "cert_expiry"
NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.timezone.utc)


def _read(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["kubeadm-1.35.json", "kubeadm-1.35.txt"])
def test_kubeadm_forms_name_what_to_renew(name):
    result = cert_expiry.report("kubeadm", _read(name), 30, NOW)
    assert result["renew"] == ["admin.conf", "apiserver-etcd-client"]
    assert result["authorities"] == []
    assert result["externally_managed"] == ["front-proxy-client"]  # not kubeadm's to renew
    assert result["missing"] == ["super-admin.conf"]
    assert 1.8 < result["soonest_days"] < 1.9


def test_json_and_text_agree():
    def by_name(text):
        # The text table's !MISSING! row names no CA; everything else is in both forms.
        return {entry["name"]: dict(entry, ca=None) if entry["missing"] else entry
                for entry in cert_expiry.parse_kubeadm(text, NOW)}
    assert by_name(_read("kubeadm-1.35.json")) == by_name(_read("kubeadm-1.35.txt"))


def test_a_certificate_authority_is_never_to_renew():
    result = cert_expiry.report("kubeadm", _read("kubeadm-1.35.json"), 70, NOW)
    assert result["authorities"] == ["etcd-ca"] and "etcd-ca" not in result["renew"]  # kubeadm renews no CA


def test_the_threshold_decides():
    assert cert_expiry.report("kubeadm", _read("kubeadm-1.35.json"), 7, NOW)["renew"] == ["apiserver-etcd-client"]
    assert cert_expiry.report("kubeadm", _read("kubeadm-1.35.json"), 400, NOW)["renew"] == [
        "admin.conf", "apiserver", "apiserver-etcd-client", "etcd-server"]


def test_microk8s_check_output():
    result = cert_expiry.report("microk8s", _read("microk8s.txt"), 30, NOW)
    assert result["renew"] == ["front-proxy-client.crt", "server.crt"]
    assert result["authorities"] == []
    assert result["soonest_days"] == -4


@pytest.mark.parametrize("distribution, output, message", [
    ("kubeadm", '{"kind": "UpgradePlan"}', "expected kind CertificateExpirationInfo"),
    ("kubeadm", "error: unable to read config", "no CERTIFICATE table"),
    ("kubeadm", "CERTIFICATE   EXPIRES\nadmin.conf   soon", "cannot read the row"),
    ("microk8s", "nothing here", "no certificate line"),
    ("microk8s", "The etcd certificate will expire in 3 days.", "unknown certificate 'etcd'"),
    ("k3s", "", "distribution: must be kubeadm or microk8s"),
])
def test_unreadable_output_is_named(distribution, output, message):
    with pytest.raises(ValueError, match=message):
        cert_expiry.report(distribution, output, 30, NOW)


def test_threshold_must_be_positive():
    with pytest.raises(ValueError, match="threshold_days"):
        cert_expiry.report("kubeadm", _read("kubeadm-1.35.json"), 0, NOW)
