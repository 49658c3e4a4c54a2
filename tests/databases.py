"""Throwaway test databases built by running the real Alembic migrations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from engine.migrations import upgrade_database
from tests.services import POSTGRES_ADMIN_URL, require_service

BACKENDS = ("sqlite", "postgresql")


def _admin_conninfo() -> str:
    return POSTGRES_ADMIN_URL


@contextmanager
def postgres_database(prefix: str = "campaign_test", *, revision: str = "head") -> Iterator[str]:
    """A fresh PostgreSQL database migrated to `revision`; dropped afterwards."""
    admin = make_url(POSTGRES_ADMIN_URL)
    require_service("PostgreSQL", admin.host or "127.0.0.1", admin.port or 5432)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_admin_conninfo(), autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(drivername="postgresql+psycopg", database=name).render_as_string(hide_password=False)
    try:
        upgrade_database(url, revision)
        yield url
    finally:
        with psycopg.connect(_admin_conninfo(), autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def sqlite_database(directory: Path, *, revision: str = "head") -> Iterator[str]:
    path = directory / f"campaign_test_{uuid.uuid4().hex[:12]}.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade_database(url, revision)
    yield url


@contextmanager
def migrated_database(backend: str, directory: Path, *, revision: str = "head") -> Iterator[str]:
    if backend == "postgresql":
        factory = postgres_database(revision=revision)
    else:
        factory = sqlite_database(directory, revision=revision)
    with factory as url:
        yield url
