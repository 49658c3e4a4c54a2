"""uvicorn's httptools protocol with a bound on what the parser buffers of a header section.

httptools (llhttp) has no size limit of its own: it hands a header to Python only once the
header is complete, so a 2 MB header, or a head of 10,000 headers, is accumulated whole and
then served; the trailers after a chunked body are buffered the same way. This protocol
counts the bytes of each header section as they arrive and refuses the request once the
section is larger than MAX_REQUEST_HEAD_BYTES: 431, plain text, and the connection closed.

The count is exact for a section that starts at the beginning of a read, as every head
does when the client waits for each answer before its next request: an open section is fed
no more than the limit, whatever the size of the reads, so the parser never holds more of
it and the outcome does not depend on how the client's bytes were segmented. A section
that begins in the middle of a read, after an earlier message in it (pipelining; trailers
after the last chunk's data), cannot be located in it, since httptools reports no
positions: it is counted from the next read on, so it may pass the limit by its part of
that one read before it is refused. When an earlier answer is still due on the connection,
the refusal is a close without the 431, which would otherwise be taken for that answer.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

# A request line plus headers (or a trailer section) larger than this is refused: h11's
# default bound, which clients of Python servers already meet. It also bounds the number
# of headers, to about 4,000 (a header line takes at least 4 bytes).
MAX_REQUEST_HEAD_BYTES = 16 * 1024
_REFUSAL_BODY = b"Request header fields too large."


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that refuses a request head or trailer section beyond a size."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # The header section the next bytes may belong to. "trailers" starts after every
        # chunk-size line: only the last chunk has trailers, and a data chunk leaves the
        # state at its first byte of data (on_body). None: a body, or nothing more to parse.
        self._section: Literal["head", "trailers"] | None = "head"
        # Bytes of the current section counted so far.
        self._section_bytes = 0
        # Whether every byte of the data being fed belongs to the current section: a
        # section that begins inside the data is counted from the next data on.
        self._feed_within_section = False

    def data_received(self, data: bytes) -> None:
        # An open section is fed no more than it may still take: if it is still open after
        # that, it is too large and the rest is never handed to the parser.
        while self._section is not None and len(data) > (room := MAX_REQUEST_HEAD_BYTES - self._section_bytes):
            self._feed(data[:room])
            if self.transport.is_closing():
                return
            data = data[room:]
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        self._feed_within_section = self._section is not None
        super().data_received(data)
        if self.transport.is_closing():  # refused as malformed by the parent
            return
        if self._section is not None and self._feed_within_section:
            self._section_bytes += len(data)
            # Still open at the limit: completing it takes at least one byte more.
            if self._section_bytes >= MAX_REQUEST_HEAD_BYTES:
                self._refuse()

    def _refuse(self) -> None:
        self.logger.warning("Request header section larger than %d bytes refused.", MAX_REQUEST_HEAD_BYTES)
        # Answer only if this request is the one the next response on the connection is
        # for and nothing of a response to it was written; otherwise just close.
        if self._section == "head":
            # uvicorn annotates `cycle` as always set; it is None before the first request.
            answerable = self.cycle is None or self.cycle.response_complete  # type: ignore[redundant-expr]
        else:
            answerable = not self.pipeline and not self.cycle.response_started
        if answerable:
            content = [STATUS_LINE[431]]
            for name, value in self.server_state.default_headers:
                content.extend([name, b": ", value, b"\r\n"])
            content.extend(
                [
                    b"content-type: text/plain; charset=utf-8\r\n",
                    b"content-length: %d\r\n" % len(_REFUSAL_BODY),
                    b"connection: close\r\n",
                    b"\r\n",
                    _REFUSAL_BODY,
                ]
            )
            self.transport.write(b"".join(content))
        self.transport.close()

    # Parser callbacks: where each header section begins and ends.
    def on_message_begin(self) -> None:
        self._section_bytes = 0
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._section = None
        super().on_headers_complete()

    def on_chunk_header(self) -> None:
        self._section = "trailers"
        self._section_bytes = 0
        self._feed_within_section = False

    def on_body(self, body: bytes) -> None:
        self._section = None
        super().on_body(body)

    def on_chunk_complete(self) -> None:
        self._section = None

    def on_message_complete(self) -> None:
        # The next byte begins another head, unless this was the last message: the parser
        # then discards whatever follows (lenient_data_after_close), buffering nothing.
        self._section = "head" if self.parser.should_keep_alive() else None
        self._feed_within_section = False
        super().on_message_complete()
