"""CoalescingTransport: what is written in one loop step reaches the socket in one write,
in order, and nothing written is lost or reordered by closing."""

from __future__ import annotations

import asyncio

from rest.coalescing_transport import CoalescingTransport


async def _served(write: object) -> bytes:
    """What a client reads from a real loopback server whose protocol calls `write` with
    its coalescing transport and then closes it."""
    loop = asyncio.get_running_loop()

    class Writer(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            coalescing = CoalescingTransport(transport, loop)
            write(coalescing)  # type: ignore[operator]
            coalescing.close()

    server = await loop.create_server(Writer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        received = await asyncio.wait_for(reader.read(), timeout=10)
        writer.close()
        return received
    finally:
        server.close()
        await server.wait_closed()


async def test_bytes_arrive_whole_and_in_order_when_closed_in_the_same_step() -> None:
    def write(transport: CoalescingTransport) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(b"")
        transport.writelines([b"{", bytearray(b'"a"'), memoryview(b":1}")])

    assert await _served(write) == b'HTTP/1.1 200 OK\r\n\r\n{"a":1}'


class RecordingTransport(asyncio.Transport):
    """The writes a transport is handed (the socket's transport would send each one)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return sum(map(len, self.writes))


async def test_one_write_per_loop_step() -> None:
    recording = RecordingTransport()
    transport = CoalescingTransport(recording, asyncio.get_running_loop())
    transport.write(b"head;")
    transport.write(b"body")
    assert recording.writes == []  # not before the step ends
    await asyncio.sleep(0)
    assert recording.writes == [b"head;body"]
    transport.write(b"next")
    await asyncio.sleep(0)
    assert recording.writes == [b"head;body", b"next"]


async def test_what_depends_on_the_written_bytes_sends_them_first() -> None:
    recording = RecordingTransport()
    transport = CoalescingTransport(recording, asyncio.get_running_loop())
    transport.write(b"abc")
    assert transport.get_write_buffer_size() == 3
    transport.write(b"d")
    transport.close()
    assert recording.writes == [b"abc", b"d"] and recording.closed
    await asyncio.sleep(0)  # the step's scheduled send finds nothing left
    assert recording.writes == [b"abc", b"d"]


async def test_abort_drops_what_was_not_sent() -> None:
    recording = RecordingTransport()
    transport = CoalescingTransport(recording, asyncio.get_running_loop())
    transport.write(b"abc")
    transport.abort()
    await asyncio.sleep(0)
    assert recording.writes == [] and recording.closed
