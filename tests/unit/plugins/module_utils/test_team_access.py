# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team access: OIDC settings, the AuthenticationConfiguration, CSRs and per-person kubeconfigs."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access as ta
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import PlanError, build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal.cluster import issue_cert, make_ca

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inventories"
OIDC = {"issuer_url": "https://idp.example.com/realms/gpu", "client_id": "kubernetes",
        "groups_prefix": "idp:", "username_claim": "email"}
TEAMS = [{"name": "training", "namespaces": ["training", "training-dev"], "priority": 10, "group": "ml-training"},
         {"name": "data", "namespaces": ["data"], "priority": 100}]


def _four_gpu():
    return yaml.safe_load((FIXTURES / "four_gpu_example.yml").read_text())


# --- OIDC settings ----------------------------------------------------------------------------

def test_no_identity_provider_is_no_error_and_no_configuration():
    assert ta.oidc_errors({}) == ta.oidc_errors(None) == []
    assert ta.normalise_oidc({}) is None
    assert ta.apiserver_args({}, "/etc/x.yaml") == {} and ta.authentication_file({}, "/etc/x.yaml") == {}
    with pytest.raises(ValueError, match="gpushare_oidc: not set"):
        ta.authentication_configuration({})


@pytest.mark.parametrize("value, message", [
    ("https://idp", "gpushare_oidc: must be a mapping with issuer_url and client_id"),
    ({"client_id": "k"}, "gpushare_oidc.issuer_url: required when gpushare_oidc is set"),
    ({"issuer_url": "https://idp"}, "gpushare_oidc.client_id: required"),
    ({"issuer_url": "http://idp", "client_id": "k"}, "gpushare_oidc.issuer_url: the URL scheme must be https"),
    ({"issuer_url": "https://u:p@idp", "client_id": "k"}, "gpushare_oidc.issuer_url: the URL must not contain a username"),
    ({"issuer_url": "https://idp/?a=b", "client_id": "k"}, "gpushare_oidc.issuer_url: the URL must not contain a query"),
    ({"issuer_url": "https://idp/#x", "client_id": "k"}, "gpushare_oidc.issuer_url: the URL must not contain a fragment"),
    ({"issuer_url": "https://kubernetes.default.svc.cluster.local", "client_id": "k"},
     "gpushare_oidc.issuer_url: it is the cluster's own service-account issuer"),
    ({"issuer_url": "https://idp", "client_id": " k"}, "gpushare_oidc.client_id: must be a non-empty string"),
    ({"issuer_url": "https://idp", "client_id": "k", "groups_prefix": "system:"}, "gpushare_oidc.groups_prefix: 'system:'"),
    ({"issuer_url": "https://idp", "client_id": "k", "username_prefix": 7}, "gpushare_oidc.username_prefix: must be a string"),
    ({"issuer_url": "https://idp", "client_id": "k", "ca_file": "ca.pem"}, "gpushare_oidc.ca_file: must be an absolute path"),
    ({"issuer_url": "https://idp", "client_id": "k", "group_claim": "g"}, "gpushare_oidc.group_claim: unknown field"),
])
def test_bad_oidc_settings_are_refused_naming_the_field(value, message):
    errors = ta.oidc_errors(value)
    assert any(error.startswith(message) for error in errors), errors


def test_the_authentication_configuration_maps_claims_behind_the_prefixes():
    config = ta.authentication_configuration(OIDC, ca_pem="-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n")
    assert config["apiVersion"] == "apiserver.config.k8s.io/v1" and config["kind"] == "AuthenticationConfiguration"
    (jwt,) = config["jwt"]
    assert jwt["issuer"]["url"] == OIDC["issuer_url"] and jwt["issuer"]["audiences"] == ["kubernetes"]
    assert jwt["issuer"]["certificateAuthority"].startswith("-----BEGIN CERTIFICATE-----")
    # With a configuration file the API server defaults nothing: both claims and both prefixes are set.
    assert jwt["claimMappings"] == {"username": {"claim": "email", "prefix": "oidc:"},
                                    "groups": {"claim": "groups", "prefix": "idp:"}}
    assert "certificateAuthority" not in ta.authentication_configuration(OIDC)["jwt"][0]["issuer"]
    assert ta.apiserver_args(OIDC, "/etc/x.yaml") == {"authentication-config": "/etc/x.yaml"}
    written = ta.authentication_file(OIDC, "/etc/x.yaml")
    assert written["content"] == ta.authentication_configuration(OIDC)
    assert written["volume"]["hostPath"] == written["volume"]["mountPath"] == "/etc/x.yaml"
    with pytest.raises(ValueError, match="gpushare_oidc.client_id: required"):
        ta.authentication_file({"issuer_url": "https://idp"}, "/etc/x.yaml")
    assert ta.conflicting_args({"oidc-issuer-url": "x", "event-ttl": "1h"}) == ["oidc-issuer-url"]


