"""The fixed GraphQL documents behind the REST endpoints.

Aliases give the REST field names (snake_case) directly, so a result's `data` is the
response body with no mapping code. A record's document also selects, last, the record's
stored entity tag: the route takes it out of the data, which leaves the body, and sends
it as the ETag without hashing the body (rest/conditional.py). Each document is
validated against the schema in tests/rest/test_documents.py.
"""

from __future__ import annotations

_SESSION_LIST_FIELDS = """
      id
      title
      status
      recording_date: recordingDate
      created_at: createdAt
      updated_at: updatedAt
      session_type: sessionType
      visibility"""

_ENTITY_LIST_FIELDS = """
      id
      name
      icon
      hidden_from_wiki: hiddenFromWiki
      created_at: createdAt
      updated_at: updatedAt
      type"""

_DESCRIPTION_FIELDS = """
      description_markdown: descriptionMarkdown
      description_text: descriptionText"""

_PAGINATION = """
    pagination {
      next_cursor: nextCursor
      has_more: hasMore
    }"""


def _list_document(operation: str, field: str, item_fields: str) -> str:
    return f"""query {operation}($limit: Int, $cursor: String) {{
  {field}(limit: $limit, cursor: $cursor) {{
    data {{{item_fields}
    }}{_PAGINATION}
  }}
}}"""


# A record's stored entity tag (engine/public_body.py: the digest of its body's bytes).
_TAG_FIELD = """
      etag"""


def _record_document(operation: str, field: str, fields: str) -> str:
    return f"""query {operation}($id: ID!) {{
  {field}(id: $id) {{{fields}
  }}
}}"""


SESSIONS_LIST = _list_document("PublicSessions", "sessions", _SESSION_LIST_FIELDS)
SESSION_RECORD = _record_document(
    "PublicSession",
    "session",
    _SESSION_LIST_FIELDS
    + """
      summary_markdown: summaryMarkdown
      summary_text: summaryText"""
    + _TAG_FIELD,
)

_LOCATION_FIELDS = _ENTITY_LIST_FIELDS + """
      parent_id: parentId
      image_url: imageUrl"""
_OTHER_ENTITY_FIELDS = _ENTITY_LIST_FIELDS + """
      image_url: imageUrl"""

# What a single entity record selects beyond its list fields.
_RECORD_DETAILS = _DESCRIPTION_FIELDS + _TAG_FIELD

LOCATIONS_LIST = _list_document("PublicLocations", "locations", _LOCATION_FIELDS)
LOCATION_RECORD = _record_document("PublicLocation", "location", _LOCATION_FIELDS + _RECORD_DETAILS)
CHARACTERS_LIST = _list_document("PublicCharacters", "characters", _OTHER_ENTITY_FIELDS)
CHARACTER_RECORD = _record_document("PublicCharacter", "character", _OTHER_ENTITY_FIELDS + _RECORD_DETAILS)
FACTIONS_LIST = _list_document("PublicFactions", "factions", _OTHER_ENTITY_FIELDS)
FACTION_RECORD = _record_document("PublicFaction", "faction", _OTHER_ENTITY_FIELDS + _RECORD_DETAILS)
ITEMS_LIST = _list_document("PublicItems", "items", _OTHER_ENTITY_FIELDS)
ITEM_RECORD = _record_document("PublicItem", "item", _OTHER_ENTITY_FIELDS + _RECORD_DETAILS)

# A record's stored entity tag alone, for If-None-Match (rest/conditional.py): the same
# lookup as the record's document, without reading its Markdown or building its body.
SESSION_TAG = _record_document("PublicSessionTag", "session", _TAG_FIELD)
LOCATION_TAG = _record_document("PublicLocationTag", "location", _TAG_FIELD)
CHARACTER_TAG = _record_document("PublicCharacterTag", "character", _TAG_FIELD)
FACTION_TAG = _record_document("PublicFactionTag", "faction", _TAG_FIELD)
ITEM_TAG = _record_document("PublicItemTag", "item", _TAG_FIELD)

CHANGES_LIST = _list_document(
    "PublicChanges",
    "changes",
    """
      type
      id
      change
      changed_at: changedAt""",
)

# Every document above, prepared once per process (rest/runtime.py).
ALL = (
    SESSIONS_LIST,
    SESSION_RECORD,
    LOCATIONS_LIST,
    LOCATION_RECORD,
    CHARACTERS_LIST,
    CHARACTER_RECORD,
    FACTIONS_LIST,
    FACTION_RECORD,
    ITEMS_LIST,
    ITEM_RECORD,
    SESSION_TAG,
    LOCATION_TAG,
    CHARACTER_TAG,
    FACTION_TAG,
    ITEM_TAG,
    CHANGES_LIST,
)
