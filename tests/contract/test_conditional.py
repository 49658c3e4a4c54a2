"""Conditional requests (contract §10.3) on the ten endpoints and the feed, over HTTP."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.contract.campaign import CAMPAIGN_A, ENDPOINT_PATHS, LISTS, NOT_FOUND_BODY, OWNER_A, RESOURCE_PATHS
from tests.contract.client import (
    ApiClient,
    assert_error,
    assert_key_window,
    assert_rejected,
    assert_spent,
    assert_unauthorized,
    json_of,
)
from tests.contract.conftest import HIGH_LIMITS, KEY_LIMIT, SeededDatabase
from tests.contract.server import ApiServer, running_server

pytestmark = pytest.mark.xdist_group("contract")

# GraphQL's name of each resource's record, for its stored tag.
RECORD_FIELDS = {"sessions": "session", "characters": "character", "locations": "location", "factions": "faction"}
RECORD_FIELDS["items"] = "item"


def tag_of(body: bytes) -> str:
    """The strong tag of a body: its SHA-256, URL-safe base64, quoted."""
    return '"' + base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode() + '"'


def assert_not_modified(response: httpx.Response, tag: str) -> None:
    assert (response.status_code, response.content) == (304, b""), response.text
    assert response.headers["etag"] == tag
    assert "content-type" not in response.headers
    assert_key_window(response, limit=KEY_LIMIT)


class TestTags:
    @pytest.mark.parametrize("path", ENDPOINT_PATHS)
    def test_every_200_carries_the_tag_of_its_body(self, client: ApiClient, token_a: str, path: str) -> None:
        response = client.api(path, token=token_a)
        assert response.status_code == 200
        assert response.headers["etag"] == tag_of(response.content)

    def test_a_stored_record_tag_is_the_tag_of_the_body_it_is_served_with(
        self, client: ApiClient, token_a: str
    ) -> None:
        # Every visible record of campaign A: its stored tag (GraphQL) against its body.
        for path, (records, _) in LISTS.items():
            field = RECORD_FIELDS[path]
            for record in records:
                query = {"query": f'{{ {field}(id: "{record["id"]}") {{ etag }} }}'}
                stored = client.post("/graphql", json=query, headers={"Authorization": f"Bearer {token_a}"})
                served = client.api(f"{path}/{record['id']}", token=token_a)
                assert json_of(stored)["data"][field]["etag"] == tag_of(served.content), (path, record["id"])


class TestIfNoneMatch:
    @pytest.mark.parametrize("path", ENDPOINT_PATHS)
    def test_the_current_tag_gives_304(self, client: ApiClient, token_a: str, path: str) -> None:
        tag = client.api(path, token=token_a).headers["etag"]
        assert_not_modified(client.api(path, token=token_a, headers={"If-None-Match": tag}), tag)

    @pytest.mark.parametrize("path", ["sessions", "sessions/sess-a-01", "changes"])
    def test_weak_comparison_lists_and_star(self, client: ApiClient, token_a: str, path: str) -> None:
        tag = client.api(path, token=token_a).headers["etag"]
        for condition in (f"W/{tag}", f'"other", {tag}', f'"a,b", W/"x",{tag}', "*"):
            assert_not_modified(client.api(path, token=token_a, headers={"If-None-Match": condition}), tag)

    @pytest.mark.parametrize("path", ["sessions", "sessions/sess-a-01", "changes"])
    def test_another_tag_or_a_malformed_header_gives_the_body(self, client: ApiClient, token_a: str, path: str) -> None:
        plain = client.api(path, token=token_a)
        for condition in ('"not-the-tag"', tag_of(b"{}"), plain.headers["etag"].strip('"'), ""):
            response = client.api(path, token=token_a, headers={"If-None-Match": condition})
            assert (response.status_code, response.content) == (200, plain.content)
            assert response.headers["etag"] == plain.headers["etag"]

    def test_a_304_is_counted_in_the_key_window(self, client: ApiClient, token_a: str) -> None:
        first = client.api("sessions/sess-a-01", token=token_a)
        second = client.api("sessions/sess-a-01", token=token_a, headers={"If-None-Match": "*"})
        assert second.status_code == 304
        assert_spent(assert_key_window(first, limit=KEY_LIMIT), assert_key_window(second, limit=KEY_LIMIT))


class TestCheckOrder:
    """Authentication, limits, validation and the query answer before the comparison."""

    @pytest.mark.parametrize("path", ["sessions", "sessions/sess-a-01", "changes"])
    def test_a_bad_key_is_401(self, client: ApiClient, path: str) -> None:
        assert_unauthorized(client.api(path, token="cpk_nope", headers={"If-None-Match": "*"}))

    @pytest.mark.parametrize("path", ["sessions", "changes"])
    @pytest.mark.parametrize(
        ("params", "message"),
        [({"limit": "0"}, "limit must be a positive integer"), ({"cursor": "!!"}, "Invalid cursor")],
    )
    def test_bad_parameters_are_400(
        self, client: ApiClient, token_a: str, path: str, params: dict[str, str], message: str
    ) -> None:
        response = client.api(path, token=token_a, params=params, headers={"If-None-Match": "*"})
        assert_error(response, 400, message)

    @pytest.mark.parametrize("path", RESOURCE_PATHS)
    def test_a_hidden_or_absent_record_is_404(self, client: ApiClient, token_a: str, path: str) -> None:
        for record_id in ("does-not-exist", "sess-b-01"):
            response = client.api(f"{path}/{record_id}", token=token_a, headers={"If-None-Match": "*"})
            assert_error(response, 404, NOT_FOUND_BODY[path])

    def test_a_limited_key_is_429(self, limited: tuple[ApiServer, str]) -> None:
        server, token = limited
        with ApiClient(server.base_url) as client:
            for _ in range(2):
                response = client.api("sessions/sess-a-01", token=token, headers={"If-None-Match": "*"})
                assert response.status_code == 304
            rejected = client.api("sessions/sess-a-01", token=token, headers={"If-None-Match": "*"})
            assert_rejected(rejected, limit=2, window_s=60)


@pytest.fixture(scope="module")
def limited(dedicated_db: SeededDatabase) -> Iterator[tuple[ApiServer, str]]:
    """A server whose key limit is 2 per minute, and a key of its own."""
    token = dedicated_db.cli.create_key(campaign=CAMPAIGN_A, owner=OWNER_A, label="conditional")
    limits: dict[str, Any] = {**HIGH_LIMITS, "rate_limit_key": "2 per minute"}
    with running_server(dedicated_db.env.with_changes(**limits), workdir=dedicated_db.workdir) as server:
        yield server, token
