# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a person logs in as a member of a team: API server OIDC settings and per-team kubeconfigs.

Two ways, both ending in the Kubernetes group the team's RoleBinding names (isolation.rbac):

- sites with an identity provider set ``gpushare_oidc``; the API server then accepts the
  provider's ID tokens and maps their groups claim, behind ``groups_prefix``, to Kubernetes
  groups. A team's RoleBinding names ``groups_prefix + group``, so ``group`` is the group's
  name *in the identity provider*.
- sites without one issue a short-lived client certificate per person (playbooks/team_access.yml)
  through the CertificateSigningRequest API: CN = the person, O = the team's Kubernetes group.

At the supported Kubernetes minors (1.34-1.36) the OIDC settings go into an
``AuthenticationConfiguration`` file (``--authentication-config``), not the ``--oidc-*`` flags:
StructuredAuthenticationConfiguration is GA and locked on since 1.34 (k8s.io/apiserver v0.35.4
``pkg/features/kube_features.go``), the file is re-read every minute without a restart and the
two are mutually exclusive (k8s.io/kubernetes v1.35.4 ``pkg/kubeapiserver/options/authentication.go``,
``AddFlags`` and ``Validate``). The field rules below are the API server's own
(k8s.io/apiserver v0.35.4 ``pkg/apis/apiserver/validation/validation.go``), so a bad value is
refused by the plan, not by an API server that does not start.