# --- the plan ---------------------------------------------------------------------------------

def test_the_plan_binds_the_prefixed_group_and_says_which_group_members_need():
    data = _four_gpu()
    plan = build_plan(data["gpushare_teams"], data["nodes"], oidc=OIDC)
    bindings = {o["metadata"]["namespace"]: o["subjects"][0]["name"] for o in plan["objects"] if o["kind"] == "RoleBinding"}
    assert bindings == {"production": "idp:production-engineers", "data": "idp:data-scientists",
                        "training": "idp:ml-training"}
    assert plan["teams"]["training"]["access"] == {"kubernetes_group": "idp:ml-training",
                                                   "identity_provider_group": "ml-training"}
    assert plan["oidc"]["groups_prefix"] == "idp:" and plan["oidc"]["username_prefix"] == "oidc:"


def test_without_an_identity_provider_the_group_is_bound_as_written():
    data = _four_gpu()
    plan = build_plan(data["gpushare_teams"], data["nodes"])
    bindings = {o["metadata"]["namespace"]: o["subjects"][0]["name"] for o in plan["objects"] if o["kind"] == "RoleBinding"}
    assert bindings["training"] == "ml-training"
    assert plan["teams"]["training"]["access"] == {"kubernetes_group": "ml-training", "identity_provider_group": None}
    assert plan["oidc"] is None


def test_bad_oidc_and_system_groups_are_reported_with_the_other_problems():
    data = _four_gpu()
    teams = copy.deepcopy(data["gpushare_teams"])
    teams[0]["group"] = "system:masters"
    with pytest.raises(PlanError) as caught:
        build_plan(teams, data["nodes"], oidc={"client_id": "k"}, cohort="Bad")
    assert [e.split(":")[0] for e in caught.value.errors] == ["cohort", "gpushare_oidc.issuer_url"]
    with pytest.raises(PlanError, match="team production, field group: 'system:masters' is a Kubernetes system group"):
        build_plan(teams, data["nodes"])


# --- who a credential is for ------------------------------------------------------------------

def test_team_login_names_the_kubernetes_group_and_the_namespaces():
    assert ta.team_login(TEAMS, "training") == {
        "team": "training", "group": "ml-training", "namespaces": ["training", "training-dev"], "queue": "training",
        "identity_provider_group": None}
    assert ta.team_login(TEAMS, "training", OIDC)["group"] == "idp:ml-training"
    with pytest.raises(ValueError, match="no team 'nobody' in gpushare_teams \\(teams: training, data\\)"):
        ta.team_login(TEAMS, "nobody")
    with pytest.raises(ValueError, match="team data, field group: not set"):
        ta.team_login(TEAMS, "data")


@pytest.mark.parametrize("person", ["", "a b", "x" * 65, "system:admin", "systemd", None, "-lead"])
def test_bad_person_names_are_refused(person):
    assert ta.person_errors(person)


def test_good_person_names_and_expirations():
    assert ta.person_errors("tess.t@example.com") == [] and ta.person_errors("tess") == []
    assert ta.expiration_errors(600) == [] and ta.expiration_errors(86400) == []
    for bad in (599, "3600", True, 36.5):
        assert ta.expiration_errors(bad), bad


