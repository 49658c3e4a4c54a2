"""The ASGI application: ten REST endpoints, /graphql, health checks, one error table."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from engine.metrics import watch_database_errors
from engine.settings import Settings, get_settings
from rest.compression import GzipResponses
from rest.docs_page import build_docs_router
from rest.errors import install_error_handlers
from rest.graphql import build_graphql_router
from rest.head import HeadAsGet
from rest.health import build_health_router, refuse_stale_renderings
from rest.logging_config import configure_logging
from rest.metrics import build_metrics_router
from rest.observability import Observability
from rest.openapi_docs import (
    bearer_security_openapi,
    generator_friendly_openapi,
    without_framework_validation_errors,
)
from rest.routes import add_routes
from rest.runtime import Runtime
from rest.security_headers import SecurityHeaders
from rest.ui_assets import build_assets_router

DESCRIPTION = """Read-only access to the public part of one campaign's wiki.

Every request needs `Authorization: Bearer <API key>`; a key reads only its own campaign.
Errors are JSON objects with one field, `error`."""

# Response headers a browser script of a listed origin may read.
CORS_EXPOSED_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After")


def create_app(settings: Settings | None = None) -> FastAPI:
    runtime = Runtime.build(settings or get_settings())
    configure_logging(runtime.settings.log_level)
    # Reads count their own driver errors (engine/db.py, engine/read_pool.py); this counts
    # those of statements run through the engine's sessions.
    watch_database_errors(runtime.database.engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await refuse_stale_renderings(runtime.database)
        # Everything built so far (modules, schema, routes) lives as long as the process:
        # moved out of the collector's generations, full collections no longer walk it.
        gc.collect()
        gc.freeze()
        yield
        await runtime.database.dispose()
        await runtime.limits.close()

    app = FastAPI(
        title="Campaign wiki public API",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        redirect_slashes=False,
        docs_url=None,  # FastAPI's page loads Swagger UI from a CDN; rest/docs_page.py serves ours
        redoc_url=None,
        # FastAPI's own OpenTelemetry bridge looks up three global providers on every
        # request (~10 µs) to find them unconfigured: the service reports through its
        # access log and /metrics (rest/observability.py) and configures no OpenTelemetry.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.runtime = runtime
    install_error_handlers(app)
    add_routes(app.router)  # first: the most requested routes are tried first
    app.include_router(build_graphql_router())
    app.include_router(build_health_router())
    app.include_router(build_docs_router(openapi_url=app.openapi_url or "/openapi.json"))
    if runtime.settings.metrics_enabled:
        app.include_router(build_metrics_router())
    app.include_router(build_assets_router())
    # Innermost: compresses the finished body, below the headers the outer layers add.
    app.add_middleware(GzipResponses)
    if runtime.settings.cors_origins:
        # Off unless an operator lists origins. Added before SecurityHeaders, which wraps
        # it, so that preflight answers carry nosniff and no-store too.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=runtime.settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=[*CORS_EXPOSED_HEADERS],
        )
    app.add_middleware(SecurityHeaders)
    app.add_middleware(HeadAsGet)
    # Outermost: times the whole request and puts X-Request-ID on every response it sends.
    app.add_middleware(Observability)
    _document_security(app)
    return app


def _document_security(app: FastAPI) -> None:
    build_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = generator_friendly_openapi(
                bearer_security_openapi(without_framework_validation_errors(build_openapi()))
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
