"""The campaign export the contract tests import, and what the API must make of it.

Campaign A is read with key A. It holds public and private sessions (dated, undated,
same-date ties, odd offsets and fractional seconds), locations with hidden ones and a
hidden parent, characters, factions and more than a hundred items (so the page-size cap
shows), with ties on sort order and on name and names whose binary order differs from
a case-insensitive one. Campaign B belongs to another owner; none of it may reach key A.

Everything a client must never see carries `GM_CANARY`: GM-only parts of summaries and
descriptions, private session titles, hidden record names.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.factories import export_campaign, export_entity, export_session, export_user

GM_CANARY = "GMCANARY-5e1f9"

CAMPAIGN_A = "camp-a"
CAMPAIGN_B = "camp-b"
OWNER_A = "user-gm-a"
OWNER_B = "user-gm-b"
# Owners of the keys used by the rate-limit tests (one owner per scenario).
RATE_OWNERS = tuple(f"user-rate-{n}" for n in range(1, 7))

PUBLIC_MARKER = "PUBLICTEXT"

GM_SUMMARY = f"""# Session notes

The party reached the {PUBLIC_MARKER} crossroads.

:::gm
The innkeeper is the {GM_CANARY} spy.
:::

## GM notes

{GM_CANARY} the bridge collapses next session.

## Loot

- a rusty key <!-- {GM_CANARY} opens the vault -->
- %% {GM_CANARY} cursed %% a copper ring

<section class="secret">{GM_CANARY} foundry secret</section>
"""

GM_ONLY_SUMMARY = f""":::secret
{GM_CANARY} everything here is secret.
:::
"""

GM_DESCRIPTION = f"""**{PUBLIC_MARKER}** walls of grey stone.

### GM Secrets

{GM_CANARY} a tunnel under the well.

