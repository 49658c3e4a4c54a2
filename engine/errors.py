"""Domain errors and the contract's error texts.

Each error has a stable code; the REST and GraphQL layers map codes, never types. Every
error text of the contract is written here once: the REST table (rest/errors.py) adds the
status and headers, GraphQL errors carry the same text as their message.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

INVALID_LIMIT_TEXT = "limit must be a positive integer"
INVALID_CURSOR_TEXT = "Invalid cursor"
INVALID_API_KEY_TEXT = "Invalid API key"
RATE_LIMITED_TEXT = "Rate limit exceeded"
UNAVAILABLE_TEXT = "Public API temporarily unavailable"
SESSION_NOT_FOUND_TEXT = "Session not found"
ENTITY_NOT_FOUND_TEXT = "Entity not found"
ROUTE_NOT_FOUND_TEXT = "Not found"
METHOD_NOT_ALLOWED_TEXT = "Method not allowed"
BAD_REQUEST_TEXT = "Bad request"
INTERNAL_ERROR_TEXT = "Internal server error"
GRAPHIQL_DISABLED_TEXT = "GraphiQL is disabled"


def fetch_failed_text(what: str) -> str:
    """The 500 body of a read that failed: `what` is the endpoint's resource, plural for a
    list ("sessions", "locations", "changes"), singular for one session."""
    return f"Failed to fetch {what}"


class ErrorCode(StrEnum):
    INVALID_LIMIT = "INVALID_LIMIT"
    INVALID_CURSOR = "INVALID_CURSOR"
    INVALID_API_KEY = "INVALID_API_KEY"
    NOT_FOUND = "NOT_FOUND"
    RATE_LIMITED = "RATE_LIMITED"
    FETCH_FAILED = "FETCH_FAILED"
    UNAVAILABLE = "UNAVAILABLE"
    INVALID_EXPORT = "INVALID_EXPORT"
    NEWER_RENDERER = "NEWER_RENDERER"


class DomainError(Exception):
    code: ErrorCode
    # The contract's text of this error where it has one fixed text.
    text: ClassVar[str] = ""

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.text or self.code.value)


class InvalidLimit(DomainError):
    code = ErrorCode.INVALID_LIMIT
    text = INVALID_LIMIT_TEXT


class InvalidCursor(DomainError):
    code = ErrorCode.INVALID_CURSOR
    text = INVALID_CURSOR_TEXT


class InvalidApiKey(DomainError):
    code = ErrorCode.INVALID_API_KEY
    text = INVALID_API_KEY_TEXT


class RecordNotFound(DomainError):
    code = ErrorCode.NOT_FOUND


class FetchFailed(DomainError):
    """The database could not answer a read (down, timed out, pool exhausted)."""

    code = ErrorCode.FETCH_FAILED


class ServiceUnavailable(DomainError):
    """Limits cannot be enforced or keys cannot be verified (storage or config missing)."""

    code = ErrorCode.UNAVAILABLE


class RateLimited(DomainError):
    code = ErrorCode.RATE_LIMITED
    text = RATE_LIMITED_TEXT


class InvalidExport(DomainError):
    """A campaign export that cannot be imported: malformed JSON or an invalid record.

    The message names the array, the index, the record id when known and the field.
    """

    code = ErrorCode.INVALID_EXPORT


class NewerRenderer(DomainError):
    """The database holds renderings of a newer Markdown renderer than this code's: writing
    to it would render them again with the older one (engine/renderings.py)."""

    code = ErrorCode.NEWER_RENDERER
