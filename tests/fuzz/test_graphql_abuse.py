"""Abusive GraphQL documents: each is refused quickly with a clear error, never a 500.

Depth, aliases and tokens are bounded by the schema (graphql_schema/schema.py); batches and
oversized bodies by the endpoint (rest/graphql.py). With GRAPHQL_INTROSPECTION=false the
schema must not be readable at all: no `__schema`/`__type`, and no "Did you mean ...?"
hints that name fields, arguments or types the client did not write.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from graphql_schema.schema import MAX_ALIASES, MAX_DEPTH, MAX_TOKENS
from tests.security.world import World, asgi_client, settings_for

# Every abusive request must be answered within this (the work it causes is bounded).
ANSWER_WITHIN_S = 2.0
# Names in the schema that a client learns only from introspection or from a hint.
SCHEMA_NAMES = re.compile(
    r"\b(sessions?|characters?|locations?|factions?|items?|summaryMarkdown|summaryText|descriptionMarkdown|"
    r"descriptionText|recordingDate|sessionType|hiddenFromWiki|imageUrl|parentId|children|parent|pagination|"
    r"nextCursor|hasMore|limit|cursor|Session|Location|Character|Faction|Item|Pagination|\w+Page)\b"
)


@pytest.fixture(scope="module")
async def closed(world: World) -> AsyncIterator[httpx.AsyncClient]:
    """Introspection off, as a public deployment would run."""
    async with asgi_client(settings_for(world, graphql_introspection=False)) as client:
        client.headers.update(world.auth)
        yield client


@pytest.fixture(scope="module")
async def open_schema(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(settings_for(world, graphql_introspection=True)) as client:
        client.headers.update(world.auth)
        yield client


async def _post(client: httpx.AsyncClient, body: Any = None, *, content: bytes | None = None) -> httpx.Response:
    started = time.perf_counter()
    if content is not None:
        response = await client.post("/graphql", content=content, headers={"Content-Type": "application/json"})
    else:
        response = await client.post("/graphql", json=body)
    elapsed = time.perf_counter() - started
    assert elapsed < ANSWER_WITHIN_S, f"took {elapsed:.2f}s"
    return response


def _messages(response: httpx.Response) -> list[str]:
    body = response.json()
    assert isinstance(body.get("errors"), list) and body["errors"], body
    for error in body["errors"]:
        assert isinstance(error["message"], str) and error["message"]
        assert "Traceback" not in error["message"]
    return [error["message"] for error in body["errors"]]


def _refused(response: httpx.Response, code: str = "GRAPHQL_VALIDATION_FAILED") -> list[str]:
    """A document refused before execution: a 200 without a `data` key (GraphQL over
    HTTP), clear messages, each error coded (`code` for the first)."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert "data" not in body, body
    assert body["errors"][0]["extensions"]["code"] == code, body
    assert all(isinstance(error["extensions"]["code"], str) for error in body["errors"]), body
    return _messages(response)


def _nested(field: str, levels: int, leaf: str = "id") -> str:
    selection = leaf
    for _ in range(levels):
        selection = f"{field} {{ {selection} }}"
    return selection


