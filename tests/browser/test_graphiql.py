"""GraphiQL at /graphql in a real browser: local assets, the key typed in the headers editor."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Page, Response, expect

from tests.browser.conftest import BrowserTab, LiveServer

pytestmark = pytest.mark.xdist_group("browser")

TIMEOUT_MS = 20_000


def _is_keyed_introspection(response: Response) -> bool:
    request = response.request
    return (
        request.method == "POST"
        and response.url.endswith("/graphql")
        and "IntrospectionQuery" in (request.post_data or "")
        and (request.headers.get("authorization") or "").startswith("Bearer cpk_")
    )


async def _open_graphiql(page: Page) -> None:
    await page.goto("/graphql")
    await expect(page.locator(".graphiql-container")).to_be_visible(timeout=TIMEOUT_MS)


async def _type_key_after_bearer(page: Page, token: str) -> None:
    headers_editor = page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden)")
    bearer_line = headers_editor.locator(".CodeMirror-line", has_text="Bearer")
    await expect(bearer_line).to_have_text(re.compile(r'"Authorization":\s*"Bearer "'))
    await bearer_line.click()
    await page.keyboard.press("End")
    await page.keyboard.press("ArrowLeft")  # before the closing quote
    await page.keyboard.type(token)


class TestGraphiQL:
    async def test_runs_the_example_query_with_the_key_from_the_headers_editor(
        self, tab: BrowserTab, live_server: LiveServer, screenshot_dir: Path
    ) -> None:
        page, seeded = tab.page, live_server.seeded
        await _open_graphiql(page)
        result = page.locator(".graphiql-response")
        # No key yet: nothing is sent, the result pane says where the key goes.
        await expect(result).to_contain_text("Headers tab", timeout=TIMEOUT_MS)
        await page.screenshot(path=str(screenshot_dir / "graphiql-no-key.png"))

        # A complete key in the headers editor loads the schema with it.
        async with page.expect_response(_is_keyed_introspection, timeout=TIMEOUT_MS) as introspection:
            await _type_key_after_bearer(page, seeded.token)
        schema_response = await introspection.value
        assert schema_response.status == 200
        assert "__schema" in await schema_response.text()

        await page.locator(".graphiql-execute-button").click()
        for text in (*seeded.session_titles, seeded.location_name, seeded.child_location_name):
            await expect(result).to_contain_text(text, timeout=TIMEOUT_MS)
        await expect(result).not_to_contain_text(seeded.private_session_title)
        await page.screenshot(path=str(screenshot_dir / "graphiql.png"))

        assert tab.offsite_requests == []
        assert tab.script_errors == []

    async def test_the_key_is_not_kept_in_browser_storage(self, tab: BrowserTab, live_server: LiveServer) -> None:
        page, seeded = tab.page, live_server.seeded
        await _open_graphiql(page)
        await _type_key_after_bearer(page, seeded.token)
        await page.locator(".graphiql-execute-button").click()
        await expect(page.locator(".graphiql-response")).to_contain_text(seeded.session_titles[0], timeout=TIMEOUT_MS)
        stored = await page.evaluate("() => JSON.stringify(Object.assign({}, window.localStorage))")
        assert "graphiql:queries" in stored  # the history was written, without the headers
        assert seeded.token not in stored


async def _replace_query(page: Page, document: str) -> None:
    editor = page.locator(".graphiql-query-editor .CodeMirror")
    await editor.click()
    await page.keyboard.press("Control+A")
    await page.keyboard.press("Delete")
    await page.keyboard.insert_text(document)
    value = await editor.evaluate("(node) => node.CodeMirror.getValue()")
    assert value == document


def _is_graphql_post(response: Response) -> bool:
    request = response.request
    return (
        request.method == "POST"
        and response.url.endswith("/graphql")
        and "IntrospectionQuery" not in (request.post_data or "")
    )


class TestOwnQueries:
    @pytest.mark.parametrize(
        ("document", "operation_name"),
        [
            ("{ __typename }", None),
            ("query Mine { __typename }", "Mine"),
            ('# query Example\n{ __typename @include(if: true) t: __typename @skip(if: false) }', None),
        ],
        ids=["anonymous", "named", "names-in-comments"],
    )
    async def test_a_query_the_user_writes_runs(
        self, tab: BrowserTab, live_server: LiveServer, document: str, operation_name: str | None
    ) -> None:
        page = tab.page
        await _open_graphiql(page)
        await _type_key_after_bearer(page, live_server.seeded.token)
        await _replace_query(page, document)
        async with page.expect_response(_is_graphql_post, timeout=TIMEOUT_MS) as sent:
            await page.locator(".graphiql-execute-button").click()
        response = await sent.value
        assert response.status == 200, await response.text()
        assert (await response.json())["data"]["__typename"] == "Query"
        # The operation name only when the document defines it (never the example's).
        assert response.request.post_data_json.get("operationName") == operation_name
        await expect(page.locator(".graphiql-response")).to_contain_text('"__typename": "Query"', timeout=TIMEOUT_MS)
        assert tab.script_errors == []
