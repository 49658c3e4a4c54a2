"""Request ids, one JSON access line per request and the HTTP metrics, as pure ASGI middleware.

The access line (logger `campaign_api.access`) names the route template, never the raw
path (ids in paths are not labels, and paths are client-chosen), and never a header: the
Authorization token cannot reach the logs. The key id appears once the guard has verified
the key. A client's X-Request-ID is kept when it is short and plain, replaced otherwise,
and echoed on every response the app sends.
"""

from __future__ import annotations

import functools
import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.metrics import HTTP_REQUEST_DURATION, HTTP_REQUESTS
from rest.logging_config import current_request_id

REQUEST_ID_HEADER = b"x-request-id"
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,128}", re.ASCII)
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"

access_logger = logging.getLogger("campaign_api.access")


def request_id_from(scope: Scope) -> str:
    """The client's X-Request-ID when there is exactly one and it is safe; a new UUID otherwise."""
    values = [value for name, value in scope["headers"] if name == REQUEST_ID_HEADER]
    if len(values) == 1:
        candidate: str = values[0].decode("latin-1")
        if _SAFE_REQUEST_ID.fullmatch(candidate):
            return candidate
    return str(uuid.uuid4())


def route_template(scope: Scope, *, root_path: str) -> str:
    """The path template the router matched (`/api/public/v1/sessions/{id}`), if any.

    `root_path` is the scope's before routing: a mount (the static assets) extends it.
    """
    template = getattr(scope.get("route"), "path_format", None)
    if isinstance(template, str) and template:
        return template
    # Plain Starlette routes (/openapi.json) leave only their endpoint in the scope.
    endpoint = scope.get("endpoint")
    if endpoint is not None:
        for route in getattr(scope.get("app"), "routes", ()):
            if getattr(route, "endpoint", None) is endpoint and isinstance(getattr(route, "path_format", None), str):
                return str(route.path_format)
    mounted_at = str(scope.get("root_path", ""))
    if mounted_at.startswith(root_path) and len(mounted_at) > len(root_path):
        return mounted_at[len(root_path) :] + "/{path}"
    return UNMATCHED_ROUTE


@functools.cache
def _request_metrics(method: str, route: str, status: int) -> tuple[Any, Any]:
    """The counter and histogram series of one (method, route, status): looked up once,
    since prometheus-client's `labels()` takes a lock and builds a key on every call. The
    labels come from small fixed sets, so the cache stays as small as the series."""
    labels = {"method": method, "route": route, "status": str(status)}
    return HTTP_REQUESTS.labels(**labels), HTTP_REQUEST_DURATION.labels(**labels)


class Observability:
    """Pure ASGI middleware (no per-request task or body buffering, unlike BaseHTTPMiddleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(scope)
        # request.state is a view of this dict: the app sets key_id on it, we read it back.
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        status = 500  # what the client gets when the app raises before responding
        root_path = str(scope.get("root_path", ""))
        started = time.perf_counter()

        async def send_with_request_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (REQUEST_ID_HEADER, request_id.encode())]
            await send(message)

        token = current_request_id.set(request_id)
        try:
            await self.app(scope, receive, send_with_request_id)
        except BaseException:
            self._record(scope, root_path=root_path, status=status, started=started, request_id=request_id)
            # The id stays set: Starlette's outermost error middleware logs the traceback
            # next, in this same context, and that line should name the request too.
            raise
        self._record(scope, root_path=root_path, status=status, started=started, request_id=request_id)
        current_request_id.reset(token)

    @staticmethod
    def _record(scope: Scope, *, root_path: str, status: int, started: float, request_id: str) -> None:
        duration_s = time.perf_counter() - started
        route = route_template(scope, root_path=root_path)
        method: str = scope["method"]
        method_label = method if method in KNOWN_METHODS else "OTHER"
        requests, durations = _request_metrics(method_label, route, status)
        requests.inc()
        durations.observe(duration_s)
        fields: dict[str, object] = {
            "method": method,
            "route": route,
            "status": status,
            "duration_ms": round(duration_s * 1000, 2),
            "request_id": request_id,
        }
        key_id = scope.get("state", {}).get("key_id")
        if key_id is not None:
            fields["key_id"] = key_id
        access_logger.info("%s %s %s", method, route, status, extra=fields)
