"""Objects completed in one loop, and the field collection that fixed documents do once.

Every result is compared with graphql-core's own executor on the same document, so a
shortcut that changed data or errors, or a cache that ignored a variable, fails here.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import strawberry
from graphql import ExecutionResult, execute, parse
from graphql.execution import Executor

from graphql_schema.execution import FixedDocumentExecutor, PlainFieldExecutor


@strawberry.type
class Item:
    name: str
    note: str | None


@strawberry.type
class Root:
    item: Item | None
    items: list[Item]


SCHEMA = strawberry.Schema(query=Root)._schema


def run(document: Any, executor_class: type[PlainFieldExecutor] | None, **variables: Any) -> ExecutionResult:
    item = SimpleNamespace(name="lamp", note=None)
    result = execute(
        SCHEMA,
        document,
        root_value=SimpleNamespace(item=item, items=[item, SimpleNamespace(name="rope", note="long")]),
        variable_values=variables,
        executor_class=executor_class,
    )
    assert isinstance(result, ExecutionResult)
    return result


def same_as_graphql_core(document: Any, executor_class: type[PlainFieldExecutor], **variables: Any) -> ExecutionResult:
    result = run(document, executor_class, **variables)
    reference = run(document, None, **variables)
    assert result.data == reference.data
    assert [(error.message, error.path) for error in result.errors or ()] == [
        (error.message, error.path) for error in reference.errors or ()
    ]
    return result


class TestObjectsInOneLoop:
    def test_a_record_of_plain_fields_is_graphql_cores(self) -> None:
        document = parse("{ item { name note alias: name __typename } }")
        result = same_as_graphql_core(document, PlainFieldExecutor)
        assert result.data == {"item": {"name": "lamp", "note": None, "alias": "lamp", "__typename": "Item"}}

    def test_a_null_in_a_non_null_field_is_graphql_cores_error(self) -> None:
        def broken(document: Any, executor_class: type[PlainFieldExecutor] | None) -> ExecutionResult:
            result = execute(
                SCHEMA,
                document,
                root_value=SimpleNamespace(item=SimpleNamespace(name=None, note="x"), items=[]),
                executor_class=executor_class,
            )
            assert isinstance(result, ExecutionResult)
            return result

        document = parse("{ item { note name } }")
        ours, reference = broken(document, PlainFieldExecutor), broken(document, None)
        assert ours.data == reference.data == {"item": None}
        assert ours.errors is not None and reference.errors is not None
        assert [(e.message, e.path) for e in ours.errors] == [(e.message, e.path) for e in reference.errors]
        assert ours.errors[0].path == ["item", "name"]


class TestFixedDocuments:
    def test_a_second_execution_reuses_the_collected_fields(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # graphql-core's own field collection, spied on (it still does the work).
        collected: list[str] = []
        collect_subfields = Executor.collect_subfields

        def spied(context: Executor, return_type: Any, field_details_list: Any) -> Any:
            if isinstance(context, FixedDocumentExecutor):  # not the reference run's
                collected.append(return_type.name)
            return collect_subfields(context, return_type, field_details_list)

        monkeypatch.setattr(Executor, "collect_subfields", spied)
        document = parse("{ item { name note } items { name } }")
        same_as_graphql_core(document, FixedDocumentExecutor)
        assert "Item" in collected
        collected.clear()
        for _ in range(3):
            same_as_graphql_core(document, FixedDocumentExecutor)
        assert collected == []

    def test_a_directive_reading_a_variable_is_evaluated_each_time(self) -> None:
        document = parse("query ($full: Boolean!) { item { name note @include(if: $full) } }")
        assert same_as_graphql_core(document, FixedDocumentExecutor, full=True).data == {
            "item": {"name": "lamp", "note": None}
        }
        assert same_as_graphql_core(document, FixedDocumentExecutor, full=False).data == {"item": {"name": "lamp"}}

    def test_a_fragment_is_collected_each_time(self) -> None:
        document = parse("query ($full: Boolean!) { item { ...F } } fragment F on Item { name @skip(if: $full) }")
        assert same_as_graphql_core(document, FixedDocumentExecutor, full=False).data == {"item": {"name": "lamp"}}
        assert same_as_graphql_core(document, FixedDocumentExecutor, full=True).data == {"item": {}}

    def test_selections_it_did_not_collect_are_not_kept(self) -> None:
        # The root selection is collected by graphql-core for each execution: its plan is
        # computed each time, never stored, so running many documents adds no entry.
        document = parse("{ items { name } }")
        same_as_graphql_core(document, FixedDocumentExecutor)
        before = len(FixedDocumentExecutor._plans)
        for _ in range(20):
            same_as_graphql_core(document, FixedDocumentExecutor)
        assert len(FixedDocumentExecutor._plans) == before
