"""HEAD, compression and paging links through the real server (contract §10.4, §10.5).

HEAD and gzip are checked on raw sockets, so what uvicorn (through the service's own
protocol, rest/http_protocol.py) puts on the wire is what is asserted: no body after a
HEAD, the GET's Content-Length, the compressed bytes themselves.
"""

from __future__ import annotations

import gzip
import json
import re
from itertools import pairwise
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.contract.campaign import ENDPOINT_PATHS, RESOURCE_PATHS, expected_list
from tests.contract.client import API_PREFIX, RATE_HEADER_NAMES, ApiClient, RateHeaders, assert_spent, json_of
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


class TestCompression:
    def test_a_list_is_gzipped_when_asked(self, api: ApiServer, token_a: str) -> None:
        path = f"{API_PREFIX}/items?limit=100"
        plain = exchange(api.base_url, "GET", path, _auth(token_a))
        packed = exchange(api.base_url, "GET", path, _auth(token_a, **{"Accept-Encoding": "gzip, deflate, br"}))
        assert packed.header("content-encoding") == "gzip"
        assert packed.header("vary") == plain.header("vary") == "Accept-Encoding"
        assert packed.header("content-length") == str(len(packed.body))
        assert gzip.decompress(packed.body) == plain.body
        assert len(packed.body) < len(plain.body) / 3
        assert plain.header("content-encoding") is None
        # Without Accept-Encoding the body is the identity JSON the API always sent.
        assert json.loads(plain.body)["data"] == expected_list("items")[:100]

    def test_head_gives_the_compressed_length(self, api: ApiServer, token_a: str) -> None:
        path = f"{API_PREFIX}/sessions"
        headers = _auth(token_a, **{"Accept-Encoding": "gzip"})
        get, head = (exchange(api.base_url, method, path, headers) for method in ("GET", "HEAD"))
        assert get.header("content-encoding") == head.header("content-encoding") == "gzip"
        assert head.header("content-length") == str(len(get.body))
        assert head.body == b""

    def test_small_bodies_stay_identity(self, api: ApiServer) -> None:
        response = exchange(api.base_url, "GET", "/healthz", {"Accept-Encoding": "gzip"})
        assert response.body == b'{"status":"ok"}'
        assert response.header("content-encoding") is None and response.header("vary") is None

    @pytest.mark.parametrize(
        ("accept_encoding", "gzipped"),
        [
            ("GZip", True),
            ("x-gzip", True),
            ("*", True),
            ("br;q=1.0, gzip;q=0.5", True),
            ("gzip;q=0", False),
            ("gzip; Q=0.000", False),
            ("deflate, br", False),
            ("", False),
            ("*;q=0, identity", False),
            ("gzip;q=0.4, identity;q=0.8", False),
            ("gzip;q=2", False),  # not a q-value: the member is ignored
        ],
    )
    def test_accept_encoding_is_read_as_rfc_9110_says(
        self, api: ApiServer, token_a: str, accept_encoding: str, gzipped: bool
    ) -> None:
        response = exchange(
            api.base_url, "GET", f"{API_PREFIX}/locations", _auth(token_a, **{"Accept-Encoding": accept_encoding})
        )
        assert response.status == 200
        assert (response.header("content-encoding") == "gzip") is gzipped
        assert response.header("vary") == "Accept-Encoding"
        body = gzip.decompress(response.body) if gzipped else response.body
        assert json.loads(body)["data"] == expected_list("locations")[:50]

    def test_refusing_identity_compresses_even_a_small_body(self, api: ApiServer) -> None:
        response = exchange(api.base_url, "GET", "/healthz", {"Accept-Encoding": "identity;q=0, gzip"})
        assert response.header("content-encoding") == "gzip"
        assert gzip.decompress(response.body) == b'{"status":"ok"}'


class TestNextLink:
    @pytest.mark.parametrize(("limit", "served"), [(None, 50), ("7", 7), ("500", 100)])
    def test_following_the_links_walks_every_page(
        self, client: ApiClient, token_a: str, limit: str | None, served: int
    ) -> None:
        records = []
        params = {} if limit is None else {"limit": limit}
        response = client.api("items", token=token_a, params=params)
        while True:
            assert response.status_code == 200
            body = json_of(response)
            records.extend(body["data"])
            link = response.headers.get("link")
            if not body["pagination"]["has_more"]:
                assert link is None
                break
            match = LINK.fullmatch(link or "")
            assert match is not None, link
            target = urlsplit(match.group("target"))
            assert target.path == f"{API_PREFIX}/items" and not target.netloc
            assert parse_qs(target.query) == {"cursor": [body["pagination"]["next_cursor"]], "limit": [str(served)]}
            response = client.get(match.group("target"), headers={"Authorization": f"Bearer {token_a}"})
        assert records == expected_list("items")

    @pytest.mark.parametrize("path", RESOURCE_PATHS)
    def test_a_link_exactly_when_there_is_a_next_page(self, client: ApiClient, token_a: str, path: str) -> None:
        response = client.api(path, token=token_a, params={"limit": "100"})
        body = json_of(response)
        assert body["pagination"]["has_more"] is (len(expected_list(path)) > 100)
        assert ("link" in response.headers) is body["pagination"]["has_more"]

    @pytest.mark.parametrize("path", [path for path in ENDPOINT_PATHS if "/" in path])
    def test_records_have_no_link(self, client: ApiClient, token_a: str, path: str) -> None:
        response = client.api(path, token=token_a)
        assert response.status_code == 200 and "link" not in response.headers
