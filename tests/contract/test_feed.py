"""The change feed (contract §10.2) over HTTP: its body and rules on the seeded campaigns, and
what it announces while imports change them under a running server."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.contract.campaign import CAMPAIGN_A, CAMPAIGN_B, EXPORT, FEED_PATH, LISTS, OWNER_A, VISIBLE_ID, visible
from tests.contract.client import ApiClient, assert_error, assert_key_window, json_of
from tests.contract.conftest import HIGH_LIMITS, KEY_LIMIT, SeededDatabase, Templates
from tests.contract.server import ApiServer, running_server
from tests.databases import BACKENDS

pytestmark = pytest.mark.xdist_group("contract")

RECORD_TYPES = {"sessions": "session", "characters": "character", "locations": "location", "factions": "faction"}
RECORD_TYPES["items"] = "item"
VISIBLE_A = {(RECORD_TYPES[path], record["id"]) for path, (records, _) in LISTS.items() for record in records}


def walk(client: ApiClient, token: str, *, cursor: str | None = None, limit: int = 7) -> tuple[list[Any], str]:
    """Every entry after `cursor`, page by page, and the cursor to resume from."""
    entries: list[Any] = []
    while True:
        params = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
        response = client.api(FEED_PATH, token=token, params=params)
        assert response.status_code == 200, response.text
        page = json_of(response)
        entries += page["data"]
        cursor = page["pagination"]["next_cursor"]
        assert isinstance(cursor, str)
        if not page["pagination"]["has_more"]:
            return entries, cursor


class TestFeed:
    def test_from_its_start_every_visible_record_once(self, client: ApiClient, token_a: str) -> None:
        entries, _ = walk(client, token_a)
        assert sorted((entry["type"], entry["id"]) for entry in entries) == sorted(VISIBLE_A)
        assert {entry["change"] for entry in entries} == {"upsert"}
        for entry in entries:
            assert list(entry) == ["type", "id", "change", "changed_at"]
            assert entry["changed_at"].endswith("+00:00")
        assert [entry["changed_at"] for entry in entries] == sorted(entry["changed_at"] for entry in entries)

    def test_another_campaigns_key_sees_only_its_campaign(self, client: ApiClient, token_b: str) -> None:
        entries, _ = walk(client, token_b)
        visible_b = {
            (RECORD_TYPES[array], record["id"])
            for array in RECORD_TYPES
            for record in visible(EXPORT[array], campaign=CAMPAIGN_B, order=lambda record: record["id"])
        }
        assert visible_b and sorted((entry["type"], entry["id"]) for entry in entries) == sorted(visible_b)

    def test_the_body_and_headers_of_a_page(self, client: ApiClient, token_a: str) -> None:
        response = client.api(FEED_PATH, token=token_a, params={"limit": "2"})
        body = json_of(response)
        assert list(body) == ["data", "pagination"]
        assert body["pagination"]["has_more"] is True and len(body["data"]) == 2
        assert_key_window(response, limit=KEY_LIMIT)
        # The cursor is the list cursor's encoding of the last entry's sequence number.
        decoded = json.loads(base64.urlsafe_b64decode(body["pagination"]["next_cursor"] + "=="))
        assert isinstance(decoded, list) and len(decoded) == 1 and decoded[0] >= 2

    def test_the_default_page_is_50_and_100_is_the_cap(self, client: ApiClient, token_a: str) -> None:
        assert len(json_of(client.api(FEED_PATH, token=token_a))["data"]) == 50
        assert len(json_of(client.api(FEED_PATH, token=token_a, params={"limit": "1000"}))["data"]) == 100

    def test_the_end_of_the_feed_says_where_to_resume(self, client: ApiClient, token_a: str) -> None:
        _, cursor = walk(client, token_a, limit=100)
        response = client.api(FEED_PATH, token=token_a, params={"cursor": cursor})
        assert json_of(response) == {"data": [], "pagination": {"next_cursor": cursor, "has_more": False}}

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"limit": "0"}, "limit must be a positive integer"),
            ({"limit": "ten"}, "limit must be a positive integer"),
            ({"cursor": "!!"}, "Invalid cursor"),
            ({"cursor": "WyJ4Il0"}, "Invalid cursor"),  # ["x"]: not an offset
        ],
    )
    def test_bad_parameters(self, client: ApiClient, token_a: str, params: dict[str, str], message: str) -> None:
        assert_error(client.api(FEED_PATH, token=token_a, params=params), 400, message)

    def test_a_list_cursor_is_not_a_feed_cursor(self, client: ApiClient, token_a: str) -> None:
        seek = json_of(client.api("sessions", token=token_a, params={"limit": "2"}))["pagination"]["next_cursor"]
        assert_error(client.api(FEED_PATH, token=token_a, params={"cursor": seek}), 400, "Invalid cursor")

    def test_graphql_gives_the_same_entries(self, client: ApiClient, token_a: str) -> None:
        rest = json_of(client.api(FEED_PATH, token=token_a, params={"limit": "20"}))
        query = "{ changes(limit: 20) { data { type id change changedAt } pagination { nextCursor hasMore } } }"
        headers = {"Authorization": f"Bearer {token_a}"}
        changes = json_of(client.post("/graphql", json={"query": query}, headers=headers))["data"]["changes"]
        renamed = [
            {"type": e["type"], "id": e["id"], "change": e["change"], "changed_at": e["changedAt"]}
            for e in changes["data"]
        ]
        assert renamed == rest["data"]
        assert changes["pagination"] == {
            "nextCursor": rest["pagination"]["next_cursor"],
            "hasMore": rest["pagination"]["has_more"],
        }


# -- what imports change, seen by a client of a running server ------------------------------


@pytest.fixture(scope="module", params=BACKENDS)
def live(request: pytest.FixtureRequest, templates: Templates) -> Iterator[tuple[SeededDatabase, ApiServer]]:
    """A server of its own over a copy of the seeded database, which the tests import into."""
    with ExitStack() as stack:
        seeded = templates.copy(request.param, stack, name=f"feed-{request.param}")
        env = seeded.env.with_changes(key_cache_s=0, **HIGH_LIMITS)
        yield seeded, stack.enter_context(running_server(env, workdir=seeded.workdir))


def edited_export(**changes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The seeded export with some records' fields changed: `sessions={"sess-a-01": {...}}`."""
    export = copy.deepcopy(EXPORT)
    for array, edits in changes.items():
        for record in export[array]:
            record.update(edits.get(record["id"], {}))
    return export


