"""The schema, with its limits and caches built once at import.

Strawberry's stock depth and alias limiter extensions create new validation-rule classes
on every request, which also defeats the validation cache (it is keyed by the rule
classes). Here the rule classes are created once and appended by one small extension.
"""

from __future__ import annotations

from collections.abc import Iterator

import strawberry
from graphql import GraphQLError
from strawberry.extensions import DisableIntrospection, ParserCache, SchemaExtension, ValidationCache
from strawberry.extensions.max_aliases import create_validator as alias_rule
from strawberry.extensions.query_depth_limiter import create_validator as depth_rule
from strawberry.types import ExecutionContext

from graphql_schema.errors import PublicErrors, domain_error_of, logger
from graphql_schema.query import Query

MAX_DEPTH = 8
MAX_ALIASES = 30
MAX_TOKENS = 2_000
CACHE_SIZE = 256

_LIMIT_RULES = (depth_rule(MAX_DEPTH, None, None), alias_rule(MAX_ALIASES))


class DocumentLimits(SchemaExtension):
    """Bounds the size (tokens), depth and alias count of every document."""

    def on_operation(self) -> Iterator[None]:
        self.execution_context.parse_options["max_tokens"] = MAX_TOKENS
        self.execution_context.validation_rules = self.execution_context.validation_rules + _LIMIT_RULES
        yield


class CampaignSchema(strawberry.Schema):
    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        # Expected outcomes (not found, bad cursor) are not server errors; log the rest.
        for error in errors:
            if error.original_error is not None and domain_error_of(error) is None:
                logger.error("GraphQL resolver failed", exc_info=error.original_error)


def build_schema(*, introspection: bool = True) -> CampaignSchema:
    extensions: list[type[SchemaExtension] | object] = [
        DocumentLimits,
        lambda: ParserCache(maxsize=CACHE_SIZE),
        lambda: ValidationCache(maxsize=CACHE_SIZE),
        PublicErrors,
    ]
    if not introspection:
        extensions.append(DisableIntrospection)
    return CampaignSchema(query=Query, extensions=extensions)  # type: ignore[arg-type]
