"""Without a usable API_KEY_PEPPER no key can be verified: every API request is the 503.

"Every" includes requests whose Authorization header is missing, malformed or of another
scheme (contract §4), so nothing about the key or the configuration can be probed, and
none of them counts as a failed authentication.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.client import ApiClient
from tests.contract.server import ApiServer, running_server
from tests.faults.common import ENDPOINTS, UNAVAILABLE_GRAPHQL, Seeded, assert_unavailable

pytestmark = pytest.mark.xdist_group("faults")

HEADERS = {
    "valid-key": None,  # replaced by the seeded token
    "no-header": "",
    "malformed": "Bearer not-a-key",
    "other-scheme": "Basic dXNlcjpwYXNz",
    "too-long": "Bearer " + "a" * 300,
}


@pytest.fixture(scope="module", params=[None, "x" * 31], ids=["unset", "31-characters"])
def without_pepper(request: pytest.FixtureRequest, seeded_sqlite: Seeded) -> Iterator[ApiServer]:
    env = seeded_sqlite.env.with_changes(api_key_pepper=request.param)
    with running_server(env, workdir=seeded_sqlite.workdir) as server:
        yield server


def test_every_endpoint_is_503(without_pepper: ApiServer, seeded_sqlite: Seeded) -> None:
    token = seeded_sqlite.token
    with ApiClient(without_pepper.base_url) as client:
        for name, value in HEADERS.items():
            authorization = f"Bearer {token}" if value is None else value
            headers = {"Authorization": authorization} if authorization else {}
            for path, _ in ENDPOINTS:
                assert_unavailable(client.api(path, headers=headers))
            for method in ("GET", "POST"):
                graphql = client.request(
                    method,
                    "/graphql",
                    params={"query": "{ __typename }"} if method == "GET" else None,
                    json={"query": "{ __typename }"} if method == "POST" else None,
                    headers=headers,
                )
                assert (graphql.status_code, graphql.content) == (503, UNAVAILABLE_GRAPHQL), (name, method)
                assert "retry-after" not in graphql.headers
        # The process itself is fine, and says so.
        assert client.get("/healthz").status_code == 200


def test_readiness_names_the_missing_pepper(without_pepper: ApiServer) -> None:
    with ApiClient(without_pepper.base_url) as client:
        ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "unavailable",
        "error": "api_key_pepper unavailable",
        "checks": {"database": "up", "rate_limit_storage": "up", "api_key_pepper": "down"},
    }
