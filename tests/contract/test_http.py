"""Everything around the ten endpoints (contract §9): health, routing errors, OpenAPI."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.campaign import FEED_PATH, LIST_FAILED_BODY, NOT_FOUND_BODY, RECORD_FAILED_BODY, RESOURCE_PATHS
from tests.contract.client import API_PREFIX, ApiClient, assert_error, assert_no_rate_headers, json_of

pytestmark = pytest.mark.xdist_group("contract")

LIST_PATHS = {f"{API_PREFIX}/{path}": path for path in (*RESOURCE_PATHS, FEED_PATH)}
RECORD_PATHS = {f"{API_PREFIX}/{path}/{{id}}": path for path in RESOURCE_PATHS}


class TestHealth:
    def test_healthz(self, client: ApiClient) -> None:
        response = client.get("/healthz")
        assert response.status_code == 200
        assert json_of(response) == {"status": "ok"}

    def test_readyz(self, client: ApiClient) -> None:
        response = client.get("/readyz")
        assert response.status_code == 200
        assert json_of(response) == {
            "status": "ready",
            "checks": {"database": "up", "rate_limit_storage": "up", "api_key_pepper": "up"},
        }


class TestRouting:
    @pytest.mark.parametrize(
        "path",
        [
            "/nope",
            "/api/public/v2/sessions",
            "/api/public/v1/spells",
            "/api/public/v1/sessions/",
            "/healthz/",
            "/api/public/v1/sessions/sess-a-01/",
        ],
    )
    def test_unknown_paths_are_json_404_not_redirects(self, client: ApiClient, path: str) -> None:
        response = client.get(path, headers={"Authorization": "Bearer whatever"})
        assert_error(response, 404, "Not found")
        assert "location" not in response.headers
        assert_no_rate_headers(response)

    @pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
    @pytest.mark.parametrize("path", ["/api/public/v1/sessions", "/api/public/v1/items/item-a-sword", "/healthz"])
    def test_other_methods_are_405_with_allow(self, client: ApiClient, method: str, path: str) -> None:
        response = client.request(method, path)
        assert_error(response, 405, "Method not allowed")
        assert response.headers["allow"] == "GET, HEAD"
        assert_no_rate_headers(response)


class TestOpenApi:
    @pytest.fixture
    def document(self, client: ApiClient) -> dict[str, Any]:
        response = client.get("/openapi.json")
        assert response.status_code == 200
        return json_of(response)  # type: ignore[no-any-return]

    def test_lists_exactly_the_ten_get_endpoints_and_the_feed(self, document: dict[str, Any]) -> None:
        assert set(document["paths"]) == set(LIST_PATHS) | set(RECORD_PATHS)
        for operations in document["paths"].values():
            assert set(operations) == {"get"}

    def test_documented_statuses_are_the_possible_ones(self, document: dict[str, Any]) -> None:
        for path in LIST_PATHS:
            statuses = set(document["paths"][path]["get"]["responses"])
            assert statuses == {"200", "304", "400", "401", "429", "500", "503"}
        for path in RECORD_PATHS:
            statuses = set(document["paths"][path]["get"]["responses"])
            assert statuses == {"200", "304", "401", "404", "429", "500", "503"}

    def test_every_operation_requires_the_bearer_scheme(self, document: dict[str, Any]) -> None:
        schemes = document["components"]["securitySchemes"]
        assert schemes["bearerAuth"]["type"] == "http"
        assert schemes["bearerAuth"]["scheme"].lower() == "bearer"
        for operations in document["paths"].values():
            assert operations["get"]["security"] == [{"bearerAuth": []}]

    def test_every_operation_documents_a_200_schema(self, document: dict[str, Any]) -> None:
        rate_and_id = {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Request-ID"}
        for path, operations in document["paths"].items():
            ok = operations["get"]["responses"]["200"]
            assert "schema" in ok["content"]["application/json"]
            expected = rate_and_id | {"ETag"}
            assert set(ok["headers"]) == (expected | {"Link"} if path in LIST_PATHS else expected)
            not_modified = operations["get"]["responses"]["304"]
            assert "content" not in not_modified and set(not_modified["headers"]) == expected
            conditions = [p for p in operations["get"]["parameters"] if p["name"] == "If-None-Match"]
            assert [(p["in"], p["required"]) for p in conditions] == [("header", False)]

    def test_short_operation_ids_and_a_server_for_generators(self, document: dict[str, Any]) -> None:
        assert document["servers"] == [{"url": "/", "description": "The host that serves this document"}]
        ids = {path: operations["get"]["operationId"] for path, operations in document["paths"].items()}
        assert ids == {
            **{path: "list" + resource.capitalize() for path, resource in LIST_PATHS.items()},
            **{path: "get" + resource.capitalize().removesuffix("s") for path, resource in RECORD_PATHS.items()},
        }
        assert ids[f"{API_PREFIX}/sessions"] == "listSessions" and ids[f"{API_PREFIX}/items/{{id}}"] == "getItem"

    def test_every_response_documents_the_request_id(self, document: dict[str, Any]) -> None:
        for operations in document["paths"].values():
            operation = operations["get"]
            for response in operation["responses"].values():
                assert response["headers"]["X-Request-ID"]["required"] is True
            [parameter] = [p for p in operation["parameters"] if p["name"] == "X-Request-ID"]
            assert (parameter["in"], parameter["required"]) == ("header", False)

    def test_lists_document_limit_and_cursor(self, document: dict[str, Any]) -> None:
        for path in LIST_PATHS:
            parameters = {p["name"]: p for p in document["paths"][path]["get"]["parameters"] if p["in"] == "query"}
            assert set(parameters) == {"limit", "cursor"}
            assert parameters["limit"]["in"] == parameters["cursor"]["in"] == "query"
            assert parameters["limit"]["schema"]["type"] == "integer"
            assert parameters["limit"]["schema"]["default"] == 50
            assert parameters["cursor"]["schema"]["type"] == "string"
            assert not any(p["required"] for p in parameters.values())
        # The feed's cursor is where to resume: it is never null.
        feed = document["paths"][f"{API_PREFIX}/{FEED_PATH}"]["get"]["responses"]["200"]["content"]["application/json"]
        pagination = document["components"]["schemas"]["FeedPagination"]["properties"]
        assert feed["schema"] == {"$ref": "#/components/schemas/ChangeList"}
        assert pagination["next_cursor"]["type"] == "string"

    def test_error_examples_are_the_exact_bodies(self, document: dict[str, Any]) -> None:
        def examples(operation: dict[str, Any], status: str) -> list[Any]:
            content = operation["responses"][status]["content"]["application/json"]
            return [example["value"] for example in content["examples"].values()]

        for path, resource in LIST_PATHS.items():
            operation = document["paths"][path]["get"]
            assert examples(operation, "400") == [
                {"error": "limit must be a positive integer"},
                {"error": "Invalid cursor"},
            ]
            assert examples(operation, "500") == [{"error": LIST_FAILED_BODY[resource]}]
            assert "404" not in operation["responses"]
        for path, resource in RECORD_PATHS.items():
            operation = document["paths"][path]["get"]
            assert examples(operation, "404") == [{"error": NOT_FOUND_BODY[resource]}]
            assert examples(operation, "500") == [{"error": RECORD_FAILED_BODY[resource]}]
            assert "400" not in operation["responses"]
        for operations in document["paths"].values():
            operation = operations["get"]
            assert examples(operation, "401") == [{"error": "Invalid API key"}]
            assert examples(operation, "429") == [{"error": "Rate limit exceeded"}]
            assert examples(operation, "503") == [{"error": "Public API temporarily unavailable"}]
            assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]
            assert "Retry-After" in operation["responses"]["429"]["headers"]
            assert "Retry-After" not in operation["responses"]["503"].get("headers", {})
