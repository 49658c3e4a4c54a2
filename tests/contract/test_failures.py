"""When something the service needs is gone: 500 (database), 503 (pepper, limiter storage).

Each scenario runs its own server, since it breaks what the server depends on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.contract.campaign import (
    ENDPOINT_PATHS,
    LIST_FAILED_BODY,
    LIST_PATHS,
    RECORD_FAILED_BODY,
    RESOURCE_PATHS,
)
from tests.contract.client import (
    ApiClient,
    assert_error,
    assert_key_window,
    assert_no_rate_headers,
    assert_spent,
    json_of,
)
from tests.contract.clones import drop_postgres_database
from tests.contract.conftest import HIGH_LIMITS, KEY_LIMIT, SeededDatabase, Templates
from tests.contract.redis_process import own_redis
from tests.contract.server import ApiServer, ServerSpec, running_server, running_servers
from tests.databases import BACKENDS

pytestmark = pytest.mark.xdist_group("contract")

UNAVAILABLE = "Public API temporarily unavailable"
UNAVAILABLE_GRAPHQL = (
    b'{"errors":[{"message":"Public API temporarily unavailable","extensions":{"code":"UNAVAILABLE"}}]}'
)
UNKNOWN_TOKEN = "cpk_" + "b" * 12 + "_" + "B" * 43
# (path, exact 500 body) for the ten endpoints and the feed: lists first, then single records.
FAILED_BODIES = [
    *(LIST_FAILED_BODY[path] for path in LIST_PATHS),
    *(RECORD_FAILED_BODY[path] for path in RESOURCE_PATHS),
]
ENDPOINTS = list(zip(ENDPOINT_PATHS, FAILED_BODIES, strict=True))


def graphql(client: ApiClient, token: str) -> tuple[int, bytes, dict[str, str]]:
    response = client.post(
        "/graphql", json={"query": "{ sessions { data { id } } }"}, headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, response.content, dict(response.headers)


def assert_unavailable(response: httpx.Response) -> None:
    assert_error(response, 503, UNAVAILABLE)
    assert_no_rate_headers(response)
    assert "www-authenticate" not in response.headers


# --- 500: the database goes away after the key was verified ---------------------------


def break_database(url: str) -> None:
    """Take the database away from under a running server."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        drop_postgres_database(str(parsed.database))  # WITH (FORCE): its connections go too
        return
    # Overwritten in place (same inode), so connections the server holds open see it too.
    path = Path(str(parsed.database))
    size = path.stat().st_size
    with path.open("r+b") as database_file:
        database_file.write(b"this is not a database any more " * (size // 32 + 1))


@dataclass(frozen=True, slots=True)
class BrokenDatabaseServer:
    backend: str
    server: ApiServer
    token: str


@pytest.fixture(scope="module", params=BACKENDS)
def broken_database(request: pytest.FixtureRequest, templates: Templates) -> Iterator[BrokenDatabaseServer]:
    with ExitStack() as stack:
        seeded = templates.copy(request.param, stack, name=f"contract-broken-{request.param}")
        server = stack.enter_context(running_server(seeded.env.with_changes(**HIGH_LIMITS), workdir=seeded.workdir))
        # The server remembers the key it verified (KEY_CACHE_STALE_S) once it cannot
        # reach the key store: its client then gets the query's own 500.
        with ApiClient(server.base_url) as client:
            assert client.api("sessions", token=seeded.token_a).status_code == 200
        break_database(seeded.env.database_url)
        yield BrokenDatabaseServer(backend=request.param, server=server, token=seeded.token_a)


class TestDatabaseDown:
    @pytest.mark.parametrize(("path", "message"), ENDPOINTS)
    def test_each_endpoint_answers_its_500_with_the_key_window(
        self, broken_database: BrokenDatabaseServer, path: str, message: str
    ) -> None:
        with ApiClient(broken_database.server.base_url) as client:
            first = client.api(path, token=broken_database.token)
            second = client.api(path, token=broken_database.token)
        for response in (first, second):
            assert_error(response, 500, message)
        assert_spent(assert_key_window(first, limit=KEY_LIMIT), assert_key_window(second, limit=KEY_LIMIT))
        assert b"Traceback" not in first.content

    def test_an_unverified_key_gets_503(self, broken_database: BrokenDatabaseServer) -> None:
        with ApiClient(broken_database.server.base_url) as client:
            assert_unavailable(client.api("sessions", token=UNKNOWN_TOKEN))

    def test_graphql_reports_the_failure_as_a_graphql_error(self, broken_database: BrokenDatabaseServer) -> None:
        with ApiClient(broken_database.server.base_url) as client:
            status, content, headers = graphql(client, broken_database.token)
        assert status == 200
        assert content == (
            b'{"data":null,"errors":[{"message":"Failed to fetch sessions","locations":[{"line":1,"column":3}],'
            b'"path":["sessions"],"extensions":{"code":"FETCH_FAILED"}}]}'
        )
        assert int(headers["x-ratelimit-limit"]) == KEY_LIMIT

    # A SQLite file overwritten in place still answers `SELECT 1` on an open connection:
    # readiness can only notice a database server that is gone.
    @pytest.mark.parametrize("broken_database", ["postgresql"], indirect=True)
    def test_readyz_names_the_database(self, broken_database: BrokenDatabaseServer) -> None:
        with ApiClient(broken_database.server.base_url) as client:
            response = client.get("/readyz")
            assert response.status_code == 503
            assert json_of(response) == {
                "status": "unavailable",
                "error": "database unavailable",
                "checks": {"database": "down", "rate_limit_storage": "up", "api_key_pepper": "up"},
            }
            assert client.get("/healthz").status_code == 200


# --- 503: no usable pepper ------------------------------------------------------------


UNUSABLE_PEPPERS = {"unset": None, "31-characters": "x" * 31}


@pytest.fixture(scope="module")
def pepperless_servers(dedicated_db: SeededDatabase) -> Iterator[dict[str, ApiServer]]:
    specs = [
        ServerSpec(
            env=dedicated_db.env.with_changes(api_key_pepper=pepper, **HIGH_LIMITS), workdir=dedicated_db.workdir
        )
        for pepper in UNUSABLE_PEPPERS.values()
    ]
    with running_servers(specs) as started:
        yield dict(zip(UNUSABLE_PEPPERS, started, strict=True))


@pytest.fixture(scope="module", params=list(UNUSABLE_PEPPERS))
def without_pepper(request: pytest.FixtureRequest, pepperless_servers: dict[str, ApiServer]) -> ApiServer:
    return pepperless_servers[request.param]


class TestPepperMissing:
    def test_every_endpoint_is_503_without_rate_headers(
        self, without_pepper: ApiServer, dedicated_db: SeededDatabase
    ) -> None:
        with ApiClient(without_pepper.base_url) as client:
            for path in ENDPOINT_PATHS:
                # Contract §4: no key can be verified, so every request is the 503,
                # whatever its Authorization header holds (a good key, another, none).
                for token in (dedicated_db.token_a, UNKNOWN_TOKEN, "malformed", None):
                    assert_unavailable(client.api(path, token=token))
            status, content, headers = graphql(client, dedicated_db.token_a)
            assert (status, content) == (503, UNAVAILABLE_GRAPHQL)
            assert "retry-after" not in headers and "x-ratelimit-limit" not in headers


# --- 503: the limiter storage goes away, then comes back -------------------------------


def test_limits_fail_closed_while_redis_is_down_and_recover(dedicated_db: SeededDatabase) -> None:
    with own_redis(dedicated_db.workdir) as redis_server:
        env = dedicated_db.env.with_changes(redis_url=redis_server.url, **HIGH_LIMITS)
        with running_server(env, workdir=dedicated_db.workdir) as server, ApiClient(server.base_url) as client:
            token = dedicated_db.token_a
            assert_key_window(client.api("sessions", token=token), limit=KEY_LIMIT)
            assert client.get("/readyz").status_code == 200

            redis_server.stop()
            for path in ENDPOINT_PATHS:
                assert_unavailable(client.api(path, token=token))
            status, content, _ = graphql(client, token)
            assert (status, content) == (503, UNAVAILABLE_GRAPHQL)
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert json_of(ready) == {
                "status": "unavailable",
                "error": "rate_limit_storage unavailable",
                "checks": {"database": "up", "rate_limit_storage": "down", "api_key_pepper": "up"},
            }
            assert client.get("/healthz").status_code == 200

            redis_server.start()  # same port, empty
            response = client.api("sessions", token=token)
            assert response.status_code == 200
            assert assert_key_window(response, limit=KEY_LIMIT).remaining == KEY_LIMIT - 1
            assert client.get("/readyz").status_code == 200
