"""The next-page Link of a list body (contract §10.5)."""

from __future__ import annotations

from typing import Any

import pytest

from rest.links import next_page_link

PATH = "/api/public/v1/items"


def page(*, has_more: bool, cursor: str | None) -> dict[str, Any]:
    return {"data": [], "pagination": {"next_cursor": cursor, "has_more": has_more}}


def test_points_at_the_next_page_with_the_limit_served() -> None:
    link = next_page_link(PATH, page(has_more=True, cursor="eyJvIjo1MH0"), limit=50)
    assert link == '</api/public/v1/items?cursor=eyJvIjo1MH0&limit=50>; rel="next"'


def test_the_cursor_is_percent_encoded() -> None:
    link = next_page_link(PATH, page(has_more=True, cursor="a+b/c=&d"), limit=7)
    assert link == '</api/public/v1/items?cursor=a%2Bb%2Fc%3D%26d&limit=7>; rel="next"'


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        (page(has_more=False, cursor=None), 50),  # the last page
        (page(has_more=True, cursor="x"), None),  # not a list endpoint
        ({"id": "s-1", "title": "A record"}, None),
        (["not", "a", "page"], 50),
    ],
)
def test_no_link(body: Any, limit: int | None) -> None:
    assert next_page_link(PATH, body, limit=limit) is None
