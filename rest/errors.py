"""The one table from error code to (status, exact body, headers), and its handlers.

No other module builds an error response. Bodies that depend on the endpoint (404 and
500 texts differ per resource) come from the endpoint the request was routed to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum, StrEnum

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from engine import errors
from engine.errors import DomainError, ErrorCode, FetchFailed
from engine.ratelimit import RateLimitExceeded, RateLimits, RateWindow
from rest.head import allow_with_head
from rest.responses import json_response, rate_headers
from rest.security_headers import SECURITY_HEADERS

logger = logging.getLogger("campaign_api.rest")

AUTH_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="public-api"'}


class HttpError(StrEnum):
    """Failures outside the domain: routing and the unexpected."""

    ROUTE_NOT_FOUND = "ROUTE_NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    BAD_REQUEST = "BAD_REQUEST"
    INTERNAL = "INTERNAL"


class Headers(Enum):
    NONE = "none"
    AUTH_CHALLENGE = "WWW-Authenticate"
    KEY_WINDOW = "the key's minute window"
    REJECTING_WINDOW = "the rejecting limit's window and Retry-After"


class EndpointText(Enum):
    """Placeholders for bodies that the routed endpoint supplies."""

    NOT_FOUND = "not_found"
    FETCH_FAILED = "fetch_failed"


@dataclass(frozen=True, slots=True)
class ErrorRule:
    status: int
    body: str | EndpointText
    headers: Headers


ERROR_RULES: dict[ErrorCode | HttpError, ErrorRule] = {
    ErrorCode.INVALID_LIMIT: ErrorRule(400, errors.INVALID_LIMIT_TEXT, Headers.NONE),
    ErrorCode.INVALID_CURSOR: ErrorRule(400, errors.INVALID_CURSOR_TEXT, Headers.NONE),
    ErrorCode.INVALID_API_KEY: ErrorRule(401, errors.INVALID_API_KEY_TEXT, Headers.AUTH_CHALLENGE),
    ErrorCode.NOT_FOUND: ErrorRule(404, EndpointText.NOT_FOUND, Headers.KEY_WINDOW),
    ErrorCode.RATE_LIMITED: ErrorRule(429, errors.RATE_LIMITED_TEXT, Headers.REJECTING_WINDOW),
    ErrorCode.FETCH_FAILED: ErrorRule(500, EndpointText.FETCH_FAILED, Headers.KEY_WINDOW),
    ErrorCode.UNAVAILABLE: ErrorRule(503, errors.UNAVAILABLE_TEXT, Headers.NONE),
    HttpError.ROUTE_NOT_FOUND: ErrorRule(404, errors.ROUTE_NOT_FOUND_TEXT, Headers.NONE),
    HttpError.METHOD_NOT_ALLOWED: ErrorRule(405, errors.METHOD_NOT_ALLOWED_TEXT, Headers.NONE),
    HttpError.BAD_REQUEST: ErrorRule(400, errors.BAD_REQUEST_TEXT, Headers.NONE),
    HttpError.INTERNAL: ErrorRule(500, errors.INTERNAL_ERROR_TEXT, Headers.NONE),
}


@dataclass(frozen=True, slots=True)
class EndpointTexts:
    """The bodies one endpoint answers for NOT_FOUND and FETCH_FAILED."""

    not_found: str
    fetch_failed: str

    def text(self, placeholder: EndpointText) -> str:
        return self.not_found if placeholder is EndpointText.NOT_FOUND else self.fetch_failed


# The change feed (contract §10.2): a list with nothing to look up, so never a 404 of its own.
CHANGES_TEXTS = EndpointTexts(
    not_found=errors.ROUTE_NOT_FOUND_TEXT, fetch_failed=errors.fetch_failed_text("changes")
)


@dataclass(frozen=True, slots=True)
class ErrorOutcome:
    """What one error answers. Outside a resource endpoint (e.g. /graphql), a body the
    endpoint would supply is the domain error's own message."""

    status: int
    message: str
    headers: dict[str, str]


def resolve_error(
    code: ErrorCode | HttpError,
    *,
    endpoint: EndpointTexts | None,
    domain_message: str = "",
    key_window: RateWindow | None = None,
    rejecting_window: RateWindow | None = None,
) -> ErrorOutcome:
    """Status, message and headers for an error code, per the table."""
    rule = ERROR_RULES[code]
    if isinstance(rule.body, EndpointText):
        message = endpoint.text(rule.body) if endpoint is not None else domain_message
    else:
        message = rule.body
    headers: dict[str, str] = {}
    if rule.headers is Headers.AUTH_CHALLENGE:
        headers.update(AUTH_CHALLENGE)
    elif rule.headers is Headers.KEY_WINDOW and key_window is not None:
        headers.update(rate_headers(key_window))
    elif rule.headers is Headers.REJECTING_WINDOW and rejecting_window is not None:
        headers.update(rate_headers(rejecting_window))
        headers["Retry-After"] = str(rejecting_window.retry_after(RateLimits.now()))
    return ErrorOutcome(status=rule.status, message=message, headers=headers)


def outcome_for_request(request: Request, error: DomainError) -> ErrorOutcome:
    return resolve_error(
        error.code,
        endpoint=getattr(request.state, "endpoint_texts", None),
        domain_message=str(error),
        key_window=getattr(request.state, "key_window", None),
        rejecting_window=error.window if isinstance(error, RateLimitExceeded) else None,
    )


def rest_error_response(outcome: ErrorOutcome) -> Response:
    return json_response({"error": outcome.message}, status=outcome.status, headers=outcome.headers)


async def _domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    return rest_error_response(outcome_for_request(request, exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        outcome = resolve_error(HttpError.METHOD_NOT_ALLOWED, endpoint=None)
        headers = {**outcome.headers, **(exc.headers or {})}
        if "Allow" in headers:
            headers["Allow"] = allow_with_head(headers["Allow"])  # rest/head.py answers HEAD
        return rest_error_response(ErrorOutcome(outcome.status, outcome.message, headers))
    code = HttpError.ROUTE_NOT_FOUND if exc.status_code == 404 else HttpError.BAD_REQUEST
    return rest_error_response(resolve_error(code, endpoint=None))


async def _unexpected(request: Request, exc: Exception) -> Response:
    logger.error("unhandled error on %s", request.url.path, exc_info=exc)
    # Inside a resource endpoint the client gets that endpoint's documented 500 body.
    if getattr(request.state, "endpoint_texts", None) is not None:
        response = rest_error_response(outcome_for_request(request, FetchFailed()))
    else:
        response = rest_error_response(resolve_error(HttpError.INTERNAL, endpoint=None))
    # Starlette sends this answer from ServerErrorMiddleware, outside every middleware the
    # app adds (SecurityHeaders included), so the protective headers are set here.
    for name, value in SECURITY_HEADERS:
        response.headers[name.decode("latin-1")] = value.decode("latin-1")
    return response


async def _invalid_request(request: Request, exc: Exception) -> Response:
    # Never FastAPI's default {"detail": [...]} body.
    return rest_error_response(resolve_error(HttpError.BAD_REQUEST, endpoint=None))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(DomainError, _domain_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _unexpected)