![{GM_CANARY} map](https://example.invalid/map.png)
"""


def _session(
    session_id: str,
    title: str,
    *,
    campaign: str = CAMPAIGN_A,
    recorded: str | None,
    visibility: str = "public",
    status: str = "completed",
    session_type: str = "audio",
    summary: str | None = None,
    created: str | None = "2024-01-02T03:04:05+00:00",
    updated: str | None = None,
) -> dict[str, Any]:
    return export_session(
        session_id,
        campaign_id=campaign,
        title=title,
        status=status,
        recording_date=recorded,
        created_at=created,
        updated_at=updated,
        session_type=session_type,
        visibility=visibility,
        summary=summary,
    )


def _entity(
    entity_id: str,
    name: str,
    *,
    campaign: str = CAMPAIGN_A,
    sort_order: int | None = None,
    hidden: bool = False,
    entity_type: str = "npc",
    icon: str | None = None,
    image_url: str | None = None,
    description: str | None = None,
    created: str | None = None,
    updated: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return export_entity(
        entity_id,
        campaign_id=campaign,
        name=name,
        icon=icon,
        hidden_from_wiki=hidden,
        type=entity_type,
        image_url=image_url,
        sort_order=sort_order,
        description=description,
        created_at=created,
        updated_at=updated,
        **extra,
    )


SESSIONS = [
    _session("sess-a-01", "The Road North", recorded="2024-05-01T19:00:00+00:00", summary=GM_SUMMARY),
    _session(
        "sess-a-02",
        "Ambush at Dawn",
        recorded="2024-05-08T21:30:00+02:00",
        status="processing",
        session_type="text_doc",
        summary=f"A short and {PUBLIC_MARKER} summary.",
        updated="2024-05-09T08:00:00-04:00",
    ),
    _session("sess-a-tie-2", "Twin Night II", recorded="2024-04-20T18:00:00.250000+00:00"),
    _session("sess-a-tie-1", "Twin Night I", recorded="2024-04-20T18:00:00.250000+00:00"),
    _session(
        "sess-a-05", "Only Secrets", recorded="2024-03-01T10:00:00-05:00", status="failed", summary=GM_ONLY_SUMMARY
    ),
    _session("sess-a-06", "New Year", recorded="2023-12-31T23:59:59+00:00", created=None),
    _session(
        "sess-a-07", "Odd Status", recorded="2022-01-01T00:00:00+00:00", status="weird-status", session_type="video"
    ),
    _session("sess-a-undated-2", "Someday II", recorded=None),
    _session("sess-a-undated-1", "Someday I", recorded=None, summary=f"Undated but {PUBLIC_MARKER}."),
    _session(
        "sess-a-private-1",
        f"Private {GM_CANARY} prep",
        recorded="2024-05-05T19:00:00+00:00",
        visibility="private",
        summary=f"{GM_CANARY} prep notes",
    ),
    _session("sess-a-private-2", f"Private {GM_CANARY} undated", recorded=None, visibility="private"),
    _session("sess-b-01", "Campaign B opener", campaign=CAMPAIGN_B, recorded="2025-01-01T19:00:00+00:00"),
    _session("sess-b-02", "Campaign B private", campaign=CAMPAIGN_B, recorded=None, visibility="private"),
]

LOCATIONS = [
    # A child listed before its parent (contract §8 allows it).
    _entity("loc-a-keep", "Zeta Keep", sort_order=1, entity_type="fortress", parent_id="loc-a-capital"),
    _entity(
        "loc-a-capital",
        "Alpha Town",
        sort_order=1,
        entity_type="settlement",
        icon="🏰",
        image_url="https://example.invalid/alpha.png",
        description=GM_DESCRIPTION,
        created="2024-02-01T12:00:00+01:00",
        updated="2024-02-02T12:00:00.5+00:00",
        parent_id=None,
    ),
    _entity("loc-a-docks", "alpha docks", sort_order=2, entity_type="district", parent_id="loc-a-capital"),
    _entity("loc-a-market", "Beta Market", sort_order=2, entity_type="district", parent_id="loc-a-capital"),
    _entity("loc-a-ruin-2", "Nameless Ruin", entity_type="ruin", parent_id=None),
    _entity("loc-a-ruin-1", "Nameless Ruin", entity_type="ruin", parent_id=None),
    _entity("loc-a-amber", "Ämber Gate", entity_type="gate", parent_id=None),
    _entity("loc-a-under", "Underdark Entrance", sort_order=-5, entity_type="cave", parent_id=None),
    _entity("loc-a-lair", f"{GM_CANARY} Lair", sort_order=0, hidden=True, entity_type="lair", parent_id=None),
    _entity("loc-a-annex", "Lair Annex", sort_order=0, entity_type="lair", parent_id="loc-a-lair"),
    _entity("loc-a-vault", f"{GM_CANARY} Vault", hidden=True, entity_type="vault", parent_id="loc-a-capital"),
    _entity("loc-b-inn", "Aardvark Inn", campaign=CAMPAIGN_B, sort_order=-100, entity_type="inn", parent_id=None),
]

CHARACTERS = [
    _entity("char-a-mira", "Mira", description=f"A {PUBLIC_MARKER} healer.\n\n%%\n{GM_CANARY}\n%%\n"),
    _entity("char-a-dorn-upper", "Dorn", sort_order=3, entity_type="pc"),
    _entity("char-a-dorn-lower", "dorn", sort_order=3, entity_type="pc"),
    _entity("char-a-dorn-twin", "Dorn", sort_order=3, entity_type="pc"),
    _entity("char-a-villain", f"{GM_CANARY} Villain", hidden=True, description=f"{GM_CANARY}"),
    _entity("char-b-hero", "Campaign B hero", campaign=CAMPAIGN_B),
]

FACTIONS = [
    _entity("fac-a-silver", "Silver Hand", sort_order=1, entity_type="order", description=GM_DESCRIPTION),
    _entity("fac-a-ash", "Ash Cult", sort_order=1, entity_type="cult"),
    _entity("fac-a-hidden", f"{GM_CANARY} Cabal", hidden=True, entity_type="cult"),
    _entity("fac-b-guild", "Campaign B guild", campaign=CAMPAIGN_B, entity_type="guild"),
]


def _bulk_item(n: int) -> dict[str, Any]:
    hidden = n % 10 == 0
    return _entity(
        f"item-a-bulk-{n:03d}",
        f"{GM_CANARY} hoard {n}" if hidden else f"Trinket {n % 40:03d}",
        sort_order=None if n % 5 == 0 else n % 7 - 3,
        hidden=hidden,
        entity_type="trinket",
        created="2024-03-03T03:03:03+00:00",
    )


ITEMS = [
    _entity(
        "item-a-sword",
        "Sword",
        entity_type="weapon",
        icon="⚔",
        description=f"Sharp and {PUBLIC_MARKER}.\n\n<!--\n{GM_CANARY}\n-->\n",
    ),
    _entity("item-a-amulet", "Amulet", sort_order=-1, entity_type="jewel"),
    *(_bulk_item(n) for n in range(1, 111)),
    _entity("item-b-crown", "Campaign B crown", campaign=CAMPAIGN_B, sort_order=-1000),
]

EXPORT: dict[str, list[dict[str, Any]]] = {
    "users": [
        export_user(OWNER_A, name="GM of A"),
        export_user(OWNER_B, name="GM of B"),
        *(export_user(owner, name=None) for owner in RATE_OWNERS),
    ],
    "campaigns": [
        export_campaign(CAMPAIGN_A, name="Campaign A", owner_id=OWNER_A),
        export_campaign(CAMPAIGN_B, name="Campaign B", owner_id=OWNER_B),
    ],
    "sessions": SESSIONS,
    "locations": LOCATIONS,
    "characters": CHARACTERS,
    "factions": FACTIONS,
    "items": ITEMS,
}


# --- what the API returns ------------------------------------------------------------


def timestamp(value: str | None) -> str | None:
    """A stored timestamp as the API serializes it: UTC, ISO 8601, explicit offset."""
    return None if value is None else datetime.fromisoformat(value).astimezone(UTC).isoformat()


def session_list_item(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record["id"],
        "title": record["title"],
        "status": record["status"],
        "recording_date": timestamp(record["recording_date"]),
        "created_at": timestamp(record["created_at"]),
        "updated_at": timestamp(record["updated_at"]),
        "session_type": record["session_type"],
        "visibility": "public",
    }


def entity_list_item(record: dict[str, Any]) -> dict[str, Any]:
    item = {
        "id": record["id"],
        "name": record["name"],
        "icon": record["icon"],
        "hidden_from_wiki": False,
        "created_at": timestamp(record["created_at"]),
        "updated_at": timestamp(record["updated_at"]),
        "type": record["type"],
        "image_url": record["image_url"],
    }
    if "parent_id" in record:
        item["parent_id"] = record["parent_id"]
    return item


def _session_order(record: dict[str, Any]) -> tuple[Any, ...]:
    recorded = record["recording_date"]
    if recorded is None:
        return (1, 0.0, record["id"])
    return (0, -datetime.fromisoformat(recorded).timestamp(), record["id"])


def _entity_order(record: dict[str, Any]) -> tuple[Any, ...]:
    # Python compares str by code point, which is UTF-8 byte order (binary / "C" collation).
    sort_order = record["sort_order"]
    return (sort_order is None, sort_order or 0, record["name"], record["id"])


def visible(
    records: list[dict[str, Any]], *, campaign: str, order: Callable[[dict[str, Any]], tuple[Any, ...]]
) -> list[dict[str, Any]]:
    shown = [
        record
        for record in records
        if record["campaign_id"] == campaign
        and record.get("visibility", "public") == "public"
        and not record.get("hidden_from_wiki", False)
    ]
    return sorted(shown, key=order)


VISIBLE_SESSIONS = visible(SESSIONS, campaign=CAMPAIGN_A, order=_session_order)
VISIBLE_LOCATIONS = visible(LOCATIONS, campaign=CAMPAIGN_A, order=_entity_order)
VISIBLE_CHARACTERS = visible(CHARACTERS, campaign=CAMPAIGN_A, order=_entity_order)
VISIBLE_FACTIONS = visible(FACTIONS, campaign=CAMPAIGN_A, order=_entity_order)
VISIBLE_ITEMS = visible(ITEMS, campaign=CAMPAIGN_A, order=_entity_order)

# path -> (visible records of campaign A in list order, list item builder)
LISTS: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "sessions": (VISIBLE_SESSIONS, session_list_item),
    "characters": (VISIBLE_CHARACTERS, entity_list_item),
    "locations": (VISIBLE_LOCATIONS, entity_list_item),
    "factions": (VISIBLE_FACTIONS, entity_list_item),
    "items": (VISIBLE_ITEMS, entity_list_item),
}


def expected_list(path: str) -> list[dict[str, Any]]:
    records, item = LISTS[path]
    return [item(record) for record in records]


# path -> ids that must answer 404 to key A: private or hidden, absent, campaign B's.
HIDDEN_IDS = {
    "sessions": ("sess-a-private-1", "sess-a-private-2", "sess-b-01", "sess-does-not-exist"),
    "characters": ("char-a-villain", "char-b-hero", "char-does-not-exist"),
    "locations": ("loc-a-lair", "loc-a-vault", "loc-b-inn", "loc-does-not-exist"),
    "factions": ("fac-a-hidden", "fac-b-guild", "fac-does-not-exist"),
    "items": ("item-a-bulk-010", "item-b-crown", "item-does-not-exist"),
}
# path -> one visible id of campaign A
VISIBLE_ID = {
    "sessions": "sess-a-01",
    "characters": "char-a-mira",
    "locations": "loc-a-capital",
    "factions": "fac-a-silver",
    "items": "item-a-sword",
}
NOT_FOUND_BODY = {
    "sessions": "Session not found",
    "characters": "Entity not found",
    "locations": "Entity not found",
    "factions": "Entity not found",
    "items": "Entity not found",
}
# The change feed (contract §10.2): a list endpoint with the lists' rules.
FEED_PATH = "changes"
LIST_FAILED_BODY = {
    "sessions": "Failed to fetch sessions",
    "characters": "Failed to fetch characters",
    "locations": "Failed to fetch locations",
    "factions": "Failed to fetch factions",
    "items": "Failed to fetch items",
    FEED_PATH: "Failed to fetch changes",
}
RECORD_FAILED_BODY = {**LIST_FAILED_BODY, "sessions": "Failed to fetch session"}
RESOURCE_PATHS = tuple(LISTS)
LIST_PATHS = (*RESOURCE_PATHS, FEED_PATH)
# The ten v1 endpoints and the feed, as paths relative to /api/public/v1 (records: a
# visible id).
ENDPOINT_PATHS = (*LIST_PATHS, *(f"{path}/{VISIBLE_ID[path]}" for path in RESOURCE_PATHS))
