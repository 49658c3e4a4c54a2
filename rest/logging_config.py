"""JSON log lines on stderr, one object per line, at the level of the LOG_LEVEL setting.

Every line carries the id of the request being served (when there is one), so a
traceback can be matched with its access line. Extra fields given with
`logger.info(..., extra={...})` become top-level keys.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

# Attributes every LogRecord has; anything else on a record came from `extra`.
_RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id.get()
        if request_id is not None:
            payload["request_id"] = request_id
        for name, value in record.__dict__.items():
            if name not in _RECORD_ATTRIBUTES and not name.startswith("_"):
                payload[name] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            payload["stack"] = self.formatStack(record.stack_info)
        try:
            return orjson.dumps(payload, default=str).decode()
        except TypeError:  # e.g. an integer beyond 64 bits
            return json.dumps(payload, default=str)


class StderrJsonHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever sys.stderr is at the time (test runners swap it)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)
        self.setFormatter(JsonFormatter())

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def configure_logging(level: str) -> None:
    """Send every logger's records to stderr as JSON (idempotent; other handlers are kept)."""
    # The JSON lines carry none of the caller's file and line, thread, process or task: not
    # collecting them saves a stack walk and lookups on every record (the logging HOWTO's
    # "Optimization" section), one of them per request for the access line.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, StderrJsonHandler)]:
        root.removeHandler(handler)
    root.addHandler(StderrJsonHandler())
    resolved = logging.getLevelNamesMapping().get(level.strip().upper())
    root.setLevel(resolved if resolved is not None else logging.INFO)
    if resolved is None:
        logging.getLogger("campaign_api").warning("unknown LOG_LEVEL %r; using INFO", level)
