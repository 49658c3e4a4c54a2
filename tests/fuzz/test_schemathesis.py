"""Schemathesis against the running server's own /openapi.json, with a valid key.

For every documented operation it generates requests (valid and invalid parameters, odd
ids) and checks what the document promises: no status that is not documented, no 5xx
(no fault is injected), the documented content type, bodies valid against the documented
schemas, documented headers present. Examples are bounded so the run stays CI-sized.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.contract.campaign import FEED_PATH, RESOURCE_PATHS, VISIBLE_ID
from tests.contract.server import ApiServer, running_server
from tests.faults.common import Seeded

pytestmark = pytest.mark.xdist_group("faults")

# Per operation and generation mode: 10 operations x 2 modes x this many requests.
EXAMPLES = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


@pytest.fixture(scope="module")
def served(seeded_sqlite: Seeded) -> Iterator[tuple[ApiServer, str]]:
    with running_server(seeded_sqlite.env, workdir=seeded_sqlite.workdir) as server:
        yield server, seeded_sqlite.token


@pytest.fixture(scope="module")
def api_schema(served: tuple[ApiServer, str]) -> schemathesis.BaseSchema:
    server, _ = served
    return schemathesis.openapi.from_url(f"{server.base_url}/openapi.json")


# The ten operations and the feed, by resource; every one is GET.
OPERATIONS = {
    **{f"/api/public/v1/{path}{suffix}": path for path in RESOURCE_PATHS for suffix in ("", "/{id}")},
    f"/api/public/v1/{FEED_PATH}": FEED_PATH,
}
# Generated ids almost never name a record; these runs fix a visible one, so that the
# documented 200 bodies of the record endpoints are checked too.
VISIBLE = "visible-record"


RUNS = [
    *((path, mode) for path in OPERATIONS for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)),
    *((path, VISIBLE) for path in OPERATIONS if path.endswith("{id}")),
]


@pytest.mark.parametrize(("path", "mode"), RUNS, ids=[f"{path}-{mode}" for path, mode in RUNS])
def test_documented_behaviour(
    api_schema: schemathesis.BaseSchema, served: tuple[ApiServer, str], path: str, mode: GenerationMode | str
) -> None:
    server, token = served
    operation = api_schema[path]["GET"]
    if mode == VISIBLE:
        strategy = operation.as_strategy(path_parameters={"id": VISIBLE_ID[OPERATIONS[path]]})
    else:
        strategy = operation.as_strategy(generation_mode=GenerationMode(mode))

    # schemathesis's own pytest plugin does not run on pytest 9 yet; its strategies do.
    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,  # the same cases on every run: a CI failure is reproducible
        database=None,
    )
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS, timeout=10
        )

    check()
