"""Apply the Alembic migrations to a database (used by the CLI and by the tests)."""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config

# The top-level alembic/ folder, reached through the engine package (a symlink in the
# checkout, a copy in a wheel) so an installed service finds its migrations.
SCRIPT_PACKAGE_PATH = "migration_scripts"


def script_location() -> str:
    return str(resources.files("engine") / SCRIPT_PACKAGE_PATH)


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", script_location())
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    # Keep the caller's logging configuration (the service's JSON logs, pytest's capture).
    config.attributes["configure_logging"] = False
    return config


def upgrade_database(database_url: str, revision: str = "head") -> None:
    """Run `alembic upgrade` synchronously; call it from a thread when a loop is running."""
    command.upgrade(alembic_config(database_url), revision)
