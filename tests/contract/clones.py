"""Copies of a seeded database, so each server that needs its own data gets it cheaply.

Seeding goes through the real CLI (one interpreter start per command); copying does not.
A PostgreSQL database is copied with `CREATE DATABASE ... TEMPLATE`, which needs the
source to have no open connection: sources are never served, only copied.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from tests.services import POSTGRES_ADMIN_URL


def _admin_execute(statement: str) -> None:
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as connection:
        connection.execute(statement)  # type: ignore[arg-type]


def drop_postgres_database(name: str) -> None:
    _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def cloned_database(source_url: str, workdir: Path) -> Iterator[str]:
    """A copy of the database at `source_url`, removed afterwards."""
    source = make_url(source_url)
    suffix = uuid.uuid4().hex[:8]
    if source.get_backend_name() == "postgresql":
        name = f"{source.database}_{suffix}"
        _admin_execute(f'CREATE DATABASE "{name}" TEMPLATE "{source.database}"')
        try:
            yield source.set(database=name).render_as_string(hide_password=False)
        finally:
            drop_postgres_database(name)
        return
    source_path = Path(str(source.database))
    copy = workdir / f"{source_path.stem}-{suffix}.db"
    shutil.copyfile(source_path, copy)
    try:
        yield source.set(database=str(copy)).render_as_string(hide_password=False)
    finally:
        copy.unlink(missing_ok=True)
