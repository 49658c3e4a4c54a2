"""Oversized requests against the real server are refused cheaply, and it stays healthy.

Raw sockets, so the test controls exactly what is sent and can stop sending when the
server answers: a request head (URL plus headers) is bounded by the HTTP parser (h11,
`h11_max_incomplete_event_size` in `campaign-api serve`), a /graphql body by the endpoint
(413 from the declared Content-Length, or once the stream passes 64 KiB). Nothing is read
to its end, so answers come at once and the server's memory does not grow with the size.
"""

from __future__ import annotations

import re
import select
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

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
    assert answer.status is None or 400 <= answer.status < 500, answer.head
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
