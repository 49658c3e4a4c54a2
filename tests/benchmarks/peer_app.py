"""The peer: the ten v1 endpoints written the straightforward way, as a yardstick.

What a competent developer would write in an afternoon, with no deliberate slowness and no
heroic tuning: FastAPI routes, the project's SQLModel tables read as ORM objects
(`select(Session)`) through an AsyncSession, slowapi on Redis for the limits, the GM
stripping of `engine.markdown` called on every request (no cache), offset pagination, and
FastAPI's default JSON rendering of plain dicts.

    DATABASE_URL=postgresql://... REDIS_URL=redis://... API_KEY_PEPPER=... \
        uvicorn tests.benchmarks.peer_app:app --workers 2

Limits (contract §5, as far as slowapi allows): the IP, key and owner limits are slowapi
route limits checked after the key was verified (slowapi evaluates limits in the route
wrapper, after FastAPI resolved the dependencies); the failed-authentication limit is
checked and counted by hand on slowapi's limiter. The bodies are the service's for the
success paths; the cursor is this app's own (base64 of the offset).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from limits import parse
from slowapi import Limiter
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlmodel import select
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.markdown import markdown_to_text, strip_gm_content
from engine.tables import ApiKey, Character, Faction, Item, Location, Session

DATABASE_URL = os.environ["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://", 1)
REDIS_URL = os.environ.get("REDIS_URL", "memory://")
PEPPER = os.environ["API_KEY_PEPPER"].encode()
IP_LIMIT = os.environ.get("RATE_LIMIT_IP", "600 per minute")
FAILED_AUTH_LIMIT = parse(os.environ.get("RATE_LIMIT_FAILED_AUTH", "20 per 10 minutes"))
KEY_LIMIT = os.environ.get("RATE_LIMIT_KEY", "120 per minute")
OWNER_LIMIT = os.environ.get("RATE_LIMIT_OWNER", "300 per minute")
TOKEN = re.compile(r"cpk_([a-z2-7]{12})_([A-Za-z0-9_-]{43})")
PREFIX = "/api/public/v1"

engine = create_async_engine(DATABASE_URL)
SessionLocal = async_sessionmaker(engine, expire_on_commit=False)
limiter = Limiter(key_func=get_remote_address, storage_uri=REDIS_URL, headers_enabled=True, key_prefix="peer")


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    yield
    await engine.dispose()


app = FastAPI(lifespan=lifespan)
app.state.limiter = limiter


def error(status: int, message: str, headers: dict[str, str] | None = None) -> HTTPException:
    return HTTPException(status_code=status, detail=message, headers=headers)


@app.exception_handler(StarletteHTTPException)
async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


@app.exception_handler(RateLimitExceeded)
async def rate_limited(request: Request, exc: RateLimitExceeded) -> Response:
    response = JSONResponse({"error": "Rate limit exceeded"}, status_code=429)
    return request.app.state.limiter._inject_headers(response, request.state.view_rate_limit)


async def get_db() -> AsyncIterator[AsyncSession]:
    async with SessionLocal() as db:
        yield db


Db = Annotated[AsyncSession, Depends(get_db)]


async def api_key(request: Request, db: Db) -> ApiKey:
    ip = get_remote_address(request)
    if not limiter.limiter.test(FAILED_AUTH_LIMIT, "failed-auth", ip):
        raise error(429, "Rate limit exceeded")
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    match = TOKEN.fullmatch(token.strip()) if scheme.lower() == "bearer" else None
    if match:
        key = await db.get(ApiKey, match.group(1))
        if key is not None and key.revoked_at is None:
            digest = hmac.new(PEPPER, match.group(2).encode(), hashlib.sha256).hexdigest()
            if hmac.compare_digest(digest, key.secret_hash):
                request.state.key_id = key.key_id
                request.state.owner_id = key.owner_id
                return key
    limiter.limiter.hit(FAILED_AUTH_LIMIT, "failed-auth", ip)
    raise error(401, "Invalid API key", {"WWW-Authenticate": 'Bearer realm="public-api"'})


Key = Annotated[ApiKey, Depends(api_key)]


def key_of(request: Request) -> str:
    return request.state.key_id


def owner_of(request: Request) -> str:
    return request.state.owner_id


def page_params(limit: str | None, cursor: str | None) -> tuple[int, int]:
    try:
        size = 50 if limit is None else int(limit)
    except ValueError:
        raise error(400, "limit must be a positive integer") from None
    if size < 1:
        raise error(400, "limit must be a positive integer")
    offset = 0
    if cursor is not None:
        try:
            offset = int(base64.urlsafe_b64decode(cursor.encode()).decode())
        except (ValueError, binascii.Error):
            raise error(400, "Invalid cursor") from None
        if offset < 0:
            raise error(400, "Invalid cursor")
    return min(size, 100), offset


def page_body(items: list[dict[str, Any]], size: int, offset: int) -> dict[str, Any]:
    has_more = len(items) > size
    next_cursor = base64.urlsafe_b64encode(str(offset + size).encode()).decode() if has_more else None
    return {"data": items[:size], "pagination": {"next_cursor": next_cursor, "has_more": has_more}}


def public_markdown(raw: str | None) -> tuple[str, str]:
    markdown = strip_gm_content(raw) if raw else ""
    return markdown, markdown_to_text(markdown) if markdown else ""


def session_item(session: Session) -> dict[str, Any]:
    return {
        "id": session.id,
        "title": session.title,
        "status": session.status,
        "recording_date": session.recording_date,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "session_type": session.session_type,
        "visibility": session.visibility,
    }


def entity_item(entity: Any) -> dict[str, Any]:
    item = {
        "id": entity.id,
        "name": entity.name,
        "icon": entity.icon,
        "hidden_from_wiki": entity.hidden_from_wiki,
        "created_at": entity.created_at,
        "updated_at": entity.updated_at,
        "type": entity.type,
    }
    if isinstance(entity, Location):
        item["parent_id"] = entity.parent_id
    item["image_url"] = entity.image_url
    return item


@app.get(PREFIX + "/sessions")
@limiter.limit(IP_LIMIT)
@limiter.limit(KEY_LIMIT, key_func=key_of)
@limiter.limit(OWNER_LIMIT, key_func=owner_of)
async def list_sessions(
    request: Request,
    response: Response,
    key: Key,
    db: Db,
    limit: str | None = None,
    cursor: str | None = None,
):
    size, offset = page_params(limit, cursor)
    statement = (
        select(Session)
        .where(Session.campaign_id == key.campaign_id, Session.visibility == "public")
        .order_by(Session.recording_date.desc().nulls_last(), Session.id)
        .offset(offset)
        .limit(size + 1)
    )
    try:
        sessions = (await db.execute(statement)).scalars().all()
    except Exception:
        raise error(500, "Failed to fetch sessions") from None
    return page_body([session_item(s) for s in sessions], size, offset)


@app.get(PREFIX + "/sessions/{session_id}")
@limiter.limit(IP_LIMIT)
@limiter.limit(KEY_LIMIT, key_func=key_of)
@limiter.limit(OWNER_LIMIT, key_func=owner_of)
async def get_session(
    request: Request,
    response: Response,
    session_id: str,
    key: Key,
    db: Db,
):
    statement = select(Session).where(
        Session.id == session_id, Session.campaign_id == key.campaign_id, Session.visibility == "public"
    )
    try:
        session = (await db.execute(statement)).scalars().first()
    except Exception:
        raise error(500, "Failed to fetch session") from None
    if session is None:
        raise error(404, "Session not found")
    body = session_item(session)
    body["summary_markdown"], body["summary_text"] = public_markdown(session.summary)
    return body


def limited(func: Any, name: str) -> Any:
    """The three route limits; slowapi keys a route's limits by the function's name."""
    func.__name__ = func.__qualname__ = name
    func = limiter.limit(OWNER_LIMIT, key_func=owner_of)(func)
    func = limiter.limit(KEY_LIMIT, key_func=key_of)(func)
    return limiter.limit(IP_LIMIT)(func)


def add_entity_routes(model: Any, plural: str) -> None:
    failed = f"Failed to fetch {plural}"

    async def list_entities(
        request: Request,
        response: Response,
        key: Key,
        db: Db,
        limit: str | None = None,
        cursor: str | None = None,
    ):
        size, offset = page_params(limit, cursor)
        statement = (
            select(model)
            .where(model.campaign_id == key.campaign_id, model.hidden_from_wiki == False)  # noqa: E712
            .order_by(model.sort_order.asc().nulls_last(), model.name, model.id)
            .offset(offset)
            .limit(size + 1)
        )
        try:
            entities = (await db.execute(statement)).scalars().all()
        except Exception:
            raise error(500, failed) from None
        return page_body([entity_item(e) for e in entities], size, offset)

    async def get_entity(
        request: Request,
        response: Response,
        entity_id: str,
        key: Key,
        db: Db,
    ):
        statement = select(model).where(
            model.id == entity_id,
            model.campaign_id == key.campaign_id,
            model.hidden_from_wiki == False,  # noqa: E712
        )
        try:
            entity = (await db.execute(statement)).scalars().first()
        except Exception:
            raise error(500, failed) from None
        if entity is None:
            raise error(404, "Entity not found")
        body = entity_item(entity)
        body["description_markdown"], body["description_text"] = public_markdown(entity.description)
        return body

    app.add_api_route(f"{PREFIX}/{plural}", limited(list_entities, f"list_{plural}"), methods=["GET"])
    app.add_api_route(f"{PREFIX}/{plural}/{{entity_id}}", limited(get_entity, f"get_{plural}"), methods=["GET"])


for _model, _plural in ((Character, "characters"), (Location, "locations"), (Faction, "factions"), (Item, "items")):
    add_entity_routes(_model, _plural)
