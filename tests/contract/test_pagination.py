"""Lists: order, page walking, the limit and cursor parameters and their 400s."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.contract.campaign import RESOURCE_PATHS, expected_list
from tests.contract.client import ApiClient, assert_error, assert_no_rate_headers, json_of

pytestmark = pytest.mark.xdist_group("contract")

MAX_LIMIT = 100
DEFAULT_LIMIT = 50


def cursor_of(payload: str) -> str:
    """A cursor as a client could forge one: URL-safe base64 of some JSON, unpadded."""
    return base64.urlsafe_b64encode(payload.encode()).rstrip(b"=").decode()


def walk(client: ApiClient, token: str, path: str, *, limit: str | None) -> list[dict[str, Any]]:
    """Every page of a list, checking each page's size and pagination object."""
    page_size = DEFAULT_LIMIT if limit is None else min(int(limit), MAX_LIMIT)
    total = len(expected_list(path))
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {} if limit is None else {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = client.api(path, token=token, params=params)
        assert response.status_code == 200, response.text
        body = json_of(response)
        assert set(body) == {"data", "pagination"}
        assert set(body["pagination"]) == {"next_cursor", "has_more"}
        data, pagination = body["data"], body["pagination"]
        remaining = total - len(records)
        assert len(data) == min(page_size, remaining)
        records.extend(data)
        assert pagination["has_more"] is (len(records) < total)
        assert (pagination["next_cursor"] is not None) is pagination["has_more"]
        if not pagination["has_more"]:
            return records
        assert isinstance(pagination["next_cursor"], str) and pagination["next_cursor"]
        cursor = pagination["next_cursor"]


@pytest.mark.parametrize("path", RESOURCE_PATHS)
class TestPageWalk:
    @pytest.mark.parametrize("limit", ["1", "3", "50", "100", "500", None])
    def test_every_visible_record_once_in_contract_order(
        self, client: ApiClient, token_a: str, path: str, limit: str | None
    ) -> None:
        assert walk(client, token_a, path, limit=limit) == expected_list(path)

    def test_a_cursor_past_the_end_gives_an_empty_last_page(self, client: ApiClient, token_a: str, path: str) -> None:
        for offset in (len(expected_list(path)), 10_000):
            response = client.api(path, token=token_a, params={"cursor": cursor_of(f"[{offset}]")})
            assert response.status_code == 200
            assert json_of(response) == {"data": [], "pagination": {"next_cursor": None, "has_more": False}}

    def test_an_offset_cursor_starts_at_that_offset(self, client: ApiClient, token_a: str, path: str) -> None:
        response = client.api(path, token=token_a, params={"cursor": cursor_of("[2]"), "limit": "2"})
        assert response.status_code == 200
        assert json_of(response)["data"] == expected_list(path)[2:4]


class TestPageSize:
    def test_the_default_is_50_and_500_is_capped_to_100(self, client: ApiClient, token_a: str) -> None:
        assert len(expected_list("items")) > MAX_LIMIT
        default = json_of(client.api("items", token=token_a))
        assert default["data"] == expected_list("items")[:DEFAULT_LIMIT]
        assert default["pagination"]["has_more"] is True
        capped = json_of(client.api("items", token=token_a, params={"limit": "500"}))
        assert capped["data"] == expected_list("items")[:MAX_LIMIT]
        assert capped["pagination"]["has_more"] is True

    def test_a_huge_limit_is_capped_too(self, client: ApiClient, token_a: str) -> None:
        response = client.api("items", token=token_a, params={"limit": "9" * 400})
        assert response.status_code == 200
        assert len(json_of(response)["data"]) == MAX_LIMIT


class TestBadParameters:
    @pytest.mark.parametrize("limit", ["abc", "0", "-1", "1.5", "", "1e2"])
    def test_a_limit_that_is_not_a_positive_integer_is_400(self, client: ApiClient, token_a: str, limit: str) -> None:
        for path in RESOURCE_PATHS:
            response = client.api(path, token=token_a, params={"limit": limit})
            assert_error(response, 400, "limit must be a positive integer")
            assert_no_rate_headers(response)

    @pytest.mark.parametrize(
        "cursor",
        [
            "garbage!!",
            "%%%",
            cursor_of("[-1]"),
            cursor_of('{"offset": 3}'),
            cursor_of("3"),
            cursor_of("[]"),
            cursor_of('["3"]'),
            cursor_of("[1.5]"),
            cursor_of("[true]"),
            cursor_of("not json"),
            "",
        ],
        ids=[
            "garbage",
            "percent",
            "negative-offset",
            "object",
            "bare-number",
            "empty-list",
            "string-offset",
            "float-offset",
            "bool-offset",
            "not-json",
            "empty",
        ],
    )
    def test_a_cursor_that_does_not_decode_to_an_offset_is_400(
        self, client: ApiClient, token_a: str, cursor: str
    ) -> None:
        for path in RESOURCE_PATHS:
            response = client.api(path, token=token_a, params={"cursor": cursor})
            assert_error(response, 400, "Invalid cursor")
            assert_no_rate_headers(response)
