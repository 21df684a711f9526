# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small client for the Prometheus HTTP API (instant and range queries).

Standard library only (urllib), so it runs wherever the controller's Python runs.
Credentials go into request headers only; every error message names the server by a
URL with any user information removed and never contains a token or password.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from ansible_collections.gpushare.cluster.plugins.module_utils._common.errors import GpushareError
from typing import Any, Dict, List, Optional


class PrometheusError(GpushareError):
    """Prometheus could not be reached or refused a query."""


def redact_url(url: str) -> str:
    """Return ``url`` without user information (``user:password@``) or query string."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class PrometheusClient:
    """Queries one Prometheus server.

    ``bearer_token`` and ``username``/``password`` are mutually exclusive. ``ca_path``
    is a PEM bundle used instead of the system store; ``validate_certs=False`` turns
    verification off (for test servers only).
    """

    def __init__(
        self,
        url: str,
        bearer_token: Optional[str] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
        ca_path: Optional[str] = None,
        validate_certs: bool = True,
        timeout: float = 30.0,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PrometheusError(
                f"url: {redact_url(url)!r} is not an http(s) URL of a Prometheus server"
            )
        if bearer_token and (username or password):
            raise PrometheusError("bearer_token and username/password are mutually exclusive")
        if password and not username:
            raise PrometheusError("password given without username")
        if timeout <= 0:
            raise PrometheusError(f"timeout: must be positive, got {timeout}")
        # Credentials embedded in the URL are moved to the header so they never reach
        # a log line through the URL.
        if parts.username and not (username or bearer_token):
            username = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
        self.base_url = redact_url(url).rstrip("/")
        self.timeout = timeout
        self._headers = {"Accept": "application/json"}
        if bearer_token:
            self._headers["Authorization"] = f"Bearer {bearer_token}"
        elif username:
            raw = f"{username}:{password or ''}".encode("utf-8")
            self._headers["Authorization"] = "Basic " + base64.b64encode(raw).decode("ascii")
        context: Optional[ssl.SSLContext] = None
        if parts.scheme == "https":
            if validate_certs:
                context = ssl.create_default_context(cafile=ca_path)
            else:
                # Explicit opt-in by the user (validate_certs: false), e.g. a lab server.
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        # The default handlers (proxies from the environment, redirects) plus our TLS
        # context; the standard library keeps this file free of Ansible imports.
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))

    # The API accepts POST with a form body for both endpoints; POST keeps long
    # expressions (many teams in a regex) clear of URL length limits.
    def _call(self, endpoint: str, params: Dict[str, str]) -> Any:
        url = f"{self.base_url}/api/v1/{endpoint}"
        body = urllib.parse.urlencode(params).encode("utf-8")
        headers = dict(self._headers)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        what = f"{endpoint} {params.get('query', '')!r} at {self.base_url}"
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise PrometheusError(
                f"Prometheus answered HTTP {exc.code} {exc.reason} to {what}: {_server_message(exc)}"
            ) from None
        except urllib.error.URLError as exc:
            raise PrometheusError(f"cannot reach Prometheus for {what}: {exc.reason}") from None
        except (socket.timeout, TimeoutError):
            raise PrometheusError(
                f"Prometheus did not answer {what} within {self.timeout:g} s (option timeout)"
            ) from None
        except (ConnectionError, ssl.SSLError, OSError) as exc:
            raise PrometheusError(f"cannot reach Prometheus for {what}: {exc}") from None
        try:
            document = json.loads(payload)
        except ValueError:
            raise PrometheusError(
                f"{what} did not return JSON (is the URL the Prometheus server?): {payload[:200]!r}"
            ) from None
        if not isinstance(document, dict) or document.get("status") != "success":
            message = document.get("error") if isinstance(document, dict) else None
            raise PrometheusError(f"Prometheus refused {what}: {message or document!r}")
        return document.get("data", {})

    def query(self, expression: str, time: Optional[float] = None) -> List[Dict[str, Any]]:
        """Instant query; returns the ``result`` list (vector) of the API."""
        params = {"query": expression}
        if time is not None:
            params["time"] = _number(time)
        data = self._call("query", params)
        if data.get("resultType") == "scalar":
            return [{"metric": {}, "value": data.get("result")}]
        return list(data.get("result") or [])

    def query_range(self, expression: str, start: float, end: float, step: float) -> List[Dict[str, Any]]:
        """Range query; returns the ``result`` list (matrix) of the API."""
        if step <= 0:
            raise PrometheusError(f"step: must be positive, got {step}")
        if end - start < step:
            raise PrometheusError(
                f"window: {end - start:g} s is shorter than the step of {step:g} s"
            )
        params = {"query": expression, "start": _number(start), "end": _number(end), "step": _number(step)}
        data = self._call("query_range", params)
        return list(data.get("result") or [])


def _number(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _server_message(exc: urllib.error.HTTPError) -> str:
    """The ``error`` field of Prometheus' JSON answer, else the start of the body."""
    try:
        raw = exc.read()
    except OSError:
        return "(no body)"
    try:
        document = json.loads(raw)
        if isinstance(document, dict) and document.get("error"):
            kind = document.get("errorType")
            return f"{kind}: {document['error']}" if kind else str(document["error"])
    except ValueError:
        pass
    text = raw.decode("utf-8", "replace").strip()
    return text[:300] if text else "(empty body)"
