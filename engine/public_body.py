"""A record's single-record REST body, known at write time: its fields, digest and tag.

The write path stores the digest of the exact bytes `GET /api/public/v1/<type>/{id}`
answers (orjson's compact JSON of these fields in this order, as the fixed documents of
rest/documents.py select them). The digest decides whether a change reaches the change
feed (§10.2: only a change of these bytes does) and is the record's strong ETag (§10.3),
so a 304 needs no body. tests/contract/test_conditional.py checks that every record's
stored digest is the digest of the body it is served with.

Nothing here imports the database layer: the rendering processes use it too.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

_ENTITY_HEAD = ("id", "name", "icon", "hidden_from_wiki", "created_at", "updated_at", "type")
# record type (as the change feed names it) -> the body's fields, in body order
BODY_FIELDS: Mapping[str, tuple[str, ...]] = {
    "session": (
        "id",
        "title",
        "status",
        "recording_date",
        "created_at",
        "updated_at",
        "session_type",
        "visibility",
        "summary_markdown",
        "summary_text",
    ),
    "location": (*_ENTITY_HEAD, "parent_id", "image_url", "description_markdown", "description_text"),
    "character": (*_ENTITY_HEAD, "image_url", "description_markdown", "description_text"),
    "faction": (*_ENTITY_HEAD, "image_url", "description_markdown", "description_text"),
    "item": (*_ENTITY_HEAD, "image_url", "description_markdown", "description_text"),
}
# record type -> the body's rendered fields: (public Markdown, public text)
RENDERED_FIELDS: Mapping[str, tuple[str, str]] = {
    record_type: (fields[-2], fields[-1])
    for record_type, fields in BODY_FIELDS.items()
}
# Fields that hold the same value in every body served: a record's digest is that of the
# body it has when visible, whatever its visibility now.
_SERVED_VALUES: Mapping[str, Any] = {"visibility": "public", "hidden_from_wiki": False}


def digest_of(data: bytes) -> str:
    """URL-safe base64 of the SHA-256 of `data`, unpadded (43 characters)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def source_digest(raw: str | None) -> str:
    """The digest of a raw Markdown column; "" for none (NULL), which "" does not share."""
    if raw is None:
        return ""
    # A lone surrogate is not UTF-8 but may sit in a string: it is hashed as it is.
    return digest_of(raw.encode("utf-8", "surrogatepass"))


def body_of(record_type: str, values: Mapping[str, Any]) -> bytes:
    """The single-record body of a record, as served (timestamps as UTC datetimes)."""
    return orjson.dumps(
        {name: _SERVED_VALUES[name] if name in _SERVED_VALUES else values[name] for name in BODY_FIELDS[record_type]}
    )


def body_digest(record_type: str, values: Mapping[str, Any]) -> str:
    return digest_of(body_of(record_type, values))


def entity_tag(digest: str) -> str:
    """The strong entity tag (RFC 9110 §8.8.3) of a body whose digest is `digest`."""
    return f'"{digest}"'
