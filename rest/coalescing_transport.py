"""A transport that sends what is written to it in one loop step as one write.

uvicorn writes a response's head when the app starts the response and its body when the
app sends it: two `send` system calls, two TCP segments (the socket has TCP_NODELAY),
for every response, though the app sends both in the same step of the event loop. On
loopback, where the client's side of each segment is processed in the sender's system
call, those calls were the largest single CPU cost of a small response. Here writes are
collected and handed to the socket's transport together at the end of the step (one
`call_soon` per step that writes): the same bytes, in the same order, in one call.

Anything whose outcome depends on what was written (closing, the write buffer's size)
sends the collected bytes first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


class CoalescingTransport(asyncio.Transport):
    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes | bytearray | memoryview] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Hands the collected bytes to the socket's transport (a no-op when there are none)."""
        pending, self._pending = self._pending, []
        if pending:
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        self.flush()
        return self._transport.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()
