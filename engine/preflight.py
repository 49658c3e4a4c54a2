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
from redis.exceptions import RedisError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from engine.db import Database
from engine.limiter_redis import InvalidRedisUrl, check_redis_url, describe_redis_error, limiter_redis
from engine.migrations import alembic_config
from engine.read_pool import ReadFailed
from engine.renderings import count_stale_renderings, describe_stale
from engine.settings import MIN_PEPPER_LENGTH, Settings

# What settings.normalize_database_url makes of the URLs the service supports.
SUPPORTED_DATABASE_DRIVERS = ("postgresql+psycopg", "sqlite+aiosqlite")


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    message: str
    # A problem the server must not start with (an outage is not one: it may pass).
    refuses_serving: bool = False


async def run_checks(settings: Settings) -> list[CheckResult]:
    database = await check_database(settings)
    # Stale renderings can only be counted in a database migrated to head.
    renderings = [await check_renderings(settings)] if database.ok else []
    return [database, *renderings, await check_redis(settings), check_pepper(settings)]


def configuration_problems(settings: Settings) -> list[str]:
    """What makes DATABASE_URL or REDIS_URL unusable whatever the servers' state (a URL that
    cannot be parsed, a database or scheme the service does not support): `serve` refuses
    to start on these, rather than have every worker fail and be started again."""
    return [problem for problem in (database_url_problem(settings), redis_url_problem(settings)) if problem]


def database_url_problem(settings: Settings) -> str | None:
    try:
        url = make_url(settings.database_url)
    except (ArgumentError, ValueError) as exc:  # not a URL; a port that is no number
        return f"DATABASE_URL cannot be parsed ({_first_line(exc)})"
    if url.drivername not in SUPPORTED_DATABASE_DRIVERS:
        return (
            f"DATABASE_URL {url.render_as_string(hide_password=True)}: unsupported database {url.drivername!r} "
            "(use postgresql://... or sqlite:///...)"
        )
    return None


def redis_url_problem(settings: Settings) -> str | None:
    if settings.redis_url is None:
        return None
    try:
        check_redis_url(settings.redis_url)
    except InvalidRedisUrl as exc:
        return f"REDIS_URL {_redacted_url(settings.redis_url)}: {exc}"
    return None


def describe_database_error(exc: SQLAlchemyError) -> str:
    """The driver's own first line: SQLAlchemy's text adds the SQL and its parameters."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    return _first_line(cause)


def redacted_database_url(settings: Settings) -> str:
    return make_url(settings.database_url).render_as_string(hide_password=True)


async def check_database(settings: Settings) -> CheckResult:
    problem = database_url_problem(settings)
    if problem is not None:
        return CheckResult(False, problem)
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
            False,
            f"{where}: at {at}, head is {', '.join(sorted(heads))} (run `campaign-api db upgrade`)",
            refuses_serving=True,
        )
    return CheckResult(True, f"{where}: reachable, migrated to head ({', '.join(sorted(heads))})")


async def serving_refusal(settings: Settings) -> str | None:
    """Why the server must not start on this database (not migrated to head, or holding
    stale renderings), or None. An unreachable database is no reason: the server answers
    an outage as it answers one that begins later."""
    database = await check_database(settings)
    if database.refuses_serving:
        return database.message
    if database.ok:
        renderings = await check_renderings(settings)
        if renderings.refuses_serving:
            return renderings.message
    return None


async def check_renderings(settings: Settings) -> CheckResult:
    """Stored renderings of an older renderer (run once the database is at head)."""
    database = Database(settings)
    try:
        stale = await count_stale_renderings(database.reader)
    except ReadFailed as exc:
        return CheckResult(False, f"stored renderings: cannot be counted ({exc})")
    finally:
        await database.dispose()
    if stale:
        return CheckResult(False, describe_stale(stale), refuses_serving=True)
    return CheckResult(True, "stored renderings: all from the current Markdown renderer")


async def check_redis(settings: Settings) -> CheckResult:
    if settings.redis_url is None:
        return CheckResult(True, "REDIS_URL not set: rate limits are counted in process memory (one worker only)")
    problem = redis_url_problem(settings)
    if problem is not None:
        return CheckResult(False, problem)
    where = f"Redis {_redacted_url(settings.redis_url)}"
    redis = limiter_redis(settings.redis_url, pool_size=1, timeout_s=settings.redis_timeout_s)
    try:
        await redis.client.ping()
        location = await redis.where()
    except (RedisError, OSError) as exc:
        return CheckResult(False, f"{where}: unreachable ({describe_redis_error(exc)})")
    finally:
        await redis.aclose()
    return CheckResult(True, f"{where}: reachable ({location})")


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
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    path = Path(database)
    return None if path.exists() else path


def _redacted_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
