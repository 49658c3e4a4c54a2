"""Apply the Alembic migrations to a database (used by the CLI and by the tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

_PROJECT_ROOT = Path(__file__).resolve().parent.parent


def alembic_config(database_url: str) -> Config:
    config = Config(str(_PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(_PROJECT_ROOT / "alembic"))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    # Keep the caller's logging configuration (the service's JSON logs, pytest's capture).
    config.attributes["configure_logging"] = False
    return config


def upgrade_database(database_url: str, revision: str = "head") -> None:
    """Run `alembic upgrade` synchronously; call it from a thread when a loop is running."""
    command.upgrade(alembic_config(database_url), revision)
