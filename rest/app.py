"""The ASGI application: ten REST endpoints, /graphql, health checks, one error table."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from engine.settings import Settings, get_settings
from rest.errors import install_error_handlers
from rest.graphql import build_graphql_router
from rest.health import build_health_router
from rest.openapi_docs import bearer_security_openapi
from rest.routes import build_router
from rest.runtime import Runtime
from rest.security_headers import SecurityHeaders

DESCRIPTION = """Read-only access to the public part of one campaign's wiki.

Every request needs `Authorization: Bearer <API key>`; a key reads only its own campaign.
Errors are JSON objects with one field, `error`."""


def create_app(settings: Settings | None = None) -> FastAPI:
    runtime = Runtime.build(settings or get_settings())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await runtime.database.dispose()

    app = FastAPI(
        title="Campaign wiki public API",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        redirect_slashes=False,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.runtime = runtime
    install_error_handlers(app)
    app.include_router(build_router())
    app.include_router(build_graphql_router())
    app.include_router(build_health_router())
    app.add_middleware(SecurityHeaders)
    _document_security(app)
    return app


def _document_security(app: FastAPI) -> None:
    build_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = bearer_security_openapi(build_openapi())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
