"""Times every GraphQL operation into the Prometheus histogram of engine.metrics."""

from __future__ import annotations

import time
from collections.abc import Iterator

from strawberry.extensions import SchemaExtension

from engine.metrics import GRAPHQL_OPERATION_DURATION


class OperationMetrics(SchemaExtension):
    """Duration by operation type and outcome; client-chosen operation names are not labels."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        outcome = "error"
        try:
            yield
            result = self.execution_context.result
            outcome = "ok" if result is not None and not result.errors else "error"
        finally:
            GRAPHQL_OPERATION_DURATION.labels(operation_type=self._operation_type(), outcome=outcome).observe(
                time.perf_counter() - started
            )

    def _operation_type(self) -> str:
        try:
            return self.execution_context.operation_type.value
        except Exception:  # no parsable document or no such operation: nothing to name
            return "unknown"
