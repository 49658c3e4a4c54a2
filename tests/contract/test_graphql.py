"""`/graphql` over HTTP (contract §9): same key, same scope, same filtering, same guard."""

from __future__ import annotations

import httpx
import pytest

from tests.contract.campaign import PUBLIC_MARKER, VISIBLE_SESSIONS, expected_list
from tests.contract.client import (
    AUTH_CHALLENGE,
    ApiClient,
    assert_key_window,
    assert_no_rate_headers,
    json_of,
)
from tests.contract.conftest import KEY_LIMIT

pytestmark = pytest.mark.xdist_group("contract")

SESSIONS_QUERY = "{ sessions(limit: 100) { data { id } pagination { hasMore nextCursor } } }"
INVALID_KEY_BODY = b'{"errors":[{"message":"Invalid API key","extensions":{"code":"INVALID_API_KEY"}}]}'


def post(
    client: ApiClient, query: str, *, token: str | None, variables: dict[str, object] | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    payload: dict[str, object] = {"query": query}
    if variables is not None:
        payload["variables"] = variables
    return client.post("/graphql", json=payload, headers=headers)


class TestQueries:
    def test_data_is_scoped_to_the_key_campaign(self, client: ApiClient, token_a: str) -> None:
        response = post(client, SESSIONS_QUERY, token=token_a)
        assert response.status_code == 200
        assert json_of(response) == {
            "data": {
                "sessions": {
                    "data": [{"id": session["id"]} for session in VISIBLE_SESSIONS],
                    "pagination": {"hasMore": False, "nextCursor": None},
                }
            }
        }
        assert_key_window(response, limit=KEY_LIMIT)

    def test_the_other_key_sees_the_other_campaign(self, client: ApiClient, token_b: str) -> None:
        body = json_of(post(client, SESSIONS_QUERY, token=token_b))
        assert body["data"]["sessions"]["data"] == [{"id": "sess-b-01"}]

    def test_hidden_and_foreign_records_are_not_found(self, client: ApiClient, token_a: str) -> None:
        query = "query($id: ID!) { location(id: $id) { id name } }"
        for location_id in ("loc-a-lair", "loc-b-inn", "loc-nope"):
            response = post(client, query, token=token_a, variables={"id": location_id})
            assert response.status_code == 200
            body = json_of(response)
            assert body["data"] == {"location": None}
            assert [(e["message"], e["extensions"]["code"]) for e in body["errors"]] == [
                ("Entity not found", "NOT_FOUND")
            ]

    def test_descriptions_are_gm_filtered(self, client: ApiClient, token_a: str) -> None:
        query = "{ locations(limit: 100) { data { id descriptionMarkdown descriptionText parent { id } } } }"
        body = json_of(post(client, query, token=token_a))
        assert "errors" not in body
        by_id = {location["id"]: location for location in body["data"]["locations"]["data"]}
        assert list(by_id) == [location["id"] for location in expected_list("locations")]
        assert PUBLIC_MARKER in by_id["loc-a-capital"]["descriptionMarkdown"]
        # The hidden parent is not returned through the relation either.
        assert by_id["loc-a-annex"]["parent"] is None
        assert by_id["loc-a-keep"]["parent"] == {"id": "loc-a-capital"}

    @pytest.mark.parametrize("operation", ["mutation { x }", "subscription { x }"])
    def test_only_queries_are_executed(self, client: ApiClient, token_a: str, operation: str) -> None:
        response = post(client, operation, token=token_a)
        assert response.status_code == 400
        assert json_of(response) == {
            "errors": [{"message": "Only query operations are supported", "extensions": {"code": "BAD_REQUEST"}}]
        }


class TestRefused:
    @pytest.mark.parametrize("token", [None, "cpk_nope", "cpk_" + "a" * 12 + "_" + "A" * 43])
    def test_a_bad_key_is_a_graphql_shaped_401(self, client: ApiClient, token: str | None) -> None:
        response = post(client, SESSIONS_QUERY, token=token)
        assert (response.status_code, response.content) == (401, INVALID_KEY_BODY)
        assert response.headers["www-authenticate"] == AUTH_CHALLENGE
        assert_no_rate_headers(response)

    def test_a_get_query_needs_a_key_too(self, client: ApiClient) -> None:
        response = client.get("/graphql", params={"query": SESSIONS_QUERY}, headers={"Accept": "text/html"})
        assert (response.status_code, response.content) == (401, INVALID_KEY_BODY)


class TestGraphiQL:
    def test_a_browser_get_serves_the_ide_without_a_key(self, client: ApiClient) -> None:
        response = client.get("/graphql", headers={"Accept": "text/html,application/xhtml+xml"})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        assert "graphiql" in response.text.lower()
        assert_no_rate_headers(response)


class TestRequestErrors:
    """Documents refused before execution (GraphQL over HTTP, JSON media type): 200, coded
    errors, no `data` key; counted against the key like any request."""

    @pytest.mark.parametrize(
        ("query", "variables", "code", "message"),
        [
            ("{ sessions { data { id }", None, "GRAPHQL_PARSE_FAILED", "Syntax Error: Expected Name, found <EOF>."),
            ("{ spells { id } }", None, "GRAPHQL_VALIDATION_FAILED", "Cannot query field 'spells' on type 'Query'."),
            (
                "query($n: Int) { sessions(limit: $n) { data { id } } }",
                {"n": "ten"},
                "BAD_USER_INPUT",
                "Variable '$n' has invalid value: Int cannot represent non-integer value: 'ten'",
            ),
            (
                "{ " + " ".join(f"a{n}: sessions(limit: 100) {{ data {{ summaryMarkdown }} }}" for n in range(30))
                + " }",
                None,
                "QUERY_TOO_COSTLY",
                "'anonymous' has an estimated cost of 303,030, above the budget of 12,000: "
                "ask for smaller pages, fewer Markdown fields or fewer aliases, or split the query",
            ),
        ],
        ids=["parse", "validation", "variables", "cost"],
    )
    def test_refused_with_a_code_and_no_data(
        self, client: ApiClient, token_a: str, query: str, variables: dict[str, object] | None, code: str, message: str
    ) -> None:
        response = post(client, query, token=token_a, variables=variables)
        assert response.status_code == 200
        body = json_of(response)
        assert "data" not in body
        [error] = body["errors"]
        assert (error["message"], error["extensions"]["code"]) == (message, code)
        assert_key_window(response, limit=KEY_LIMIT)
