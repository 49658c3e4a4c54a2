"""Operator checks behind `campaign-api check`: is this configuration ready to serve?

Each check returns one line for the operator. Connection strings are shown with their
passwords hidden; the pepper is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from engine.db import Database
from engine.migrations import alembic_config
from engine.settings import MIN_PEPPER_LENGTH, Settings


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    message: str


async def run_checks(settings: Settings) -> list[CheckResult]:
    return [await check_database(settings), await check_redis(settings), check_pepper(settings)]


def describe_database_error(exc: SQLAlchemyError) -> str:
    """The driver's own first line: SQLAlchemy's text adds the SQL and its parameters."""
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    return _first_line(cause)


def redacted_database_url(settings: Settings) -> str:
    return make_url(settings.database_url).render_as_string(hide_password=True)


async def check_database(settings: Settings) -> CheckResult:
    where = f"database {redacted_database_url(settings)}"
    missing_file = _missing_sqlite_file(settings.database_url)
    if missing_file is not None:
        # Connecting would create an empty file; say what is wrong instead.
        return CheckResult(False, f"{where}: file {missing_file} does not exist (run `campaign-api db upgrade`)")
    database = Database(settings)
    try:
        async with database.engine.connect() as connection:
            current = await connection.run_sync(lambda sync: set(MigrationContext.configure(sync).get_current_heads()))
    except (SQLAlchemyError, OSError) as exc:
        detail = describe_database_error(exc) if isinstance(exc, SQLAlchemyError) else _first_line(exc)
        return CheckResult(False, f"{where}: unreachable ({detail})")
    finally:
        await database.dispose()
    heads = set(ScriptDirectory.from_config(alembic_config(settings.database_url)).get_heads())
    if current != heads:
        at = ", ".join(sorted(current)) or "no revision"
        return CheckResult(
            False, f"{where}: at {at}, head is {', '.join(sorted(heads))} (run `campaign-api db upgrade`)"
        )
    return CheckResult(True, f"{where}: reachable, migrated to head ({', '.join(sorted(heads))})")


async def check_redis(settings: Settings) -> CheckResult:
    if settings.redis_url is None:
        return CheckResult(True, "REDIS_URL not set: rate limits are counted in process memory (one worker only)")
    where = f"Redis {_redacted_url(settings.redis_url)}"
    client = Redis.from_url(
        settings.redis_url,
        socket_connect_timeout=settings.redis_timeout_s,
        socket_timeout=settings.redis_timeout_s,
    )
    try:
        await client.ping()
    except (RedisError, OSError, ValueError) as exc:
        return CheckResult(False, f"{where}: unreachable ({_first_line(exc)})")
    finally:
        await client.aclose()
    return CheckResult(True, f"{where}: reachable")


def check_pepper(settings: Settings) -> CheckResult:
    if settings.api_key_pepper is None:
        return CheckResult(False, "API_KEY_PEPPER is not set: every API request would get 503")
    if settings.pepper is None:
        return CheckResult(
            False, f"API_KEY_PEPPER is shorter than {MIN_PEPPER_LENGTH} characters: every API request would get 503"
        )
    return CheckResult(True, f"API_KEY_PEPPER is set ({MIN_PEPPER_LENGTH} characters or more)")


def _missing_sqlite_file(database_url: str) -> Path | None:
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    path = Path(url.database)
    return None if path.exists() else path


def _redacted_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
