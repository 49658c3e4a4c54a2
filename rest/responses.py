"""JSON responses serialized with orjson (compact, exactly as the spec shows bodies)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response

from engine.ratelimit import RateWindow


class JSONBody(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        # No options: the REST documents' timestamps arrive as UTC datetimes, which orjson
        # then writes exactly as the DateTime scalar's strings (graphql_schema/execution.py);
        # OPT_UTC_Z or OPT_OMIT_MICROSECONDS would change the bodies.
        return orjson.dumps(content)


def json_response(payload: Any, *, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return JSONBody(payload, status_code=status, headers=headers)


def rate_headers(window: RateWindow) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(window.limit),
        "X-RateLimit-Remaining": str(window.remaining),
        "X-RateLimit-Reset": str(window.reset_at),
    }