Pure functions raising nothing: every check returns the list of its errors, each naming the
field. The key and CSR helpers at the end need the ``cryptography`` package.
"""

from __future__ import annotations

import base64
import datetime
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from ansible_collections.gpushare.cluster.plugins.module_utils._common import names
from ansible_collections.gpushare.cluster.plugins.module_utils._common.vocabulary import TEAM_LABEL

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - reported by the callers
    HAS_CRYPTOGRAPHY = False

OIDC_VARIABLE = "gpushare_oidc"
AUTHENTICATION_API = "apiserver.config.k8s.io/v1"
AUTHENTICATION_CONFIG_ARG = "authentication-config"
#: kubeadm's --service-account-issuer; the API server refuses a JWT issuer that overlaps it.
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# Field -> default (None: required). The prefixes default to "oidc:" so that no name an identity
# provider sends can be mistaken for a certificate's or a service account's (the API server
# adds no prefix by itself with a configuration file: ClaimMappings.Username, v0.35.4 types.go).
OIDC_FIELDS: Dict[str, Optional[str]] = {
    "issuer_url": None,
    "client_id": None,
    "username_claim": "sub",
    "groups_claim": "groups",
    "username_prefix": "oidc:",
    "groups_prefix": "oidc:",
    "ca_file": "",
}

#: The signer of client certificates the API server accepts (kube-controller-manager signs it
#: with --cluster-signing-cert-file/--cluster-signing-key-file).
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
#: k8s.io/kubernetes v1.35.4 pkg/apis/certificates/validation/validation.go: expirationSeconds >= 600.
MIN_EXPIRATION_SECONDS = 600
DEFAULT_EXPIRATION_SECONDS = 86400
#: kube-controller-manager backdates NotBefore by 5 minutes, and NotAfter too when the lifetime
#: is 8 hours or more (v1.35.4 pkg/controller/certificates/signer/signer.go, authority/policies.go).
SIGNER_BACKDATE_SECONDS = 300
SIGNER_SHORT_SECONDS = 8 * 3600
PERSON_ANNOTATION = "gpushare.io/person"
# X.509 caps a common name at 64 characters (RFC 5280 ub-common-name); "system:" names are
# Kubernetes' own identities.
_PERSON = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() == value and bool(value)


def oidc_errors(value: Any) -> List[str]:
    """Every problem of a ``gpushare_oidc`` value; ``{}`` or None (no identity provider) has none."""
    if value is None or value == {}:
        return []
    if not isinstance(value, Mapping):
        return ["%s: must be a mapping with issuer_url and client_id (docs/security.md), got %r"
                % (OIDC_VARIABLE, value)]
    errors = ["%s.%s: unknown field; known are %s" % (OIDC_VARIABLE, key, ", ".join(OIDC_FIELDS))
              for key in sorted(map(str, value)) if key not in OIDC_FIELDS]
    for field, default in OIDC_FIELDS.items():
        where = "%s.%s" % (OIDC_VARIABLE, field)
        given = value.get(field)
        if given is None:
            if default is None:
                errors.append("%s: required when %s is set" % (where, OIDC_VARIABLE))
            continue
        if not isinstance(given, str):
            errors.append("%s: must be a string, got %r" % (where, given))
        elif field.endswith("_prefix"):
            if given.startswith("system:"):
                errors.append("%s: %r would make identity-provider names look like Kubernetes' own "
                              "system: identities; use e.g. 'oidc:'" % (where, given))
        elif field == "ca_file":
            if given and not given.startswith("/"):
                errors.append("%s: must be an absolute path on the controller to a PEM file, got %r" % (where, given))
        elif not _is_text(given):
            errors.append("%s: must be a non-empty string without surrounding spaces, got %r" % (where, given))
        elif field == "issuer_url":
            errors += _issuer_url_errors(where, given)
    return errors


def _issuer_url_errors(where: str, url: str) -> List[str]:
    # The API server's validateIssuerURL (validation.go, v0.35.4), in its words.
    try:
        parts = urlsplit(url)
    except ValueError as error:
        return ["%s: %r is not a URL (%s)" % (where, url, error)]
    problems = []
    if parts.scheme != "https" or not parts.hostname:
        problems.append("the URL scheme must be https and it needs a host")
    if parts.username or parts.password:
        problems.append("the URL must not contain a username or password")
    if parts.query:
        problems.append("the URL must not contain a query")
    if parts.fragment:
        problems.append("the URL must not contain a fragment")
    if url.rstrip("/") == SERVICE_ACCOUNT_ISSUER:
        problems.append("it is the cluster's own service-account issuer")
    return ["%s: %s, got %r (kube-apiserver refuses it)" % (where, problem, url) for problem in problems]


def ca_file_errors(oidc: Any, read: Callable[[str], str]) -> List[str]:
    """The ``ca_file`` problems only the controller can see: ``read(path)`` returns its text or raises OSError."""
    path = oidc.get("ca_file") if isinstance(oidc, Mapping) else None
    if not isinstance(path, str) or not path.startswith("/"):
        return []  # none given, or already reported by oidc_errors
    where = "%s.ca_file" % OIDC_VARIABLE
    try:
        text = read(path)
    except (OSError, UnicodeDecodeError) as error:
        return ["%s: cannot read %s on the controller (%s)" % (where, path, error)]
    if "-----BEGIN CERTIFICATE-----" not in text:
        return ["%s: %s holds no PEM certificate" % (where, path)]
    return []


def normalise_oidc(value: Any) -> Optional[Dict[str, str]]:
    """The settings with defaults filled in, or None without an identity provider (value unchecked)."""
    if not value:
        return None
    return {field: str(value[field]) if value.get(field) is not None else str(default or "")
            for field, default in OIDC_FIELDS.items()}


def groups_prefix(oidc: Any) -> str:
    settings = normalise_oidc(oidc)
    return settings["groups_prefix"] if settings else ""


def kubernetes_group(group: Optional[str], oidc: Any = None) -> Optional[str]:
    """The group a team's RoleBinding names: the identity provider's group behind its prefix."""
    return None if not group else groups_prefix(oidc) + group


def team_group_errors(groups: Sequence[Tuple[str, Optional[str]]], oidc: Any = None) -> List[str]:
    """``(team, group)`` pairs whose Kubernetes group would be one of Kubernetes' own (system:masters ...)."""
    errors = []
    for team, group in groups:
        kube_group = kubernetes_group(group, oidc) if isinstance(group, str) else None
        if kube_group and kube_group.startswith("system:"):
            errors.append("team %s, field group: %r is a Kubernetes system group; the team's members would get "
                          "what Kubernetes gives that group" % (team, kube_group))
    return errors


def team_login(teams: Any, team: str, oidc: Any = None) -> Dict[str, Any]:
    """What a member of ``team`` logs in as: ``{team, group, namespaces, queue, identity_provider_group}``.

    ``group`` is the Kubernetes group (a certificate's O); ``identity_provider_group`` the group
    the person must be in at the identity provider (None without one). Raises ValueError.
    """
    found = [t for t in teams or [] if isinstance(t, Mapping) and t.get("name") == team]
    if not found:
        known = ", ".join(str(t.get("name")) for t in teams or [] if isinstance(t, Mapping))
        raise ValueError("team_access_team: no team %r in gpushare_teams (teams: %s)" % (team, known or "none"))
    entry = found[0]
    errors = team_group_errors([(team, entry.get("group"))], oidc)
    if not entry.get("group"):
        errors.append("team %s, field group: not set, so the team's RoleBinding names nobody and a credential "
                      "would give no access; set the team's group (docs/security.md)" % team)
    if errors:
        raise ValueError("; ".join(errors))
    namespaces = list(entry.get("namespaces") or [team])
    return {"team": team, "group": kubernetes_group(entry["group"], oidc), "namespaces": namespaces,
            "queue": team, "identity_provider_group": entry["group"] if normalise_oidc(oidc) else None}


