"""A throwaway PostgreSQL cluster that a test may stop and start: never the shared one.

`initdb` into a fresh directory owned by the `postgres` OS user (tests run as root here;
PostgreSQL refuses to run as root, so its binaries run through `runuser`), `pg_ctl start`
on a free loopback port with a private socket directory, and everything removed after.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.contract.server import free_port
from tests.services import running_in_ci

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
COMMAND_TIMEOUT_S = 60.0
DATABASE = "campaign"


def _binary(name: str) -> str | None:
    for directory in PG_BIN_DIRS:
        if (directory / name).is_file():
            return str(directory / name)
    return shutil.which(name)


def require_cluster_tools() -> None:
    """Skip (or fail under CI=true) when initdb/pg_ctl cannot be run here."""
    problem = None
    if _binary("initdb") is None or _binary("pg_ctl") is None:
        problem = "initdb/pg_ctl are not installed"
    elif os.geteuid() == 0 and shutil.which("runuser") is None:
        problem = "running as root without runuser: PostgreSQL cannot be started"
    if problem is not None:
        if running_in_ci():
            pytest.fail(problem + " (required under CI=true)")
        pytest.skip(problem)


def _as_postgres(*command: str) -> list[str]:
    # PostgreSQL refuses to run as root; any other user runs it directly.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


@dataclass(slots=True)
class PostgresCluster:
    directory: Path
    port: int

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def url(self) -> str:
        """The service's database (created by `throwaway_cluster`)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _pg_ctl(self, *args: str) -> None:
        pg_ctl = _binary("pg_ctl")
        assert pg_ctl is not None
        subprocess.run(
            _as_postgres(pg_ctl, "-D", str(self.data), *args),
            check=True,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
        )
        self._pg_ctl("-o", options, "-l", str(self.directory / "server.log"), "-w", "-t", "30", "start")

    def stop(self, mode: str = "fast") -> None:
        """`pg_ctl stop -m fast`: sessions are cut, as in an outage or a restart."""
        self._pg_ctl("-m", mode, "-w", "-t", "30", "stop")

    def is_running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def log(self) -> str:
        path = self.directory / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextmanager
def throwaway_cluster() -> Iterator[PostgresCluster]:
    """A running cluster with an empty `campaign` database; stopped and deleted after."""
    require_cluster_tools()
    initdb = _binary("initdb")
    assert initdb is not None
    # Not under pytest's tmp_path: that is private to root, and postgres must own this.
    directory = Path(tempfile.mkdtemp(prefix="campaign-faults-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    cluster = PostgresCluster(directory=directory, port=free_port())
    try:
        subprocess.run(
            _as_postgres(initdb, "-D", str(cluster.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                         "--locale=C", "--no-sync"),
            check=True,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        cluster.start()
        with psycopg.connect(cluster.admin_url, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")
        yield cluster
    finally:
        if cluster.is_running():
            with suppress(subprocess.SubprocessError):
                cluster.stop("immediate")
        shutil.rmtree(directory, ignore_errors=True)

