# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_usage module against a canned Prometheus API on 127.0.0.1."""
from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from module_runner import run_module
from ansible_collections.gpushare.cluster.plugins.modules import gpu_usage

END = 1_800_000_000 - 1_800_000_000 % 3600
HOUR = 3600


class Handler(BaseHTTPRequestHandler):
    """query_range: 2 devices for team a, 0.1 busy; instant queries: quota 2 for queue a."""

    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        query = form["query"][0]
        self.server.seen.append((self.path, query, self.headers.get("Authorization")))
        if self.path.endswith("/query_range"):
            start, end, step = (float(form[k][0]) for k in ("start", "end", "step"))
            stamps = [start + i * step for i in range(int((end - start) // step) + 1)]
            value = {"gpushare:team_gpus_allocated": "2", "gpushare:team_gpus_busy": "0.1"}.get(query)
            result = [] if value is None else [{"metric": {"team": "a"}, "values": [[t, value] for t in stamps]}]
            data = {"resultType": "matrix", "result": result}
        else:
            result = [{"metric": {"cluster_queue": "a"}, "value": [END, "2"]}] if "nominal_quota" in query else []
            data = {"resultType": "vector", "result": result}
        payload = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def prometheus():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.seen = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def run(capsys, args):
    return run_module(gpu_usage, args, capsys)[1]


def url(httpd):
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def test_reports_figures_in_check_mode_and_hides_the_password(prometheus, capsys):
    result = run(capsys, {"url": url(prometheus), "window": "1d", "step": "1h", "end": str(END),
                          "teams": [{"name": "a", "priority": 1}], "username": "viewer", "password": "pa55word",
                          "render_html": True, "_ansible_check_mode": True})
    assert result["changed"] is False and "failed" not in result
    team = result["figures"]["teams"]["a"]
    assert team["gpu_hours_allocated"] == 50.0  # 25 samples x 2 devices x 1 h
    assert team["efficiency"] == 0.05 and team["nominal_quota"] == 2.0
    assert team["pending_hours"] is None
    assert {m["figure"] for m in result["figures"]["missing"]} >= {"pending", "borrowed", "gpu_busy"}
    assert result["figures"]["window"]["end"] == END and result["figures"]["window"]["step_seconds"] == HOUR
    assert result["html"].count("<svg") == 1
    assert result["summary"][1].startswith("team a: allocated 50.0 GPU-h")
    assert "pa55word" not in json.dumps(result)
    assert all(seen[2] and seen[2].startswith("Basic ") for seen in prometheus.seen)
    queried = {seen[1] for seen in prometheus.seen if seen[0].endswith("query_range")}
    assert "gpushare:team_gpus_allocated" in queried and "gpushare:gpu_busy_ratio" in queried


def test_rfc3339_end_equals_timestamp(prometheus, capsys):
    from datetime import datetime, timezone
    stamp = datetime.fromtimestamp(END, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = run(capsys, {"url": url(prometheus), "window": "1d", "end": stamp, "teams": ["a"], "include_series": False})
    assert result["figures"]["window"]["end"] == END
    assert "series" not in result["figures"]["teams"]["a"]


@pytest.mark.parametrize("args, message", [
    ({"end": "yesterday"}, "end: 'yesterday' is neither a Unix timestamp nor an RFC 3339 time"),
    ({"window": "two weeks"}, "window: 'two weeks' is not a duration"),
    ({"window": "1h", "step": "2h"}, "window: 1h is shorter than the step 2h"),
    ({"thresholds": {"shared_blow": 0.1}}, "thresholds: "),
    ({"teams": [{"namespaces": ["x"]}]}, "teams[0]: needs a name"),
    ({"bearer_token": "tok-abc", "username": "u"}, "parameters are mutually exclusive: bearer_token|username"),
])
def test_bad_input_fails_with_clear_message(prometheus, capsys, args, message):
    result = run(capsys, dict({"url": url(prometheus)}, **args))
    assert result["failed"] is True and message in result["msg"]


def test_team_without_data_fails_by_default(prometheus, capsys):
    result = run(capsys, {"url": url(prometheus), "window": "1d", "end": str(END), "teams": ["a", "b"]})
    assert result["failed"] is True and result["msg"].startswith("teams: no data for b at http://127.0.0.1:")
