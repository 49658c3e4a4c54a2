"""The floor: the same reads with as little Python as reasonable, as a lower bound.

A raw ASGI app: a psycopg async connection pool, hand-written SQL selecting exactly the
returned columns, tuples turned into dicts and serialized by orjson, keyset cursors, no
rate limits. The key is checked (HMAC, as the service does) once per process and then
remembered. Markdown is never processed: the public Markdown and text the import stored
with each record are read as they are.

    DATABASE_URL=postgresql://... API_KEY_PEPPER=... \
        uvicorn tests.benchmarks.floor_app:app --workers 2
"""

# S608: the SQL is assembled from constant column lists and the four table names of
# ENTITY_TABLES (checked before use); every value is a bound parameter.
# ruff: noqa: S608

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

import orjson
import psycopg
from psycopg_pool import AsyncConnectionPool

TOKEN = re.compile(rb"[Bb][Ee][Aa][Rr][Ee][Rr] +cpk_([a-z2-7]{12})_([A-Za-z0-9_-]{43}) *")
PREFIX = "/api/public/v1/"
JSON_HEADERS = [(b"content-type", b"application/json")]
SESSION_COLUMNS = "id, title, status, recording_date, created_at, updated_at, session_type, visibility"
SESSION_KEYS = ("id", "title", "status", "recording_date", "created_at", "updated_at", "session_type", "visibility")
ENTITY_KEYS = ("id", "name", "icon", "hidden_from_wiki", "created_at", "updated_at", "type")
ENTITY_TABLES = {"locations", "characters", "factions", "items"}


def conninfo() -> str:
    url = os.environ["DATABASE_URL"]
    return "postgresql://" + url.split("://", 1)[1]


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = orjson.dumps({"error": message})


def b64(payload: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload)).rstrip(b"=").decode()


def unb64(raw: str) -> Any:
    try:
        return orjson.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise HttpError(400, "Invalid cursor") from None


def page_size(query: dict[str, list[str]]) -> int:
    raw = query.get("limit")
    if raw is None:
        return 50
    try:
        size = int(raw[0])
    except ValueError:
        raise HttpError(400, "limit must be a positive integer") from None
    if size < 1:
        raise HttpError(400, "limit must be a positive integer")
    return min(size, 100)


