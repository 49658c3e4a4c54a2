"""Everything a request needs, built once per process from the settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request

from engine.db import Database
from engine.keys import KeyVerifier
from engine.ratelimit import RateLimits
from engine.settings import Settings
from graphql_schema.prepared import PreparedQuery
from graphql_schema.schema import CampaignSchema, build_schema
from rest import documents
from rest.guard import Guard


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    database: Database
    limits: RateLimits
    guard: Guard
    schema: CampaignSchema
    # The REST endpoints' documents, by their text.
    queries: Mapping[str, PreparedQuery]

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        limits = RateLimits(settings)
        verifier = KeyVerifier(
            pepper=settings.pepper, fresh_s=settings.key_cache_s, stale_s=settings.key_cache_stale_s
        )
        schema = build_schema(introspection=settings.graphql_introspection)
        return cls(
            settings=settings,
            database=Database(settings),
            limits=limits,
            guard=Guard(settings=settings, limits=limits, verifier=verifier),
            schema=schema,
            # Their data is the response body, written by orjson (rest/routes.py, rest/responses.py).
            queries={document: PreparedQuery(schema, document, data_to_orjson=True) for document in documents.ALL},
        )


def runtime_of(request: Request) -> Runtime:
    return request.app.state.runtime  # type: ignore[no-any-return]
