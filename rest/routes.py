"""The ten v1 endpoints, generated from one table of resources, and the change feed.

Each endpoint runs the guard, validates `limit`/`cursor` (lists), runs its fixed GraphQL
document and returns the document's data as the body, with the key's rate headers and
its entity tag, or a 304 (rest/conditional.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from engine.errors import ENTITY_NOT_FOUND_TEXT, SESSION_NOT_FOUND_TEXT, InvalidCursor, InvalidLimit, fetch_failed_text
from engine.pagination import parse_limit
from engine.records import CampaignScope
from rest import documents, openapi_models
from rest.conditional import if_none_match, not_modified, tagged_json
from rest.errors import CHANGES_TEXTS, EndpointTexts
from rest.execution import run_document
from rest.links import next_page_link
from rest.openapi_docs import conditional_parameters, list_parameters, list_responses, record_responses
from rest.responses import rate_headers
from rest.runtime import runtime_of

PREFIX = "/api/public/v1"


@dataclass(frozen=True, slots=True)
class Listing:
    """A list endpoint: one of the five record types', or the change feed."""

    path: str
    field: str
    document: str
    texts: EndpointTexts
    model: type[BaseModel]
    summary: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Resource:
    path: str
    list_field: str
    record_field: str
    list_document: str
    record_document: str
    # The record's stored entity tag alone (a request with If-None-Match reads it first).
    tag_document: str
    list_texts: EndpointTexts
    record_texts: EndpointTexts
    list_model: type[BaseModel]
    record_model: type[BaseModel]
    summary: str

    @property
    def listing(self) -> Listing:
        return Listing(
            path=self.path,
            field=self.list_field,
            document=self.list_document,
            texts=self.list_texts,
            model=self.list_model,
            summary=self.summary,
        )


def _entity(
    plural: str,
    singular: str,
    queries: tuple[str, str, str],
    models: tuple[type[BaseModel], type[BaseModel]],
) -> Resource:
    texts = EndpointTexts(not_found=ENTITY_NOT_FOUND_TEXT, fetch_failed=fetch_failed_text(plural))
    list_document, record_document, tag_document = queries
    return Resource(
        path=plural,
        list_field=plural,
        record_field=singular,
        list_document=list_document,
        record_document=record_document,
        tag_document=tag_document,
        list_texts=texts,
        record_texts=texts,
        list_model=models[0],
        record_model=models[1],
        summary=plural,
    )


RESOURCES = (
    Resource(
        path="sessions",
        list_field="sessions",
        record_field="session",
        list_document=documents.SESSIONS_LIST,
        record_document=documents.SESSION_RECORD,
        tag_document=documents.SESSION_TAG,
        list_texts=EndpointTexts(not_found=SESSION_NOT_FOUND_TEXT, fetch_failed=fetch_failed_text("sessions")),
        record_texts=EndpointTexts(not_found=SESSION_NOT_FOUND_TEXT, fetch_failed=fetch_failed_text("session")),
        list_model=openapi_models.SessionList,
        record_model=openapi_models.SessionRecord,
        summary="sessions",
    ),
    _entity(
        "characters",
        "character",
        (documents.CHARACTERS_LIST, documents.CHARACTER_RECORD, documents.CHARACTER_TAG),
        (openapi_models.EntityList, openapi_models.EntityRecord),
    ),
    _entity(
        "locations",
        "location",
        (documents.LOCATIONS_LIST, documents.LOCATION_RECORD, documents.LOCATION_TAG),
        (openapi_models.LocationList, openapi_models.LocationRecord),
    ),
    _entity(
        "factions",
        "faction",
        (documents.FACTIONS_LIST, documents.FACTION_RECORD, documents.FACTION_TAG),
        (openapi_models.EntityList, openapi_models.EntityRecord),
    ),
    _entity(
        "items",
        "item",
        (documents.ITEMS_LIST, documents.ITEM_RECORD, documents.ITEM_TAG),
        (openapi_models.EntityList, openapi_models.EntityRecord),
    ),
)

CHANGES = Listing(
    path="changes",
    field="changes",
    document=documents.CHANGES_LIST,
    texts=CHANGES_TEXTS,
    model=openapi_models.ChangeList,
    summary="changes (the change feed)",
    description=(
        "Each record of the key's campaign that is, or once was, returned by the API, once: at its latest "
        "change, in the order changes happened. From no cursor: every visible record as `upsert`, and a "
        "`delete` for every record that was visible and is not now. `next_cursor` is never null: store it "
        "and poll with it later to get what changed since. A change that leaves a record's single-record "
        "body as it was (GM-only text, sort order) makes no entry."
    ),
)


