"""Conditional GETs (contract §10.3): a strong ETag on every 200, `If-None-Match` -> 304.

A 200's tag is the digest of its body bytes (engine/public_body.py), so it changes
exactly when they do. A single record's stored body digest is the digest of the body it
is served with, so `_serve` (rest/routes.py) can answer a matching request from the
stored digest alone, without reading or writing the body, and tags a record's 200 with
it without hashing the body (SHA-256: ~14 µs for 12 KB); lists and the change feed are
hashed and compared after their body is built. Either way the comparison comes last: the guard,
validation and the query decide first (401, 429, 400, 404, 500 win over a 304).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from engine.public_body import digest_of, entity_tag

# An entity tag of a list (RFC 9110 §8.8.3), weak or not: its opaque tag, quotes included.
_ENTITY_TAG = re.compile(r'\s*(?:W/)?("[^"]*")\s*(?:,|$)')


@dataclass(frozen=True, slots=True)
class IfNoneMatch:
    """What a request's If-None-Match names: any current representation, or these tags."""

    any: bool
    opaque_tags: frozenset[str]

    def matches(self, tag: str) -> bool:
        """RFC 9110 §13.1.2: weak comparison (a W/ prefix on either side is ignored)."""
        return self.any or tag.removeprefix("W/") in self.opaque_tags


def if_none_match(request: Request) -> IfNoneMatch | None:
    """The request's condition; None without the header. A member that is not an entity
    tag matches nothing (the request is then answered as without it)."""
    values = request.headers.getlist("if-none-match")
    if not values:
        return None
    members = ",".join(values)
    if any(member.strip() == "*" for member in members.split(",")):
        return IfNoneMatch(any=True, opaque_tags=frozenset())
    return IfNoneMatch(any=False, opaque_tags=frozenset(_ENTITY_TAG.findall(members)))


def not_modified(tag: str, *, headers: Mapping[str, str]) -> Response:
    """304: no body, the current tag and `headers` (the key's rate headers)."""
    return Response(status_code=304, headers={**headers, "ETag": tag})


def tagged_json(
    payload: Any, *, condition: IfNoneMatch | None, headers: Mapping[str, str], tag: str | None = None
) -> Response:
    """200 with `payload` as compact JSON (orjson, as every body) and its tag, or 304 when
    the condition names that tag. `tag`: the tag of those bytes, already known (a
    record's stored one); else they are hashed."""
    body = orjson.dumps(payload)
    if tag is None:
        tag = entity_tag(digest_of(body))
    if condition is not None and condition.matches(tag):
        return not_modified(tag, headers=headers)
    return Response(body, media_type="application/json", headers={**headers, "ETag": tag})
