"""Daemons from Debian's packages run by the tests: started in the foreground with their
output in a log file, ready once a check passes, stopped by their own PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STARTUP_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


@dataclass(slots=True)
class Daemon:
    """One foreground process; `start()` returns once `ready()` is true."""

    name: str
    command: Sequence[str]
    log_path: Path
    ready: Callable[[], bool]
    cwd: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self, *, timeout: float = STARTUP_TIMEOUT_S) -> None:
        assert self.process is None or self.process.poll() is not None, f"{self.name} is running"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.command), cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} did not start:\n{self.log()}")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: gone at once, as in a crash; its peers see their connections drop."""
        self.stop(signal.SIGKILL)

    def stop(self, signum: int = signal.SIGTERM) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signum)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def accepts_connections(host: str, port: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    return check
