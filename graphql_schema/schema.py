"""The schema, with its limits and caches built once at import.

Strawberry's stock depth and alias limiter extensions create new validation-rule classes
on every request, which also defeats the validation cache (it is keyed by the rule
classes), and their rules walk a fragment again at every spread of it: a document of a
few hundred bytes whose fragments each spread the next one twice takes exponential time.
Here one rule class, created once, measures depth and aliases in one memoized pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import strawberry
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)
from strawberry.extensions import DisableIntrospection, ParserCache, SchemaExtension, ValidationCache
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.execution import PreExecutionError

from graphql_schema.cost import QueryCostRule
from graphql_schema.errors import (
    PublicErrors,
    RequestErrorCode,
    coded_request_errors,
    domain_error_of,
    is_client_error,
    is_request_error,
    logger,
)
from graphql_schema.execution import PlainFieldExecutor
from graphql_schema.metrics import OperationMetrics
from graphql_schema.query import Query

MAX_DEPTH = 8
MAX_ALIASES = 30
# The REST documents need under 100 tokens; 1,000 leaves room for hand-written queries
# while bounding the CPU that validating one document can take.
MAX_TOKENS = 1_000
CACHE_SIZE = 256



class _DocumentShape:
    """Depth and alias count of selection sets, each fragment measured once.

    Same measures as strawberry's limiters: depth counts nested fields that have a selection
    set (introspection fields `__*` not descended into), aliases are counted at every
    spread of the fragment holding them. A fragment cycle (reported by the standard
    NoFragmentCycles rule) counts as empty.
    """

    def __init__(self, fragments: dict[str, FragmentDefinitionNode]) -> None:
        self._fragments = fragments
        self._measured: dict[str, tuple[int, int]] = {}
        self._measuring: set[str] = set()

    def measure(self, selection_set: SelectionSetNode) -> tuple[int, int]:
        depth, aliases = 0, 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                aliases += selection.alias is not None
                if selection.selection_set is not None:
                    inner_depth, inner_aliases = self.measure(selection.selection_set)
                    aliases += inner_aliases
                    if not selection.name.value.startswith("__"):
                        depth = max(depth, 1 + inner_depth)
            elif isinstance(selection, InlineFragmentNode):
                inner_depth, inner_aliases = self.measure(selection.selection_set)
                depth, aliases = max(depth, inner_depth), aliases + inner_aliases
            elif isinstance(selection, FragmentSpreadNode):
                inner_depth, inner_aliases = self._fragment(selection.name.value)
                depth, aliases = max(depth, inner_depth), aliases + inner_aliases
        return depth, aliases

    def _fragment(self, name: str) -> tuple[int, int]:
        if name in self._measured:
            return self._measured[name]
        fragment = self._fragments.get(name)
        if fragment is None or name in self._measuring:
            return 0, 0
        self._measuring.add(name)
        self._measured[name] = self.measure(fragment.selection_set)
        self._measuring.discard(name)
        return self._measured[name]


class DocumentLimitsRule(ValidationRule):
    """Rejects operations nested deeper than MAX_DEPTH and documents with over MAX_ALIASES aliases."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        definitions = context.document.definitions
        shape = _DocumentShape(
            {node.name.value: node for node in definitions if isinstance(node, FragmentDefinitionNode)}
        )
        total_aliases = 0
        for node in definitions:
            if isinstance(node, OperationDefinitionNode):
                depth, aliases = shape.measure(node.selection_set)
                total_aliases += aliases
                if depth > MAX_DEPTH:
                    name = node.name.value if node.name else "anonymous"
                    context.report_error(
                        GraphQLError(
                            f"'{name}' exceeds maximum operation depth of {MAX_DEPTH}",
                            [node],
                            extensions={"code": RequestErrorCode.QUERY_TOO_DEEP.value},
                        )
                    )
        if total_aliases > MAX_ALIASES:
            context.report_error(
                GraphQLError(
                    f"{total_aliases} aliases found. Allowed: {MAX_ALIASES}",
                    extensions={"code": RequestErrorCode.TOO_MANY_ALIASES.value},
                )
            )


class _HideSuggestionsRule(ValidationRule):
    """Switches on graphql-core's own `hide_suggestions` validation option, which strawberry
    does not pass: every rule reads it from the shared context when it reports."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        context._hide_suggestions = True


_LIMIT_RULES = (DocumentLimitsRule, QueryCostRule)


class DocumentLimits(SchemaExtension):
    """Bounds the size (tokens), depth and alias count of every document, and the
    estimated cost of each of its operations."""

    def on_operation(self) -> Iterator[None]:
        self.execution_context.parse_options["max_tokens"] = MAX_TOKENS
        self.execution_context.validation_rules = self.execution_context.validation_rules + _LIMIT_RULES
        yield


class HideSuggestions(SchemaExtension):
    """With introspection off, "Did you mean 'sessions'?" would still reveal the schema's
    field, argument and type names to anyone guessing; the hints are left out."""

    def on_operation(self) -> Iterator[None]:
        self.execution_context.validation_rules = (*self.execution_context.validation_rules, _HideSuggestionsRule)
        yield


class CampaignSchema(strawberry.Schema):
    async def execute(self, query: str | None, *args: Any, **kwargs: Any) -> ExecutionResult:
        """As strawberry's, and an operation refused before execution has errors that each
        carry their code, and no data (the caller leaves `data` out of the response)."""
        result = await super().execute(query, *args, **kwargs)
        if is_request_error(result):
            return PreExecutionError(data=None, errors=coded_request_errors(result.errors or []))
        return result

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        # Expected outcomes (not found, bad cursor, the client's own mistakes) are not
        # server errors; log the rest.
        for error in errors:
            if not is_client_error(error) and domain_error_of(error) is None:
                logger.error("GraphQL resolver failed", exc_info=error.original_error)


def build_schema(*, introspection: bool = True) -> CampaignSchema:
    extensions: list[type[SchemaExtension] | object] = [
        OperationMetrics,
        DocumentLimits,
        lambda: ParserCache(maxsize=CACHE_SIZE),
        lambda: ValidationCache(maxsize=CACHE_SIZE),
        PublicErrors,
    ]
    if not introspection:
        extensions += [DisableIntrospection, HideSuggestions]
    return CampaignSchema(
        query=Query,
        extensions=extensions,  # type: ignore[arg-type]
        execution_context_class=PlainFieldExecutor,
    )
