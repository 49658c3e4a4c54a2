"""Nothing secret reaches the logs, even at LOG_LEVEL=DEBUG.

A real server (on PostgreSQL, the production backend) serves a full mix of requests:
successes on every endpoint, 404s for hidden and foreign records, 400s, 401s of every
kind (a forged secret for a real key id, a revoked key, another scheme), 429s of the
failed-authentication limit, and GraphQL reads of the GM-stripped Markdown. Its whole
output (stdout and stderr) must then hold no token, no secret part of any token (real
or forged), no stored secret hash, no pepper and no GM-only or hidden text. A key shows
up only by its key id.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from engine.keys import hash_secret
from tests.contract.campaign import CAMPAIGN_A, CAMPAIGN_B, GM_CANARY, HIDDEN_IDS, OWNER_A, OWNER_B, VISIBLE_ID
from tests.contract.client import ApiClient
from tests.contract.server import TEST_PEPPER, ApiServer, key_id_of, running_server
from tests.faults.common import Seeded, issue_keys

pytestmark = pytest.mark.xdist_group("faults")

FAILED_AUTH_LIMIT = 8


@dataclass(slots=True)
class Logged:
    server: ApiServer
    token: str
    other_token: str
    revoked_token: str


@pytest.fixture(scope="module")
def logged(seeded_postgres: Seeded) -> Iterator[Logged]:
    env = seeded_postgres.env.with_changes(
        rate_limit_failed_auth=f"{FAILED_AUTH_LIMIT} per minute", log_level="DEBUG"
    )
    [other_token] = issue_keys(env, campaign=CAMPAIGN_B, owner=OWNER_B, count=1)
    [revoked_token] = issue_keys(env, campaign=CAMPAIGN_A, owner=OWNER_A, count=1, revoked=True)
    with running_server(env, workdir=seeded_postgres.workdir) as server:
        yield Logged(server=server, token=seeded_postgres.token, other_token=other_token, revoked_token=revoked_token)


def _secret_of(token: str) -> str:
    return token.split("_", 2)[2]


def _forged(token: str) -> str:
    """The real key id with a made-up secret of the right shape."""
    return f"cpk_{key_id_of(token)}_{'Zq9' * 14}Z"


def _request_mix(client: ApiClient, logged: Logged) -> None:
    token = logged.token
    for path in VISIBLE_ID:
        assert client.api(path, token=token).status_code == 200
        assert client.api(f"{path}/{VISIBLE_ID[path]}", token=token).status_code == 200
        for hidden in HIDDEN_IDS[path]:
            assert client.api(f"{path}/{hidden}", token=token).status_code == 404
        assert client.api(f"{path}/{VISIBLE_ID[path]}", token=logged.other_token).status_code == 404
    assert client.api("sessions", token=token, params={"limit": "0"}).status_code == 400
    assert client.api("sessions", token=token, params={"cursor": "bm90LWEtY3Vyc29y"}).status_code == 400
    page = client.api("items", token=token, params={"limit": "2"}).json()
    cursor = page["pagination"]["next_cursor"]
    assert client.api("items", token=token, params={"limit": "2", "cursor": cursor}).status_code == 200

    auth = {"Authorization": f"Bearer {token}"}
    queries = [
        "{ sessions(limit: 100) { data { id title summaryMarkdown summaryText } } }",
        '{ location(id: "loc-a-capital") { name descriptionMarkdown descriptionText children { id } parent { id } } }',
        '{ session(id: "sess-a-private-1") { title } }',
        "{ sesions { id } }",
        "{ __schema { types { name } } }",
    ]
    for query in queries:
        assert client.post("/graphql", json={"query": query}, headers=auth).status_code == 200
    assert client.get("/graphql", params={"query": "{ characters { data { name } } }"}, headers=auth).status_code == 200

    # Failed authentications last: past the limit they turn into 429s for this client IP.
    failures = [
        {"Authorization": f"Bearer {_forged(token)}"},
        {"Authorization": f"Bearer {logged.revoked_token}"},
        {"Authorization": f"Basic {token}"},
        {"Authorization": f"Bearer {token}x"},
        {"Authorization": f"Bearer {token}" + "A" * 300},
        {"Authorization": token},
        {},
    ]
    statuses = [client.api("sessions", headers=headers).status_code for headers in failures * 2]
    assert set(statuses) == {401, 429}


def test_no_secret_in_any_log_line(logged: Logged) -> None:
    with ApiClient(logged.server.base_url) as client:
        _request_mix(client, logged)
        assert client.get("/readyz").status_code == 200
    log = logged.server.log_text()
    assert log.strip(), "the server wrote no log at all"

    pepper = TEST_PEPPER.encode()
    secrets = {"pepper": TEST_PEPPER, "GM canary": GM_CANARY}
    for name, token in {"token": logged.token, "other": logged.other_token, "revoked": logged.revoked_token,
                        "forged": _forged(logged.token)}.items():
        secret = _secret_of(token)
        secrets[f"{name} token"] = token
        secrets[f"{name} secret"] = secret
        secrets[f"{name} secret hash"] = hash_secret(secret, pepper=pepper)
        # Even a fragment long enough to narrow a search would be a leak.
        secrets[f"{name} secret prefix"] = secret[:12]
    leaks = {name for name, value in secrets.items() if value in log}
    assert not leaks, f"found in the server's log: {sorted(leaks)}"
    assert "cpk_" not in log, "a token-shaped value reached the log"
    # Keys are identified by their id, which is what an operator greps for.
    assert key_id_of(logged.token) in log