def authentication_configuration(oidc: Mapping[str, Any], ca_pem: str = "") -> Dict[str, Any]:
    """The API server's AuthenticationConfiguration for one identity provider (the settings checked)."""
    settings = normalise_oidc(oidc)
    if settings is None:
        raise ValueError("%s: not set, no authentication configuration to write" % OIDC_VARIABLE)
    issuer: Dict[str, Any] = {"url": settings["issuer_url"], "audiences": [settings["client_id"]]}
    if ca_pem.strip():
        issuer["certificateAuthority"] = ca_pem.strip() + "\n"
    return {
        "apiVersion": AUTHENTICATION_API,
        "kind": "AuthenticationConfiguration",
        "jwt": [{
            "issuer": issuer,
            "claimMappings": {
                "username": {"claim": settings["username_claim"], "prefix": settings["username_prefix"]},
                "groups": {"claim": settings["groups_claim"], "prefix": settings["groups_prefix"]},
            },
        }],
    }


def apiserver_args(oidc: Any, path: str) -> Dict[str, str]:
    """The API server argument that loads the file, or nothing without an identity provider."""
    return {AUTHENTICATION_CONFIG_ARG: path} if normalise_oidc(oidc) else {}


def authentication_file(oidc: Any, path: str, ca_pem: str = "") -> Dict[str, Any]:
    """What a Kubernetes role writes for ``gpushare_oidc``: ``{}`` without one, else ``{path, content,
    apiserver_args, volume}`` (``volume``: the kubeadm ``apiServer.extraVolumes`` entry that mounts
    the file into the API server's static pod). Raises ValueError listing every bad field."""
    errors = oidc_errors(oidc)
    if errors:
        raise ValueError("; ".join(errors))
    if not normalise_oidc(oidc):
        return {}
    return {"path": path, "content": authentication_configuration(oidc, ca_pem),
            "apiserver_args": apiserver_args(oidc, path),
            "volume": {"name": "gpushare-authentication", "hostPath": path, "mountPath": path, "readOnly": True,
                       "pathType": "File"}}


def conflicting_args(args: Mapping[str, Any]) -> List[str]:
    """User API server arguments kube-apiserver refuses together with --authentication-config."""
    return sorted(str(name) for name in args if str(name).startswith("oidc-"))


# ---------------------------------------------------------------------------------------------
# Per-person client certificates (CertificateSigningRequest API)
# ---------------------------------------------------------------------------------------------

def person_errors(person: Any) -> List[str]:
    if isinstance(person, str) and person.startswith("system"):
        return ["team_access_person: %r looks like a Kubernetes system identity" % person]
    if not isinstance(person, str) or not _PERSON.match(person):
        return ["team_access_person: %r must be 1-64 characters of letters, digits and . _ @ + - (the "
                "certificate's common name, the user name Kubernetes sees)" % (person,)]
    return []


def expiration_errors(seconds: Any) -> List[str]:
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < MIN_EXPIRATION_SECONDS:
        return ["team_access_expiration_seconds: must be a whole number of seconds >= %d (the CSR API's "
                "minimum), got %r" % (MIN_EXPIRATION_SECONDS, seconds)]
    return []


def csr_name(team: str, person: str, key_id: str) -> str:
    """A CSR name per team, person and key: a new key gives a new object, a re-run of one key the same."""
    return names.dns_label("gpushare", team, person, key_id)


def csr_object(name: str, csr_pem: str, team: str, person: str, expiration_seconds: int) -> Dict[str, Any]:
    """The CertificateSigningRequest for a person's client certificate."""
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name, "labels": {TEAM_LABEL: team}, "annotations": {PERSON_ANNOTATION: person}},
        "spec": {
            "request": base64.b64encode(csr_pem.encode()).decode(),
            "signerName": CLIENT_SIGNER,
            "expirationSeconds": int(expiration_seconds),
            # The kube-apiserver-client signer allows digital signature, key encipherment and client auth.
            "usages": ["digital signature", "client auth"],
        },
    }


def approval_condition(team: str, person: str) -> Dict[str, str]:
    return {"type": "Approved", "status": "True", "reason": "GpushareTeamAccess",
            "message": "client certificate for %s of team %s, approved by playbooks/team_access.yml" % (person, team)}


