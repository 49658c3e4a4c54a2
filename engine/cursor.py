"""The opaque list cursor.

A cursor is URL-safe base64 of a JSON array `[offset, *sort_key]`: the number of rows
already returned, then the sort key of the last row (so the next page can seek instead
of scanning past `offset` rows). Clients treat it as opaque; every malformed cursor is
one error, `InvalidCursor`.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from engine.errors import InvalidCursor

# Larger offsets are past the end of any campaign; capping keeps SQL integers in range.
MAX_OFFSET = 2**53
MAX_CURSOR_LENGTH = 2048

SortKeyValue = str | int | None


@dataclass(frozen=True, slots=True)
class Cursor:
    offset: int
    after: tuple[SortKeyValue, ...] = ()


def encode_cursor(cursor: Cursor) -> str:
    payload = json.dumps([cursor.offset, *cursor.after], separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(payload.encode()).rstrip(b"=").decode("ascii")


def _is_key_value(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def decode_cursor(raw: str) -> Cursor:
    if not raw or len(raw) > MAX_CURSOR_LENGTH or not raw.isascii():
        raise InvalidCursor()
    try:
        payload = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        # The decoder skips stray characters and padding; accept only what encode_cursor emits.
        if base64.urlsafe_b64encode(payload).rstrip(b"=") != raw.encode("ascii"):
            raise InvalidCursor()
        decoded = json.loads(payload.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor() from exc
    if not isinstance(decoded, list) or not decoded:
        raise InvalidCursor()
    offset, *after = decoded
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidCursor()
    if not all(_is_key_value(value) for value in after):
        raise InvalidCursor()
    return Cursor(offset=min(offset, MAX_OFFSET), after=tuple(after))
