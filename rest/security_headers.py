"""Headers on every response: the bodies are per-key data and always JSON (or a UI page or
file): never sniffed, never stored, except the versioned UI files (rest/vendor_files.py)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
)
NOSNIFF = SECURITY_HEADERS[:1]


class SecurityHeaders:
    """Pure ASGI middleware (no per-request task or body buffering, unlike BaseHTTPMiddleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                # no-store unless the response chose its caching (the versioned UI files).
                chosen = any(name == b"cache-control" for name, _ in headers)
                message["headers"] = [*headers, *(NOSNIFF if chosen else SECURITY_HEADERS)]
            await send(message)

        await self.app(scope, receive, send_with_headers)
