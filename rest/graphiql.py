"""The GraphiQL page served on a browser GET of /graphql."""

from __future__ import annotations

from functools import cache

from strawberry.http.ides import get_graphql_ide_html


@cache
def graphiql_page() -> str:
    return get_graphql_ide_html(graphql_ide="graphiql")