class TestDocumentSize:
    async def test_deep_nesting(self, closed: httpx.AsyncClient) -> None:
        query = f"{{ locations {{ data {{ {_nested('parent', 40)} }} }} }}"
        assert _refused(await _post(closed, {"query": query}), "QUERY_TOO_DEEP") == [
            f"'anonymous' exceeds maximum operation depth of {MAX_DEPTH}"
        ]

    async def test_deep_nesting_through_fragments(self, closed: httpx.AsyncClient) -> None:
        fragments = "\n".join(
            f"fragment P{n} on Location {{ parent {{ ...P{n + 1} }} }}" for n in range(MAX_DEPTH + 2)
        )
        last = f"fragment P{MAX_DEPTH + 2} on Location {{ id }}"
        query = f"query Deep {{ locations {{ data {{ ...P0 }} }} }}\n{fragments}\n{last}"
        assert _refused(await _post(closed, {"query": query}), "QUERY_TOO_DEEP") == [
            f"'Deep' exceeds maximum operation depth of {MAX_DEPTH}"
        ]

    async def test_alias_flood(self, closed: httpx.AsyncClient) -> None:
        count = 300  # about 900 tokens: within the token limit, so the alias rule answers
        query = "{ " + " ".join(f"a{n}: __typename" for n in range(count)) + " }"
        assert _refused(await _post(closed, {"query": query}), "TOO_MANY_ALIASES") == [
            f"{count} aliases found. Allowed: {MAX_ALIASES}"
        ]

    async def test_alias_flood_through_fragments(self, closed: httpx.AsyncClient) -> None:
        # Each fragment holds one alias and spreads the next twice: 2**25 aliases counted.
        levels = 25
        fragments = "\n".join(
            f"fragment F{n} on Query {{ a: __typename ...F{n + 1} ...F{n + 1} }}" for n in range(levels)
        )
        query = f"{{ ...F0 }}\n{fragments}\nfragment F{levels} on Query {{ __typename }}"
        messages = _refused(await _post(closed, {"query": query}), "TOO_MANY_ALIASES")
        assert messages == [f"{2**levels - 1} aliases found. Allowed: {MAX_ALIASES}"]

    async def test_exponential_fragment_spreads_are_measured_in_linear_time(self, closed: httpx.AsyncClient) -> None:
        # A few hundred bytes that a per-spread walk would expand to 2**60 selections.
        levels = 60
        fragments = "\n".join(f"fragment F{n} on Query {{ ...F{n + 1} ...F{n + 1} }}" for n in range(levels))
        query = f"{{ ...F0 }}\n{fragments}\nfragment F{levels} on Query {{ __typename }}"
        response = await _post(closed, {"query": query})
        assert response.status_code == 200
        assert response.json() == {"data": {"__typename": "Query"}}

    async def test_fragment_cycle(self, closed: httpx.AsyncClient) -> None:
        query = "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }"
        messages = _refused(await _post(closed, {"query": query}))
        assert "Cannot spread fragment 'A' within itself via 'B'." in messages

    async def test_token_limit(self, closed: httpx.AsyncClient) -> None:
        query = "{ " + " ".join("__typename" for _ in range(MAX_TOKENS + 10)) + " }"
        assert _refused(await _post(closed, {"query": query}), "GRAPHQL_PARSE_FAILED") == [
            f"Syntax Error: Document contains more than {MAX_TOKENS} tokens. Parsing aborted."
        ]

    async def test_repeated_fields_within_the_token_limit(self, closed: httpx.AsyncClient) -> None:
        # Pairwise field-merging checks over ~MAX_TOKENS identical fields stay bounded.
        query = "{ " + " ".join("__typename" for _ in range(MAX_TOKENS - 5)) + " }"
        response = await _post(closed, {"query": query})
        assert response.status_code == 200
        body = response.json()
        assert body.get("data") == {"__typename": "Query"} or body.get("errors")

    async def test_conflicting_arguments(self, closed: httpx.AsyncClient) -> None:
        query = "{ " + " ".join(f"sessions(limit: {n}) {{ __typename }}" for n in range(1, 100)) + " }"
        messages = _refused(await _post(closed, {"query": query}))
        # Validation stops after 100 errors and says so.
        assert messages[-1] == "Too many validation errors, error limit reached. Validation aborted."
        assert all("conflict because they have differing arguments" in message for message in messages[:-1])

    async def test_directive_flood(self, closed: httpx.AsyncClient) -> None:
        query = "{ __typename " + " ".join("@include(if: true)" for _ in range(100)) + " }"
        messages = _refused(await _post(closed, {"query": query}))
        assert messages[0] == "The directive '@include' can only be used once at this location."

    async def test_unbalanced_braces(self, closed: httpx.AsyncClient) -> None:
        messages = _refused(await _post(closed, {"query": "{" * 1500}), "GRAPHQL_PARSE_FAILED")
        assert messages[0].startswith("Syntax Error:")

    async def test_body_over_64_kib_is_413(self, closed: httpx.AsyncClient) -> None:
        response = await _post(closed, {"query": "{ __typename }", "variables": {"pad": "x" * 70_000}})
        assert response.status_code == 413
        assert response.json() == {
            "errors": [{"message": "Request body too large", "extensions": {"code": "BAD_REQUEST"}}]
        }

    async def test_huge_variable_value(self, closed: httpx.AsyncClient) -> None:
        query = "query($id: ID!) { item(id: $id) { id } }"
        response = await _post(closed, {"query": query, "variables": {"id": "x" * 60_000}})
        assert response.status_code == 200
        body = response.json()
        assert body["data"] == {"item": None}
        assert [(error["message"], error["extensions"]["code"]) for error in body["errors"]] == [
            ("Entity not found", "NOT_FOUND")
        ]