def test_the_csr_object_asks_the_client_signer_for_the_lifetime():
    key_pem, csr_pem, key_id = ta.new_key_and_csr("tess", "ml-training")
    assert "PRIVATE KEY" in key_pem and "CERTIFICATE REQUEST" in csr_pem and len(key_id) == 8
    name = ta.csr_name("training", "tess@example.com", key_id)
    assert name.startswith("gpushare-training-tess-example-com") and len(name) <= 63
    csr = ta.csr_object(name, csr_pem, "training", "tess", 3600)
    assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert csr["spec"]["expirationSeconds"] == 3600 and "client auth" in csr["spec"]["usages"]
    assert base64.b64decode(csr["spec"]["request"]).decode() == csr_pem
    assert "PRIVATE" not in str(csr)
    from cryptography import x509
    request = x509.load_pem_x509_csr(csr_pem.encode())
    assert request.subject.rfc4514_string() == "CN=tess,O=ml-training"
    # A second key gives a second object, never a clash with the first request.
    assert ta.new_key_and_csr("tess", "ml-training")[2] != key_id


def test_expected_lifetime_follows_the_controller_managers_backdating():
    assert ta.expected_lifetime(3600) == 3900  # short-lived: NotAfter not backdated
    assert ta.expected_lifetime(86400) == 86400
    assert ta.expected_lifetime(60) == 900


def _admin_kubeconfig():
    return {"apiVersion": "v1", "kind": "Config", "current-context": "admin@c",
            "contexts": [{"name": "admin@c", "context": {"cluster": "c", "user": "admin"}}],
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": "Q0E="}}],
            "users": [{"name": "admin", "user": {"client-certificate-data": "x", "client-key-data": "y"}}]}


def test_the_kubeconfig_carries_the_cluster_and_only_the_persons_credentials():
    cluster = ta.admin_cluster(_admin_kubeconfig())
    ca_pem, ca_key = make_ca("test-ca")
    cert, key = issue_cert(ca_pem, ca_key, "tess", ["ml-training"], client=True, days=1)
    doc = ta.kubeconfig_document(cluster, "tess", "training", "training", cert.decode(), key.decode())
    assert doc["clusters"] == [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443",
                                                         "certificate-authority-data": "Q0E="}}]
    assert doc["current-context"] == "tess@training@c"
    assert doc["contexts"][0]["context"] == {"cluster": "c", "user": "tess@training", "namespace": "training"}
    assert "admin" not in yaml.safe_dump(doc)
    assert ta.kubeconfig_certificate(doc) == cert.decode()
    assert ta.certificate_pem(base64.b64encode(cert).decode()) == ta.certificate_pem(cert) == cert.decode()
    facts = ta.certificate_facts(cert.decode())
    assert facts["common_name"] == "tess" and facts["organizations"] == ["ml-training"]
    assert ta.reusable(doc, "tess", "ml-training", 3600)
    assert not ta.reusable(doc, "tess", "data-scientists", 3600)
    assert not ta.reusable(doc, "tess", "ml-training", 2 * 86400)  # expires too soon: renew
    assert not ta.reusable(None, "tess", "ml-training", 0)
    server = ta.kubeconfig_document(cluster, "tess", "training", "training", "c", "k", server="https://vip:6443")
    assert server["clusters"][0]["cluster"]["server"] == "https://vip:6443"


def test_an_admin_kubeconfig_without_an_embedded_ca_is_refused():
    config = _admin_kubeconfig()
    del config["clusters"][0]["cluster"]["certificate-authority-data"]
    with pytest.raises(ValueError, match="no certificate-authority-data"):
        ta.admin_cluster(config)
    with pytest.raises(ValueError, match="no context 'other'"):
        ta.admin_cluster(_admin_kubeconfig(), "other")


def _read(path):
    return Path(path).read_text()


def test_the_ca_file_must_be_a_readable_pem_on_the_controller(tmp_path):
    good = tmp_path / "ca.pem"
    good.write_bytes(make_ca("idp")[0])
    bad = tmp_path / "ca.txt"
    bad.write_text("not a certificate")
    assert ta.ca_file_errors(dict(OIDC, ca_file=str(good)), _read) == []
    assert ta.ca_file_errors(OIDC, _read) == [] and ta.ca_file_errors(None, _read) == []
    assert ta.ca_file_errors(dict(OIDC, ca_file=str(bad)), _read) == ["gpushare_oidc.ca_file: %s holds no PEM certificate" % bad]
    (missing,) = ta.ca_file_errors(dict(OIDC, ca_file=str(tmp_path / "none.pem")), _read)
    assert missing.startswith("gpushare_oidc.ca_file: cannot read %s on the controller" % (tmp_path / "none.pem"))
