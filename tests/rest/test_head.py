"""HEAD runs as GET below the middleware; the body is dropped, the method restored."""

from __future__ import annotations

import pytest
from starlette.types import Message, Receive, Scope, Send

from rest.head import HeadAsGet, allow_with_head


@pytest.mark.parametrize(
    ("allow", "expected"),
    [("GET", "GET, HEAD"), ("POST, GET", "GET, HEAD, POST"), ("POST", "POST"), ("get, HEAD", "GET, HEAD")],
)
def test_allow_lists_head_with_get(allow: str, expected: str) -> None:
    assert allow_with_head(allow) == expected


async def test_the_app_sees_a_get_and_the_client_gets_no_body() -> None:
    seen: list[str] = []
    methods_at_send: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["method"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"6")]})
        await send({"type": "http.response.body", "body": b"abc", "more_body": True})
        await send({"type": "http.response.body", "body": b"def"})

    scope = {"type": "http", "method": "HEAD", "headers": []}
    sent: list[Message] = []

    async def send(message: Message) -> None:
        methods_at_send.append(scope["method"])  # what the server reads to leave the body out
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    await HeadAsGet(app)(scope, receive, send)
    assert seen == ["GET"]
    assert sent == [
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"6")]},
        {"type": "http.response.body", "body": b"", "more_body": False},
    ]
    assert methods_at_send == ["HEAD", "HEAD"] and scope["method"] == "HEAD"


async def test_the_method_is_head_again_when_the_app_raises() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    scope = {"type": "http", "method": "HEAD", "headers": []}

    async def unused(message: Message | None = None) -> Message:
        raise AssertionError("nothing is received or sent")

    with pytest.raises(RuntimeError):
        await HeadAsGet(app)(scope, unused, unused)
    assert scope["method"] == "HEAD"
