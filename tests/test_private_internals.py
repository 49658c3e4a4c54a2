"""What we rely on of libraries' private internals, checked by name and signature.

Each library here is pinned to a minor version in pyproject.toml beside the reason. When
an upgrade (a new pin) changes what the code uses, the matching test fails here, with the
file to revisit, before any behaviour test fails in a less obvious way.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import graphql
import graphql.execution.collect_fields
import mdformat._util
import mdformat.plugins
import mdformat.renderer
import pytest
from graphql.validation import ValidationContext
from sqlalchemy import bindparam, column, select, table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.compiler import SQLCompiler
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types.info import Info
from uvicorn.protocols.http import httptools_impl


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def explain(library: str, user: str) -> str:
    return f"{library}'s internals changed: revisit {user} and its pin in pyproject.toml"


class TestUvicornHttpToolsProtocol:
    """rest/http_protocol.py subclasses HttpToolsProtocol."""

    WHY = explain("uvicorn", "rest/http_protocol.py")

    def test_constructor_and_overridden_callbacks(self) -> None:
        protocol = httptools_impl.HttpToolsProtocol
        assert parameters(protocol.__init__) == ["self", "config", "server_state", "app_state", "_loop"], self.WHY
        for callback in (
            "connection_made",
            "data_received",
            "on_message_begin",
            "on_headers_complete",
            "on_body",
            "on_message_complete",
        ):
            assert callable(getattr(protocol, callback, None)), f"{callback}: {self.WHY}"
        # The subclass adds llhttp's chunk callbacks; the parent must not define its own.
        assert not hasattr(protocol, "on_chunk_header") and not hasattr(protocol, "on_chunk_complete"), self.WHY

    def test_status_line_table(self) -> None:
        assert httptools_impl.STATUS_LINE[431].startswith(b"HTTP/1.1 431 "), self.WHY

    def test_state_the_subclass_reads(self) -> None:
        source = inspect.getsource(httptools_impl.HttpToolsProtocol)
        for attribute in ("self.parser", "self.cycle", "self.pipeline", "self.server_state", "self.logger"):
            assert attribute in source, f"{attribute}: {self.WHY}"


class TestGraphqlCore:
    """graphql_schema/execution.py overrides the execution context's field execution and
    list completion (Strawberry's subclass of graphql-core's); graphql_schema/schema.py
    turns off "did you mean" suggestions."""

    WHY = explain("graphql-core", "graphql_schema/execution.py and graphql_schema/schema.py")

    @pytest.mark.parametrize(
        ("method", "expected"),
        [
            (
                "execute_fields",
                ["self", "parent_type", "source_value", "path", "grouped_field_set", "position_context"],
            ),
            ("execute_field", ["self", "parent_type", "source", "field_details_list", "path", "position_context"]),
            (
                "complete_list_value",
                ["self", "return_type", "field_details_list", "info", "path", "result", "position_context"],
            ),
            ("collect_subfields", ["self", "return_type", "field_details_list"]),
        ],
    )
    def test_execution_context_methods(self, method: str, expected: list[str]) -> None:
        assert parameters(getattr(StrawberryGraphQLCoreExecutionContext, method)) == expected, self.WHY

    def test_collected_fields_types(self) -> None:
        collect_fields = graphql.execution.collect_fields
        assert {"CollectedFields", "FieldDetailsList"} <= set(dir(collect_fields)), self.WHY

    def test_validation_context_hides_suggestions_by_attribute(self) -> None:
        source = inspect.getsource(ValidationContext)
        assert "_hide_suggestions" in source, self.WHY


class TestStrawberryInfo:
    """graphql_schema/query.py reads the field's syntax nodes from Info._raw_info."""

    def test_raw_info_is_graphql_core_resolve_info(self) -> None:
        why = explain("strawberry-graphql", "graphql_schema/query.py")
        assert "_raw_info" in inspect.signature(Info).parameters or "_raw_info" in Info.__annotations__, why
        assert "field_nodes" in graphql.GraphQLResolveInfo._fields, why


class TestSqlAlchemyCompilerState:
    """engine/statements.py keeps a compiled statement per dialect and builds each
    execution's parameters from its state."""

    WHY = explain("SQLAlchemy", "engine/statements.py")

    @pytest.mark.parametrize("dialect", [postgresql.dialect(), sqlite.dialect()], ids=["postgresql", "sqlite"])
    def test_compiled_state(self, dialect: Any) -> None:
        rows = table("rows", column("id"), column("campaign_id"))
        statement = select(rows.c.id).where(
            rows.c.campaign_id == bindparam("campaign_id"), rows.c.id.in_(bindparam("ids", expanding=True))
        )
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler), self.WHY
        assert isinstance(compiled.string, str) and isinstance(compiled.positional, bool), self.WHY
        assert set(compiled.binds) == {"campaign_id", "ids"}, self.WHY
        assert any(bind.expanding for bind in compiled.binds.values()), self.WHY
        state = compiled.construct_expanded_state({"campaign_id": "c", "ids": ["a", "b"]})
        assert "campaign_id" in state.parameters and state.statement, self.WHY
        if compiled.positional:
            assert compiled.positiontup is not None, self.WHY
        else:
            assert compiled.construct_params({"campaign_id": "c", "ids": ["a"]})["campaign_id"] == "c", self.WHY


class TestMdformatParserSetup:
    """engine/markdown.py builds its parser as mdformat._util.build_mdit does."""

    def test_same_options_as_mdformat(self) -> None:
        why = explain("mdformat", "engine/markdown.py (_build_markdown_it)")
        reference = mdformat._util.build_mdit(mdformat.renderer.MDRenderer, mdformat_opts={}, extensions={"gfm"})
        for option in ("mdformat", "store_labels", "codeformatters"):
            assert option in reference.options, why
        assert type(reference.renderer) is mdformat.renderer.MDRenderer, why
        assert mdformat.plugins.PARSER_EXTENSIONS["gfm"] in reference.options["parser_extension"], why


def test_logging_source_file_switch() -> None:
    """rest/logging_config.py sets logging._srcfile = None: no caller lookup per record."""
    assert hasattr(logging, "_srcfile"), "the stdlib changed: revisit rest/logging_config.py"
