"""Page-size rules shared by every list: default 50, capped at 100, below 1 rejected."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from engine.errors import InvalidLimit

DEFAULT_LIMIT = 50
MAX_LIMIT = 100

# ASCII digits only: int() would also accept "٣", " 3 " and "3_0".
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)

T = TypeVar("T")


def clamp_limit(limit: int | None) -> int:
    """The page size to use for an already-integer limit."""
    if limit is None:
        return DEFAULT_LIMIT
    if limit < 1:
        raise InvalidLimit()
    return min(limit, MAX_LIMIT)


def parse_limit(raw: str | None) -> int:
    """The page size for a query-string value; raises InvalidLimit when it is not one."""
    if raw is None:
        return DEFAULT_LIMIT
    if not _INTEGER.fullmatch(raw):
        raise InvalidLimit()
    # Any integer above 100 is capped, however long; counting digits instead of calling
    # int() keeps thousands of digits cheap (and within Python's int-parsing limit).
    digits = raw.lstrip("+-").lstrip("0")
    if raw.startswith("-") or not digits:
        raise InvalidLimit()
    if len(digits) > len(str(MAX_LIMIT)):
        return MAX_LIMIT
    return clamp_limit(int(digits))


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None
