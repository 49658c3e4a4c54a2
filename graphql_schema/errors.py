"""Expected failures become GraphQL errors with a stable `extensions.code`.

Domain errors keep their message (the same texts the REST bodies use); anything else is
reported as an internal error without its message, so no driver detail or traceback
reaches a client.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from engine.errors import DomainError

INTERNAL_ERROR_CODE = "INTERNAL_SERVER_ERROR"
INTERNAL_ERROR_MESSAGE = "Internal server error"

logger = logging.getLogger("campaign_api.graphql")


def domain_error_of(error: GraphQLError) -> DomainError | None:
    original = error.original_error
    return original if isinstance(original, DomainError) else None


def public_error(error: GraphQLError) -> GraphQLError:
    """The error as a client may see it."""
    domain_error = domain_error_of(error)
    if domain_error is not None:
        message, code = str(domain_error), domain_error.code.value
    elif error.original_error is not None:
        message, code = INTERNAL_ERROR_MESSAGE, INTERNAL_ERROR_CODE
    else:
        return error  # syntax and validation errors describe the client's own document
    return GraphQLError(
        message,
        nodes=error.nodes,
        path=error.path,
        original_error=error.original_error,
        extensions={"code": code},
    )


class PublicErrors(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [public_error(error) for error in result.errors]
