"""An identity provider's token on a real API server started with the collection's AuthenticationConfiguration.

A small OpenID provider on 127.0.0.1 (discovery and JWKS over HTTPS, RS256 ID tokens) stands
in for the site's; the rehearsal's kube-apiserver 1.35.4 is started with
``--authentication-config`` and the file team_access.authentication_configuration makes from
``gpushare_oidc``, and the plan made with the same settings supplies the RBAC. A member of the
provider's ``ml-training`` group then works in the training namespace and nowhere else.
"""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.rehearsal import cluster as rc
from ansible_collections.gpushare.cluster.plugins.module_utils.kubernetes import team_access
from ansible_collections.gpushare.cluster.plugins.module_utils.planner.plan import build_plan

cryptography = pytest.importorskip("cryptography")
from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding, rsa  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[3]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "inventories" / "four_gpu_example.yml"
CLIENT_ID = "kubernetes"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Provider:
    """Discovery and JWKS of one RSA key, served over HTTPS; signs ID tokens."""

    def __init__(self, directory: Path):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ca_pem, ca_key = rc.make_ca("test-idp-ca")
        cert, key = rc.issue_cert(ca_pem, ca_key, "127.0.0.1", server=True, sans=["127.0.0.1"])
        (directory / "idp.crt").write_bytes(cert)
        (directory / "idp.key").write_bytes(key)
        self.ca_pem = ca_pem.decode()
        numbers = self.key.public_key().public_numbers()
        jwks = {"keys": [{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
                          "n": _b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
                          "e": _b64url(numbers.e.to_bytes(3, "big"))}]}
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                documents = {"/.well-known/openid-configuration": {
                    "issuer": provider.issuer, "jwks_uri": provider.issuer + "/jwks",
                    "id_token_signing_alg_values_supported": ["RS256"], "response_types_supported": ["id_token"],
                    "subject_types_supported": ["public"]}, "/jwks": jwks}
                body = json.dumps(documents.get(self.path, {})).encode()
                self.send_response(200 if self.path in documents else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(directory / "idp.crt"), str(directory / "idp.key"))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.issuer = "https://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, subject: str, groups, audience: str = CLIENT_ID) -> str:
        now = int(time.time())
        header = {"alg": "RS256", "kid": "k1", "typ": "JWT"}
        claims = {"iss": self.issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + 600,
                  "groups": list(groups)}
        signing_input = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + _b64url(signature)

    def close(self):
        self.server.shutdown()


def _bearer(info, token, method, path, body=None):
    context = ssl.create_default_context(cafile=info["pki"]["ca_crt"])
    request = urllib.request.Request(info["server"] + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json",
                                              "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=15) as response:  # nosec - loopback only
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, json.loads(text) if text.startswith("{") else text


REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@pytest.fixture(scope="module")
def oidc_cluster(rehearsal_bin, tmp_path_factory):
    directory = tmp_path_factory.mktemp("oidc")
    provider = Provider(directory)
    oidc = {"issuer_url": provider.issuer, "client_id": CLIENT_ID, "groups_prefix": "idp:"}
    assert team_access.oidc_errors(oidc) == []
    config = directory / "authentication-config.yaml"
    config.write_text(yaml.safe_dump(team_access.authentication_configuration(oidc, provider.ca_pem)))
    data = yaml.safe_load(FIXTURE.read_text())
    plan = build_plan(data["gpushare_teams"], data["nodes"], oidc=oidc)
    info = rc.start(str(directory / "cp"), bin_dir=rehearsal_bin["bin_dir"],
                    apiserver_args=team_access.apiserver_args(oidc, str(config)))
    try:
        rc.apply_objects(info, [o for o in plan["objects"] if o["kind"] in ("Namespace", "Role", "RoleBinding")])
        # The JWT authenticator fetches discovery and keys after the API server is up.
        token = provider.token("tess", ["ml-training"])
        deadline = time.monotonic() + 60
        while _bearer(info, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)[0] != 201:
            assert time.monotonic() < deadline, "the API server never accepted the provider's token"
            time.sleep(1)
        yield {"info": info, "provider": provider, "plan": plan}
    finally:
        rc.stop(str(directory / "cp"))
        provider.close()


def test_the_token_becomes_the_prefixed_user_and_group(oidc_cluster):
    info, provider = oidc_cluster["info"], oidc_cluster["provider"]
    status, review = _bearer(info, provider.token("tess", ["ml-training"]), "POST",
                             "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)
    assert status == 201, review
    user = review["status"]["userInfo"]
    assert user["username"] == "oidc:tess"
    assert set(user["groups"]) == {"idp:ml-training", "system:authenticated"}
    assert oidc_cluster["plan"]["teams"]["training"]["access"] == {
        "kubernetes_group": "idp:ml-training", "identity_provider_group": "ml-training"}


def test_the_teams_members_reach_their_namespace_and_nothing_else(oidc_cluster):
    info, provider = oidc_cluster["info"], oidc_cluster["provider"]
    member = provider.token("tess", ["ml-training"])
    assert _bearer(info, member, "GET", "/api/v1/namespaces/training/pods")[0] == 200
    for path in ("/api/v1/namespaces/data/pods", "/api/v1/namespaces/production/secrets"):
        status, body = _bearer(info, member, "GET", path)
        assert status == 403 and 'User "oidc:tess" cannot list' in body["message"], (path, status, body)
    # A provider group named like a Kubernetes one stays behind the prefix: no admin rights.
    masters = provider.token("mallory", ["system:masters"])
    status, body = _bearer(info, masters, "GET", "/api/v1/namespaces/kube-system/secrets")
    assert status == 403, body
    outsider = provider.token("olga", ["marketing"])
    assert _bearer(info, outsider, "GET", "/api/v1/namespaces/training/pods")[0] == 403


def test_a_token_for_another_client_is_not_accepted(oidc_cluster):
    info, provider = oidc_cluster["info"], oidc_cluster["provider"]
    status, _body = _bearer(info, provider.token("tess", ["ml-training"], audience="grafana"), "POST",
                            "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)
    assert status == 401
