"""`/healthz` (the process answers) and `/readyz` (its database and limiter storage answer,
and no stored rendering is stale)."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request
from starlette.responses import Response

from engine.db import Database
from engine.read_pool import ReadFailed
from engine.renderings import count_stale_renderings, describe_stale
from rest.responses import json_response
from rest.runtime import runtime_of

CHECK_TIMEOUT_S = 2.0
logger = logging.getLogger("campaign_api.health")


async def healthz() -> Response:
    return json_response({"status": "ok"})


async def _database_up(request: Request) -> bool:
    try:
        await asyncio.wait_for(runtime_of(request).database.ping(), CHECK_TIMEOUT_S)
    except Exception as exc:  # any failure means "down"; the reason goes to the server log
        logger.warning("readiness: database check failed: %r", exc)
        return False
    return True


async def stale_renderings(database: Database) -> int | None:
    """Rows whose stored rendering is stale (engine/renderings.py); None when the database
    cannot answer."""
    try:
        return await asyncio.wait_for(count_stale_renderings(database.reader), CHECK_TIMEOUT_S)
    except (ReadFailed, TimeoutError):
        return None


async def refuse_stale_renderings(database: Database) -> None:
    """At start-up: RuntimeError when the database holds stale renderings, which must never
    be served (`campaign-api serve` says so before starting; this covers other launchers)."""
    stale = await stale_renderings(database)
    if stale:
        raise RuntimeError(describe_stale(stale))


async def _limiter_up(request: Request) -> bool:
    try:
        return await asyncio.wait_for(runtime_of(request).limits.ping(), CHECK_TIMEOUT_S)
    except TimeoutError:
        return False


async def readyz(request: Request) -> Response:
    database, limiter = await asyncio.gather(_database_up(request), _limiter_up(request))
    # Without a usable pepper every API request is a 503: not ready either.
    pepper = runtime_of(request).settings.pepper is not None
    checks = {
        "database": "up" if database else "down",
        "rate_limit_storage": "up" if limiter else "down",
        "api_key_pepper": "up" if pepper else "down",
    }
    stale = await stale_renderings(runtime_of(request).database) if database else None
    if stale:
        # Records read from them are refused (500) until `campaign-api db upgrade` runs.
        checks["renderings"] = "stale"
        error = describe_stale(stale)
        return json_response({"status": "unavailable", "error": error, "checks": checks}, status=503)
    if database and limiter and pepper:
        return json_response({"status": "ready", "checks": checks})
    down = ", ".join(name for name, state in checks.items() if state == "down")
    return json_response({"status": "unavailable", "error": f"{down} unavailable", "checks": checks}, status=503)


def build_health_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)
    router.add_api_route("/healthz", healthz, methods=["GET"])
    router.add_api_route("/readyz", readyz, methods=["GET"])
    return router
