"""HEAD on every path that answers GET: the GET's status and headers, no body (RFC 9110 §9.3.2).

The application below sees a GET, so a HEAD is routed, authenticated, limited and
counted exactly like one (contract §10.4) and its headers, Content-Length included, are
the GET's. Only the body is left out. The scope's method is HEAD again from the moment
the response starts: the server (uvicorn) reads it to send no body itself, and the
access log and metrics name the method the client used.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The order methods are listed in an `Allow` header.
_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allow_with_head(allow: str) -> str:
    """An `Allow` value with HEAD wherever GET is allowed, in a fixed order (the router
    joins a set, whose order varies between processes)."""
    methods = {method.strip().upper() for method in allow.split(",") if method.strip()}
    if "GET" in methods:
        methods.add("HEAD")
    known = [method for method in _METHOD_ORDER if method in methods]
    return ", ".join(known + sorted(methods.difference(_METHOD_ORDER)))


class HeadAsGet:
    """Pure ASGI middleware: a HEAD request runs as a GET, and its body is not sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        scope["method"] = "GET"

        async def send_without_body(message: Message) -> None:
            if message["type"] == "http.response.start":
                scope["method"] = "HEAD"
                await send(message)
            elif message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await send(message)

        try:
            await self.app(scope, receive, send_without_body)
        finally:
            # An exception answered by Starlette's outermost error middleware goes to the
            # server directly: it must see HEAD to leave that body out too.
            scope["method"] = "HEAD"
