"""Accept-Encoding as RFC 9110 §12.5.3 reads it, and the gzip middleware on any response."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from rest.compression import MIN_GZIP_BYTES, AcceptedEncodings, GzipResponses, accepted_encodings

LARGE, SMALL = MIN_GZIP_BYTES, MIN_GZIP_BYTES - 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, AcceptedEncodings(gzip=0.0, identity=None)),
        ("", AcceptedEncodings(gzip=0.0, identity=None)),
        ("gzip", AcceptedEncodings(gzip=1.0, identity=None)),
        ("GZIP;Q=0.5", AcceptedEncodings(gzip=0.5, identity=None)),
        ("x-gzip;q=0.3", AcceptedEncodings(gzip=0.3, identity=None)),
        ("gzip;q=0", AcceptedEncodings(gzip=0.0, identity=None)),
        ("gzip;q=0, *", AcceptedEncodings(gzip=0.0, identity=1.0)),  # an explicit gzip beats *
        ("*;q=0.2", AcceptedEncodings(gzip=0.2, identity=0.2)),
        ("*;q=0, identity", AcceptedEncodings(gzip=0.0, identity=1.0)),
        ("identity;q=0, gzip", AcceptedEncodings(gzip=1.0, identity=0.0)),
        (" gzip ; q=0.7 ,, br ", AcceptedEncodings(gzip=0.7, identity=None)),
        ("gzip;q=0.2, gzip;q=0.9", AcceptedEncodings(gzip=0.9, identity=None)),
        ("gzip;q=1.5", AcceptedEncodings(gzip=0.0, identity=None)),  # not a q-value
        ("gzip;q=0.1234", AcceptedEncodings(gzip=0.0, identity=None)),  # four decimals
        ("gzip;level=9;q=0.8", AcceptedEncodings(gzip=0.8, identity=None)),
    ],
)
def test_accepted_encodings(value: str | None, expected: AcceptedEncodings) -> None:
    assert accepted_encodings(value) == expected


@pytest.mark.parametrize(
    ("value", "size", "gzipped"),
    [
        (None, LARGE, False),  # no header: identity (contract §10.5)
        ("gzip", LARGE, True),
        ("gzip", SMALL, False),
        ("identity;q=0, gzip", SMALL, True),  # identity refused: compress whatever the size
        ("gzip;q=0.5", LARGE, True),  # identity not mentioned: no preference against gzip
        ("gzip;q=0.5, identity;q=0.9", LARGE, False),  # identity preferred
        ("gzip, identity;q=0.9", LARGE, True),
        ("identity;q=0, gzip;q=0", LARGE, False),  # nothing acceptable: identity anyway
        ("*;q=0", LARGE, False),
    ],
)
def test_when_to_compress(value: str | None, size: int, gzipped: bool) -> None:
    assert accepted_encodings(value).use_gzip(size) is gzipped


def _app(*messages: Message) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        for message in messages:
            await send(message)

    return app


async def _run(app: Any, accept_encoding: str | None) -> list[Message]:
    headers = [(b"accept-encoding", accept_encoding.encode())] if accept_encoding is not None else []
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await GzipResponses(app)({"type": "http", "method": "GET", "headers": headers}, receive, send)
    return sent


def _start(*headers: tuple[bytes, bytes]) -> Message:
    return {"type": "http.response.start", "status": 200, "headers": [*headers]}


class TestMiddleware:
    async def test_a_large_body_is_compressed_with_its_headers(self) -> None:
        body = b'{"data":"' + b"x" * 2000 + b'"}'
        start = _start((b"content-length", str(len(body)).encode()), (b"etag", b'"abc"'))
        sent = await _run(_app(start, {"type": "http.response.body", "body": body}), "gzip")
        headers = dict(sent[0]["headers"])
        assert gzip.decompress(sent[1]["body"]) == body
        assert headers == {
            b"content-length": str(len(sent[1]["body"])).encode(),
            b"etag": b'"abc"',  # the tag does not depend on the coding (contract §10.3)
            b"vary": b"Accept-Encoding",
            b"content-encoding": b"gzip",
        }

    async def test_identity_for_a_client_that_does_not_ask_still_varies(self) -> None:
        body = b"y" * LARGE
        sent = await _run(_app(_start(), {"type": "http.response.body", "body": body}), None)
        assert sent[1]["body"] == body
        assert sent[0]["headers"] == [(b"vary", b"Accept-Encoding")]

    async def test_an_empty_body_is_never_encoded(self) -> None:
        not_modified = {"type": "http.response.start", "status": 304, "headers": [(b"etag", b'"abc"')]}
        sent = await _run(_app(not_modified, {"type": "http.response.body", "body": b""}), "identity;q=0, gzip")
        assert sent == [not_modified, {"type": "http.response.body", "body": b""}]

    async def test_a_vary_the_response_has_is_kept_once(self) -> None:
        start = _start((b"vary", b"Origin, accept-encoding"))
        sent = await _run(_app(start, {"type": "http.response.body", "body": b"v" * LARGE}), None)
        assert sent[0]["headers"] == [(b"vary", b"Origin, accept-encoding")]

    async def test_streamed_and_already_encoded_bodies_pass_through(self) -> None:
        chunks = [{"type": "http.response.body", "body": b"z" * LARGE, "more_body": True},
                  {"type": "http.response.body", "body": b"z" * LARGE}]
        sent = await _run(_app(_start(), *chunks), "gzip")
        assert sent == [_start(), *chunks]
        encoded = _start((b"content-encoding", b"br"))
        sent = await _run(_app(encoded, {"type": "http.response.body", "body": b"w" * LARGE}), "gzip")
        assert sent[0]["headers"] == [(b"content-encoding", b"br")] and sent[1]["body"] == b"w" * LARGE