class Floor:
    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None
        self.pepper = b""
        self.keys: dict[tuple[bytes, bytes], str] = {}

    async def startup(self) -> None:
        self.pepper = os.environ["API_KEY_PEPPER"].encode()
        self.pool = AsyncConnectionPool(
            conninfo(),
            min_size=10,
            max_size=10,
            # Autocommit: each SELECT stands alone, as the service's reads do; otherwise psycopg
            # sends BEGIN before it and the pool a ROLLBACK on its return, two more round trips.
            kwargs={"options": "-c TimeZone=UTC", "autocommit": True},
            open=False,
        )
        await self.pool.open(wait=True)

    async def shutdown(self) -> None:
        if self.pool is not None:
            await self.pool.close()

    async def rows(self, sql: str, params: Iterable[Any]) -> list[tuple[Any, ...]]:
        assert self.pool is not None
        async with self.pool.connection() as connection:
            cursor = await connection.execute(sql, params, prepare=True)
            return await cursor.fetchall()

    async def campaign_of(self, authorization: bytes | None) -> str:
        match = TOKEN.fullmatch(authorization or b"")
        if match is None:
            raise HttpError(401, "Invalid API key")
        key_id, secret = match.group(1), match.group(2)
        digest = hmac.new(self.pepper, secret, hashlib.sha256).hexdigest()
        campaign = self.keys.get((key_id, digest.encode()))
        if campaign is None:
            found = await self.rows(
                "SELECT campaign_id, secret_hash FROM api_keys WHERE key_id = %s AND revoked_at IS NULL",
                (key_id.decode(),),
            )
            if not found or not hmac.compare_digest(found[0][1], digest):
                raise HttpError(401, "Invalid API key")
            campaign = self.keys[(key_id, digest.encode())] = found[0][0]
        return campaign

    # -- sessions -----------------------------------------------------------------------

    async def sessions(self, campaign: str, query: dict[str, list[str]]) -> bytes:
        size = page_size(query)
        where = "campaign_id = %s AND visibility = 'public'"
        order = "ORDER BY recording_date DESC NULLS LAST, id"
        if "cursor" not in query:
            sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {where} {order} LIMIT %s"
            params: list[Any] = [campaign, size + 1]
        else:
            after = unb64(query["cursor"][0])
            if not (isinstance(after, list) and len(after) == 2 and isinstance(after[1], str)):
                raise HttpError(400, "Invalid cursor")
            # One index range scan per part of "after the last row" (an OR of them would be
            # a filter over every earlier row), merged and cut to the page.
            if after[0] is None:
                branches = [("recording_date IS NULL AND id > %s", [after[1]])]
            else:
                branches = [
                    ("recording_date = %s AND id > %s", [after[0], after[1]]),
                    ("recording_date < %s", [after[0]]),
                    ("recording_date IS NULL", []),
                ]
            parts, params = [], []
            for condition, values in branches:
                parts.append(f"(SELECT {SESSION_COLUMNS} FROM sessions WHERE {where} AND {condition} {order} LIMIT %s)")
                params += [campaign, *values, size + 1]
            sql = f"SELECT * FROM ({' UNION ALL '.join(parts)}) AS page {order} LIMIT %s"
            params.append(size + 1)
        rows = await self.rows(sql, params)
        data = [dict(zip(SESSION_KEYS, row, strict=True)) for row in rows[:size]]
        next_cursor = None
        if len(rows) > size:
            last = rows[size - 1]
            next_cursor = b64([last[3].isoformat() if last[3] else None, last[0]])
        return orjson.dumps(
            {"data": data, "pagination": {"next_cursor": next_cursor, "has_more": next_cursor is not None}}
        )

    async def session(self, campaign: str, session_id: str) -> bytes:
        rows = await self.rows(
            f"SELECT {SESSION_COLUMNS}, summary_markdown, summary_text FROM sessions"
            " WHERE id = %s AND campaign_id = %s AND visibility = 'public'",
            (session_id, campaign),
        )
        if not rows:
            raise HttpError(404, "Session not found")
        return orjson.dumps(dict(zip((*SESSION_KEYS, "summary_markdown", "summary_text"), rows[0], strict=True)))

    # -- locations, characters, factions, items -----------------------------------------

    @staticmethod
    def entity_columns(kind: str) -> tuple[list[str], tuple[str, ...]]:
        keys = ENTITY_KEYS + (("parent_id", "image_url") if kind == "locations" else ("image_url",))
        return list(keys), keys

    async def entities(self, kind: str, campaign: str, query: dict[str, list[str]]) -> bytes:
        size = page_size(query)
        columns, keys = self.entity_columns(kind)
        select = f"SELECT {', '.join(columns)}, sort_order FROM {kind} WHERE campaign_id = %s AND NOT hidden_from_wiki"
        order = "ORDER BY sort_order NULLS LAST, name, id"
        if "cursor" not in query:
            sql = f"{select} {order} LIMIT %s"
            params: list[Any] = [campaign, size + 1]
        else:
            after = unb64(query["cursor"][0])
            if not (isinstance(after, list) and len(after) == 3 and all(isinstance(v, str) for v in after[1:])):
                raise HttpError(400, "Invalid cursor")
            sort_order, name, last_id = after
            if sort_order is None:
                branches = [("sort_order IS NULL AND (name, id) > (%s, %s)", [name, last_id])]
            else:
                branches = [
                    ("sort_order = %s AND (name, id) > (%s, %s)", [sort_order, name, last_id]),
                    ("sort_order > %s", [sort_order]),
                    ("sort_order IS NULL", []),
                ]
            parts, params = [], []
            for condition, values in branches:
                parts.append(f"({select} AND {condition} {order} LIMIT %s)")
                params += [campaign, *values, size + 1]
            sql = f"SELECT * FROM ({' UNION ALL '.join(parts)}) AS page {order} LIMIT %s"
            params.append(size + 1)
        rows = await self.rows(sql, params)
        width = len(keys)
        data = [dict(zip(keys, row[:width], strict=True)) for row in rows[:size]]
        next_cursor = None
        if len(rows) > size:
            last = rows[size - 1]
            next_cursor = b64([last[-1], last[1], last[0]])
        return orjson.dumps(
            {"data": data, "pagination": {"next_cursor": next_cursor, "has_more": next_cursor is not None}}
        )

    async def entity(self, kind: str, campaign: str, entity_id: str) -> bytes:
        columns, keys = self.entity_columns(kind)
        rows = await self.rows(
            f"SELECT {', '.join(columns)}, description_markdown, description_text FROM {kind}"
            " WHERE id = %s AND campaign_id = %s AND NOT hidden_from_wiki",
            (entity_id, campaign),
        )
        if not rows:
            raise HttpError(404, "Entity not found")
        return orjson.dumps(dict(zip((*keys, "description_markdown", "description_text"), rows[0], strict=True)))

    # -- ASGI -----------------------------------------------------------------------------

    async def handle(self, scope: dict[str, Any]) -> bytes:
        path: str = scope["path"]
        if scope["method"] != "GET" or not path.startswith(PREFIX):
            raise HttpError(404, "Not found")
        parts = path[len(PREFIX) :].split("/")
        authorization = next((value for name, value in scope["headers"] if name == b"authorization"), None)
        campaign = await self.campaign_of(authorization)
        query = parse_qs(scope["query_string"].decode()) if scope["query_string"] else {}
        kind = parts[0]
        if kind == "sessions":
            if len(parts) == 1:
                return await self.sessions(campaign, query)
            return await self.session(campaign, parts[1])
        if kind in ENTITY_TABLES:
            if len(parts) == 1:
                return await self.entities(kind, campaign, query)
            return await self.entity(kind, campaign, parts[1])
        raise HttpError(404, "Not found")

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        try:
            status, body = 200, await self.handle(scope)
        except HttpError as exc:
            status, body = exc.status, exc.body
        except psycopg.Error:
            status, body = 500, orjson.dumps({"error": "Internal server error"})
        headers = [*JSON_HEADERS, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def lifespan(self, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.startup()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return


app = Floor()
