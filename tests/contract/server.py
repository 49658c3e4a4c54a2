"""The real service as a subprocess, and the real CLI that prepares its data.

`running_server()` / `running_servers()` start `campaign-api serve` on free ports with an
explicit environment (nothing leaks in from the developer's shell or a `.env` file), wait
until `/healthz` answers and stop them with SIGTERM afterwards (SIGKILL after a timeout);
each server's stdout and stderr go to a log file in its working directory. `Cli` runs the
operator commands (`import`, `keys create`, `keys revoke`) with the same environment, so
the tests exercise the same paths an operator uses. Contract, fault and soak suites share
this module.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

# The console script installed next to the interpreter running the tests (.venv/bin).
CLI = Path(sys.executable).with_name("campaign-api")
TEST_PEPPER = "contract-pepper-0123456789-abcdefghijklmnop"
STARTUP_TIMEOUT_S = 30.0
SHUTDOWN_TIMEOUT_S = 10.0
CLI_TIMEOUT_S = 120.0
TOKEN_SHAPE = re.compile(r"cpk_([a-z2-7]{12})_[A-Za-z0-9_-]{43}")
# Inherited so the interpreter and its locale behave as in the test process; nothing else.
_INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


@dataclass(frozen=True, slots=True)
class ServiceEnv:
    """The environment of one server and of the CLI commands that prepare its data.

    A field left at None is not set at all, so the service's own default applies.
    """

    database_url: str
    api_key_pepper: str | None = TEST_PEPPER
    redis_url: str | None = None
    rate_limit_ip: str | None = None
    rate_limit_failed_auth: str | None = None
    rate_limit_key: str | None = None
    rate_limit_owner: str | None = None
    key_cache_s: float | None = None
    key_cache_stale_s: float | None = None
    log_level: str = "WARNING"
    extra: Mapping[str, str] = field(default_factory=dict)

    def with_changes(self, **changes: Any) -> ServiceEnv:
        return replace(self, **changes)

    def variables(self) -> dict[str, str]:
        env = {name: value for name in _INHERITED if (value := os.environ.get(name)) is not None}
        optional = {
            "API_KEY_PEPPER": self.api_key_pepper,
            "REDIS_URL": self.redis_url,
            "RATE_LIMIT_IP": self.rate_limit_ip,
            "RATE_LIMIT_FAILED_AUTH": self.rate_limit_failed_auth,
            "RATE_LIMIT_KEY": self.rate_limit_key,
            "RATE_LIMIT_OWNER": self.rate_limit_owner,
            "KEY_CACHE_S": None if self.key_cache_s is None else str(self.key_cache_s),
            "KEY_CACHE_STALE_S": None if self.key_cache_stale_s is None else str(self.key_cache_stale_s),
        }
        env.update({name: value for name, value in optional.items() if value is not None})
        env["DATABASE_URL"] = self.database_url
        env["LOG_LEVEL"] = self.log_level
        env.update(self.extra)
        return env


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now at `host` (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def key_id_of(token: str) -> str:
    match = TOKEN_SHAPE.fullmatch(token)
    assert match is not None, f"not an API key token: {token!r}"
    return match.group(1)


@dataclass(frozen=True, slots=True)
class KeySpec:
    campaign: str
    owner: str
    label: str | None = None


@dataclass(slots=True)
class Cli:
    """`campaign-api` commands run as subprocesses with one environment, in `workdir`."""

    env: ServiceEnv
    workdir: Path

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        (completed,) = self.run_concurrently([args], check=check)
        return completed

    def run_concurrently(
        self, commands: Sequence[Sequence[str]], *, check: bool = True
    ) -> list[subprocess.CompletedProcess[str]]:
        """Run independent commands side by side (each one pays the interpreter's startup)."""
        processes = [
            (
                list(args),
                subprocess.Popen(
                    [str(CLI), *args],
                    env=self.env.variables(),
                    cwd=self.workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
            for args in commands
        ]
        results = []
        for args, process in processes:
            try:
                stdout, stderr = process.communicate(timeout=CLI_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
            results.append(subprocess.CompletedProcess(args, process.returncode, stdout, stderr))
        if check:
            for completed in results:
                if completed.returncode != 0:
                    raise AssertionError(
                        f"campaign-api {' '.join(completed.args)} exited {completed.returncode}\n"
                        f"stdout:\n{completed.stdout}\nstderr:\n{completed.stderr}"
                    )
        return results

    def import_export(self, export: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Write `export` as a campaign export file (contract §8) and import it."""
        path = self.workdir / f"export-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
        self.run("import", str(path))

    def create_key(self, *, campaign: str, owner: str, label: str | None = None) -> str:
        """A new key's token, which the command prints alone on stdout."""
        (token,) = self.create_keys([KeySpec(campaign=campaign, owner=owner, label=label)])
        return token

    def create_keys(self, specs: Sequence[KeySpec]) -> list[str]:
        """Several keys at once, in the order of `specs`."""
        commands = []
        for spec in specs:
            args = ["keys", "create", "--campaign", spec.campaign, "--owner", spec.owner]
            if spec.label is not None:
                args += ["--label", spec.label]
            commands.append(args)
        tokens = [completed.stdout.strip() for completed in self.run_concurrently(commands)]
        for token in tokens:
            key_id_of(token)
        return tokens

    def revoke_key(self, token: str) -> None:
        self.run("keys", "revoke", key_id_of(token))


@dataclass(slots=True)
class ApiServer:
    """A running `campaign-api serve` process."""

    base_url: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def is_running(self) -> bool:
        return self.process.poll() is None

    def terminate(self) -> None:
        """Ask for uvicorn's graceful shutdown; `stop()` waits for it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = SHUTDOWN_TIMEOUT_S) -> int:
        """SIGTERM, then SIGKILL to its process group after `timeout`; the exit status."""
        self.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            # The process leads its own group (start_new_session): workers go too.
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        return self.process.returncode


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """How to start one server: its environment, where it runs and logs, its workers, the
    loopback address it binds (a "host" of its own: any of 127.0.0.0/8)."""

    env: ServiceEnv
    workdir: Path
    workers: int = 1
    port: int | None = None
    host: str = "127.0.0.1"


def start_server(spec: ServerSpec) -> ApiServer:
    """Spawn `campaign-api serve` on its address (not yet answering); output to a log file."""
    port = spec.port or free_port(spec.host)
    log_path = spec.workdir / f"server-{port}-{uuid.uuid4().hex[:6]}.log"
    with log_path.open("wb") as log:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [str(CLI), "serve", "--host", spec.host, "--port", str(port), "--workers", str(spec.workers)],
            env=spec.env.variables(),
            cwd=spec.workdir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ApiServer(base_url=f"http://{spec.host}:{port}", port=port, log_path=log_path, process=process)


def wait_until_healthy(server: ApiServer, *, deadline: float) -> None:
    """Return once `/healthz` answers 200; raise with the server's log otherwise."""
    with httpx.Client(base_url=server.base_url, timeout=1.0) as client:
        while time.monotonic() < deadline:
            if not server.is_running():
                raise RuntimeError(
                    f"campaign-api serve exited {server.process.returncode} during startup:\n{server.log_text()}"
                )
            try:
                if client.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise RuntimeError(f"campaign-api serve did not answer /healthz in time:\n{server.log_text()}")


def stop_servers(servers: Sequence[ApiServer]) -> None:
    """Stop several servers, their graceful shutdowns running side by side."""
    for server in servers:
        server.terminate()
    for server in servers:
        server.stop()


@contextmanager
def running_servers(
    specs: Sequence[ServerSpec], *, startup_timeout: float = STARTUP_TIMEOUT_S
) -> Iterator[list[ApiServer]]:
    """Several servers, started side by side, all healthy for the duration of the block."""
    servers: list[ApiServer] = []
    try:
        for spec in specs:
            servers.append(start_server(spec))
        deadline = time.monotonic() + startup_timeout
        for server in servers:
            wait_until_healthy(server, deadline=deadline)
        yield servers
    finally:
        stop_servers(servers)


@contextmanager
def running_server(
    env: ServiceEnv,
    *,
    workdir: Path,
    workers: int = 1,
    port: int | None = None,
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> Iterator[ApiServer]:
    """One server on 127.0.0.1, healthy for the duration of the block."""
    spec = ServerSpec(env=env, workdir=workdir, workers=workers, port=port)
    with running_servers([spec], startup_timeout=startup_timeout) as (server,):
        yield server
