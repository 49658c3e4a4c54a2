"""PgBouncer (Debian's package) as a large deployment puts it in front of PostgreSQL: stock
settings in the pool mode of deploy/pgbouncer.ini (transaction mode: each client
transaction on whichever server connection is free). Nothing the service would need is
turned on for it: no ignored startup parameters, no prepared-statement support (1.18 has
none).

PgBouncer refuses to run as root: started by root (as the tests are here), it switches to
the `postgres` OS user (`-u`), which must then be able to read its files.
"""

from __future__ import annotations

import configparser
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from tests.cluster.processes import Daemon, accepts_connections
from tests.contract.server import free_port
from tests.services import require_binary

DEPLOYED_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "pgbouncer.ini"
CONFIG = """\
[databases]
* = host={server_host} port={server_port}

[pgbouncer]
listen_addr = {address}
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {auth_file}
pool_mode = {pool_mode}
max_client_conn = 1000
default_pool_size = {pool_size}
"""


def deployed_settings(path: Path = DEPLOYED_CONFIG) -> configparser.SectionProxy:
    """The [pgbouncer] section of the deployed configuration."""
    parser = configparser.ConfigParser(comment_prefixes=(";", "#"), interpolation=None)
    parser.read_string(path.read_text())
    return parser["pgbouncer"]


@dataclass(slots=True)
class PgBouncer:
    daemon: Daemon
    address: str
    port: int

    def url_for(self, database_url: str) -> str:
        """`database_url` (a PostgreSQL database) reached through this PgBouncer instead."""
        return make_url(database_url).set(host=self.address, port=self.port).render_as_string(hide_password=False)


@contextmanager
def running_pgbouncer(
    *, address: str, server_url: str, pool_size: int = 20, users: tuple[str, ...] = ("postgres",)
) -> Iterator[PgBouncer]:
    """PgBouncer on `address` (a free port) in front of the server of `server_url`; stopped
    by its PID after the block."""
    binary = require_binary("pgbouncer")
    server = make_url(server_url)
    directory = Path(tempfile.mkdtemp(prefix="campaign-pgbouncer-"))
    port = free_port(address)
    try:
        auth_file = directory / "users.txt"
        auth_file.write_text("".join(f'"{user}" ""\n' for user in users))
        config = directory / "pgbouncer.ini"
        config.write_text(
            CONFIG.format(
                server_host=server.host or "127.0.0.1",
                server_port=server.port or 5432,
                address=address,
                port=port,
                auth_file=auth_file,
                pool_size=pool_size,
                pool_mode=deployed_settings()["pool_mode"],
            )
        )
        directory.chmod(0o755)  # nothing secret in it: trust authentication, no passwords
        switch_user = ["-u", "postgres"] if os.geteuid() == 0 else []
        daemon = Daemon(
            name="pgbouncer",
            command=[binary, *switch_user, str(config)],
            log_path=directory / "pgbouncer.log",
            ready=accepts_connections(address, port),
        )
        daemon.start()
        try:
            yield PgBouncer(daemon=daemon, address=address, port=port)
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
