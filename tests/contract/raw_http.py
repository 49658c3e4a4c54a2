"""One HTTP/1.1 exchange on a raw socket: the exact bytes a server sends, body included.

httpx hides what matters for HEAD and compression (it never reads a body after HEAD and
decodes gzip by itself, and it adds its own Accept-Encoding): here the request carries
exactly the given headers and the answer is read until the server closes.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    headers: list[tuple[str, str]]  # names lower-cased, in the order sent
    body: bytes  # every byte after the head, until the server closed

    def header(self, name: str) -> str | None:
        values = [value for key, value in self.headers if key == name]
        assert len(values) <= 1, f"{name} sent {len(values)} times"
        return values[0] if values else None


def exchange(base_url: str, method: str, target: str, headers: dict[str, str] | None = None) -> RawResponse:
    """Send one request with `Connection: close` and read the whole answer."""
    address = urlsplit(base_url)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {address.netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    with socket.create_connection((address.hostname, address.port), timeout=TIMEOUT_S) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        received = bytearray()
        while chunk := connection.recv(65536):
            received += chunk
    head, separator, body = bytes(received).partition(b"\r\n\r\n")
    assert separator, f"no complete head in {bytes(received)[:200]!r}"
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = []
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed.append((name.strip().lower(), value.strip()))
    return RawResponse(status=int(status_line.split()[1]), headers=parsed, body=body)