class TestRequestShape:
    async def test_batched_operations_are_400(self, closed: httpx.AsyncClient) -> None:
        response = await _post(closed, [{"query": "{ __typename }"}, {"query": "{ __typename }"}])
        assert response.status_code == 400
        assert response.json() == {
            "errors": [
                {
                    "message": "Batched operations are not supported; send one operation per request",
                    "extensions": {"code": "BAD_REQUEST"},
                }
            ]
        }

    @pytest.mark.parametrize(
        "content",
        [b"", b"null", b"42", b'"query"', b"{", b"\xff\xfe", b'{"query": 5}', b'{"query": "  "}',
         b'{"query": "{ __typename }", "variables": [1]}', b'{"query": "{ __typename }", "variables": "x"}',
         b"[" * 5000 + b"]" * 5000,
         b'{"query": "{ __typename }", "variables": {"a": ' + b"[" * 3000 + b"]" * 3000 + b"}}"],
        ids=["empty", "null", "number", "string", "truncated", "not-utf8", "query-not-string", "blank-query",
             "variables-list", "variables-string", "nested-arrays", "nested-variables"],
    )
    async def test_malformed_bodies_are_400(self, closed: httpx.AsyncClient, content: bytes) -> None:
        response = await _post(closed, content=content)
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["errors"][0]["extensions"] == {"code": "BAD_REQUEST"}
        _messages(response)

    @pytest.mark.parametrize("query", ["mutation { __typename }", "subscription { __typename }"])
    async def test_mutations_and_subscriptions_are_400(self, closed: httpx.AsyncClient, query: str) -> None:
        response = await _post(closed, {"query": query})
        assert response.status_code == 400
        assert response.json() == {
            "errors": [{"message": "Only query operations are supported", "extensions": {"code": "BAD_REQUEST"}}]
        }

    async def test_unknown_operation_name_is_400(self, closed: httpx.AsyncClient) -> None:
        response = await _post(closed, {"query": "query A { __typename }", "operationName": "B"})
        assert response.status_code == 400
        assert _messages(response) == ["operationName does not name an operation of the document"]


INTROSPECTION_DOCUMENTS = {
    "schema": "{ __schema { types { name } } }",
    "type": '{ __type(name: "Session") { fields { name } } }',
    "aliased": "{ s: __schema { queryType { name } } }",
    "fragment": "{ ...F } fragment F on Query { __schema { types { name } } }",
    "inline-fragment": "{ ... on Query { __type(name: \"Query\") { name } } }",
    "nested": "{ sessions { data { id } } __schema { directives { name } } }",
    "named-operation": "query A { __typename } query B { __schema { types { name } } }",
}


class TestIntrospectionDisabled:
    @pytest.mark.parametrize("query", INTROSPECTION_DOCUMENTS.values(), ids=INTROSPECTION_DOCUMENTS.keys())
    async def test_introspection_is_refused(self, closed: httpx.AsyncClient, query: str) -> None:
        body: dict[str, Any] = {"query": query}
        if query.startswith("query A"):
            body["operationName"] = "B"
        messages = _refused(await _post(closed, body))
        assert any("introspection has been disabled" in message for message in messages), messages

    async def test_introspection_through_get_is_refused(self, closed: httpx.AsyncClient) -> None:
        response = await closed.get("/graphql", params={"query": INTROSPECTION_DOCUMENTS["schema"]})
        assert any("introspection has been disabled" in message for message in _refused(response))

    async def test_typename_still_answers(self, closed: httpx.AsyncClient) -> None:
        response = await _post(closed, {"query": "{ __typename t: __typename sessions(limit: 1) { __typename } }"})
        assert response.json() == {
            "data": {"__typename": "Query", "t": "Query", "sessions": {"__typename": "SessionPage"}}
        }

    async def test_open_schema_answers_introspection(self, open_schema: httpx.AsyncClient) -> None:
        response = await _post(open_schema, {"query": INTROSPECTION_DOCUMENTS["type"]})
        assert response.json()["data"]["__type"]["fields"]


# A client guessing names; each typo is one edit away from a real name.
GUESSES = {
    "field": "{ sesions { data { id } } }",
    "nested-field": "{ sessions { data { titel } } }",
    "argument": "{ sessions(limt: 2) { data { id } } }",
    "variable-type": "query($id: Sesion) { __typename }",
    "fragment-type": "{ ...F } fragment F on Sesion { id }",
    "inline-type": "{ ... on Querry { __typename } }",
    "subfield": "{ locations { data { parnt { id } } } }",
}


class TestSuggestions:
    @pytest.mark.parametrize("query", GUESSES.values(), ids=GUESSES.keys())
    async def test_errors_name_nothing_the_client_did_not_write(self, closed: httpx.AsyncClient, query: str) -> None:
        messages = _refused(await _post(closed, {"query": query}))
        for message in messages:
            assert "Did you mean" not in message
            revealed = set(SCHEMA_NAMES.findall(message)) - set(SCHEMA_NAMES.findall(query)) - {"Query"}
            # The type a field was looked up on is named ("on type 'Session'"): a client
            # gets that from __typename anyway. No other name may appear.
            revealed -= {"Session", "Location", "SessionPage", "LocationPage"}
            assert not revealed, message

    async def test_open_schema_keeps_suggestions(self, open_schema: httpx.AsyncClient) -> None:
        messages = _refused(await _post(open_schema, {"query": GUESSES["field"]}))
        assert messages == ["Cannot query field 'sesions' on type 'Query'. Did you mean 'sessions' or 'session'?"]

    async def test_closed_schema_messages_are_still_clear(self, closed: httpx.AsyncClient) -> None:
        messages = _refused(await _post(closed, {"query": GUESSES["argument"]}))
        assert messages == ["Unknown argument 'limt' on field 'Query.sessions'."]