def _single_query_value(request: Request, name: str) -> str | None:
    """A query parameter given at most once; repeating it is as bad as a malformed value."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise InvalidLimit() if name == "limit" else InvalidCursor()
    return values[0] if values else None


async def _serve(
    request: Request,
    *,
    texts: EndpointTexts,
    document: str,
    field: str,
    variables: Callable[[], dict[str, Any]],
    tag_document: str | None = None,
) -> Response:
    request.state.endpoint_texts = texts
    runtime = runtime_of(request)
    condition = if_none_match(request)
    db = runtime.database.reader
    principal = await runtime.guard.admit(request, db)
    headers = rate_headers(principal.key_window)
    values = variables()
    scope = CampaignScope(campaign_id=principal.key.campaign_id)
    if condition is not None and tag_document is not None:
        # A single record: its stored tag decides, before any body is read or built.
        tagged = await run_document(runtime.queries[tag_document], variables=values, db=db, scope=scope)
        tag = tagged[field]["etag"]
        if condition.matches(tag):
            return not_modified(tag, headers=headers)
    data = await run_document(runtime.queries[document], variables=values, db=db, scope=scope)
    body = data[field]
    # A record's document selects its stored tag last, after the body (rest/documents.py).
    stored_tag = body.pop("etag") if tag_document is not None else None
    limit = values.get("limit")
    # Only a list has a next page; building the request's URL costs ~8 µs.
    link = None if limit is None else next_page_link(request.url.path, body, limit=limit)
    if link is not None:
        headers["Link"] = link
    return tagged_json(body, condition=condition, headers=headers, tag=stored_tag)


def _list_endpoint(listing: Listing) -> Callable[[Request], Awaitable[Response]]:
    async def list_records(request: Request) -> Response:
        def variables() -> dict[str, Any]:
            limit = parse_limit(_single_query_value(request, "limit"))
            return {"limit": limit, "cursor": _single_query_value(request, "cursor")}

        return await _serve(
            request,
            texts=listing.texts,
            document=listing.document,
            field=listing.field,
            variables=variables,
        )

    return list_records


def _record_endpoint(resource: Resource) -> Callable[[Request, str], Awaitable[Response]]:
    async def get_record(request: Request, id: str) -> Response:
        return await _serve(
            request,
            texts=resource.record_texts,
            document=resource.record_document,
            field=resource.record_field,
            variables=lambda: {"id": id},
            tag_document=resource.tag_document,
        )

    return get_record


class DirectRoute(APIRoute):
    """A route whose endpoint takes the request (and its path parameters) and returns the
    response itself. It is documented from the endpoint's signature like any FastAPI route,
    but served as a plain ASGI call of the endpoint: no dependency solving, parameter
    validation or response serialization (these endpoints validate `limit`, `cursor` and
    `id` themselves, with the documented 400 bodies, and build their JSON responses), and
    none of FastAPI's per-request wrapping for them (two exit stacks for dependencies with
    `yield`, a second exception-handling layer): an error the endpoint raises reaches the
    application's exception middleware, which answers it with the same handlers."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.app = self._serve_endpoint

    async def _serve_endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        response: Response = await self.endpoint(request, **scope["path_params"])
        await response(scope, receive, send)


def _add_list_route(router: APIRouter, listing: Listing) -> None:
    router.add_api_route(
        f"{PREFIX}/{listing.path}",
        _list_endpoint(listing),
        methods=["GET"],
        name=f"list_{listing.path}",
        summary=f"List {listing.summary}",
        description=listing.description,
        response_model=listing.model,
        responses=list_responses(listing.texts),
        openapi_extra={"parameters": list_parameters()},
        tags=[listing.path],
        route_class_override=DirectRoute,
    )


def add_routes(router: APIRouter) -> None:
    """Adds the ten endpoints and the change feed to `router`, meant to be the
    application's own: FastAPI matches a route of an included router twice (once to pick
    the router, once inside it), which cost ~30 µs of CPU per request, more than the
    app's own middleware."""
    for resource in RESOURCES:
        _add_list_route(router, resource.listing)
        router.add_api_route(
            f"{PREFIX}/{resource.path}/{{id}}",
            _record_endpoint(resource),
            methods=["GET"],
            name=f"get_{resource.record_field}",
            summary=f"One {resource.record_field}",
            response_model=resource.record_model,
            responses=record_responses(resource.record_texts),
            openapi_extra={"parameters": conditional_parameters()},
            tags=[resource.path],
            route_class_override=DirectRoute,
        )
    _add_list_route(router, CHANGES)
