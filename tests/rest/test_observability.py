"""Access log lines, request ids and Prometheus metrics, in-process against create_app()."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from engine.db import Database
from engine.keys import create_api_key, parse_token
from engine.settings import Settings
from rest.app import create_app
from rest.logging_config import JsonFormatter
from tests.conftest import TEST_PEPPER
from tests.databases import sqlite_database
from tests.factories import add_campaign, add_session

SESSION_ID = "sess_observed_1"
UUID_SHAPE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@dataclass(frozen=True, slots=True)
class Seeded:
    database_url: str
    token: str
    key_id: str


@pytest.fixture(scope="module")
def observed_database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sqlite_database(tmp_path_factory.mktemp("observability")) as url:
        yield url


@pytest.fixture(scope="module")
async def seeded(observed_database_url: str) -> Seeded:
    database = Database(_settings(observed_database_url))
    try:
        async with database.session() as db:
            campaign = await add_campaign(db)
            await add_session(db, campaign_id=campaign.id, session_id=SESSION_ID, title="Into the Barrow")
            issued = await create_api_key(
                db, campaign_id=campaign.id, owner_id=campaign.owner_id, label=None, pepper=TEST_PEPPER.encode()
            )
    finally:
        await database.dispose()
    return Seeded(database_url=observed_database_url, token=issued.token, key_id=issued.key_id)


def _settings(database_url: str, **overrides: Any) -> Settings:
    return Settings(_env_file=None, database_url=database_url, api_key_pepper=TEST_PEPPER, **overrides)  # type: ignore[call-arg]


@pytest.fixture
async def make_client(seeded: Seeded) -> AsyncIterator[Any]:
    """Clients of fresh apps (fresh in-memory rate limits) with the given settings."""
    apps: list[Any] = []

    def make(**overrides: Any) -> httpx.AsyncClient:
        app = create_app(_settings(**{"database_url": seeded.database_url, **overrides}))
        apps.append(app)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")

    yield make
    for app in apps:  # ASGITransport runs no lifespan, which would dispose the engine
        await app.state.runtime.database.dispose()


@pytest.fixture
async def client(make_client: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client() as client:
        yield client


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The captured access records, each formatted exactly as the service writes it."""
    formatter = JsonFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == "campaign_api.access"]


