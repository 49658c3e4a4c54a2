"""Fixed documents (the REST endpoints'), parsed and validated once, run by graphql-core.

`Schema.execute` does per-request work that only matters for documents a client sends:
parser and validation cache lookups keyed by the document text, an extension runner with
its hooks, a middleware manager. A fixed document needs none of it after the first time,
so it is parsed and validated when the process starts and each request goes straight to
graphql-core's `execute`, with the schema's own executor class (or its variant below) and
the same metrics and error logging as an operation through `Schema.execute`.

A caller that hands the result's data to `orjson.dumps` and to nothing else says so
(`data_to_orjson`): its documents run on `FixedDocumentExecutor`, which leaves UTC
timestamps as `datetime`s for orjson to encode (to the same bytes) instead of
serializing each one in Python.
"""

from __future__ import annotations

import time
from typing import Any

from graphql import ExecutionResult, execute, parse, validate
from strawberry.execution.is_awaitable import optimized_is_awaitable

from engine.metrics import GRAPHQL_OPERATION_DURATION
from graphql_schema.context import CampaignContext
from graphql_schema.execution import FixedDocumentExecutor
from graphql_schema.schema import CampaignSchema
from graphql_schema.shortcut import RootFieldShortcut


class InvalidDocument(ValueError):
    """A fixed document does not validate against the schema (a programming error)."""


class PreparedQuery:
    """One fixed query document, ready to execute against one schema."""

    def __init__(self, schema: CampaignSchema, document: str, *, data_to_orjson: bool = False) -> None:
        self._schema = schema
        self._executor_class = FixedDocumentExecutor if data_to_orjson else schema.execution_context_class
        self._document = parse(document)
        errors = validate(schema._schema, self._document)
        if errors:
            raise InvalidDocument("; ".join(error.message for error in errors))
        # Documents whose data goes to orjson alone skip graphql-core's executor where they can.
        self._shortcut = RootFieldShortcut.of(schema._schema, self._document) if data_to_orjson else None
        # The histogram series this document's executions land in, looked up once.
        self._durations = {
            outcome: GRAPHQL_OPERATION_DURATION.labels(operation_type="query", outcome=outcome)
            for outcome in ("ok", "error")
        }

    async def execute(self, *, variables: dict[str, Any], context: CampaignContext) -> ExecutionResult:
        started = time.perf_counter()
        result = None if self._shortcut is None else await self._shortcut.run(variables=variables, context=context)
        if result is None:
            result = await self._execute(variables=variables, context=context)
        if result.errors:
            self._schema.process_errors(result.errors)
        self._durations["error" if result.errors else "ok"].observe(time.perf_counter() - started)
        return result

    async def _execute(self, *, variables: dict[str, Any], context: CampaignContext) -> ExecutionResult:
        """The document run by graphql-core."""
        result = execute(
            self._schema._schema,
            self._document,
            context_value=context,
            variable_values=variables,
            executor_class=self._executor_class,
            # Strawberry annotates its check as returning bool; graphql-core asks for a TypeGuard.
            is_awaitable=optimized_is_awaitable,  # type: ignore[arg-type]
            operation_extensions=None,
        )
        if optimized_is_awaitable(result):
            result = await result  # type: ignore[misc]
        assert isinstance(result, ExecutionResult)
        return result