def certificate_pem(value: Any) -> str:
    """The PEM of a CSR's ``status.certificate`` as a client library hands it over (base64 as in
    JSON, or already decoded, as text or bytes)."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    return text if text.lstrip().startswith("-----BEGIN") else base64.b64decode(text).decode()


def expected_lifetime(expiration_seconds: int) -> int:
    """NotAfter - NotBefore of a certificate the controller manager signs for ``expiration_seconds``
    (below its --cluster-signing-duration, one year by default)."""
    seconds = max(int(expiration_seconds), MIN_EXPIRATION_SECONDS)
    return seconds + SIGNER_BACKDATE_SECONDS if seconds < SIGNER_SHORT_SECONDS else seconds


def admin_cluster(kubeconfig: Mapping[str, Any], context: Optional[str] = None) -> Dict[str, str]:
    """``{name, server, certificate-authority-data}`` of the cluster an admin kubeconfig points at."""
    wanted = context or kubeconfig.get("current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in kubeconfig.get("contexts") or []}
    if wanted not in contexts:
        raise ValueError("kubeconfig: no context %r" % (wanted,))
    cluster_name = contexts[wanted].get("cluster")
    clusters = {c.get("name"): c.get("cluster") or {} for c in kubeconfig.get("clusters") or []}
    if cluster_name not in clusters or not clusters[cluster_name].get("server"):
        raise ValueError("kubeconfig: context %r names no cluster with a server" % (wanted,))
    cluster = clusters[cluster_name]
    if not cluster.get("certificate-authority-data"):
        raise ValueError("kubeconfig: cluster %r has no certificate-authority-data to hand on" % (cluster_name,))
    return {"name": str(cluster_name), "server": str(cluster["server"]),
            "certificate-authority-data": str(cluster["certificate-authority-data"])}


def kubeconfig_document(cluster: Mapping[str, str], person: str, team: str, namespace: str, cert_pem: str,
                        key_pem: str, server: Optional[str] = None) -> Dict[str, Any]:
    """A kubeconfig for one person, its context on the team's (first) namespace."""
    user = "%s@%s" % (person, team)
    context = "%s@%s" % (user, cluster["name"])
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": cluster["name"], "cluster": {
            "server": server or cluster["server"],
            "certificate-authority-data": cluster["certificate-authority-data"]}}],
        "users": [{"name": user, "user": {
            "client-certificate-data": base64.b64encode(cert_pem.encode()).decode(),
            "client-key-data": base64.b64encode(key_pem.encode()).decode()}}],
        "contexts": [{"name": context, "context": {"cluster": cluster["name"], "user": user, "namespace": namespace}}],
        "current-context": context,
    }


def kubeconfig_certificate(kubeconfig: Mapping[str, Any]) -> Optional[str]:
    """The client certificate PEM of a kubeconfig's current user, or None."""
    contexts = {c.get("name"): c.get("context") or {} for c in kubeconfig.get("contexts") or []}
    user = contexts.get(kubeconfig.get("current-context"), {}).get("user")
    for entry in kubeconfig.get("users") or []:
        data = (entry.get("user") or {}).get("client-certificate-data")
        if entry.get("name") == user and data:
            return base64.b64decode(data).decode()
    return None


def new_key_and_csr(person: str, group: str) -> Tuple[str, str, str]:
    """(private key PEM, CSR PEM, key id): a P-256 key made here and a request for CN=person, O=group."""
    if not HAS_CRYPTOGRAPHY:
        raise ValueError("the Python 'cryptography' package is needed on the controller")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, group),
                         x509.NameAttribute(NameOID.COMMON_NAME, person)])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return key_pem, csr.public_bytes(serialization.Encoding.PEM).decode(), names.short_hash(public.hex())


def certificate_facts(cert_pem: str) -> Dict[str, Any]:
    """``{common_name, organizations, not_before, not_after}`` (UTC, ISO 8601) of a PEM certificate."""
    if not HAS_CRYPTOGRAPHY:
        raise ValueError("the Python 'cryptography' package is needed on the controller")
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    subject = cert.subject
    not_before = cert.not_valid_before_utc
    not_after = cert.not_valid_after_utc
    return {
        "common_name": ",".join(a.value for a in subject.get_attributes_for_oid(NameOID.COMMON_NAME)),
        "organizations": [a.value for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)],
        "not_before": not_before.isoformat(), "not_after": not_after.isoformat(),
        "lifetime_seconds": int((not_after - not_before).total_seconds()),
        "remaining_seconds": int((not_after - datetime.datetime.now(datetime.timezone.utc)).total_seconds()),
    }


def reusable(existing: Optional[Mapping[str, Any]], person: str, group: str, renew_before: int) -> bool:
    """Whether a kubeconfig written before is for the same person and group and still valid long enough."""
    cert = kubeconfig_certificate(existing) if isinstance(existing, Mapping) else None
    if not cert:
        return False
    try:
        facts = certificate_facts(cert)
    except ValueError:
        return False
    return (facts["common_name"] == person and facts["organizations"] == [group]
            and facts["remaining_seconds"] > renew_before)
