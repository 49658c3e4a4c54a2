"""gzip for response bodies of 1 KiB or more, when the request's Accept-Encoding allows it.

Contract §10.5: a body of at least MIN_GZIP_BYTES goes out gzip-compressed when the client
accepts gzip, with `Vary: Accept-Encoding`; smaller bodies, and clients that do not ask,
get the identity body unchanged. Accept-Encoding is read as RFC 9110 §12.5.3 says:
case-insensitive codings with optional q-values (`q=0` refuses), several header lines
joined, `x-gzip` as gzip, `*` for any coding not listed (identity included), an empty
value meaning "no coding". Where the client refuses identity (`identity;q=0`, or `*;q=0`
without an identity entry) and accepts gzip, even a small body is compressed; where it
refuses both, the identity body is sent anyway (the server may disregard the header
rather than answer 406, and an API client is better served by the data).

`Vary: Accept-Encoding` goes on every response whose body is large enough to be
compressed, compressed or not, so that a cache never hands one client's coding to
another. The ETag, when there is one, is left as it is: the contract makes the tag
independent of the coding. A response whose body is streamed in several messages, or
already has a coding, passes through untouched.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from functools import lru_cache

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MIN_GZIP_BYTES = 1024
# Measured on the benchmark's 100-row lists (tests/benchmarks/gzip_cost.py).
GZIP_LEVEL = 1

_QVALUE = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)", re.ASCII)
_OWS = " \t"


@dataclass(frozen=True, slots=True)
class AcceptedEncodings:
    """What one request's Accept-Encoding says about gzip and identity.

    `gzip` is gzip's weight (0: not acceptable). `identity` is the weight the header gives
    the identity coding, or None when it does not mention it (then acceptable, with no
    preference against gzip)."""

    gzip: float = 0.0
    identity: float | None = None

    def use_gzip(self, size: int) -> bool:
        if self.gzip <= 0:
            return False
        if self.identity == 0:
            return True  # identity refused: gzip is the one acceptable answer, whatever the size
        if size < MIN_GZIP_BYTES:
            return False
        return self.identity is None or self.gzip >= self.identity


NOTHING_ACCEPTED = AcceptedEncodings()


def _weighted_codings(value: str) -> dict[str, float]:
    """Each coding of an Accept-Encoding value with its q (the highest when repeated);
    members that do not parse are left out."""
    weights: dict[str, float] = {}
    for member in value.split(","):
        coding, *parameters = (part.strip(_OWS) for part in member.split(";"))
        if not coding:
            continue
        weight = 1.0
        for parameter in parameters:
            name, _, raw = parameter.partition("=")
            if name.strip(_OWS).lower() == "q":
                raw = raw.strip(_OWS)
                weight = float(raw) if _QVALUE.fullmatch(raw) else -1.0
        if weight < 0:
            continue
        coding = coding.lower()
        weights[coding] = max(weight, weights.get(coding, 0.0))
    return weights


@lru_cache(maxsize=256)
def accepted_encodings(value: str | None) -> AcceptedEncodings:
    """What an Accept-Encoding value (its lines joined by ", ") accepts; None: no header.

    Without the header a client gets identity (contract §10.5: compressed only "when asked").
    Cached: clients send a handful of distinct values."""
    if value is None:
        return NOTHING_ACCEPTED
    weights = _weighted_codings(value)
    gzip_weight = max(weights.get("gzip", -1.0), weights.get("x-gzip", -1.0))
    if gzip_weight < 0:
        gzip_weight = weights.get("*", 0.0)
    identity = weights.get("identity", weights.get("*"))
    return AcceptedEncodings(gzip=gzip_weight, identity=identity)


def accept_encoding_of(scope: Scope) -> str | None:
    """The request's Accept-Encoding, its lines joined; None when it sent none."""
    values = [value.decode("latin-1") for name, value in scope["headers"] if name == b"accept-encoding"]
    return ", ".join(values) if values else None


def varies_by_encoding(accepted: AcceptedEncodings, size: int) -> bool:
    """Whether a body of `size` bytes is one whose coding depends on Accept-Encoding."""
    return size >= MIN_GZIP_BYTES or accepted.use_gzip(size)


class GzipResponses:
    """Pure ASGI middleware applying the rules above to each complete response body.

    It works on the raw header list (no Headers objects): it runs on every response, and
    most need nothing (small, or not asked for) or only a Vary line."""

    def __init__(self, app: ASGIApp, *, level: int = GZIP_LEVEL) -> None:
        self.app = app
        self.level = level

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accepted = accepted_encodings(accept_encoding_of(scope))
        start: Message | None = None

        async def send_encoded(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message  # sent with the first body message, once the size is known
                return
            if start is None:  # after the first body message: a streamed body passes through
                await send(message)
                return
            response_start, start = start, None
            body: bytes = message.get("body", b"")
            # No body (a 304, a 204) is never encoded, whatever the client refuses.
            if body and not message.get("more_body", False) and varies_by_encoding(accepted, len(body)):
                message = self._encoded(response_start, message, accepted)
            await send(response_start)
            await send(message)

        await self.app(scope, receive, send_encoded)

    def _encoded(self, response_start: Message, message: Message, accepted: AcceptedEncodings) -> Message:
        """The body message to send, gzipped if it is to be; the start's headers updated."""
        headers: list[tuple[bytes, bytes]] = list(response_start.get("headers", ()))
        vary_at = None
        for index, (name, _) in enumerate(headers):
            lowered = name.lower()
            if lowered == b"content-encoding":
                return message  # already encoded by the app
            if lowered == b"vary":
                vary_at = index
        if vary_at is None:
            headers.append((b"vary", b"Accept-Encoding"))
        elif b"accept-encoding" not in headers[vary_at][1].lower():
            headers[vary_at] = (b"vary", headers[vary_at][1] + b", Accept-Encoding")
        body: bytes = message["body"]
        if accepted.use_gzip(len(body)):
            body = gzip.compress(body, compresslevel=self.level, mtime=0)
            headers = [(name, value) for name, value in headers if name.lower() != b"content-length"]
            headers += [(b"content-encoding", b"gzip"), (b"content-length", str(len(body)).encode())]
            message = {**message, "body": body}
        response_start["headers"] = headers
        return message
