"""`Link: <...>; rel="next"` on a list response that has another page (contract §10.5)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode


def next_page_link(path: str, body: Any, *, limit: int | None) -> str | None:
    """The Link value pointing at the page after `body`, if it is a list page with more:
    an absolute-path reference with the cursor and the limit this page was served with."""
    if limit is None or not isinstance(body, dict):
        return None
    pagination = body.get("pagination")
    if not isinstance(pagination, dict) or not pagination.get("has_more"):
        return None
    cursor = pagination.get("next_cursor")
    if not isinstance(cursor, str):
        return None
    return f'<{path}?{urlencode({"cursor": cursor, "limit": limit})}>; rel="next"'
