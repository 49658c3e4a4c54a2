"""Oversized requests against the real server are refused cheaply, and it stays healthy.

Raw sockets, so the test controls exactly what is sent and can stop sending when the
server answers: a request head (URL plus headers) and the trailers of a chunked body are
bounded by the HTTP protocol `campaign-api serve` runs (rest/http_protocol.py: 431 past
16 KiB), a /graphql body by the endpoint (413 from the declared Content-Length, or once the
stream passes 64 KiB). Nothing is read to its end, so answers come at once and the
server's memory does not grow with the size.
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rest.http_protocol import MAX_REQUEST_HEAD_BYTES
from tests.contract.client import ApiClient
from tests.contract.server import ApiServer, running_server
from tests.faults.common import Seeded

pytestmark = pytest.mark.xdist_group("faults")

ANSWER_WITHIN_S = 2.0
# The server may hold a few buffers of the largest accepted head; never the whole request.
RSS_GROWTH_LIMIT_KB = 40 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    status: int | None  # None: the connection was closed or reset without a status line
    head: bytes
    elapsed: float


@dataclass(slots=True)
class Target:
    server: ApiServer
    token: str

    def rss_kb(self) -> int:
        status = Path(f"/proc/{self.server.process.pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert match is not None
        return int(match.group(1))


@pytest.fixture(scope="module")
def target(seeded_sqlite: Seeded) -> Iterator[Target]:
    with running_server(seeded_sqlite.env, workdir=seeded_sqlite.workdir) as server:
        yield Target(server=server, token=seeded_sqlite.token)


def _status_of(received: bytes) -> int | None:
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", received)
    return int(match.group(1)) if match else None


def exchange(port: int, head: bytes, body: Iterable[bytes] = ()) -> Answer:
    """Send `head`, then `body` chunk by chunk until the server answers; read the answer."""
    started = time.monotonic()
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S + 3) as connection:
        try:
            connection.sendall(head)
            for chunk in body:
                if select.select([connection], [], [], 0)[0]:
                    break  # the server has answered (or closed): stop sending
                connection.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused and closed while we were still sending; its answer may be queued
        try:
            while b"\r\n\r\n" not in received:
                data = connection.recv(65536)
                if not data:
                    break
                received += data
        except ConnectionResetError:
            pass  # reset after (or instead of) the answer
        except TimeoutError:
            pytest.fail(f"no answer within {ANSWER_WITHIN_S + 3}s")
    return Answer(status=_status_of(received), head=received.split(b"\r\n\r\n")[0], elapsed=time.monotonic() - started)


def _head(request_line: str, token: str, extra: bytes = b"") -> bytes:
    return (
        f"{request_line}\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n".encode()
        + extra
        + b"\r\n"
    )


def _assert_refused(answer: Answer) -> None:
    # Refused while the client may still be sending: the 431 may be lost to a reset.
    assert answer.status in (None, 431), answer.head
    assert answer.elapsed < ANSWER_WITHIN_S, answer.elapsed


def _assert_healthy(target: Target) -> None:
    with ApiClient(target.server.base_url) as client:
        assert client.get("/healthz").status_code == 200
        assert client.api("sessions", token=target.token, params={"limit": "1"}).status_code == 200
    assert target.server.is_running()


class TestRequestHead:
    @pytest.mark.parametrize("size", [256 * 1024, 4 * 1024 * 1024])
    def test_very_long_url(self, target: Target, size: int) -> None:
        line = f"GET /api/public/v1/sessions?x={'a' * size} HTTP/1.1"
        answer = exchange(target.server.port, _head(line, target.token))
        _assert_refused(answer)
        _assert_healthy(target)

    def test_many_headers(self, target: Target) -> None:
        headers = b"".join(b"X-Padding-%d: %s\r\n" % (n, b"v" * 100) for n in range(20_000))
        answer = exchange(target.server.port, _head("GET /api/public/v1/sessions HTTP/1.1", target.token, headers))
        _assert_refused(answer)
        _assert_healthy(target)

    def test_one_huge_header(self, target: Target) -> None:
        header = b"X-Huge: " + b"v" * (8 * 1024 * 1024) + b"\r\n"
        answer = exchange(target.server.port, _head("GET /api/public/v1/sessions HTTP/1.1", target.token, header))
        _assert_refused(answer)
        _assert_healthy(target)

    def test_head_that_never_ends(self, target: Target) -> None:
        # Headers streamed without the blank line that would end them.
        chunks = (b"X-More-%d: %s\r\n" % (n, b"v" * 1000) for n in range(50_000))
        head = b"GET /api/public/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        answer = exchange(target.server.port, head, chunks)
        _assert_refused(answer)
        _assert_healthy(target)


LIMIT = MAX_REQUEST_HEAD_BYTES
REFUSAL_BODY = b"Request header fields too large."
SMALL_HEADER = len(b"X-000000: v\r\n")


def _head_of_size(size: int, token: str, *, many_headers: bool = False, close: bool = True) -> bytes:
    """A complete GET head of exactly `size` bytes, padded by one long header or many small ones."""
    start = (
        f"GET /api/public/v1/sessions?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        + ("Connection: close\r\n" if close else "")
    ).encode()
    room = size - len(start) - len(b"X-Last: \r\n\r\n")
    small = b"".join(b"X-%06d: v\r\n" % n for n in range(room // SMALL_HEADER)) if many_headers else b""
    head = start + small + b"X-Last: " + b"v" * (room - len(small)) + b"\r\n\r\n"
    assert len(head) == size
    return head


def _read_responses(connection: socket.socket, count: int) -> list[tuple[int | None, bytes]]:
    """(status, body) of `count` responses with a Content-Length, read off one connection."""
    received = b""
    responses: list[tuple[int | None, bytes]] = []
    while len(responses) < count:
        end = received.find(b"\r\n\r\n")
        length = re.search(rb"\r\ncontent-length: (\d+)\r\n", received[:end + 2], re.IGNORECASE) if end >= 0 else None
        if length is not None and len(received) >= end + 4 + int(length.group(1)):
            body_end = end + 4 + int(length.group(1))
            responses.append((_status_of(received), received[end + 4:body_end]))
            received = received[body_end:]
            continue
        data = connection.recv(65536)
        if not data:
            break
        received += data
    return responses


def _drip(port: int, head: bytes, *, piece: int = 256, pause_s: float = 0.002) -> tuple[Answer, int]:
    """Send `head` a few bytes at a time until the server answers; the answer and the bytes sent."""
    started = time.monotonic()
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S + 3) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while sent < len(head) and not select.select([connection], [], [], 0)[0]:
            connection.sendall(head[sent:sent + piece])
            sent += len(head[sent:sent + piece])
            time.sleep(pause_s)
        received = b""
        while b"\r\n\r\n" not in received and (data := connection.recv(65536)):
            received += data
    answer = Answer(status=_status_of(received), head=received.split(b"\r\n\r\n")[0],
                    elapsed=time.monotonic() - started)
    return answer, sent


class TestHeadLimit:
    """The bound itself: exact at 16 KiB, per request on a connection, over slow drips and trailers."""

    @pytest.mark.parametrize("many_headers", [False, True], ids=["one-header", "many-headers"])
    def test_a_head_of_exactly_the_limit_is_served(self, target: Target, many_headers: bool) -> None:
        answer = exchange(target.server.port, _head_of_size(LIMIT, target.token, many_headers=many_headers))
        assert answer.status == 200, answer.head

    @pytest.mark.parametrize("many_headers", [False, True], ids=["one-header", "many-headers"])
    def test_a_head_one_byte_over_is_431(self, target: Target, many_headers: bool) -> None:
        with socket.create_connection(("127.0.0.1", target.server.port), timeout=ANSWER_WITHIN_S) as connection:
            connection.sendall(_head_of_size(LIMIT + 1, target.token, many_headers=many_headers))
            [(status, body)] = _read_responses(connection, 1)
            assert (status, body) == (431, REFUSAL_BODY)
            with contextlib.suppress(ConnectionResetError):  # and the connection is closed
                assert connection.recv(1) == b""

    @pytest.mark.parametrize("many_headers", [False, True], ids=["one-header", "many-headers"])
    def test_a_head_is_refused_at_the_limit_before_it_ends(self, target: Target, many_headers: bool) -> None:
        # The head never ends: the server answers once it holds the limit, not at its end.
        unfinished = _head_of_size(LIMIT + 2, target.token, many_headers=many_headers)[:LIMIT]
        with socket.create_connection(("127.0.0.1", target.server.port), timeout=ANSWER_WITHIN_S) as connection:
            connection.sendall(unfinished)
            assert _read_responses(connection, 1) == [(431, REFUSAL_BODY)]

    def test_a_slow_drip_past_the_limit_is_refused_at_the_limit(self, target: Target) -> None:
        never_ending = _head_of_size(4 * LIMIT, target.token)[:-4]
        answer, sent = _drip(target.server.port, never_ending)
        assert answer.status == 431, answer.head
        # The limit is counted across reads: refused once it is passed, not at the end.
        assert LIMIT <= sent < 2 * LIMIT, sent
        _assert_healthy(target)

    def test_a_slow_drip_within_the_limit_is_served(self, target: Target) -> None:
        answer, sent = _drip(target.server.port, _head_of_size(LIMIT, target.token))
        assert (answer.status, sent) == (200, LIMIT), answer.head

    def test_each_request_on_a_connection_has_the_whole_limit(self, target: Target) -> None:
        heads = [_head_of_size(LIMIT - 1, target.token, close=False) for _ in range(3)]
        heads.append(_head_of_size(LIMIT, target.token))
        with socket.create_connection(("127.0.0.1", target.server.port), timeout=ANSWER_WITHIN_S) as connection:
            for head in heads:
                connection.sendall(head)
                [(status, _)] = _read_responses(connection, 1)
                assert status == 200

    def test_pipelined_requests_each_within_the_limit_are_served(self, target: Target) -> None:
        heads = [_head_of_size(LIMIT - 100, target.token, close=False, many_headers=n % 2 == 1) for n in range(4)]
        with socket.create_connection(("127.0.0.1", target.server.port), timeout=ANSWER_WITHIN_S) as connection:
            connection.sendall(b"".join(heads))
            assert [status for status, _ in _read_responses(connection, 4)] == [200] * 4

    def test_an_oversized_head_pipelined_behind_a_request_is_refused(self, target: Target) -> None:
        # The second head begins inside a read, where it is counted from the next read on:
        # refused a read later, and the connection closed without waiting for its end.
        first = _head_of_size(1024, target.token, close=False)
        unfinished = b"GET /api/public/v1/sessions HTTP/1.1\r\nX-Huge: " + b"v" * (1024 * 1024)
        received = b""
        with socket.create_connection(("127.0.0.1", target.server.port), timeout=ANSWER_WITHIN_S) as connection:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused while still sending
                connection.sendall(first + unfinished)
            with contextlib.suppress(ConnectionResetError):
                while data := connection.recv(65536):
                    received += data
        # The first answer, then the 431 (or the close alone, if the first was still running).
        assert re.findall(rb"^HTTP/1\.1 (\d{3}) ", received, re.MULTILINE) in ([], [b"200"], [b"200", b"431"])
        _assert_healthy(target)

    def test_data_after_a_last_request_is_not_a_head(self, target: Target) -> None:
        # After `Connection: close` the parser discards what follows; none of it is counted.
        answer = exchange(target.server.port, _head_of_size(1024, target.token) + b"x" * (2 * LIMIT))
        assert answer.status == 200, answer.head

    def _chunked_graphql(self, token: str, trailers: bytes) -> bytes:
        body = b'{"query": "{ sessions(limit: 1) { data { id } } }"}'
        fields = b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        head = _head("POST /graphql HTTP/1.1", token, fields)
        return head + b"%x\r\n%s\r\n0\r\n" % (len(body), body) + trailers

    def test_small_trailers_are_accepted(self, target: Target) -> None:
        answer = exchange(target.server.port, self._chunked_graphql(target.token, b"X-Checksum: abc\r\n\r\n"))
        assert answer.status == 200, answer.head

    def test_trailers_that_never_end_are_refused(self, target: Target) -> None:
        request = self._chunked_graphql(target.token, b"X-Trailer: ")
        answer = exchange(target.server.port, request, (b"v" * 65536 for _ in range(128)))  # 8 MiB offered
        _assert_refused(answer)
        _assert_healthy(target)


class TestRequestBody:
    def test_huge_declared_get_body_is_not_read(self, target: Target) -> None:
        # No endpoint takes a body; the answer comes without waiting for 1 GB that never comes.
        head = _head("GET /api/public/v1/sessions?limit=1 HTTP/1.1", target.token, b"Content-Length: 1000000000\r\n")
        answer = exchange(target.server.port, head, (b"x" * 65536 for _ in range(64)))
        assert answer.status in (200, 400, 413), answer.head
        assert answer.elapsed < ANSWER_WITHIN_S
        _assert_healthy(target)

    def test_huge_declared_graphql_body_is_413_at_once(self, target: Target) -> None:
        head = _head(
            "POST /graphql HTTP/1.1", target.token,
            b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n",
        )
        answer = exchange(target.server.port, head, (b" " * 65536 for _ in range(64)))
        assert answer.status == 413, answer.head
        assert answer.elapsed < ANSWER_WITHIN_S
        _assert_healthy(target)

    def test_huge_chunked_graphql_body_is_413_after_64_kib(self, target: Target) -> None:
        head = _head(
            "POST /graphql HTTP/1.1", target.token,
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
        )
        chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        answer = exchange(target.server.port, head, (chunk for _ in range(160)))  # 10 MiB offered
        assert answer.status == 413, answer.head
        assert answer.elapsed < ANSWER_WITHIN_S
        _assert_healthy(target)


def test_memory_does_not_grow_with_request_size(target: Target) -> None:
    """All of the above once more, then the worker's RSS compared with before."""
    _assert_healthy(target)
    before = target.rss_kb()
    for _ in range(3):
        exchange(target.server.port, _head(f"GET /api/public/v1/sessions?x={'a' * 4 * 1024 * 1024} HTTP/1.1",
                                           target.token))
        exchange(target.server.port, _head("GET /api/public/v1/sessions HTTP/1.1", target.token,
                                           b"X-Huge: " + b"v" * (8 * 1024 * 1024) + b"\r\n"))
        exchange(
            target.server.port,
            _head("POST /graphql HTTP/1.1", target.token,
                  b"Content-Type: application/json\r\nContent-Length: 99999999\r\n"),
            (b" " * 65536 for _ in range(32)),
        )
    _assert_healthy(target)
    assert target.rss_kb() - before < RSS_GROWTH_LIMIT_KB
