"""Every GraphQL error a client sees carries a stable `extensions.code`.

Domain errors keep their message (the same texts the REST bodies use); anything else that
fails inside the service is reported as an internal error without its message, so no
driver detail or traceback reaches a client. Errors in the client's own request (its
document or its variables) describe that request and keep their message; they are coded
by kind, with the codes GraphQL servers commonly use.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from enum import StrEnum

from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionResult

from engine.errors import INTERNAL_ERROR_TEXT, DomainError

INTERNAL_ERROR_CODE = "INTERNAL_SERVER_ERROR"

logger = logging.getLogger("campaign_api.graphql")


class RequestErrorCode(StrEnum):
    """Why an operation was refused before it ran."""

    PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
    VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
    BAD_USER_INPUT = "BAD_USER_INPUT"  # a variable's value does not fit its type
    QUERY_TOO_DEEP = "QUERY_TOO_DEEP"
    TOO_MANY_ALIASES = "TOO_MANY_ALIASES"
    QUERY_TOO_COSTLY = "QUERY_TOO_COSTLY"


def domain_error_of(error: GraphQLError) -> DomainError | None:
    original = error.original_error
    return original if isinstance(original, DomainError) else None


def is_client_error(error: GraphQLError) -> bool:
    """Whether the error describes the client's request rather than a failure of ours:
    syntax and validation errors have no original error; a variable that does not
    coerce carries graphql-core's own GraphQLError as its original error."""
    return error.original_error is None or isinstance(error.original_error, GraphQLError)


def public_error(error: GraphQLError) -> GraphQLError:
    """The error as a client may see it."""
    domain_error = domain_error_of(error)
    if domain_error is not None:
        message, code = str(domain_error), domain_error.code.value
    elif not is_client_error(error):
        message, code = INTERNAL_ERROR_TEXT, INTERNAL_ERROR_CODE
    else:
        return error  # the client's own document or variables: described as they are
    return GraphQLError(
        message,
        nodes=error.nodes,
        path=error.path,
        original_error=error.original_error,
        extensions={"code": code},
    )


def is_request_error(result: ExecutionResult) -> bool:
    """Whether the operation failed before execution began (parsing, validation, a limit,
    variable values): GraphQL's response then has errors and no `data` entry at all
    (GraphQL spec §7.1.2). Every error raised during execution has a path."""
    return result.data is None and bool(result.errors) and all(error.path is None for error in result.errors or ())


def _request_error_code(error: GraphQLError) -> str:
    code = (error.extensions or {}).get("code")
    if isinstance(code, str):
        return code  # set where the error was made (the limits, a domain error)
    if isinstance(error, GraphQLSyntaxError):
        return RequestErrorCode.PARSE_FAILED.value
    if isinstance(error.original_error, GraphQLError):
        return RequestErrorCode.BAD_USER_INPUT.value
    return RequestErrorCode.VALIDATION_FAILED.value


def coded_request_errors(errors: Sequence[GraphQLError]) -> list[GraphQLError]:
    """The errors of a request refused before execution, each with its code."""
    coded = []
    for error in errors:
        if not is_client_error(error):
            coded.append(public_error(error))
            continue
        coded.append(
            GraphQLError(
                error.message,
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                original_error=error.original_error,
                extensions={**(error.extensions or {}), "code": _request_error_code(error)},
            )
        )
    return coded


class PublicErrors(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [public_error(error) for error in result.errors]
