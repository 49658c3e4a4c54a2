"""Read the records of a campaign export one at a time, whatever the size of the file.

The file is pushed through ijson's incremental parser in fixed-size chunks, so memory
holds one chunk and one record, never the document. The reader checks the document's
shape (an object of arrays of objects) and turns a JSON syntax error into `InvalidExport`
with the line, column and byte offset of the fault.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import ijson

from engine.errors import InvalidExport

CHUNK_SIZE = 64 * 1024
_OPENING_EVENTS = frozenset({"start_map", "start_array"})
_CLOSING_EVENTS = frozenset({"end_map", "end_array"})
# yajl prints up to 30 bytes of context either side of a fault, the fault at column 40.
_YAJL_CONTEXT = 30
_YAJL_LEFT_MARGIN = 10
_NEWLINES_AS_SPACES = bytes.maketrans(b"\r\n", b"  ")

Event = tuple[str, Any]
RawRecord = tuple[str, int, dict[str, Any]]


def iter_records(path: Path, *, arrays: Collection[str], wanted: Collection[str]) -> Iterator[RawRecord]:
    """(array, index, record) for each record of the `wanted` arrays, in file order.

    Every top-level key must be one of `arrays`; the others' records are parsed (so the
    whole file is checked) but not built. Raises InvalidExport for malformed JSON or a
    document of the wrong shape.
    """
    events = _events(path)
    if next(events, None) != ("start_map", None):
        raise InvalidExport("a campaign export must be a JSON object")
    seen: set[str] = set()
    for event, key in events:
        if event == "end_map":
            break
        if key not in arrays:
            raise InvalidExport(f'unknown top-level key "{key}" (expected any of: {", ".join(arrays)})')
        if key in seen:
            raise InvalidExport(f'top-level key "{key}" appears twice')
        seen.add(key)
        if next(events, None) != ("start_array", None):
            raise InvalidExport(f"{key}: must be an array")
        yield from _array_records(events, array=key, build=key in wanted)
    # Reading on to the end is what reports trailing garbage after the object.
    for _ in events:
        pass


def _array_records(events: Iterator[Event], *, array: str, build: bool) -> Iterator[RawRecord]:
    for index, (event, _value) in enumerate(events):
        if event == "end_array":
            return
        if event != "start_map":
            raise InvalidExport(f"{array}[{index}]: a record must be a JSON object")
        record = _rest_of_object(events, build=build)
        if record is not None:
            yield array, index, record


def _rest_of_object(events: Iterator[Event], *, build: bool) -> dict[str, Any] | None:
    """Consume events up to the end of the object just opened; build it when asked."""
    builder = ijson.ObjectBuilder() if build else None
    if builder is not None:
        builder.event("start_map", None)
    depth = 1
    for event, value in events:
        if builder is not None:
            builder.event(event, value)
        if event in _OPENING_EVENTS:
            depth += 1
        elif event in _CLOSING_EVENTS:
            depth -= 1
            if depth == 0:
                break
    return builder.value if builder is not None else None


def _events(path: Path) -> Iterator[Event]:
    """ijson basic events of the file, chunk by chunk (the C backend when installed)."""
    parsed: list[Event] = ijson.sendable_list()
    parser = ijson.basic_parse_coro(parsed, use_float=True)
    position = _Position()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK_SIZE):
            try:
                parser.send(chunk)
            except ijson.JSONError as exc:
                raise InvalidExport(position.describe_fault(exc, chunk=chunk)) from None
            yield from parsed
            del parsed[:]
            position.advance(chunk)
    try:
        parser.close()
    except ijson.JSONError as exc:
        raise InvalidExport(
            f"malformed JSON at the end of the file (byte {position.offset}): {_first_line(exc)}"
        ) from None
    yield from parsed


class _Position:
    """Bytes and lines before the current chunk, to place a syntax error in the file."""

    def __init__(self) -> None:
        self.offset = 0
        self.lines = 0
        self.line_start = 0

    def advance(self, chunk: bytes) -> None:
        last_newline = chunk.rfind(b"\n")
        if last_newline >= 0:
            self.line_start = self.offset + last_newline + 1
        self.offset += len(chunk)
        self.lines += chunk.count(b"\n")

    def describe_fault(self, exc: ijson.JSONError, *, chunk: bytes) -> str:
        fault = _fault_in_chunk(str(exc), chunk)
        if fault is None:
            end = self.offset + len(chunk)
            return f"malformed JSON between bytes {self.offset} and {end}: {_first_line(exc)}"
        line = self.lines + chunk.count(b"\n", 0, fault) + 1
        newline = chunk.rfind(b"\n", 0, fault)
        line_start = self.offset + newline + 1 if newline >= 0 else self.line_start
        byte = self.offset + fault
        column = byte - line_start + 1
        return f"malformed JSON at line {line}, column {column} (byte {byte}): {_first_line(exc)}"


def _fault_in_chunk(message: str, chunk: bytes) -> int | None:
    """Where in `chunk` yajl stopped, recovered from the context its message quotes.

    yajl's verbose message quotes up to 30 bytes either side of the fault (newlines shown
    as spaces) with a caret under it; finding that text in the chunk gives the offset.
    None when the message has no such context or the text cannot be found.
    """
    lines = message.split("\n")
    if len(lines) < 3 or "^" not in lines[2]:
        return None
    caret = lines[2].index("^")
    before, after = lines[1][_YAJL_LEFT_MARGIN:caret], lines[1][caret:]
    haystack = chunk.translate(_NEWLINES_AS_SPACES)
    try:
        found = haystack.find((before + after).encode())
        if found >= 0:
            return _offending_byte(found + len(before.encode()))
        # Near the start of the chunk the quoted context is padded on the left.
        trimmed = before.lstrip(" ")
        found = haystack.find((trimmed + after).encode(), 0, _YAJL_CONTEXT + len(after.encode()))
    except UnicodeEncodeError:
        return None
    return _offending_byte(found + len(trimmed.encode())) if found >= 0 else None


def _offending_byte(consumed: int) -> int:
    # yajl stops just past the byte it rejected; point at that byte.
    return max(consumed - 1, 0)


def _first_line(exc: Exception) -> str:
    return str(exc).split("\n", 1)[0].strip()
