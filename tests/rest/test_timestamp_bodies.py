"""REST bodies whose timestamps orjson encodes from `datetime`s (the REST documents run on
FixedDocumentExecutor) are byte for byte the bodies of the same documents executed by
Strawberry's stock schema, whose data holds the DateTime scalar's strings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import orjson
import pytest
import strawberry
from fastapi import FastAPI

from engine.db import Database
from engine.keys import create_api_key
from engine.records import CampaignScope
from engine.settings import Settings
from graphql_schema.context import CampaignContext
from graphql_schema.query import Query
from rest import documents
from rest.app import create_app
from rest.execution import run_document
from rest.routes import PREFIX, RESOURCES, Resource
from rest.runtime import Runtime
from tests.conftest import TEST_PEPPER
from tests.databases import BACKENDS, migrated_database
from tests.factories import ENTITY_TABLES, add_campaign, add_entity, add_session

STOCK_SCHEMA = strawberry.Schema(query=Query)
# Microseconds zero and not, four-digit years below 1000 and the last one, an offset that
# is stored as UTC, and none at all.
TIMESTAMPS = (
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(999, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    datetime(2024, 5, 1, 19, tzinfo=UTC),
    datetime(2024, 5, 1, 21, 30, 0, 250000, tzinfo=timezone(timedelta(hours=2))),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    None,
)
RECORDS_PER_TYPE = len(TIMESTAMPS)


@dataclass(frozen=True, slots=True)
class Seeded:
    database_url: str
    campaign_id: str
    token: str
    ids: dict[str, list[str]]  # by resource path


def timestamp(index: int) -> datetime | None:
    return TIMESTAMPS[index % len(TIMESTAMPS)]


@pytest.fixture(scope="module", params=BACKENDS)
def seeded_database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with migrated_database(request.param, tmp_path_factory.mktemp("timestamps")) as url:
        yield url


def _settings(database_url: str) -> Settings:
    return Settings(_env_file=None, database_url=database_url, api_key_pepper=TEST_PEPPER)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
async def seeded(seeded_database_url: str) -> Seeded:
    database = Database(_settings(seeded_database_url))
    ids: dict[str, list[str]] = {}
    try:
        async with database.session() as db:
            campaign = await add_campaign(db)
            sessions = [
                await add_session(
                    db,
                    campaign_id=campaign.id,
                    recording_date=timestamp(index),
                    created_at=timestamp(index + 1),
                    updated_at=timestamp(index + 2),
                )
                for index in range(RECORDS_PER_TYPE)
            ]
            ids["sessions"] = [session.id for session in sessions]
            for table in ENTITY_TABLES:
                entities = [
                    await add_entity(
                        db,
                        table=table,
                        campaign_id=campaign.id,
                        created_at=timestamp(index),
                        updated_at=timestamp(index + 3),
                    )
                    for index in range(RECORDS_PER_TYPE)
                ]
                ids[table.__tablename__] = [entity.id for entity in entities]  # type: ignore[attr-defined]
            issued = await create_api_key(
                db, campaign_id=campaign.id, owner_id=campaign.owner_id, label=None, pepper=TEST_PEPPER.encode()
            )
    finally:
        await database.dispose()
    return Seeded(database_url=seeded_database_url, campaign_id=campaign.id, token=issued.token, ids=ids)


@pytest.fixture
async def app(seeded: Seeded) -> AsyncIterator[FastAPI]:
    app = create_app(_settings(seeded.database_url))
    yield app
    await runtime_of_app(app).database.dispose()  # ASGITransport runs no lifespan, which would dispose it


@pytest.fixture
async def client(app: FastAPI, seeded: Seeded) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {seeded.token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as client:
        yield client


def runtime_of_app(app: FastAPI) -> Runtime:
    runtime = app.state.runtime
    assert isinstance(runtime, Runtime)
    return runtime


async def stock_body(app: FastAPI, seeded: Seeded, document: str, field: str, variables: dict[str, Any]) -> bytes:
    """The document executed by Strawberry's stock schema (every value serialized), as orjson writes it."""
    db = runtime_of_app(app).database.reader
    context = CampaignContext(db=db, scope=CampaignScope(campaign_id=seeded.campaign_id))
    result = await STOCK_SCHEMA.execute(document, variable_values=variables, context_value=context)
    assert result.errors is None and result.data is not None
    data = result.data[field]
    data.pop("etag", None)  # a record's stored tag, which the route sends as its ETag
    return orjson.dumps(data)


@pytest.mark.parametrize("resource", RESOURCES, ids=[resource.path for resource in RESOURCES])
class TestBodies:
    async def test_the_list_body_is_the_stock_executions(
        self, app: FastAPI, client: httpx.AsyncClient, seeded: Seeded, resource: Resource
    ) -> None:
        response = await client.get(f"{PREFIX}/{resource.path}", params={"limit": "100"})
        assert response.status_code == 200
        expected = await stock_body(
            app, seeded, resource.list_document, resource.list_field, {"limit": 100, "cursor": None}
        )
        assert response.content == expected
        assert len(response.json()["data"]) == RECORDS_PER_TYPE

    async def test_each_record_body_is_the_stock_executions(
        self, app: FastAPI, client: httpx.AsyncClient, seeded: Seeded, resource: Resource
    ) -> None:
        for record_id in seeded.ids[resource.path]:
            response = await client.get(f"{PREFIX}/{resource.path}/{record_id}")
            assert response.status_code == 200
            expected = await stock_body(app, seeded, resource.record_document, resource.record_field, {"id": record_id})
            assert response.content == expected


async def test_the_bodies_hold_every_timestamp_as_the_scalar_writes_it(client: httpx.AsyncClient) -> None:
    body = (await client.get(f"{PREFIX}/sessions", params={"limit": "100"})).content
    for written in (
        b'"0001-01-01T00:00:00+00:00"',
        b'"0999-12-31T23:59:59.000001+00:00"',
        b'"2024-05-01T19:00:00+00:00"',
        b'"2024-05-01T19:30:00.250000+00:00"',
        b'"9999-12-31T23:59:59.999999+00:00"',
    ):
        assert body.count(written) == 3  # as recording date, creation and update of a session each


async def test_the_rest_documents_leave_timestamps_to_orjson(app: FastAPI, seeded: Seeded) -> None:
    # Else the comparisons above would not test the datetimes' path at all.
    runtime = runtime_of_app(app)
    db = runtime.database.reader
    data = await run_document(
        runtime.queries[documents.SESSIONS_LIST],
        variables={"limit": 100, "cursor": None},
        db=db,
        scope=CampaignScope(campaign_id=seeded.campaign_id),
    )
    stamps = [row[key] for row in data["sessions"]["data"] for key in ("recording_date", "created_at", "updated_at")]
    assert sorted(stamp for stamp in stamps if stamp is not None) == sorted(3 * [t for t in TIMESTAMPS if t])
    assert all(type(stamp) is datetime and stamp.tzinfo is UTC for stamp in stamps if stamp is not None)
