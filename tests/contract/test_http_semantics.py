"""HEAD through the real server (contract §10.4).

Checked on raw sockets, so what uvicorn (through the service's own protocol,
engine/http_protocol.py) puts on the wire is what is asserted: no body after a HEAD, the
GET's Content-Length.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise

import pytest

from tests.contract.campaign import ENDPOINT_PATHS
from tests.contract.client import API_PREFIX, RATE_HEADER_NAMES, RateHeaders, assert_spent
from tests.contract.conftest import KEY_LIMIT
from tests.contract.raw_http import RawResponse, exchange
from tests.contract.server import ApiServer

pytestmark = pytest.mark.xdist_group("contract")

# Headers that differ between two answers to the same request whatever the method.
PER_RESPONSE = {"date", "x-request-id", "x-ratelimit-remaining", "x-ratelimit-reset"}
OTHER_PATHS = ("/healthz", "/readyz", "/docs", "/openapi.json")
LINK = re.compile(r'<(?P<target>[^>]+)>; rel="next"')


def _auth(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


def _comparable(response: RawResponse) -> list[tuple[str, str]]:
    return sorted((name, value) for name, value in response.headers if name not in PER_RESPONSE)


def _stylesheet_of(page: RawResponse) -> str:
    match = re.search(r'<link rel="stylesheet" href="([^"]+)">', page.body.decode())
    assert match is not None, page.body[:500]
    return "/" + match.group(1)


class TestHead:
    @pytest.mark.parametrize("path", [*(f"{API_PREFIX}/{path}" for path in ENDPOINT_PATHS), *OTHER_PATHS])
    def test_the_gets_status_and_headers_without_a_body(self, api: ApiServer, token_a: str, path: str) -> None:
        get = exchange(api.base_url, "GET", path, _auth(token_a))
        head = exchange(api.base_url, "HEAD", path, _auth(token_a))
        assert (head.status, get.status) == (200, 200)
        assert head.body == b""
        assert head.header("content-length") == str(len(get.body))
        assert _comparable(head) == _comparable(get)

    def test_pages_and_static_assets(self, api: ApiServer) -> None:
        browser = {"Accept": "text/html"}
        for path in ("/graphql", "/docs"):
            page = exchange(api.base_url, "GET", path, browser)
            head = exchange(api.base_url, "HEAD", path, browser)
            assert (head.status, head.body, _comparable(head)) == (200, b"", _comparable(page))
        docs = exchange(api.base_url, "GET", "/docs")
        asset = exchange(api.base_url, "GET", _stylesheet_of(docs))
        head = exchange(api.base_url, "HEAD", _stylesheet_of(docs))
        assert asset.status == 200 and len(asset.body) > 1024
        assert (head.status, head.body, _comparable(head)) == (200, b"", _comparable(asset))

    def test_errors_too(self, api: ApiServer, token_a: str) -> None:
        for path, headers, status in (
            (f"{API_PREFIX}/sessions/nope", _auth(token_a), 404),
            (f"{API_PREFIX}/sessions", {}, 401),
            (f"{API_PREFIX}/sessions?limit=0", _auth(token_a), 400),
            ("/nope", {}, 404),
        ):
            get, head = (exchange(api.base_url, method, path, headers) for method in ("GET", "HEAD"))
            assert (head.status, get.status, head.body) == (status, status, b"")
            assert head.header("content-length") == str(len(get.body))

    def test_counted_like_a_get(self, api: ApiServer, token_a: str) -> None:
        path = f"{API_PREFIX}/characters"
        windows = []
        for method in ("GET", "HEAD", "HEAD", "GET"):
            response = exchange(api.base_url, method, path, _auth(token_a))
            windows.append(
                RateHeaders(*(int(response.header(name) or -1) for name in RATE_HEADER_NAMES))
            )
        for before, after in pairwise(windows):
            assert after.limit == KEY_LIMIT
            assert_spent(before, after)

    @pytest.mark.parametrize(
        ("path", "allowed"),
        [(f"{API_PREFIX}/sessions", "GET, HEAD"), ("/healthz", "GET, HEAD"), ("/graphql", "GET, HEAD, POST")],
    )
    def test_allow_on_a_405_lists_head(self, api: ApiServer, path: str, allowed: str) -> None:
        response = exchange(api.base_url, "PUT", path)
        assert (response.status, response.header("allow")) == (405, allowed)
        assert json.loads(response.body) == {"error": "Method not allowed"}
