"""An HTTP client for the contract tests, and the checks every response must pass.

Every response that goes through `ApiClient` is checked, whatever the test asserts:
it carries `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` (a versioned
UI file: `immutable`), and its body
holds no trace of the campaign's GM-only content.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from tests.contract.campaign import GM_CANARY

API_PREFIX = "/api/public/v1"
RATE_HEADER_NAMES = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")
AUTH_CHALLENGE = 'Bearer realm="public-api"'


# The UI files under versioned URLs are the one thing a cache may keep (rest/vendor_files.py).
IMMUTABLE_PATH = re.compile(r"/static/vendor/[0-9a-f]{16}/")


def _check_every_response(response: httpx.Response) -> None:
    response.read()
    assert response.headers.get("x-content-type-options") == "nosniff", response.headers
    immutable = response.status_code == 200 and IMMUTABLE_PATH.match(response.url.path)
    expected = "public, max-age=31536000, immutable" if immutable else "no-store"
    assert response.headers.get("cache-control") == expected, response.headers
    assert GM_CANARY.encode() not in response.content, f"GM-only text leaked: {response.content[:500]!r}"


class ApiClient(httpx.Client):
    """httpx.Client bound to one server (and, optionally, one client IP of 127.0.0.0/8)."""

    def __init__(
        self,
        base_url: str,
        *,
        source_ip: str | None = None,
        timeout: float = 15.0,
        limits: httpx.Limits = httpx.Limits(),  # noqa: B008 (immutable)
    ) -> None:
        super().__init__(
            base_url=base_url,
            transport=httpx.HTTPTransport(local_address=source_ip, limits=limits),
            timeout=timeout,
            follow_redirects=False,
            event_hooks={"response": [_check_every_response]},
        )

    def api(
        self,
        path: str,
        *,
        token: str | None = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """GET a v1 path (`"sessions"`, `"sessions/sess-1"`) with an optional Bearer token."""
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        return self.get(f"{API_PREFIX}/{path}", params=params, headers=all_headers)


def error_bytes(message: str) -> bytes:
    """The exact body of a handled error: `{"error":"<message>"}`, compact."""
    return json.dumps({"error": message}, separators=(",", ":")).encode()


def assert_error(response: httpx.Response, status: int, message: str) -> None:
    assert (response.status_code, response.content) == (status, error_bytes(message)), response.text
    assert response.headers["content-type"] == "application/json"


@dataclass(frozen=True, slots=True)
class RateHeaders:
    limit: int
    remaining: int
    reset: int


def rate_headers(response: httpx.Response) -> RateHeaders:
    missing = [name for name in RATE_HEADER_NAMES if name not in response.headers]
    assert not missing, f"missing {missing} on {response.status_code}: {dict(response.headers)}"
    return RateHeaders(*(int(response.headers[name]) for name in RATE_HEADER_NAMES))


def assert_key_window(response: httpx.Response, *, limit: int, window_s: int = 60) -> RateHeaders:
    """The three headers describe a `limit` per `window_s` window that is open now."""
    headers = rate_headers(response)
    now = time.time()
    assert headers.limit == limit, headers
    assert 0 <= headers.remaining < limit
    assert now - 1 <= headers.reset <= now + window_s + 1
    assert "retry-after" not in response.headers
    return headers


def assert_spent(before: RateHeaders, after: RateHeaders, *, requests: int = 1) -> None:
    """`after` was reported `requests` admitted requests of the same key after `before`.

    Windows are fixed, so the count resets when one ends: either the same window with
    that many fewer remaining, or a later window that has counted at most that many.
    """
    if after.reset == before.reset:
        assert after.remaining == before.remaining - requests, (before, after)
    else:
        assert after.reset > before.reset, (before, after)
        assert after.limit - requests <= after.remaining < after.limit, (before, after)


def assert_no_rate_headers(response: httpx.Response) -> None:
    present = [name for name in (*RATE_HEADER_NAMES, "retry-after") if name in response.headers]
    assert not present, f"unexpected {present} on {response.status_code}"


def assert_unauthorized(response: httpx.Response) -> None:
    assert_error(response, 401, "Invalid API key")
    assert response.headers["www-authenticate"] == AUTH_CHALLENGE
    assert_no_rate_headers(response)


def assert_rejected(response: httpx.Response, *, limit: int, window_s: int) -> RateHeaders:
    """A 429 from a `limit` per `window_s` limit: its three headers and Retry-After."""
    assert_error(response, 429, "Rate limit exceeded")
    headers = rate_headers(response)
    now = time.time()
    assert headers.limit == limit, f"rejected by the wrong limit: {headers}"
    assert headers.remaining == 0
    assert now - 1 <= headers.reset <= now + window_s + 1
    retry_after = int(response.headers["retry-after"])
    assert 1 <= retry_after <= window_s + 1
    return headers


def header_names(response: httpx.Response) -> set[str]:
    return {name.lower() for name in response.headers}


def json_of(response: httpx.Response) -> Any:
    assert response.headers["content-type"] == "application/json", response.headers
    return response.json()