def test_what_a_polling_client_sees(live: tuple[SeededDatabase, ApiServer]) -> None:
    seeded, server = live
    token = seeded.cli.create_key(campaign=CAMPAIGN_A, owner=OWNER_A, label="feed")
    with ApiClient(server.base_url) as client:
        _, cursor = walk(client, token)
        first = client.api("sessions/sess-a-01", token=token)
        second = client.api("sessions/sess-a-02", token=token)

        # GM-only text and sort order, a private session's title: nothing a client sees.
        summary = next(s for s in EXPORT["sessions"] if s["id"] == "sess-a-01")["summary"]
        seeded.cli.import_export(
            edited_export(
                sessions={
                    "sess-a-01": {"summary": summary + "\n:::gm\nanother GMCANARY-5e1f9 note\n:::\n"},
                    "sess-a-private-1": {"title": "Renamed GMCANARY-5e1f9"},
                },
                locations={VISIBLE_ID["locations"]: {"sort_order": 42}},
            )
        )
        assert walk(client, token, cursor=cursor) == ([], cursor)
        unchanged = client.api("sessions/sess-a-01", token=token, headers={"If-None-Match": first.headers["etag"]})
        assert unchanged.status_code == 304

        # A title: one upsert, a new tag; changed twice, still one entry after the cursor.
        for title in ("Second, revised", "Second, final"):
            seeded.cli.import_export(edited_export(sessions={"sess-a-02": {"title": title}}))
        entries, cursor = walk(client, token, cursor=cursor)
        assert [(e["type"], e["id"], e["change"]) for e in entries] == [("session", "sess-a-02", "upsert")]
        changed = client.api("sessions/sess-a-02", token=token, headers={"If-None-Match": second.headers["etag"]})
        assert changed.status_code == 200 and json_of(changed)["title"] == "Second, final"

        # Made private: a delete. Public again, and an item deleted by a snapshot import.
        seeded.cli.import_export(edited_export(sessions={"sess-a-02": {"visibility": "private"}}))
        entries, cursor = walk(client, token, cursor=cursor)
        assert [(e["type"], e["id"], e["change"]) for e in entries] == [("session", "sess-a-02", "delete")]
        snapshot = edited_export()
        snapshot["items"] = [item for item in snapshot["items"] if item["id"] != VISIBLE_ID["items"]]
        path = seeded.workdir / "snapshot.json"
        path.write_text(json.dumps(snapshot), encoding="utf-8")
        seeded.cli.run("import", str(path), "--replace")
        entries, _ = walk(client, token, cursor=cursor)
        assert [(e["type"], e["id"], e["change"]) for e in entries] == [
            ("session", "sess-a-02", "upsert"),
            ("item", VISIBLE_ID["items"], "delete"),
        ]
        assert_error(client.api(f"items/{VISIBLE_ID['items']}", token=token), 404, "Entity not found")
