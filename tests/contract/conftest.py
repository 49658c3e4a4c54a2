"""Databases and servers for the contract tests: few CLI runs, few server starts.

Each backend (SQLite, PostgreSQL) is migrated and seeded once per session through the
real CLI (`import`, `keys create`) into a template that is never served; every server
that needs data gets a copy of it (tests/contract/clones.py). `api` is one server per
(database, limiter storage) combination, limiter storage being process memory or a
leased database of the shared Redis; the two servers of a backend run side by side.
Their limits are high, so only the servers of test_rate_limits.py, started with tiny
limits, ever answer 429.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.contract.campaign import CAMPAIGN_A, CAMPAIGN_B, EXPORT, OWNER_A, OWNER_B
from tests.contract.client import ApiClient
from tests.contract.clones import cloned_database
from tests.contract.redis_process import leased_redis_database
from tests.contract.server import ApiServer, Cli, KeySpec, ServerSpec, ServiceEnv, running_servers
from tests.databases import BACKENDS, migrated_database
from tests.services import REDIS_URL

STORAGES = ("memory", "redis")
# High enough that no test of a shared server is ever limited; the key's amount is what
# the rate headers of 200/404/500 report.
KEY_LIMIT = 100_000
HIGH_LIMITS = {
    "rate_limit_ip": "1000000 per minute",
    "rate_limit_failed_auth": "1000000 per 10 minutes",
    "rate_limit_key": f"{KEY_LIMIT} per minute",
    "rate_limit_owner": "1000000 per minute",
}


@dataclass(frozen=True, slots=True)
class SeededDatabase:
    """A migrated database holding the contract campaign export, and keys to read it."""

    backend: str
    env: ServiceEnv
    cli: Cli
    token_a: str
    token_b: str
    # A key of campaign A that test_auth.py revokes.
    revocable: str
    workdir: Path

    def clone(self, stack: ExitStack, workdir: Path) -> SeededDatabase:
        """The same data and keys in a copy of the database, removed with `stack`."""
        url = stack.enter_context(cloned_database(self.env.database_url, workdir))
        env = self.env.with_changes(database_url=url)
        return replace(self, env=env, cli=Cli(env=env, workdir=workdir), workdir=workdir)


def seed(env: ServiceEnv, workdir: Path, *, backend: str) -> SeededDatabase:
    cli = Cli(env=env, workdir=workdir)
    cli.import_export(EXPORT)
    token_a, token_b, revocable = cli.create_keys(
        [
            KeySpec(campaign=CAMPAIGN_A, owner=OWNER_A, label="contract A"),
            KeySpec(campaign=CAMPAIGN_B, owner=OWNER_B, label="contract B"),
            KeySpec(campaign=CAMPAIGN_A, owner=OWNER_A, label="to revoke"),
        ]
    )
    return SeededDatabase(
        backend=backend,
        env=env,
        cli=cli,
        token_a=token_a,
        token_b=token_b,
        revocable=revocable,
        workdir=workdir,
    )


class Templates:
    """One seeded, never-served database per backend, made on first use."""

    def __init__(self, stack: ExitStack, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._stack = stack
        self._tmp = tmp_path_factory
        self._seeded: dict[str, SeededDatabase] = {}

    def __getitem__(self, backend: str) -> SeededDatabase:
        if backend not in self._seeded:
            workdir = self._tmp.mktemp(f"template-{backend}")
            url = self._stack.enter_context(migrated_database(backend, workdir))
            self._seeded[backend] = seed(ServiceEnv(database_url=url), workdir, backend=backend)
        return self._seeded[backend]

    def copy(self, backend: str, stack: ExitStack, *, name: str) -> SeededDatabase:
        return self[backend].clone(stack, self._tmp.mktemp(name))


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Templates]:
    with ExitStack() as stack:
        yield Templates(stack, tmp_path_factory)


@pytest.fixture(scope="session")
def shared_redis_url() -> Iterator[str]:
    """A database of the shared Redis that this session alone uses."""
    with leased_redis_database(REDIS_URL) as url:
        yield url


@pytest.fixture(scope="session", params=BACKENDS)
def seeded(request: pytest.FixtureRequest, templates: Templates) -> Iterator[SeededDatabase]:
    """The database of the shared servers of one backend."""
    with ExitStack() as stack:
        yield templates.copy(request.param, stack, name=f"contract-{request.param}")


@pytest.fixture(scope="session")
def servers(seeded: SeededDatabase, shared_redis_url: str) -> Iterator[dict[str, ApiServer]]:
    """The shared servers of one backend, by limiter storage, started side by side."""
    # KEY_CACHE_S=0: a revocation is seen on the next request.
    env = seeded.env.with_changes(key_cache_s=0, **HIGH_LIMITS)
    redis_urls = {"memory": None, "redis": shared_redis_url}
    specs = [
        ServerSpec(env=env.with_changes(redis_url=redis_urls[storage]), workdir=seeded.workdir) for storage in STORAGES
    ]
    with running_servers(specs) as started:
        yield dict(zip(STORAGES, started, strict=True))


@pytest.fixture(scope="session", params=STORAGES)
def storage(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def api(servers: dict[str, ApiServer], storage: str) -> ApiServer:
    """The shared server of one (database, storage) combination."""
    return servers[storage]


@pytest.fixture(scope="session")
def dedicated_db(templates: Templates) -> Iterator[SeededDatabase]:
    """A SQLite database for the servers that tests start for themselves (tiny limits,
    missing pepper, limiter storage outages); never used by the shared servers."""
    with ExitStack() as stack:
        yield templates.copy("sqlite", stack, name="contract-dedicated")


@pytest.fixture
def client(api: ApiServer) -> Iterator[ApiClient]:
    with ApiClient(api.base_url) as http:
        yield http


@pytest.fixture
def token_a(seeded: SeededDatabase) -> str:
    return seeded.token_a


@pytest.fixture
def token_b(seeded: SeededDatabase) -> str:
    return seeded.token_b
