"""Round trips per request, counted in-process: a regression guard for the cost model.

SQL: every statement the app sends (handed to the driver connection by the request path,
or through SQLAlchemy's cursors), connections the request path borrows and pool pings. A REST request
costs the key lookup plus its one query; a key verified less than KEY_CACHE_S ago costs
nothing; nested GraphQL locations go through the context's DataLoaders, so their cost
does not grow with the number of locations (no N+1).

Redis, on a private redis-server so that nobody else's traffic is counted: a request
whose key was verified less than KEY_CACHE_S ago runs every limit in one Lua script
(one EVALSHA); any other request passes the two stages of engine/ratelimit.py, one
EVALSHA each, around key verification; a failed authentication adds the failed-auth
increment, which runs the same steps script with that counter alone. INFO
commandstats also counts the commands a script runs inside the server, so the client's
own commands are read from the slow log (threshold 0), which records them with the
client's address and script-internal ones with `?:0`.

Without REDIS_URL the limiter keeps its counters in process memory and opens nothing.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis
from fastapi import FastAPI
from redis.asyncio.connection import AbstractConnection
from sqlalchemy.ext.asyncio import AsyncSession

from engine.db import Database
from engine.keys import create_api_key
from engine.settings import Settings
from engine.tables import Character, Faction, Item
from rest.app import create_app
from tests import factories
from tests.conftest import TEST_PEPPER
from tests.contract.redis_process import RedisProcess, own_redis
from tests.databases import BACKENDS, migrated_database
from tests.sql_log import SqlCount, sql_of

# One worker builds the databases and the private redis-server once, not each worker.
pytestmark = pytest.mark.xdist_group("perf")

PREFIX = "/api/public/v1"
COLLECTIONS = ("sessions", "characters", "locations", "factions", "items")
# Every limit out of reach: these tests count round trips, not rejections.
NO_LIMIT = "1000000 per minute"
# Both counters key on the IP; each is named after its limit, so the keys the scripts
# touch tell the two apart (asserted below).
NO_FAILED_AUTH_LIMIT = "1000000 per hour"
CLIENT_ADDRESS = ("198.51.100.20", 40000)
DEFAULT_KEY_CACHE_S = Settings.model_fields["key_cache_s"].default
# Roots of the location trees; each root has 3 towns of 3 streets (13 locations a root).
SMALL_ROOTS, LARGE_ROOTS = 3, 6
FANOUT = 3
# Children limited to the fan-out: within the cost budget, and one loader (one limit) for
# both levels, so the grandchildren's batch is all cache hits.
NESTED_LOCATIONS = (
    "{ locations(limit: 100) { data { id children(limit: 3) { id children(limit: 3) { id } } parent { id } } } }"
)


# --- data -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeededCampaign:
    token: str
    key_id: str
    roots: int

    @property
    def locations(self) -> int:
        return self.roots * (1 + FANOUT + FANOUT * FANOUT)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass(frozen=True, slots=True)
class Seeded:
    backend: str
    database_url: str
    small: SeededCampaign  # a location tree and visible records of every type
    large: SeededCampaign  # twice the locations, nothing else
    record_ids: dict[str, str]  # collection -> one visible record of `small`

    def paths(self) -> list[str]:
        """The ten REST endpoints: each list, then each single record."""
        lists = [f"{PREFIX}/{collection}" for collection in COLLECTIONS]
        records = [f"{PREFIX}/{collection}/{self.record_ids[collection]}" for collection in COLLECTIONS]
        return lists + records


async def _add_location_tree(db: AsyncSession, *, campaign_id: str, roots: int) -> str:
    """`roots` regions of FANOUT towns of FANOUT streets; the id of the first region."""
    region_ids = []
    for region in range(roots):
        root = await factories.add_entity(db, campaign_id=campaign_id, name=f"Region {region:02d}")
        region_ids.append(root.id)
        for town_number in range(FANOUT):
            town = await factories.add_entity(
                db, campaign_id=campaign_id, name=f"Region {region:02d} town {town_number}", parent_id=root.id
            )
            for street in range(FANOUT):
                await factories.add_entity(
                    db, campaign_id=campaign_id, name=f"{town.name} street {street}", parent_id=town.id
                )
    return region_ids[0]


async def _add_key(db: AsyncSession, *, campaign_id: str, owner_id: str, roots: int) -> SeededCampaign:
    issued = await create_api_key(
        db, campaign_id=campaign_id, owner_id=owner_id, label="perf", pepper=TEST_PEPPER.encode()
    )
    return SeededCampaign(token=issued.token, key_id=issued.key_id, roots=roots)


@pytest.fixture(scope="module", params=BACKENDS)
def perf_database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # A database of its own rather than the session's `database_url`: the data here is
    # committed (the app reads it through its own engine) and must not leak into the
    # tests that expect an empty database around their rolled-back transaction.
    with migrated_database(request.param, tmp_path_factory.mktemp("perf")) as url:
        yield url


@pytest.fixture(scope="module")
async def seeded(perf_database_url: str) -> Seeded:
    database = Database(Settings(_env_file=None, database_url=perf_database_url))  # type: ignore[call-arg]
    try:
        async with database.session() as db:
            small = await factories.add_campaign(db, name="Small world")
            large = await factories.add_campaign(db, name="Large world")
            record_ids = {
                "sessions": (await factories.add_session(db, campaign_id=small.id, summary="# Recap")).id,
                "locations": await _add_location_tree(db, campaign_id=small.id, roots=SMALL_ROOTS),
            }
            for collection, table in (("characters", Character), ("factions", Faction), ("items", Item)):
                entity = await factories.add_entity(db, table=table, campaign_id=small.id, description="Public")
                record_ids[collection] = entity.id
            await factories.add_session(db, campaign_id=small.id)
            await _add_location_tree(db, campaign_id=large.id, roots=LARGE_ROOTS)
            small_key = await _add_key(db, campaign_id=small.id, owner_id=small.owner_id, roots=SMALL_ROOTS)
            large_key = await _add_key(db, campaign_id=large.id, owner_id=large.owner_id, roots=LARGE_ROOTS)
        backend = database.backend
    finally:
        await database.dispose()
    return Seeded(
        backend=backend, database_url=perf_database_url, small=small_key, large=large_key, record_ids=record_ids
    )


# --- the app --------------------------------------------------------------------------


def app_settings(seeded: Seeded, **overrides: Any) -> Settings:
    """Settings of an app reading `seeded`; every value that matters is explicit, so
    nothing in the environment (REDIS_URL, KEY_CACHE_S, ...) changes what is counted."""
    values: dict[str, Any] = {
        "database_url": seeded.database_url,
        "api_key_pepper": TEST_PEPPER,
        "redis_url": None,
        "key_cache_s": DEFAULT_KEY_CACHE_S,
        "rate_limit_ip": NO_LIMIT,
        "rate_limit_failed_auth": NO_FAILED_AUTH_LIMIT,
        "rate_limit_key": NO_LIMIT,
        "rate_limit_owner": NO_LIMIT,
        "trusted_proxies": [],
        "metrics_enabled": False,
        "log_level": "WARNING",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@asynccontextmanager
async def app_client(settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """create_app(settings) in-process. ASGITransport runs no lifespan, so the app's
    shutdown (engine and limiter storage) is done here."""
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app, client=CLIENT_ADDRESS)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://perf.test") as client:
            yield app, client
    finally:
        await app.state.runtime.database.dispose()
        await app.state.runtime.limits.close()


class TestSqlStatementsPerRequest:
    async def test_each_endpoint_reads_the_key_then_its_records(self, seeded: Seeded) -> None:
        async with app_client(app_settings(seeded, key_cache_s=0)) as (app, client):
            # The engine's first connection runs the dialect's set-up queries: not a request's.
            assert (await client.get(f"{PREFIX}/sessions", headers=seeded.small.auth)).status_code == 200
            shapes, others, connections = {}, {}, {}
            for path in seeded.paths():
                response, count = await sql_of(app, client.get(path, headers=seeded.small.auth))
                assert response.status_code == 200, (path, response.text)
                shapes[path], others[path] = count.shapes(), count.others
                connections[path] = (count.checkouts, count.pings)
        for path in shapes:
            print(
                f"[{seeded.backend}] KEY_CACHE_S=0 {path}: {len(shapes[path])} SELECTs {shapes[path]}"
                f" on {connections[path][0]} pooled connections, {connections[path][1]} pool ping"
            )
        collection_of = {path: path.removeprefix(PREFIX + "/").split("/")[0] for path in shapes}
        assert shapes == {path: ["api_keys", collection_of[path]] for path in shapes}
        assert others == {path: [] for path in shapes}
        # A connection lent per statement and returned right after it (none held while the
        # document executes), without a ping (a dropped one is retried instead).
        assert connections == {path: (2, 0) for path in shapes}

    async def test_a_warm_key_costs_no_statement(self, seeded: Seeded) -> None:
        async with app_client(app_settings(seeded)) as (app, client):
            shapes = {}
            for path in seeded.paths():
                # Verified just before, well inside the default KEY_CACHE_S.
                assert (await client.get(path, headers=seeded.small.auth)).status_code == 200
                response, count = await sql_of(app, client.get(path, headers=seeded.small.auth))
                assert response.status_code == 200, (path, response.text)
                assert count.others == [], path
                shapes[path] = count.shapes()
        for path, read in shapes.items():
            print(f"[{seeded.backend}] KEY_CACHE_S={DEFAULT_KEY_CACHE_S:g} warm key {path}: {len(read)} SELECT {read}")
        assert {path: len(read) for path, read in shapes.items()} == {path: 1 for path in shapes}
        assert all("api_keys" not in read for read in shapes.values())

    async def test_nested_locations_cost_the_same_whatever_their_number(self, seeded: Seeded) -> None:
        counted: dict[int, SqlCount] = {}
        async with app_client(app_settings(seeded, key_cache_s=0)) as (app, client):
            assert (await client.get(f"{PREFIX}/sessions", headers=seeded.small.auth)).status_code == 200
            for campaign in (seeded.small, seeded.large):
                response, count = await sql_of(
                    app, client.post("/graphql", json={"query": NESTED_LOCATIONS}, headers=campaign.auth)
                )
                assert response.status_code == 200
                body = response.json()
                assert "errors" not in body
                locations = body["data"]["locations"]["data"]
                # The whole tree came back: every location, every region's streets two levels down.
                assert len(locations) == campaign.locations
                assert sum(len(town["children"]) for place in locations for town in place["children"]) == (
                    campaign.roots * FANOUT * FANOUT
                )
                assert sum(place["parent"] is None for place in locations) == campaign.roots
                assert count.others == []
                counted[campaign.locations] = count
        for size, count in counted.items():
            print(
                f"[{seeded.backend}] GraphQL nested locations over {size} locations:"
                f" {len(count.selects)} SELECTs {count.shapes()}"
            )
        # The key, the page, one batch for every `children` of the page and one for every
        # `parent`. The grandchildren's `children` are DataLoader cache hits: every
        # location is on the page, so each was a key of the first children batch already.
        expected = sorted(["api_keys", "locations", "locations by parent_id IN", "locations by id IN"])
        assert {size: sorted(count.shapes()) for size, count in counted.items()} == {
            seeded.small.locations: expected,
            seeded.large.locations: expected,
        }


# --- counting Redis commands ----------------------------------------------------------

PROBE_NAME = "perf-probe"
SCRIPT_ADDRESS = "?:0"  # the slow log's client address for commands a script runs
# What the steps script calls inside the server.
SCRIPT_INTERNAL = frozenset({"incr", "time", "expireat", "get", "pttl"})


@dataclass(frozen=True, slots=True)
class RedisCount:
    commands: list[list[str]]  # the app's own commands (round trips), in order
    commandstats: dict[str, int]  # calls during the request, script-internal ones included

    def names(self) -> list[str]:
        return [command[0].upper() for command in self.commands]

    def scripts(self) -> list[tuple[str, list[str]]]:
        """(sha, keys) of each EVALSHA."""
        calls = []
        for command in self.commands:
            if command[0].upper() == "EVALSHA":
                calls.append((command[1], command[3 : 3 + int(command[2])]))
        return calls

    def client_commandstats(self) -> dict[str, int]:
        return {name: calls for name, calls in self.commandstats.items() if name not in SCRIPT_INTERNAL}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisProbe:
    """Commands a private redis-server receives while one request runs."""

    def __init__(self, server: RedisProcess) -> None:
        self.client = redis.Redis.from_url(server.url, client_name=PROBE_NAME)
        # Our own server: log every command, so each client's are listed apart from scripts'.
        self.client.config_set("slowlog-log-slower-than", 0)
        self.client.config_set("slowlog-max-len", 1024)

    def close(self) -> None:
        self.client.close()

    def _calls(self) -> dict[str, int]:
        stats = self.client.info("commandstats")
        return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}

    def counter(self, key: str) -> int:
        return int(self.client.get(key) or 0)

    async def measure(self, request: Awaitable[httpx.Response]) -> tuple[httpx.Response, RedisCount]:
        self.client.slowlog_reset()
        before = self._calls()
        response = await request
        after = self._calls()
        entries = sorted(self.client.slowlog_get(1024), key=lambda entry: entry["id"])
        delta = {name: calls - before.get(name, 0) for name, calls in after.items() if calls != before.get(name, 0)}
        delta["info"] -= 1  # the probe's first INFO is counted by its second
        if delta["info"] == 0:
            del delta["info"]
        commands = [
            _text(entry["command"]).split(" ")
            for entry in entries
            if _text(entry["client_name"]) != PROBE_NAME and _text(entry["client_address"]) != SCRIPT_ADDRESS
        ]
        return response, RedisCount(commands=commands, commandstats=delta)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    with own_redis(tmp_path_factory.mktemp("perf-redis")) as server:
        yield server


@pytest.fixture
def probe(redis_server: RedisProcess) -> Iterator[RedisProbe]:
    probe = RedisProbe(redis_server)
    yield probe
    probe.close()


class TestRedisCommandsPerRequest:
    async def _count_requests(
        self, seeded: Seeded, redis_server: RedisProcess, probe: RedisProbe, **settings: Any
    ) -> dict[str, RedisCount]:
        """The Redis commands of a list, a record and a GraphQL request, each measured alone."""
        auth = seeded.small.auth
        requests = {
            "list": (f"{PREFIX}/sessions", None),
            "record": (f"{PREFIX}/locations/{seeded.record_ids['locations']}", None),
            "graphql": ("/graphql", {"query": NESTED_LOCATIONS}),
        }
        counted: dict[str, RedisCount] = {}
        async with app_client(app_settings(seeded, redis_url=redis_server.url, **settings)) as (_app, client):
            # Warm-up: the pool's first connection (HELLO) and, on a new server, the
            # script's NOSCRIPT answer, SCRIPT LOAD and retry happen once, not per request.
            # It also verifies the key: from here on it is warm unless KEY_CACHE_S is 0.
            assert (await client.get(f"{PREFIX}/sessions", headers=auth)).status_code == 200
            for name, (path, body) in requests.items():
                send = client.post(path, json=body, headers=auth) if body else client.get(path, headers=auth)
                response, counted[name] = await probe.measure(send)
                assert response.status_code == 200, (name, response.text)
        return counted

    async def test_a_warm_key_runs_one_script(
        self, seeded: Seeded, redis_server: RedisProcess, probe: RedisProbe
    ) -> None:
        counted = await self._count_requests(seeded, redis_server, probe)
        for name, count in counted.items():
            print(
                f"[{seeded.backend}] Redis, successful {name} request, warm key: round trips {count.names()},"
                f" commandstats {count.commandstats}"
            )
        assert {name: count.names() for name, count in counted.items()} == {name: ["EVALSHA"] for name in counted}
        assert {name: count.client_commandstats() for name, count in counted.items()} == {
            name: {"evalsha": 1} for name in counted
        }
        for count in counted.values():
            ((_script, keys),) = count.scripts()
            assert len(keys) == 4  # IP, failed-auth, key, owner
            assert seeded.small.key_id in keys[2]

    async def test_a_cold_key_runs_one_script_per_stage(
        self, seeded: Seeded, redis_server: RedisProcess, probe: RedisProbe
    ) -> None:
        counted = await self._count_requests(seeded, redis_server, probe, key_cache_s=0)
        for name, count in counted.items():
            print(
                f"[{seeded.backend}] Redis, successful {name} request, KEY_CACHE_S=0: round trips {count.names()},"
                f" commandstats {count.commandstats}"
            )
        assert {name: count.names() for name, count in counted.items()} == {name: ["EVALSHA"] * 2 for name in counted}
        assert {name: count.client_commandstats() for name, count in counted.items()} == {
            name: {"evalsha": 2} for name in counted
        }
        for count in counted.values():
            (client_stage, client_keys), (key_stage, key_keys) = count.scripts()
            assert client_stage == key_stage  # one script, given each stage's steps
            assert (len(client_keys), len(key_keys)) == (2, 2)  # (IP, failed-auth), (key, owner)
            assert seeded.small.key_id in key_keys[0]

    async def test_warm_and_cold_requests_count_the_same_counters(
        self, seeded: Seeded, redis_server: RedisProcess, probe: RedisProbe
    ) -> None:
        path = f"{PREFIX}/sessions"
        # Another app's request loads the limiter's script into this server, so that the
        # measured app's first request shows its stages alone, whichever test ran first
        # (on a new server the first call is NOSCRIPT, SCRIPT LOAD and the call again).
        async with app_client(app_settings(seeded, redis_url=redis_server.url)) as (_app, other):
            assert (await other.get(path, headers=seeded.small.auth)).status_code == 200
        async with app_client(app_settings(seeded, redis_url=redis_server.url)) as (_app, client):
            # The app's first request finds its key cache empty: two stages.
            cold_response, cold = await probe.measure(client.get(path, headers=seeded.small.auth))
            (script, client_keys), (_, key_keys) = cold.scripts()
            counters = [*client_keys, *key_keys]
            after_cold = [probe.counter(counter) for counter in counters]
            warm_response, warm = await probe.measure(client.get(path, headers=seeded.small.auth))
            after_warm = [probe.counter(counter) for counter in counters]
        print(f"[{seeded.backend}] Redis, cold then warm key: {cold.names()} then {warm.names()}, counters {counters}")
        assert (cold_response.status_code, warm_response.status_code) == (200, 200)
        assert warm.scripts() == [(script, counters)]  # the same counter keys, in the documented order
        # IP, key and owner counted once more; failed authentications only read.
        assert [after - before for before, after in zip(after_cold, after_warm, strict=True)] == [1, 0, 1, 1]
        remaining = [int(response.headers["x-ratelimit-remaining"]) for response in (cold_response, warm_response)]
        assert remaining[1] == remaining[0] - 1

    async def test_a_failed_authentication_runs_the_first_stage_and_one_increment(
        self, seeded: Seeded, redis_server: RedisProcess, probe: RedisProbe
    ) -> None:
        # A well-formed token of a real key with the wrong secret.
        wrong = {"Authorization": f"Bearer cpk_{seeded.small.key_id}_{'A' * 43}"}
        async with app_client(app_settings(seeded, redis_url=redis_server.url)) as (_app, client):
            _, success = await probe.measure(client.get(f"{PREFIX}/sessions", headers=seeded.small.auth))
            assert (await client.get(f"{PREFIX}/sessions", headers=wrong)).status_code == 401  # warm-up
            _, (ip_counter, failed_counter) = success.scripts()[0]
            assert ip_counter != failed_counter
            failed_before = probe.counter(failed_counter)
            response, count = await probe.measure(client.get(f"{PREFIX}/sessions", headers=wrong))
            failed_after = probe.counter(failed_counter)
        print(
            f"[{seeded.backend}] Redis, failed authentication: round trips {count.names()},"
            f" commandstats {count.commandstats}, failed-auth counter {failed_before} -> {failed_after}"
        )
        assert response.status_code == 401
        assert response.json() == {"error": "Invalid API key"}
        assert count.names() == ["EVALSHA", "EVALSHA"]
        assert count.client_commandstats() == {"evalsha": 2}
        (stage, stage_keys), (increment, increment_keys) = count.scripts()
        assert (stage, stage_keys) == success.scripts()[0]  # the first stage, as for a success
        # The same steps script, counting the failed-auth counter alone (so its window
        # ends on a whole second, as every other's).
        assert increment == stage
        assert increment_keys == [failed_counter]
        assert failed_after == failed_before + 1


class TestMemoryStorage:
    async def test_no_connection_is_opened_without_redis_url(
        self, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        opened: list[object] = []
        socket_connect = socket.socket.connect
        redis_connect = AbstractConnection.connect

        def spy_socket_connect(sock: socket.socket, address: Any) -> None:
            opened.append(address)
            socket_connect(sock, address)

        async def spy_redis_connect(connection: AbstractConnection) -> None:
            opened.append(f"redis {connection}")
            await redis_connect(connection)

        monkeypatch.setattr(socket.socket, "connect", spy_socket_connect)
        monkeypatch.setattr(AbstractConnection, "connect", spy_redis_connect)
        # The spy sees a connection when one is made: the assertion below can fail.
        with socket.create_server(("127.0.0.1", 0)) as listener:
            address = listener.getsockname()[:2]
            _reader, writer = await asyncio.open_connection(*address)
            writer.close()
            await writer.wait_closed()
        assert opened == [address]
        opened.clear()

        async with app_client(app_settings(seeded)) as (app, client):
            assert app.state.runtime.settings.redis_url is None
            responses = [await client.get(f"{PREFIX}/sessions", headers=seeded.small.auth) for _ in range(3)]
            failed = await client.get(f"{PREFIX}/sessions", headers={"Authorization": "Bearer nope"})
        print(f"[{seeded.backend}] memory storage: connections opened {opened}")
        assert [response.status_code for response in responses] == [200, 200, 200]
        assert failed.status_code == 401
        # The limiter did count, in memory: the key's window went down once per request.
        remaining = [int(response.headers["x-ratelimit-remaining"]) for response in responses]
        assert remaining == [999_999, 999_998, 999_997]
        # PostgreSQL connections are opened by libpq in C, below the socket spy; SQLite
        # opens none. So anything seen here would be the limiter reaching out.
        assert opened == []