def _all_formatted(caplog: pytest.LogCaptureFixture) -> str:
    formatter = JsonFormatter()
    return "\n".join(formatter.format(record) for record in caplog.records)


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class TestAccessLog:
    async def test_one_json_line_with_the_route_template_and_key_id(
        self, client: httpx.AsyncClient, seeded: Seeded, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        r = await client.get(f"/api/public/v1/sessions/{SESSION_ID}", headers=_bearer(seeded.token))
        assert r.status_code == 200
        [line] = _access_lines(caplog)
        assert set(line) == {
            "time",
            "level",
            "logger",
            "message",
            "method",
            "route",
            "status",
            "duration_ms",
            "request_id",
            "key_id",
        }
        assert line["logger"] == "campaign_api.access"
        assert line["level"] == "INFO"
        assert line["method"] == "GET"
        assert line["route"] == "/api/public/v1/sessions/{id}"
        assert line["status"] == 200
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
        assert line["key_id"] == seeded.key_id
        assert line["request_id"] == r.headers["X-Request-ID"]
        raw = json.dumps(line)
        assert SESSION_ID not in raw  # the template, not the raw path

    async def test_never_contains_the_token(
        self, client: httpx.AsyncClient, seeded: Seeded, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG)
        await client.get("/api/public/v1/sessions", headers=_bearer(seeded.token))
        await client.post("/graphql", json={"query": "{ sessions { data { id } } }"}, headers=_bearer(seeded.token))
        wrong = seeded.token[:-4] + "AAAA"
        r = await client.get("/api/public/v1/sessions", headers=_bearer(wrong))
        assert r.status_code == 401
        logged = _all_formatted(caplog)
        # The secret is everything after the key id: it may itself contain "_".
        secret = parse_token(seeded.token)[1]
        assert len(_access_lines(caplog)) == 3
        assert secret not in logged
        assert parse_token(wrong)[1] not in logged
        assert "Bearer" not in logged

    async def test_unauthenticated_requests_have_no_key_id(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        r = await client.get("/api/public/v1/locations")
        assert r.status_code == 401
        [line] = _access_lines(caplog)
        assert line["route"] == "/api/public/v1/locations"
        assert line["status"] == 401
        assert "key_id" not in line

    async def test_unknown_paths_share_one_route_label(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        r = await client.get("/wp-admin/setup.php")
        assert r.status_code == 404
        [line] = _access_lines(caplog)
        assert line["route"] == "unmatched"
        assert "wp-admin" not in json.dumps(line)

    async def test_other_log_lines_of_the_request_carry_its_id(
        self, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        r = await client.get("/healthz", headers={"X-Request-ID": "trace-42"})
        assert r.status_code == 200
        [line] = _access_lines(caplog)
        assert line["request_id"] == "trace-42"
        assert line["route"] == "/healthz"

    async def test_an_unexpected_error_is_logged_as_500_with_the_request_id(
        self, seeded: Seeded, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        app = create_app(_settings(seeded.database_url))

        async def broken() -> None:
            raise RuntimeError("boom")

        app.add_api_route("/broken/{part}", broken)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            r = await client.get("/broken/x1", headers={"X-Request-ID": "req-broken"})
        await app.state.runtime.database.dispose()
        assert (r.status_code, r.json()) == (500, {"error": "Internal server error"})
        [line] = _access_lines(caplog)
        assert (line["route"], line["status"], line["request_id"]) == ("/broken/{part}", 500, "req-broken")
        formatter = JsonFormatter()
        [error] = [json.loads(formatter.format(r)) for r in caplog.records if r.levelno == logging.ERROR]
        assert error["request_id"] == "req-broken"
        assert "RuntimeError: boom" in error["exception"]


class TestRequestId:
    async def test_a_plain_incoming_id_is_echoed(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/healthz", headers={"X-Request-ID": "edge-01HZX3.abc_DEF-9"})
        assert r.headers["X-Request-ID"] == "edge-01HZX3.abc_DEF-9"

    async def test_one_is_generated_when_absent(self, client: httpx.AsyncClient) -> None:
        first, second = await client.get("/healthz"), await client.get("/nowhere")
        assert UUID_SHAPE.fullmatch(first.headers["X-Request-ID"])
        assert UUID_SHAPE.fullmatch(second.headers["X-Request-ID"])
        assert first.headers["X-Request-ID"] != second.headers["X-Request-ID"]

    @pytest.mark.parametrize(
        "hostile",
        ["a" * 129, "id with spaces", '"}{"admin":true', "<script>alert(1)</script>", "x\tinjected", "ünïcode", ""],
    )
    async def test_a_hostile_id_is_replaced(
        self, client: httpx.AsyncClient, hostile: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        r = await client.get("/healthz", headers={"X-Request-ID": hostile.encode("utf-8")})  # type: ignore[dict-item]
        generated = r.headers["X-Request-ID"]
        assert UUID_SHAPE.fullmatch(generated)
        [line] = _access_lines(caplog)
        assert line["request_id"] == generated

    async def test_two_ids_are_replaced(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/healthz", headers=[("X-Request-ID", "one"), ("X-Request-ID", "two")])
        assert UUID_SHAPE.fullmatch(r.headers["X-Request-ID"])

    async def test_error_responses_carry_it_too(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/api/public/v1/items", headers={"X-Request-ID": "req-401"})
        assert r.status_code == 401
        assert r.headers["X-Request-ID"] == "req-401"


class TestMetricsEndpoint:
    async def test_absent_by_default(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/metrics")
        assert r.status_code == 404
        assert r.json() == {"error": "Not found"}

    async def test_counts_requests_by_route_template_and_status(self, make_client: Any, seeded: Seeded) -> None:
        labels = {"method": "GET", "route": "/api/public/v1/sessions/{id}", "status": "404"}
        before = _sample("campaign_api_http_requests_total", **labels)
        async with make_client(metrics_enabled=True) as client:
            r = await client.get("/api/public/v1/sessions/absent", headers=_bearer(seeded.token))
            assert r.status_code == 404
            r = await client.get("/api/public/v1/sessions/also-absent", headers=_bearer(seeded.token))
            assert r.status_code == 404
            page = await client.get("/metrics")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/plain")
        assert _sample("campaign_api_http_requests_total", **labels) == before + 2
        assert (
            'campaign_api_http_requests_total{method="GET",route="/api/public/v1/sessions/{id}",status="404"}'
            in page.text
        )
        assert 'campaign_api_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/api/public/v1/sessions/{id}",status="404"}' in page.text  # noqa: E501
        assert "/absent" not in page.text

    @pytest.mark.parametrize(
        ("limit", "settings", "bad_first"),
        [
            ("ip", {"rate_limit_ip": "1 per minute"}, False),
            ("failed_auth", {"rate_limit_failed_auth": "1 per minute"}, True),
            ("key", {"rate_limit_key": "1 per minute"}, False),
            ("owner", {"rate_limit_owner": "1 per minute"}, False),
        ],
    )
    async def test_counts_rate_limit_rejections_by_limit(
        self, make_client: Any, seeded: Seeded, limit: str, settings: dict[str, str], bad_first: bool
    ) -> None:
        before = _sample("campaign_api_rate_limit_rejections_total", limit=limit)
        async with make_client(metrics_enabled=True, **settings) as client:
            first_token = seeded.token[:-4] + "AAAA" if bad_first else seeded.token
            await client.get("/api/public/v1/sessions", headers=_bearer(first_token))
            r = await client.get("/api/public/v1/sessions", headers=_bearer(seeded.token))
            assert r.status_code == 429
            assert r.json() == {"error": "Rate limit exceeded"}
            page = await client.get("/metrics")
        assert _sample("campaign_api_rate_limit_rejections_total", limit=limit) == before + 1
        assert f'campaign_api_rate_limit_rejections_total{{limit="{limit}"}}' in page.text

    async def test_times_graphql_operations(self, make_client: Any, seeded: Seeded) -> None:
        ok = {"operation_type": "query", "outcome": "ok"}
        failed = {"operation_type": "unknown", "outcome": "error"}
        ok_before = _sample("campaign_api_graphql_operation_duration_seconds_count", **ok)
        failed_before = _sample("campaign_api_graphql_operation_duration_seconds_count", **failed)
        async with make_client(metrics_enabled=True) as client:
            r = await client.post(
                "/graphql", json={"query": "{ sessions { data { title } } }"}, headers=_bearer(seeded.token)
            )
            assert r.json() == {"data": {"sessions": {"data": [{"title": "Into the Barrow"}]}}}
            r = await client.get("/api/public/v1/sessions", headers=_bearer(seeded.token))  # a fixed document
            assert r.status_code == 200
            r = await client.post("/graphql", json={"query": "{ sessions {"}, headers=_bearer(seeded.token))
            assert "errors" in r.json()
            page = await client.get("/metrics")
        assert _sample("campaign_api_graphql_operation_duration_seconds_count", **ok) == ok_before + 2
        assert _sample("campaign_api_graphql_operation_duration_seconds_count", **failed) == failed_before + 1
        assert (
            'campaign_api_graphql_operation_duration_seconds_bucket{le="+Inf",operation_type="query",outcome="ok"}'
            in page.text
        )

    async def test_counts_database_and_limiter_storage_errors(self, make_client: Any, seeded: Seeded) -> None:
        database_before = _sample("campaign_api_database_errors_total")
        storage_before = _sample("campaign_api_rate_limit_storage_errors_total")
        # Nothing listens on port 1: both stores are down.
        async with make_client(
            metrics_enabled=True,
            database_url="postgresql://nobody@127.0.0.1:1/none",
            redis_url="redis://127.0.0.1:1/0",
            redis_timeout_s=0.5,
            db_pool_timeout_s=1,
        ) as client:
            r = await client.get("/readyz")
            assert r.status_code == 503
            r = await client.get("/api/public/v1/sessions", headers=_bearer(seeded.token))
            assert r.status_code == 503
            assert r.json() == {"error": "Public API temporarily unavailable"}
        assert _sample("campaign_api_database_errors_total") >= database_before + 1
        assert _sample("campaign_api_rate_limit_storage_errors_total") >= storage_before + 2


def test_metrics_module_is_framework_free() -> None:
    source = (Path(__file__).resolve().parents[2] / "engine" / "metrics.py").read_text()
    assert "fastapi" not in source and "starlette" not in source and "strawberry" not in source
