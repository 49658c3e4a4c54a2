"""Absent, hidden and foreign ids cannot be told apart by timing: one code path, one query.

What makes the time of a 404 is the work behind it, so that work is compared rather than
wall-clock medians on a shared machine: for an id that does not exist, one that exists but
is hidden, and one of another campaign, the request sends the database the same
statements (the same SQL, in the same order, on as many connections) and answers the
same bytes. A lookup that answered "hidden" differently from "absent" (an extra query, an
early return before the read) would show here as a different statement list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI

from rest.app import create_app
from tests.security.world import PREFIX, RECORD_TYPE_BY_PATH, RecordType, World, asgi_client, settings_for
from tests.sql_log import SqlCount, sql_of

# Sessions and wiki entities are read by two functions.
PATHS = ("sessions", "characters", "locations")


@pytest.fixture(scope="module")
async def served(world: World) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    # Every request verifies its key against the store, so each one's statements are whole.
    app = create_app(settings_for(world, key_cache_s=0))
    async with asgi_client(settings_for(world), app=app) as http:
        http.headers.update(world.auth)
        # Opening the pool's first connection runs set-up statements: not a lookup's.
        assert (await http.get(f"{PREFIX}/sessions")).status_code == 200
        yield app, http


@pytest.mark.parametrize("path", PATHS)
async def test_absent_hidden_and_foreign_ids_take_the_same_path(
    served: tuple[FastAPI, httpx.AsyncClient], world: World, path: str
) -> None:
    app, client = served
    record_type: RecordType = RECORD_TYPE_BY_PATH[path]
    ids = world.ids[path]
    kinds = {"absent": world.absent_id(record_type), "hidden": ids.hidden[0], "foreign": ids.foreign[0]}
    seen: dict[str, tuple[int, bytes, SqlCount]] = {}
    for kind, record_id in kinds.items():
        response, sql = await sql_of(app, client.get(f"{PREFIX}/{path}/{quote(record_id, safe='')}"))
        seen[kind] = (response.status_code, response.content, sql)
    (status, body, sql), *others = seen.values()
    assert status == 404
    assert sql.shapes() == ["api_keys", path], "the key, then one lookup of the record"
    assert sql.others == []
    for other_status, other_body, other_sql in others:
        assert (other_status, other_body) == (status, body)
        assert other_sql == sql, "the same statements, texts and connections for every kind"
