"""Domain errors. Each has a stable code; the REST and GraphQL layers map codes, never types."""

from __future__ import annotations

from enum import StrEnum


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

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.code.value)


class InvalidLimit(DomainError):
    code = ErrorCode.INVALID_LIMIT


class InvalidCursor(DomainError):
    code = ErrorCode.INVALID_CURSOR


class InvalidApiKey(DomainError):
    code = ErrorCode.INVALID_API_KEY


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


class InvalidExport(DomainError):
    """A campaign export that cannot be imported: malformed JSON or an invalid record.

    The message names the array, the index, the record id when known and the field.
    """

    code = ErrorCode.INVALID_EXPORT


class NewerRenderer(DomainError):
    """The database holds renderings of a newer Markdown renderer than this code's: writing
    to it would render them again with the older one (engine/renderings.py)."""

    code = ErrorCode.NEWER_RENDERER
