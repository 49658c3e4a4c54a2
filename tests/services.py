"""Where the shared test services are, and how a test reacts when one is absent.

Under CI=true a missing service fails the test instead of skipping it, so a green CI run
always means the PostgreSQL and Redis paths ran.
"""

from __future__ import annotations

import os
import shutil
import socket

import pytest

POSTGRES_ADMIN_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def running_in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require_service(name: str, host: str, port: int) -> None:
    """Skip (or fail under CI) when nothing listens on host:port."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return
    except OSError:
        message = f"{name} is not reachable on {host}:{port}"
        if running_in_ci():
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)


def require_binary(name: str) -> str:
    """The path of an installed program (a Debian package's: haproxy, pgbouncer, ...); skip
    when it is absent, or fail under CI, where .ci/run installs it."""
    # Daemons install into sbin, which a non-root PATH may lack.
    path = shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if path is None:
        message = f"{name} is not installed"
        if running_in_ci():
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)
    return path
