"""Single records: fields, GM-only content removed, and one identical 404 for every miss."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.campaign import (
    CHARACTERS,
    FACTIONS,
    HIDDEN_IDS,
    ITEMS,
    LOCATIONS,
    NOT_FOUND_BODY,
    PUBLIC_MARKER,
    RESOURCE_PATHS,
    SESSIONS,
    VISIBLE_ID,
    entity_list_item,
    session_list_item,
)
from tests.contract.client import ApiClient, assert_error, assert_key_window, header_names, json_of
from tests.contract.conftest import KEY_LIMIT

pytestmark = pytest.mark.xdist_group("contract")

RECORDS = {
    "sessions": SESSIONS,
    "characters": CHARACTERS,
    "locations": LOCATIONS,
    "factions": FACTIONS,
    "items": ITEMS,
}
# Headers whose values legitimately differ between two otherwise identical responses.
VARYING = {"date", "x-ratelimit-remaining", "x-ratelimit-reset", "x-request-id"}


def record(path: str, record_id: str) -> dict[str, Any]:
    return next(r for r in RECORDS[path] if r["id"] == record_id)


class TestSessionRecord:
    def test_fields_and_public_summary(self, client: ApiClient, token_a: str) -> None:
        response = client.api("sessions/sess-a-01", token=token_a)
        assert response.status_code == 200
        body = json_of(response)
        summary_markdown, summary_text = body.pop("summary_markdown"), body.pop("summary_text")
        assert body == session_list_item(record("sessions", "sess-a-01"))
        assert PUBLIC_MARKER in summary_markdown and PUBLIC_MARKER in summary_text
        assert "rusty key" in summary_markdown and "a copper ring" in summary_markdown
        # Heading markers and bold markers are gone from the text form.
        assert "# Session notes" in summary_markdown
        assert "#" not in summary_text

    def test_a_timestamp_keeps_utc_and_an_explicit_offset(self, client: ApiClient, token_a: str) -> None:
        body = json_of(client.api("sessions/sess-a-02", token=token_a))
        assert body["recording_date"] == "2024-05-08T19:30:00+00:00"
        assert body["updated_at"] == "2024-05-09T12:00:00+00:00"
        assert body["summary_markdown"].strip() == f"A short and {PUBLIC_MARKER} summary."

    @pytest.mark.parametrize("session_id", ["sess-a-05", "sess-a-06"], ids=["gm-only", "no-summary"])
    def test_no_public_summary_gives_empty_strings(self, client: ApiClient, token_a: str, session_id: str) -> None:
        body = json_of(client.api(f"sessions/{session_id}", token=token_a))
        assert (body["summary_markdown"], body["summary_text"]) == ("", "")
        assert body["id"] == session_id


class TestEntityRecord:
    @pytest.mark.parametrize("path", ["characters", "locations", "factions", "items"])
    def test_fields_and_public_description(self, client: ApiClient, token_a: str, path: str) -> None:
        response = client.api(f"{path}/{VISIBLE_ID[path]}", token=token_a)
        assert response.status_code == 200
        body = json_of(response)
        markdown, text = body.pop("description_markdown"), body.pop("description_text")
        assert body == entity_list_item(record(path, VISIBLE_ID[path]))
        assert PUBLIC_MARKER in markdown and PUBLIC_MARKER in text

    def test_a_gm_heading_section_is_removed_exactly(self, client: ApiClient, token_a: str) -> None:
        body = json_of(client.api("locations/loc-a-capital", token=token_a))
        assert body["description_markdown"].strip() == f"**{PUBLIC_MARKER}** walls of grey stone."
        assert body["description_text"].strip() == f"{PUBLIC_MARKER} walls of grey stone."

    def test_a_visible_child_of_a_hidden_parent_names_its_parent(self, client: ApiClient, token_a: str) -> None:
        body = json_of(client.api("locations/loc-a-annex", token=token_a))
        assert body["parent_id"] == "loc-a-lair"
        assert (body["description_markdown"], body["description_text"]) == ("", "")


@pytest.mark.parametrize("path", RESOURCE_PATHS)
class TestNotFound:
    def test_every_miss_gives_the_same_response(self, client: ApiClient, token_a: str, path: str) -> None:
        responses = [client.api(f"{path}/{record_id}", token=token_a) for record_id in HIDDEN_IDS[path]]
        for response in responses:
            assert_error(response, 404, NOT_FOUND_BODY[path])
            assert_key_window(response, limit=KEY_LIMIT)
        first = responses[0]
        for response in responses[1:]:
            assert response.content == first.content
            assert header_names(response) == header_names(first)
            assert {k: v for k, v in response.headers.items() if k not in VARYING} == {
                k: v for k, v in first.headers.items() if k not in VARYING
            }

    def test_the_owner_of_the_other_campaign_reads_it(self, client: ApiClient, token_b: str, path: str) -> None:
        # The ids key A cannot see exist: key B reads campaign B's one.
        foreign = next(record_id for record_id in HIDDEN_IDS[path] if "-b-" in record_id)
        assert client.api(f"{path}/{foreign}", token=token_b).status_code == 200
