"""HAProxy (Debian's package) in front of hosts, as an operator would run it.

The configuration is deploy/haproxy.cfg, the file compose.yaml mounts: its `defaults`
section and its `backend hosts` checks run here as they are (forwardfor, `/readyz` health
checks, retries of a request a host failed before answering). Only what names places is
the tests' own: the front address, the hosts' server lines, the source address HAProxy
connects from (the one address the hosts' TRUSTED_PROXIES lists), a shorter check
interval, and the admin socket the tests read the hosts' states from.
"""

from __future__ import annotations

import csv
import io
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.loopback import Subnet
from tests.cluster.processes import Daemon, accepts_connections
from tests.contract.server import free_port
from tests.services import require_binary

DEPLOYED_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"
BACKEND = "hosts"
# Lines of the deployed backend that name places: replaced by the tests' own.
_PLACES = ("default-server", "server-template", "server ")


def deployed_sections(path: Path = DEPLOYED_CONFIG) -> dict[str, list[str]]:
    """The configuration's sections by their header line, each its lines (stripped, no comments)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line[0].isspace():
            current = sections.setdefault(line.strip(), [])
        elif current is not None:
            current.append(line.strip())
    return sections


@dataclass(frozen=True, slots=True)
class Backend:
    name: str
    address: str
    port: int


@dataclass(slots=True)
class HAProxy:
    daemon: Daemon
    front: str
    port: int
    admin_socket: Path

    @property
    def url(self) -> str:
        return f"http://{self.front}:{self.port}"

    def command(self, line: str) -> str:
        """One command of the runtime API (the stats socket), its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(5)
            connection.connect(str(self.admin_socket))
            connection.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := connection.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def _servers(self) -> list[dict[str, str]]:
        table = self.command("show stat").removeprefix("# ")
        return [
            row
            for row in csv.DictReader(io.StringIO(table))
            if row["pxname"] == BACKEND and row["svname"] not in ("FRONTEND", "BACKEND")
        ]

    def states(self) -> dict[str, str]:
        """Each host's state as HAProxy's health checks see it: "UP", "DOWN", ..."""
        return {row["svname"]: row["status"].split()[0] for row in self._servers()}

    def responses_by_server(self) -> dict[str, int]:
        """HTTP responses each host has sent (health checks not included)."""
        return {
            row["svname"]: sum(int(row[f"hrsp_{kind}"] or 0) for kind in ("1xx", "2xx", "3xx", "4xx", "5xx", "other"))
            for row in self._servers()
        }

    def wait_for(self, expected: dict[str, str], *, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                states: dict[str, str] | None = self.states()
            except OSError:
                # HAProxy binds its stats socket under a temporary name and renames it,
                # which may come just after its front port accepts connections.
                states = None
            if states == expected:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"HAProxy sees {states}, expected {expected}")
            time.sleep(0.1)


def render_config(*, front: str, port: int, source: str, backends: Sequence[Backend], admin_socket: Path) -> str:
    deployed = deployed_sections()
    checks = [line for line in deployed[f"backend {BACKEND}"] if not line.startswith(_PLACES)]
    sections = {
        "global": ["maxconn 2048", f"stats socket {admin_socket} mode 600 level admin"],
        "defaults": deployed["defaults"],
        "frontend api": [f"bind {front}:{port}", f"default_backend {BACKEND}"],
        f"backend {BACKEND}": [
            *checks,
            f"default-server check inter 500ms fall 2 rise 2 source {source}",
            *(f"server {b.name} {b.address}:{b.port}" for b in backends),
        ],
    }
    return "\n".join(header + "\n" + "".join(f"    {line}\n" for line in lines) for header, lines in sections.items())


@contextmanager
def running_haproxy(workdir: Path, *, subnet: Subnet, backends: Sequence[Backend]) -> Iterator[HAProxy]:
    """HAProxy on the subnet's proxy front (a free port), connecting to `backends` from the
    subnet's proxy source; stopped (SIGTERM to its PID) after the block."""
    binary = require_binary("haproxy")
    front, source = subnet.proxy_front, subnet.proxy_source
    port = free_port(front)
    admin_socket = workdir / f"haproxy-{port}.sock"
    config = workdir / f"haproxy-{port}.cfg"
    config.write_text(
        render_config(front=front, port=port, source=source, backends=backends, admin_socket=admin_socket)
    )
    daemon = Daemon(
        name="haproxy",
        command=[binary, "-db", "-f", str(config)],
        log_path=workdir / f"haproxy-{port}.log",
        ready=accepts_connections(front, port),
    )
    daemon.start()
    try:
        yield HAProxy(daemon=daemon, front=front, port=port, admin_socket=admin_socket)
    finally:
        daemon.stop()
