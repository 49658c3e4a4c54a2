"""Response headers (spec: Errors, rule 3; contract §5): which statuses carry which."""

from __future__ import annotations

import pytest

from tests.contract.campaign import ENDPOINT_PATHS
from tests.contract.client import (
    ApiClient,
    assert_key_window,
    assert_no_rate_headers,
    assert_spent,
    assert_unauthorized,
)
from tests.contract.conftest import KEY_LIMIT

pytestmark = pytest.mark.xdist_group("contract")


class TestKeyWindow:
    def test_200_reports_the_key_minute_window_on_every_endpoint(self, client: ApiClient, token_a: str) -> None:
        for path in ENDPOINT_PATHS:
            first = client.api(path, token=token_a)
            second = client.api(path, token=token_a)
            assert (first.status_code, second.status_code) == (200, 200)
            assert_spent(assert_key_window(first, limit=KEY_LIMIT), assert_key_window(second, limit=KEY_LIMIT))
            assert first.headers["content-type"] == "application/json"

    def test_404_reports_the_same_window_as_200(self, client: ApiClient, token_a: str) -> None:
        found = client.api("sessions/sess-a-01", token=token_a)
        missing = client.api("sessions/nope", token=token_a)
        assert (found.status_code, missing.status_code) == (200, 404)
        assert_spent(assert_key_window(found, limit=KEY_LIMIT), assert_key_window(missing, limit=KEY_LIMIT))

    def test_each_key_has_its_own_window(self, client: ApiClient, token_a: str, token_b: str) -> None:
        a1 = assert_key_window(client.api("sessions", token=token_a), limit=KEY_LIMIT)
        assert_key_window(client.api("sessions", token=token_b), limit=KEY_LIMIT)
        a2 = assert_key_window(client.api("sessions", token=token_a), limit=KEY_LIMIT)
        assert_spent(a1, a2)


class TestNoRateHeaders:
    @pytest.mark.parametrize("params", [{"limit": "0"}, {"cursor": "!!"}], ids=["bad-limit", "bad-cursor"])
    def test_400(self, client: ApiClient, token_a: str, params: dict[str, str]) -> None:
        response = client.api("sessions", token=token_a, params=params)
        assert response.status_code == 400
        assert_no_rate_headers(response)

    def test_401(self, client: ApiClient) -> None:
        assert_unauthorized(client.api("sessions", token="cpk_nope"))

    def test_routing_errors_and_health(self, client: ApiClient) -> None:
        responses = (client.get("/nope"), client.post("/api/public/v1/sessions"), client.get("/healthz"))
        assert [response.status_code for response in responses] == [404, 405, 200]
        for response in responses:
            assert_no_rate_headers(response)


def test_an_admitted_400_still_counts_in_the_key_window(client: ApiClient, token_a: str) -> None:
    # Contract §5: the key limit (step 4) is counted before parameter validation (step 6).
    first = assert_key_window(client.api("sessions", token=token_a), limit=KEY_LIMIT)
    assert client.api("sessions", token=token_a, params={"limit": "x"}).status_code == 400
    second = assert_key_window(client.api("sessions", token=token_a), limit=KEY_LIMIT)
    assert_spent(first, second, requests=2)
