"""The documented error responses and list parameters of each endpoint, for OpenAPI."""

from __future__ import annotations

from typing import Any

from engine.errors import INVALID_LIMIT_TEXT, ErrorCode
from engine.pagination import DEFAULT_LIMIT, MAX_LIMIT
from rest.errors import AUTH_CHALLENGE, ERROR_RULES, EndpointTexts
from rest.openapi_models import ErrorBody

_RATE_HEADERS = {
    "X-RateLimit-Limit": {"description": "Requests allowed in the window.", "schema": {"type": "integer"}},
    "X-RateLimit-Remaining": {"description": "Requests left in the window.", "schema": {"type": "integer"}},
    "X-RateLimit-Reset": {
        "description": "Unix epoch seconds at which the window resets.",
        "schema": {"type": "integer"},
    },
}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait (at least 1).", "schema": {"type": "integer"}}}
_REQUEST_ID_HEADER = {
    "X-Request-ID": {
        "description": "The request's id, also in the server's log: yours when you sent a plain one, else a new one.",
        "required": True,
        "schema": {"type": "string"},
    }
}
_REQUEST_ID_PARAMETER = {
    "name": "X-Request-ID",
    "in": "header",
    "required": False,
    "description": "An id for this request, echoed in the response and logged (up to 128 of A-Z a-z 0-9 . _ -).",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,128}$"},
}
_LINK_HEADER = {
    "Link": {
        "description": 'On a page with a next one: `</api/public/v1/...?cursor=...&limit=N>; rel="next"`.',
        "schema": {"type": "string"},
    }
}
V1_PATHS = "/api/public/v1/"
_ETAG = {
    "ETag": {
        "description": "Strong entity tag of the body: changes exactly when the body's bytes change. Send it "
        "back in If-None-Match to get a 304 while they have not.",
        "schema": {"type": "string"},
    }
}
_CHALLENGE = {name: {"schema": {"type": "string", "enum": [value]}} for name, value in AUTH_CHALLENGE.items()}


def _error(description: str, *bodies: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    examples = {f"example{index}": {"value": {"error": body}} for index, body in enumerate(bodies, 1)}
    response: dict[str, Any] = {
        "description": description,
        "model": ErrorBody,
        "content": {"application/json": {"examples": examples}},
    }
    if headers:
        response["headers"] = headers
    return response


def _common(texts: EndpointTexts) -> dict[int | str, dict[str, Any]]:
    return {
        401: _error(
            "Key missing, malformed, unknown, incorrect or revoked; wrong scheme; token over 256 characters.",
            str(ERROR_RULES[ErrorCode.INVALID_API_KEY].body),
            headers=_CHALLENGE,
        ),
        429: _error(
            "An IP, failed-authentication, key or owner limit rejected the request.",
            str(ERROR_RULES[ErrorCode.RATE_LIMITED].body),
            headers={**_RATE_HEADERS, **_RETRY_AFTER},
        ),
        500: _error("The query failed.", texts.fetch_failed, headers=_RATE_HEADERS),
        503: _error(
            "Limits cannot be enforced or keys cannot be verified right now.",
            str(ERROR_RULES[ErrorCode.UNAVAILABLE].body),
        ),
    }


def _ok_headers() -> dict[int | str, dict[str, Any]]:
    return {
        200: {"description": "OK", "headers": {**_RATE_HEADERS, **_ETAG}},
        304: {
            "description": "Not Modified: If-None-Match named the current ETag (or `*`). No body.",
            "headers": {**_RATE_HEADERS, **_ETAG},
        },
    }


def list_responses(texts: EndpointTexts) -> dict[int | str, dict[str, Any]]:
    return {
        **_ok_headers(),
        400: _error("Bad limit or cursor.", INVALID_LIMIT_TEXT, str(ERROR_RULES[ErrorCode.INVALID_CURSOR].body)),
        **_common(texts),
    }


def record_responses(texts: EndpointTexts) -> dict[int | str, dict[str, Any]]:
    return {
        **_ok_headers(),
        404: _error(
            "Absent, private, hidden, or in another campaign: one identical answer.",
            texts.not_found,
            headers=_RATE_HEADERS,
        ),
        **_common(texts),
    }


def conditional_parameters() -> list[dict[str, Any]]:
    return [
        {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "description": (
                "ETags of bodies the client holds (comma-separated, W/ ignored), or `*`: a 304 without a body "
                "when one is the current body's. Checked last: after authentication, limits, validation and "
                "the query."
            ),
            "schema": {"type": "string"},
        }
    ]


def list_parameters() -> list[dict[str, Any]]:
    return [
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "description": (
                f"Page size. Default {DEFAULT_LIMIT}; values above {MAX_LIMIT} are capped to {MAX_LIMIT}; "
                "a value that is not an integer, or below 1, gives 400."
            ),
            "schema": {"type": "integer", "minimum": 1, "default": DEFAULT_LIMIT},
        },
        {
            "name": "cursor",
            "in": "query",
            "required": False,
            "description": "The pagination.next_cursor of the previous page; omit for the first page.",
            "schema": {"type": "string"},
        },
        *conditional_parameters(),
    ]


def without_framework_validation_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop the 422 FastAPI adds to operations with parameters: the API never answers 422
    (a malformed request is a 400 with the error body, rest/errors.py)."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    schemas = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return schema


def bearer_security_openapi(schema: dict[str, Any]) -> dict[str, Any]:
    """Declare the Bearer scheme and require it on every v1 operation."""
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})["bearerAuth"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key: `cpk_<key_id>_<secret>`, issued by the campaign's operator.",
    }
    for path, operations in schema.get("paths", {}).items():
        if path.startswith(V1_PATHS):
            for operation in operations.values():
                operation["security"] = [{"bearerAuth": []}]
    return schema


def operation_id(path: str) -> str | None:
    """`listSessions` for /api/public/v1/sessions, `getSession` for .../sessions/{id}: the
    names client generators turn into functions (FastAPI's own are path-long)."""
    segments = path.removeprefix(V1_PATHS).split("/")
    if len(segments) == 1:
        return f"list{segments[0].capitalize()}"
    if len(segments) == 2 and segments[1].startswith("{"):
        return f"get{segments[0].removesuffix('s').capitalize()}"
    return None


def generator_friendly_openapi(schema: dict[str, Any]) -> dict[str, Any]:
    """What client generators need beyond FastAPI's document: short operationIds, a
    server, and every header a response carries (X-Request-ID on all of them, Link on a
    list page that has a next one); X-Request-ID is documented as a request header too."""
    schema["servers"] = [{"url": "/", "description": "The host that serves this document"}]
    for path, operations in schema.get("paths", {}).items():
        if not path.startswith(V1_PATHS):
            continue
        for operation in operations.values():
            name = operation_id(path)
            if name is not None:
                operation["operationId"] = name
            operation.setdefault("parameters", []).append(_REQUEST_ID_PARAMETER)
            for status, response in operation.get("responses", {}).items():
                headers = response.setdefault("headers", {})
                headers.update(_REQUEST_ID_HEADER)
                if status == "200" and name is not None and name.startswith("list"):
                    headers.update(_LINK_HEADER)
    return schema
