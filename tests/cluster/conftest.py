"""The database every cluster test reads: one fresh PostgreSQL database on the shared server
holding the contract campaign, imported and given keys through the real CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract.server import ServiceEnv
from tests.databases import postgres_database
from tests.faults.common import HIGH_LIMITS, Seeded, seed


@pytest.fixture(scope="session")
def cluster_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    workdir: Path = tmp_path_factory.mktemp("cluster-db")
    with postgres_database("campaign_cluster") as url:
        yield seed(ServiceEnv(database_url=url, **HIGH_LIMITS), workdir, migrate=False)
