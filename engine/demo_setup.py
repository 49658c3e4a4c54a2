"""`campaign-api demo`: a working API on a fresh machine, with no configuration at all.

Migrates the configured database (by default the SQLite file in the working directory),
loads the bundled demo campaign, makes sure a pepper exists (generating one into `.env`
when none is configured) and issues a key. Running it again is harmless: the import
upserts, the pepper is reused, and each run issues one more key.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shlex
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import SecretStr

from engine.db import Database
from engine.errors import ServiceUnavailable
from engine.importer import import_campaign_export
from engine.keys import create_api_key, require_pepper
from engine.migrations import upgrade_database
from engine.settings import MIN_PEPPER_LENGTH, Settings, get_settings

DEMO_CAMPAIGN_ID = "ashfall"
DEMO_OWNER_ID = "mara"
# A visible location with visible children and a hidden one, for the GraphQL example.
DEMO_LOCATION_ID = "ash-l-emberhold"
DEMO_KEY_LABEL = "demo"
# The file pydantic-settings reads, so a generated pepper is picked up by every later run.
ENV_FILE = Path(str(Settings.model_config.get("env_file") or ".env"))
_GRAPHQL_EXAMPLE = (
    "{ sessions(limit: 3) { data { id title recordingDate } pagination { hasMore nextCursor } } "
    f'location(id: "{DEMO_LOCATION_ID}") {{ name children {{ id name }} }} }}'
)


@dataclass(frozen=True, slots=True)
class DemoSetup:
    token: str
    # Where a newly generated pepper was saved; None when one was configured already.
    generated_pepper_in: Path | None


def prepare_demo(settings: Settings, *, env_file: Path = ENV_FILE) -> DemoSetup:
    """Everything `demo` does before serving. Synchronous: Alembic runs its own loop."""
    settings, generated_in = ensure_pepper(settings, env_file=env_file)
    upgrade_database(settings.database_url)
    token = asyncio.run(_load_demo_and_issue_key(settings))
    return DemoSetup(token=token, generated_pepper_in=generated_in)


def ensure_pepper(settings: Settings, *, env_file: Path) -> tuple[Settings, Path | None]:
    """Settings with a usable pepper, and the file a new one was written to (if any).

    A pepper that is set but too short is the operator's configuration: it is reported,
    never silently replaced (keys issued under it would stop verifying).
    """
    if settings.pepper is not None:
        return settings, None
    if settings.api_key_pepper is not None:
        raise ServiceUnavailable(f"API_KEY_PEPPER is shorter than {MIN_PEPPER_LENGTH} characters: fix or unset it")
    pepper = secrets.token_urlsafe(32)
    _append_secret_line(env_file, f"API_KEY_PEPPER={pepper}")
    # A server started in this process must read the new pepper, not a cached Settings.
    get_settings.cache_clear()
    return settings.model_copy(update={"api_key_pepper": SecretStr(pepper)}), env_file


def example_commands(token: str, *, host: str, port: int) -> list[str]:
    """Ready-to-paste curl lines for the REST API and for GraphQL."""
    base = f"http://{_reachable_host(host)}:{port}"
    authorization = shlex.quote(f"Authorization: Bearer {token}")
    body = shlex.quote(json.dumps({"query": _GRAPHQL_EXAMPLE}))
    return [
        f"curl -H {authorization} {base}/api/public/v1/sessions",
        f"curl -H {authorization} -H 'Content-Type: application/json' -d {body} {base}/graphql",
    ]


async def _load_demo_and_issue_key(settings: Settings) -> str:
    database = Database(settings)
    try:
        async with database.session() as db:
            with resources.as_file(resources.files("engine") / "demo" / "campaign.json") as export:
                await import_campaign_export(db, source=export)
            issued = await create_api_key(
                db,
                campaign_id=DEMO_CAMPAIGN_ID,
                owner_id=DEMO_OWNER_ID,
                label=DEMO_KEY_LABEL,
                pepper=require_pepper(settings.pepper),
            )
    finally:
        await database.dispose()
    return issued.token


def _append_secret_line(path: Path, line: str) -> None:
    # Created 0600, and tightened if it existed: the file now holds a secret.
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as env:
        if env.tell() > 0 and not path.read_bytes().endswith(b"\n"):
            env.write("\n")
        env.write(line + "\n")
    path.chmod(0o600)


def _reachable_host(host: str) -> str:
    """The address a local curl should use for a server bound to `host`."""
    if host in {"0.0.0.0", ""}:  # noqa: S104 (mapping a wildcard bind to loopback, not binding)
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
