"""A server meeting renderings of an older Markdown renderer, in-process against create_app()
on both databases: it refuses to start, /readyz names them, and a record read from one is
refused (its 500) rather than served."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.db import Database
from engine.keys import create_api_key
from engine.rendering import CURRENT_RENDERER
from engine.settings import Settings
from rest.app import create_app
from tests.conftest import TEST_PEPPER
from tests.databases import BACKENDS, migrated_database
from tests.factories import add_campaign, add_session, age_renderings, unique_id

STALE_ERROR = (
    f"1 stored record(s) were rendered by an older Markdown renderer than this campaign-api's "
    f"(version {CURRENT_RENDERER}), or never: run `campaign-api db upgrade`"
)


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """A database of this test's own: the stale row must not outlive it."""
    with migrated_database(request.param, tmp_path) as url:
        yield Settings(_env_file=None, database_url=url, api_key_pepper=TEST_PEPPER)  # type: ignore[call-arg]


@pytest.fixture
async def stale(settings: Settings) -> tuple[str, str]:
    """A public session whose rendering is stale, and a key of its campaign."""
    database = Database(settings)
    session_id = unique_id("stale")
    try:
        async with database.session() as db:
            campaign = await add_campaign(db)
            await add_session(db, campaign_id=campaign.id, session_id=session_id, summary="# Hello")
            await age_renderings(db, array="sessions", record_ids=[session_id])
            issued = await create_api_key(
                db, campaign_id=campaign.id, owner_id=campaign.owner_id, label=None, pepper=TEST_PEPPER.encode()
            )
    finally:
        await database.dispose()
    return session_id, issued.token


async def test_readiness_names_stale_renderings_and_records_are_refused(
    settings: Settings, stale: tuple[str, str]
) -> None:
    session_id, token = stale
    app = create_app(settings)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            ready = await client.get("/readyz")
            authorization = {"Authorization": f"Bearer {token}"}
            record = await client.get(f"/api/public/v1/sessions/{session_id}", headers=authorization)
            listed = await client.get("/api/public/v1/sessions", headers=authorization)
    finally:
        await app.state.runtime.database.dispose()
    assert (ready.status_code, ready.json()) == (
        503,
        {
            "status": "unavailable",
            "error": STALE_ERROR,
            "checks": {"database": "up", "rate_limit_storage": "up", "api_key_pepper": "up", "renderings": "stale"},
        },
    )
    assert (record.status_code, record.json()) == (500, {"error": "Failed to fetch session"})
    # A list holds no rendering: it is served as ever.
    assert listed.status_code == 200 and [item["id"] for item in listed.json()["data"]] == [session_id]


async def test_the_app_refuses_to_start(settings: Settings, stale: tuple[str, str]) -> None:
    app = create_app(settings)
    try:
        with pytest.raises(RuntimeError, match="run `campaign-api db upgrade`"):
            async with app.router.lifespan_context(app):
                pass
    finally:
        await app.state.runtime.database.dispose()
