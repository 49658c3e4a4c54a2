"""Read statements built once, compiled once per dialect, run on the driver connection.

For the API's small indexed reads, SQLAlchemy's execution path (cache key of the statement,
compiled-cache lookup, execution context, result object, and on asyncio a greenlet hop per
call) cost more CPU than the query. A `ReadStatement` is a Core select whose varying values
are named bind parameters: it is compiled the first time it meets a dialect, and its SQL
text then goes straight to the driver, with the bind and result processing of its column
types (the same functions SQLAlchemy would apply), so rows hold the same values.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

Processor = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class CompiledRead:
    """One statement compiled for one dialect: how to pass its parameters, read its rows."""

    compiled: SQLCompiler
    expanding: bool
    bind_processors: Mapping[str, Processor]
    result_processors: tuple[tuple[int, Processor], ...]
    # A row from a sequence of its values (a namedtuple's `_make`: one argument, where
    # calling the type would unpack the values into arguments).
    make_row: Callable[[Iterable[Any]], Any]

    def bind(self, parameters: Mapping[str, Any] | None) -> tuple[str, Sequence[Any] | Mapping[str, Any]]:
        """The SQL and the driver's arguments for one execution: bound values merged with
        `parameters`, processed, in the dialect's parameter style (a sequence for
        positional styles, a mapping otherwise)."""
        compiled = self.compiled
        processors: Mapping[str, Processor]
        values: MutableMapping[str, Any]
        if self.expanding:
            # An IN list renders one placeholder per element: new SQL for each length.
            state = compiled.construct_expanded_state(parameters)
            sql, processors, order = state.statement, state.processors, state.positiontup
            # Typed read-only, but a dict made for this execution alone: processed in place.
            values = state.parameters  # type: ignore[assignment]
        else:
            sql, values = compiled.string, compiled.construct_params(parameters)
            processors, order = self.bind_processors, compiled.positiontup
        for name, process in processors.items():
            if name in values:
                values[name] = process(values[name])
        if compiled.positional:
            return sql, tuple(values[name] for name in order or ())
        return sql, values

    def rows(self, raw_rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Rows with attribute access by column name, values processed as SQLAlchemy would."""
        make = self.make_row
        if not self.result_processors or not raw_rows:
            return list(map(make, raw_rows))
        # Column by column: each processor maps over its column, so no row is copied into
        # a list to be processed in place (100 session rows on PostgreSQL: 50 µs, not 65).
        columns: list[Iterable[Any]] = list(zip(*raw_rows, strict=True))
        for index, process in self.result_processors:
            columns[index] = map(process, columns[index])
        return list(map(make, zip(*columns, strict=True)))


def _compile(statement: Select[*tuple[Any, ...]], dialect: Dialect) -> CompiledRead:
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    bind_processors = {
        name: process
        for name, bind in compiled.binds.items()
        if (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
    }
    columns = list(statement.selected_columns)
    result_processors = tuple(
        (index, process)
        for index, column in enumerate(columns)
        if (process := column.type.dialect_impl(dialect).result_processor(dialect, None)) is not None
    )
    row_type = namedtuple("Row", [column.key for column in columns], rename=True)  # type: ignore[misc]
    return CompiledRead(
        compiled=compiled,
        # An `IN` over a list given at execution (`bindparam(..., expanding=True)`).
        expanding=any(bind.expanding for bind in compiled.binds.values()),
        bind_processors=bind_processors,
        result_processors=result_processors,
        make_row=row_type._make,
    )


class ReadStatement:
    """A select whose varying values are bind parameters, compiled once per dialect."""

    def __init__(self, statement: Select[*tuple[Any, ...]]) -> None:
        self.statement = statement
        self._compiled: dict[str, CompiledRead] = {}

    def compiled(self, dialect: Dialect) -> CompiledRead:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = _compile(self.statement, dialect)
        return compiled
