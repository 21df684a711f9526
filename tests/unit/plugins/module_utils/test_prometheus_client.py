# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus client against a small local HTTP server that records what it receives."""
from __future__ import annotations

import base64
import json
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.usage.prometheus import (
    PrometheusClient,
    PrometheusError,
    redact_url,
)


class Handler(BaseHTTPRequestHandler):
    """Answers like Prometheus; the test sets ``server.reply`` = (status, body)."""

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        self.server.requests.append({"path": self.path, "form": form, "headers": dict(self.headers)})
        if self.server.delay:
            time.sleep(self.server.delay)
        status, body = self.server.reply
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except BrokenPipeError:
            pass  # the client gave up (timeout test)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.requests, httpd.delay = [], 0
    httpd.reply = (200, {"status": "success", "data": {"resultType": "vector", "result": []}})
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url_of(httpd, userinfo=""):
    return f"http://{userinfo}127.0.0.1:{httpd.server_address[1]}/prom/"


def test_range_query_sends_parameters_and_returns_matrix(server):
    matrix = [{"metric": {"team": "a"}, "values": [[1000, "1"], [1300, "2"]]}]
    server.reply = (200, {"status": "success", "data": {"resultType": "matrix", "result": matrix}})
    client = PrometheusClient(url_of(server), bearer_token="s3cret")
    assert client.query_range("gpushare:team_gpus_allocated", 1000, 1300, 300) == matrix
    request = server.requests[0]
    assert request["path"] == "/prom/api/v1/query_range"
    assert request["form"] == {"query": ["gpushare:team_gpus_allocated"], "start": ["1000"],
                               "end": ["1300"], "step": ["300"]}
    assert request["headers"]["Authorization"] == "Bearer s3cret"


def test_basic_auth_from_options_and_from_url(server):
    PrometheusClient(url_of(server), username="ops", password="pw").query("up", 5)
    PrometheusClient(url_of(server, "viewer:p%40ss@")).query("up")
    expected = ["Basic " + base64.b64encode(b"ops:pw").decode(), "Basic " + base64.b64encode(b"viewer:p@ss").decode()]
    assert [r["headers"]["Authorization"] for r in server.requests] == expected
    assert server.requests[0]["form"]["time"] == ["5"]


def test_http_error_carries_server_message_but_no_credentials(server):
    server.reply = (400, {"status": "error", "errorType": "bad_data",
                          "error": 'invalid parameter "query": 1:5: parse error: unexpected'})
    client = PrometheusClient(url_of(server, "viewer:topsecret@"))
    with pytest.raises(PrometheusError) as caught:
        client.query("sum(")
    message = str(caught.value)
    assert "HTTP 400" in message and "bad_data: invalid parameter" in message and "sum(" in message
    assert "topsecret" not in message and "viewer" not in message


def test_http_error_with_plain_text_body(server):
    server.reply = (503, b"Service Unavailable: TSDB not ready")
    with pytest.raises(PrometheusError, match="HTTP 503 .*TSDB not ready"):
        PrometheusClient(url_of(server), bearer_token="tok-123").query("up")


def test_refused_query_with_http_200(server):
    server.reply = (200, {"status": "error", "error": "query timed out"})
    with pytest.raises(PrometheusError, match="refused .*query timed out"):
        PrometheusClient(url_of(server)).query("up")


def test_non_json_answer(server):
    server.reply = (200, b"<html>login</html>")
    with pytest.raises(PrometheusError, match="did not return JSON"):
        PrometheusClient(url_of(server)).query("up")


def test_unreachable_url_names_server_without_password():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = PrometheusClient(f"http://admin:hunter2@127.0.0.1:{port}", timeout=2)
    with pytest.raises(PrometheusError) as caught:
        client.query("up")
    assert f"cannot reach Prometheus for query 'up' at http://127.0.0.1:{port}" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_timeout(server):
    server.delay = 1.5
    with pytest.raises(PrometheusError, match="did not answer .* within 0.5 s"):
        PrometheusClient(url_of(server), timeout=0.5).query("up")


def test_window_shorter_than_step_is_refused_before_any_request(server):
    with pytest.raises(PrometheusError, match="window: 60 s is shorter than the step of 300 s"):
        PrometheusClient(url_of(server)).query_range("up", 0, 60, 300)
    assert server.requests == []


@pytest.mark.parametrize("kwargs, message", [
    ({"url": "ftp://x"}, "not an http"),
    ({"url": "http://h", "bearer_token": "t", "username": "u"}, "mutually exclusive"),
    ({"url": "http://h", "password": "p"}, "password given without username"),
    ({"url": "http://h", "timeout": 0}, "timeout"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(PrometheusError, match=message):
        PrometheusClient(**kwargs)


def test_ca_bundle_must_exist(tmp_path):
    with pytest.raises(OSError):
        PrometheusClient("https://prometheus.example", ca_path=str(tmp_path / "missing.pem"))


def test_redact_url():
    assert redact_url("https://u:p@prom.example:9443/x?token=abc") == "https://prom.example:9443/x"
