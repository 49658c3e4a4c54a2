"""A key reads its own campaign's visible records and nothing else, and cannot tell why not.

For every REST record endpoint and every GraphQL single-record field, each id the key may
not read gets the identical answer: absent ids, private and hidden ids of the key's own
campaign, every id of the other campaign (of every type), ids of other types, and ids
that differ from a visible one only in case or by surrounding whitespace. Identical means
the same status, the same body bytes and the same header names for REST; the same
message, code and path for GraphQL. Lists never contain anything else, and no GM-only or
hidden text reaches any body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.security.world import PREFIX, RECORD_TYPES, RecordType, World, asgi_client, settings_for

RATE_HEADERS = {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}
WHITESPACE = (" ", "\t", "\n", "\u00a0", "\u2003")


@pytest.fixture(scope="module")
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(settings_for(world)) as http:
        http.headers.update(world.auth)
        yield http


def unreadable_ids(world: World, record_type: RecordType) -> dict[str, str]:
    """Every id key A must not read at `record_type`'s endpoint, by a label for reports."""
    ids = world.ids[record_type.path]
    unreadable = {"absent": world.absent_id(record_type), "absent-unrelated": "does-not-exist"}
    unreadable |= {f"hidden-{n}": value for n, value in enumerate(ids.hidden)}
    for other in RECORD_TYPES:
        other_ids = world.ids[other.path]
        unreadable |= {f"foreign-{other.path}-{n}": value for n, value in enumerate(other_ids.foreign)}
        if other is not record_type:
            unreadable |= {f"own-{other.path}": other_ids.visible[0]}
    visible = ids.visible[0]
    unreadable |= {
        "upper": visible.upper(),
        "lower": visible.lower(),
        "swapcase": visible.swapcase(),
        "hidden-upper": ids.hidden[0].upper(),
        "foreign-lower": ids.foreign[0].lower(),
    }
    for n, space in enumerate(WHITESPACE):
        unreadable |= {f"space-before-{n}": space + visible, f"space-after-{n}": visible + space}
    unreadable["space-inside"] = visible[:3] + " " + visible[3:]
    return unreadable


def _path(record_type: RecordType, record_id: str) -> str:
    return f"{PREFIX}/{record_type.path}/{quote(record_id, safe='')}"


