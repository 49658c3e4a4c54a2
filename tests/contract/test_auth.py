"""Authentication (spec §Authentication): every way a key is refused, and the one it is not."""

from __future__ import annotations

import base64
from contextlib import ExitStack

import pytest

from tests.contract.campaign import ENDPOINT_PATHS
from tests.contract.client import (
    ApiClient,
    assert_key_window,
    assert_unauthorized,
    json_of,
)
from tests.contract.conftest import KEY_LIMIT, SeededDatabase
from tests.contract.server import ApiServer

pytestmark = pytest.mark.xdist_group("contract")


def _other_secret(token: str) -> str:
    """The same key id with a different (well-formed) secret."""
    secret = token[17:]
    replacement = "A" if secret[0] != "A" else "B"
    return token[:17] + replacement + secret[1:]


class TestRefused:
    def test_no_authorization_header_on_any_endpoint(self, client: ApiClient) -> None:
        for path in ENDPOINT_PATHS:
            assert_unauthorized(client.api(path))

    @pytest.mark.parametrize(
        "authorization",
        [
            "Basic " + base64.b64encode(b"user:password").decode(),
            "Token {token}",
            "Bearer",
            "{token}",
            "Bearer{token}",
        ],
        ids=["basic", "token-scheme", "bearer-without-token", "token-without-scheme", "no-space"],
    )
    def test_wrong_scheme_or_no_token(self, client: ApiClient, token_a: str, authorization: str) -> None:
        response = client.api("sessions", headers={"Authorization": authorization.format(token=token_a)})
        assert_unauthorized(response)

    @pytest.mark.parametrize(
        "token",
        ["not-a-key", "cpk_short_secret", "cpk_ABCDEFGHIJKL_" + "a" * 43, "cpk_abcdefghijkl_" + "a" * 42],
        ids=["free-text", "short", "uppercase-key-id", "short-secret"],
    )
    def test_malformed_token(self, client: ApiClient, token: str) -> None:
        assert_unauthorized(client.api("sessions", token=token))

    def test_well_formed_token_with_a_suffix(self, client: ApiClient, token_a: str) -> None:
        assert_unauthorized(client.api("sessions", token=token_a + "x"))

    def test_unknown_key_id(self, client: ApiClient) -> None:
        assert_unauthorized(client.api("sessions", token="cpk_" + "a" * 12 + "_" + "A" * 43))

    def test_wrong_secret(self, client: ApiClient, token_a: str) -> None:
        assert_unauthorized(client.api("sessions", token=_other_secret(token_a)))

    @pytest.mark.parametrize("length", [256, 257, 4096])
    def test_overlong_tokens(self, client: ApiClient, token_a: str, length: int) -> None:
        # 256 characters is allowed by length but is not a key (keys are 60 characters);
        # 257 and more is refused before the key store is consulted.
        token = (token_a + "x" * length)[:length]
        assert len(token) == length
        assert_unauthorized(client.api("sessions", token=token))

    @pytest.mark.parametrize(
        ("params", "token"),
        [({"limit": "abc"}, "bad"), ({"cursor": "!!"}, "bad"), ({"limit": "0"}, None)],
        ids=["bad-key-bad-limit", "bad-key-bad-cursor", "no-key-bad-limit"],
    )
    def test_authentication_comes_before_parameter_validation(
        self, client: ApiClient, params: dict[str, str], token: str | None
    ) -> None:
        assert_unauthorized(client.api("sessions", token=token, params=params))


def test_a_revoked_key_is_refused_by_every_server(seeded: SeededDatabase, servers: dict[str, ApiServer]) -> None:
    with ExitStack() as stack:
        clients = [stack.enter_context(ApiClient(server.base_url)) for server in servers.values()]
        for client in clients:
            assert client.api("sessions", token=seeded.revocable).status_code == 200
        seeded.cli.revoke_key(seeded.revocable)
        for client in clients:
            assert_unauthorized(client.api("sessions", token=seeded.revocable))


class TestAccepted:
    @pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
    def test_the_scheme_is_case_insensitive(self, client: ApiClient, token_a: str, scheme: str) -> None:
        response = client.api("sessions", headers={"Authorization": f"{scheme} {token_a}"})
        assert response.status_code == 200
        assert_key_window(response, limit=KEY_LIMIT)
        assert "www-authenticate" not in response.headers

    def test_a_key_reads_only_its_own_campaign(self, client: ApiClient, token_b: str) -> None:
        response = client.api("sessions", token=token_b)
        assert response.status_code == 200
        assert [session["id"] for session in json_of(response)["data"]] == ["sess-b-01"]
        locations = json_of(client.api("locations", token=token_b))["data"]
        assert [location["id"] for location in locations] == ["loc-b-inn"]
