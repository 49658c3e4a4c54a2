"""Runs a fixed GraphQL document in-process for a REST endpoint."""

from __future__ import annotations

from typing import Any

from engine.db import Reader
from engine.errors import FetchFailed
from engine.records import CampaignScope
from graphql_schema.context import CampaignContext
from graphql_schema.errors import domain_error_of
from graphql_schema.prepared import PreparedQuery


async def run_document(
    query: PreparedQuery,
    *,
    variables: dict[str, Any],
    db: Reader,
    scope: CampaignScope,
) -> dict[str, Any]:
    """The document's data; its first error re-raised as the domain error it carries.

    The data is for `orjson.dumps` alone: its UTC timestamps are still `datetime`s (the
    documents are prepared with `data_to_orjson`, rest/runtime.py)."""
    result = await query.execute(variables=variables, context=CampaignContext(db=db, scope=scope))
    if result.errors:
        domain_error = domain_error_of(result.errors[0])
        # Anything unexpected is the endpoint's documented 500, never a traceback.
        raise domain_error if domain_error is not None else FetchFailed()
    assert result.data is not None
    return result.data