@pytest.mark.parametrize("record_type", RECORD_TYPES, ids=lambda record_type: record_type.path)
class TestRestRecords:
    async def test_every_unreadable_id_gets_the_identical_404(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        expected_body = f'{{"error":"{record_type.not_found}"}}'.encode()
        reference = await client.get(_path(record_type, world.absent_id(record_type)))
        assert (reference.status_code, reference.content) == (404, expected_body)
        assert set(reference.headers) >= RATE_HEADERS
        for label, record_id in unreadable_ids(world, record_type).items():
            response = await client.get(_path(record_type, record_id))
            assert (response.status_code, response.content) == (404, expected_body), label
            assert set(response.headers) == set(reference.headers), label

    async def test_the_same_ids_for_the_other_campaigns_key(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        # Campaign B's key gets the same 404 for A's visible records.
        expected = (404, f'{{"error":"{record_type.not_found}"}}'.encode())
        for record_id in world.ids[record_type.path].visible:
            response = await client.get(
                _path(record_type, record_id), headers={"Authorization": f"Bearer {world.other_token}"}
            )
            assert (response.status_code, response.content) == expected

    async def test_visible_records_are_read(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        for record_id in world.ids[record_type.path].visible:
            response = await client.get(_path(record_type, record_id))
            assert response.status_code == 200
            assert response.json()["id"] == record_id
            _assert_nothing_secret(world, response.text)

    async def test_lists_hold_exactly_the_visible_records(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        seen: list[str] = []
        url = f"{PREFIX}/{record_type.path}?limit=1"
        while url:
            response = await client.get(url)
            assert response.status_code == 200
            _assert_nothing_secret(world, response.text)
            body = response.json()
            seen += [record["id"] for record in body["data"]]
            cursor = body["pagination"]["next_cursor"]
            url = f"{PREFIX}/{record_type.path}?limit=1&cursor={cursor}" if cursor else ""
        assert sorted(seen) == sorted(world.ids[record_type.path].visible)


def _assert_nothing_secret(world: World, text: str) -> None:
    for secret in (*world.gm_canaries, world.hidden_canary):
        assert secret not in text
    for record_type in RECORD_TYPES:
        ids = world.ids[record_type.path]
        for record_id in (*ids.hidden, *ids.foreign):
            # A hidden parent's id may appear as parent_id (spec: Location.parent_id); nothing else.
            if record_type.path == "locations" and f'"parent_id":"{record_id}"' in text:
                text = text.replace(f'"parent_id":"{record_id}"', "")
            assert record_id not in text


GRAPHQL_RECORD = "query Record($id: ID!) {{ {field}(id: $id) {{ id }} }}"


async def _graphql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> httpx.Response:
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200
    return response


@pytest.mark.parametrize("record_type", RECORD_TYPES, ids=lambda record_type: record_type.path)
class TestGraphqlRecords:
    async def test_every_unreadable_id_gets_the_identical_error(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        query = GRAPHQL_RECORD.format(field=record_type.singular)
        reference = await _graphql(client, query, {"id": world.absent_id(record_type)})
        assert reference.json() == {
            "data": {record_type.singular: None},
            "errors": [
                {
                    "message": record_type.not_found,
                    "locations": [{"line": 1, "column": 26}],
                    "path": [record_type.singular],
                    "extensions": {"code": "NOT_FOUND"},
                }
            ],
        }
        for label, record_id in unreadable_ids(world, record_type).items():
            response = await _graphql(client, query, {"id": record_id})
            assert response.content == reference.content, label
            assert set(response.headers) == set(reference.headers), label

    async def test_visible_records_are_read(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        kind = "summary" if record_type.path == "sessions" else "description"
        markdown = f"{kind}Markdown {kind}Text"
        query = f"query Record($id: ID!) {{ {record_type.singular}(id: $id) {{ id {markdown} }} }}"
        for record_id in world.ids[record_type.path].visible:
            response = await _graphql(client, query, {"id": record_id})
            assert response.json()["data"][record_type.singular]["id"] == record_id
            _assert_nothing_secret(world, response.text)

    async def test_lists_hold_exactly_the_visible_records(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType
    ) -> None:
        response = await _graphql(client, f"{{ {record_type.path}(limit: 100) {{ data {{ id }} }} }}")
        ids = [record["id"] for record in response.json()["data"][record_type.path]["data"]]
        assert sorted(ids) == sorted(world.ids[record_type.path].visible)


async def test_location_links_never_lead_out_of_the_visible_campaign(client: httpx.AsyncClient, world: World) -> None:
    """`parent` of a location whose parent is hidden or foreign is null; `children` holds
    visible children only, at any depth reachable from a visible record."""
    query = """{ locations(limit: 100) { data { id parentId parent { id name } children(limit: 10) { id name }
                 parent2: parent { children(limit: 10) { id } } } } }"""
    response = await _graphql(client, query)
    body = response.json()
    assert "errors" not in body
    locations = world.ids["locations"]
    by_id = {record["id"]: record for record in body["data"]["locations"]["data"]}
    hidden_child, foreign_child, root = locations.visible
    assert by_id[hidden_child]["parentId"] == locations.hidden[0]
    assert by_id[hidden_child]["parent"] is None
    assert by_id[foreign_child]["parentId"] == locations.foreign[0]
    assert by_id[foreign_child]["parent"] is None
    assert by_id[root]["parent"] is None
    for record in by_id.values():
        assert record["children"] == []
    text = response.text
    for secret in (*world.gm_canaries, world.hidden_canary):
        assert secret not in text


async def test_many_fields_in_one_operation_answer_each_alike(client: httpx.AsyncClient, world: World) -> None:
    """Aliased fields of one document: the visible record is read, every other one is null
    with the same error, so comparing answers within one response tells nothing either."""
    record_type = RECORD_TYPES[0]
    ids = world.ids[record_type.path]
    candidates = [ids.visible[0], ids.hidden[0], ids.foreign[0], world.absent_id(record_type)]
    fields = " ".join(f'r{n}: session(id: "{record_id}") {{ id }}' for n, record_id in enumerate(candidates))
    body = (await _graphql(client, f"{{ {fields} }}")).json()
    assert body["data"] == {"r0": {"id": ids.visible[0]}, "r1": None, "r2": None, "r3": None}
    errors = sorted(body["errors"], key=lambda error: error["path"])
    assert [(error["message"], error["extensions"]["code"], error["path"]) for error in errors] == [
        ("Session not found", "NOT_FOUND", [f"r{n}"]) for n in (1, 2, 3)
    ]
