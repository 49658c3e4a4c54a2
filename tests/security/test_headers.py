"""Headers that protect every response, and CORS that is off unless an operator lists origins.

Every response, whatever produced it (an endpoint, the error table, the router, the
limiter, the GraphiQL page, an unexpected exception), says `X-Content-Type-Options:
nosniff` and `Cache-Control: no-store`: bodies are per-key data and must not be sniffed
into something else or kept by shared caches. The one exception, the public UI files
under versioned URLs, is checked in tests/rest/test_ui_pages.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from engine.settings import Settings
from rest.app import create_app
from tests.security.world import PREFIX, World, asgi_client, settings_for

Probe = Callable[[httpx.AsyncClient, World], Awaitable[httpx.Response]]
LISTED_ORIGIN = "https://wiki.example"
OTHER_ORIGIN = "https://evil.example"


def _get(path: str, **kwargs: Any) -> Probe:
    async def probe(client: httpx.AsyncClient, world: World) -> httpx.Response:
        return await client.get(path, **kwargs)

    return probe


def _with_key(path: str) -> Probe:
    async def probe(client: httpx.AsyncClient, world: World) -> httpx.Response:
        return await client.get(path, headers=world.auth)

    return probe


def _record(path: str, which: str) -> Probe:
    async def probe(client: httpx.AsyncClient, world: World) -> httpx.Response:
        ids = world.ids[path]
        record_id = ids.visible[0] if which == "visible" else ids.hidden[0]
        return await client.get(f"{PREFIX}/{path}/{record_id}", headers=world.auth)

    return probe


def _graphql(body: Any, *, status: int) -> Probe:
    async def probe(client: httpx.AsyncClient, world: World) -> httpx.Response:
        response = await client.post("/graphql", json=body, headers=world.auth)
        assert response.status_code == status
        return response

    return probe


PROBES: dict[str, tuple[Probe, int]] = {
    "list-200": (_with_key(f"{PREFIX}/sessions"), 200),
    "record-200": (_record("locations", "visible"), 200),
    "record-404": (_record("sessions", "hidden"), 404),
    "limit-400": (_with_key(f"{PREFIX}/items?limit=0"), 400),
    "cursor-400": (_with_key(f"{PREFIX}/items?cursor=x"), 400),
    "no-key-401": (_get(f"{PREFIX}/sessions"), 401),
    "bad-key-401": (_get(f"{PREFIX}/sessions", headers={"Authorization": "Bearer nope"}), 401),
    "route-404": (_get("/api/public/v2/sessions"), 404),
    "healthz": (_get("/healthz"), 200),
    "readyz": (_get("/readyz"), 200),
    "openapi": (_get("/openapi.json"), 200),
    "docs": (_get("/docs"), 200),
    "graphiql-page": (_get("/graphql", headers={"Accept": "text/html"}), 200),
    "graphql-200": (_graphql({"query": "{ __typename }"}, status=200), 200),
    "graphql-400": (_graphql([{"query": "{ __typename }"}], status=400), 400),
    "graphql-413": (_graphql({"query": "{ __typename }", "pad": "x" * 70_000}, status=413), 413),
}


@pytest.fixture(scope="module")
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(settings_for(world)) as http:
        yield http


def _assert_protective_headers(response: httpx.Response) -> None:
    assert response.headers.get("x-content-type-options") == "nosniff", dict(response.headers)
    assert response.headers.get("cache-control") == "no-store", dict(response.headers)
    assert len(response.headers.get_list("cache-control")) == 1


class TestEveryResponse:
    @pytest.mark.parametrize("name", PROBES)
    async def test_nosniff_and_no_store(self, client: httpx.AsyncClient, world: World, name: str) -> None:
        probe, status = PROBES[name]
        response = await probe(client, world)
        assert response.status_code == status
        _assert_protective_headers(response)

    async def test_405(self, client: httpx.AsyncClient) -> None:
        response = await client.delete(f"{PREFIX}/sessions")
        assert response.status_code == 405
        _assert_protective_headers(response)

    async def test_429(self, world: World) -> None:
        async with asgi_client(settings_for(world, rate_limit_key="1 per minute")) as limited:
            assert (await limited.get(f"{PREFIX}/sessions", headers=world.auth)).status_code == 200
            response = await limited.get(f"{PREFIX}/sessions", headers=world.auth)
        assert response.status_code == 429
        _assert_protective_headers(response)

    async def test_503(self, world: World) -> None:
        async with asgi_client(settings_for(world, api_key_pepper=None)) as unconfigured:
            response = await unconfigured.get(f"{PREFIX}/sessions", headers=world.auth)
        assert response.status_code == 503
        _assert_protective_headers(response)

    @pytest.mark.parametrize("path", [f"{PREFIX}/sessions", "/graphql"])
    async def test_unexpected_exception(self, world: World, path: str) -> None:
        """A bug below the routes: the documented 500 body, and the headers all the same."""
        settings = settings_for(world)
        app = create_app(settings)

        async def broken(*_args: Any, **_kwargs: Any) -> Any:
            raise RuntimeError("a bug")

        # /graphql runs the schema; the REST endpoints their prepared documents.
        app.state.runtime.schema.execute = broken
        for query in app.state.runtime.queries.values():
            query.execute = broken
        async with asgi_client(settings, app=app, raise_app_exceptions=False) as broken_client:
            if path == "/graphql":
                response = await broken_client.post(path, json={"query": "{ __typename }"}, headers=world.auth)
            else:
                response = await broken_client.get(path, headers=world.auth)
        assert response.status_code == 500
        assert "a bug" not in response.text and "Traceback" not in response.text
        _assert_protective_headers(response)


def _preflight(origin: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization",
    }


class TestCors:
    async def test_off_by_default(self, client: httpx.AsyncClient, world: World) -> None:
        simple = await client.get(f"{PREFIX}/sessions", headers={**world.auth, "Origin": LISTED_ORIGIN})
        assert simple.status_code == 200
        preflight = await client.options(f"{PREFIX}/sessions", headers=_preflight(LISTED_ORIGIN))
        for response in (simple, preflight):
            assert not [name for name in response.headers if name.startswith("access-control-")]
            _assert_protective_headers(response)

    async def test_listed_origin_only(self, world: World) -> None:
        settings = settings_for(world, cors_origins=[LISTED_ORIGIN])
        async with asgi_client(settings) as cors:
            listed = await cors.get(f"{PREFIX}/sessions", headers={**world.auth, "Origin": LISTED_ORIGIN})
            other = await cors.get(f"{PREFIX}/sessions", headers={**world.auth, "Origin": OTHER_ORIGIN})
            listed_preflight = await cors.options(f"{PREFIX}/sessions", headers=_preflight(LISTED_ORIGIN))
            other_preflight = await cors.options(f"{PREFIX}/sessions", headers=_preflight(OTHER_ORIGIN))
            unauthorized = await cors.get(f"{PREFIX}/sessions", headers={"Origin": LISTED_ORIGIN})

        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == LISTED_ORIGIN
        assert "access-control-allow-credentials" not in listed.headers
        exposed = {name.strip().lower() for name in listed.headers["access-control-expose-headers"].split(",")}
        assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"} <= exposed
        # A client of a listed origin can read an error's status and body too.
        assert unauthorized.status_code == 401
        assert unauthorized.headers["access-control-allow-origin"] == LISTED_ORIGIN

        assert other.status_code == 200  # CORS is enforced by browsers; the server just does not allow it
        assert "access-control-allow-origin" not in other.headers

        assert listed_preflight.status_code == 200
        assert listed_preflight.headers["access-control-allow-origin"] == LISTED_ORIGIN
        assert "GET" in listed_preflight.headers["access-control-allow-methods"]
        assert "authorization" in listed_preflight.headers["access-control-allow-headers"].lower()
        assert "access-control-allow-origin" not in other_preflight.headers
        for response in (listed, other, listed_preflight, other_preflight, unauthorized):
            _assert_protective_headers(response)

    def test_setting_reads_a_comma_separated_list(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CORS_ORIGINS", f" {LISTED_ORIGIN}, https://other.example ,")
        assert Settings(_env_file=None).cors_origins == [LISTED_ORIGIN, "https://other.example"]  # type: ignore[call-arg]
        monkeypatch.delenv("CORS_ORIGINS")
        assert Settings(_env_file=None).cors_origins == []  # type: ignore[call-arg]
