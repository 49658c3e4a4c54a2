"""`/graphql`: the internal schema over HTTP, behind the same guard as the REST endpoints.

Errors before the operation is read (401, 429, 503, a bad request) come in GraphQL's own
shape with the REST statuses and headers. A document refused by parsing, validation or a
limit (depth, aliases, tokens, cost), or variables that do not fit, is a 200 with coded
errors and no `data`; errors during execution come back as GraphQL errors with
`extensions.code` beside the data, as GraphQL clients expect.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, Response
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.graphql import OperationType

from engine.errors import GRAPHIQL_DISABLED_TEXT, DomainError
from engine.records import CampaignScope
from graphql_schema.context import CampaignContext
from graphql_schema.errors import is_request_error
from rest.errors import ErrorOutcome, outcome_for_request
from rest.graphiql import graphiql_page
from rest.responses import json_response, rate_headers
from rest.runtime import runtime_of

MAX_BODY_BYTES = 64 * 1024
QUERIES_ONLY = (OperationType.QUERY,)


def _graphql_error(message: str, code: str, *, status: int, headers: dict[str, str] | None = None) -> Response:
    body = {"errors": [{"message": message, "extensions": {"code": code}}]}
    return json_response(body, status=status, headers=headers)


def _bad_request(message: str) -> Response:
    return _graphql_error(message, "BAD_REQUEST", status=400)


def _from_outcome(outcome: ErrorOutcome, code: str) -> Response:
    return _graphql_error(outcome.message, code, status=outcome.status, headers=outcome.headers)


def _operation_from_query_string(request: Request) -> dict[str, Any]:
    params = request.query_params
    variables = params.get("variables")
    return {
        "query": params.get("query"),
        "variables": orjson.loads(variables) if variables else None,
        "operationName": params.get("operationName"),
    }


async def _bounded_body(request: Request) -> bytes | None:
    """The body, or None as soon as it is known to exceed MAX_BODY_BYTES: a declared
    Content-Length is trusted for that, and a longer stream is not read to its end."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and (len(declared) > 9 or int(declared) > MAX_BODY_BYTES):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


async def _read_operation(request: Request) -> dict[str, Any] | Response:
    if request.method == "GET":
        try:
            return _operation_from_query_string(request)
        except orjson.JSONDecodeError:
            return _bad_request("variables must be a JSON object")
    body = await _bounded_body(request)
    if body is None:
        return _graphql_error("Request body too large", "BAD_REQUEST", status=413)
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _bad_request("The body must be a JSON object with a query")
    if isinstance(payload, list):
        return _bad_request("Batched operations are not supported; send one operation per request")
    if not isinstance(payload, dict):
        return _bad_request("The body must be a JSON object with a query")
    return payload


def _wants_page(request: Request) -> bool:
    if request.method != "GET" or "query" in request.query_params:
        return False
    return "text/html" in request.headers.get("accept", "")


async def graphql_endpoint(request: Request) -> Response:
    runtime = runtime_of(request)
    if _wants_page(request):
        if not runtime.settings.graphiql:
            return _graphql_error(GRAPHIQL_DISABLED_TEXT, "NOT_FOUND", status=404)
        return HTMLResponse(graphiql_page())
    operation = await _read_operation(request)
    if isinstance(operation, Response):
        return operation
    query, variables = operation.get("query"), operation.get("variables")
    if not isinstance(query, str) or not query.strip():
        return _bad_request("A query string is required")
    if variables is not None and not isinstance(variables, dict):
        return _bad_request("variables must be a JSON object")
    operation_name = operation.get("operationName")
    db = runtime.database.reader
    try:
        principal = await runtime.guard.admit(request, db)
    except DomainError as error:
        return _from_outcome(outcome_for_request(request, error), error.code.value)
    # Unlike the REST documents' (rest/runtime.py), this data keeps its timestamps as
    # strings: Schema.execute runs the schema's executor class for every caller (tests,
    # tools) and hands the result to the schema's extensions, so nothing proves that it
    # goes to orjson alone; and a client's document rarely is a page of 100 timestamps.
    try:
        result = await runtime.schema.execute(
            query,
            variable_values=variables,
            operation_name=operation_name if isinstance(operation_name, str) else None,
            context_value=CampaignContext(db=db, scope=CampaignScope(campaign_id=principal.key.campaign_id)),
            allowed_operation_types=QUERIES_ONLY,
        )
    # Strawberry raises these (rather than returning errors) for the client's document.
    except InvalidOperationTypeError:
        return _bad_request("Only query operations are supported")
    except CannotGetOperationTypeError:
        return _bad_request("operationName does not name an operation of the document")
    # Refused before execution (parsing, validation, a limit, variables): no `data` key,
    # as GraphQL-over-HTTP says; still a 200, as the JSON media type of that spec has it.
    body: dict[str, Any] = {} if is_request_error(result) else {"data": result.data}
    if result.errors:
        body["errors"] = [error.formatted for error in result.errors]
    return json_response(body, headers=rate_headers(principal.key_window))


def build_graphql_router() -> APIRouter:
    router = APIRouter()
    router.add_api_route("/graphql", graphql_endpoint, methods=["GET", "POST"], include_in_schema=False)
    return router
