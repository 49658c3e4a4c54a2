"""/docs in a real browser: Swagger UI from local assets, Authorize, Try it out, Execute."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import BrowserTab, LiveServer

pytestmark = pytest.mark.xdist_group("browser")

TIMEOUT_MS = 20_000
SESSIONS_PATH = "/api/public/v1/sessions"


async def _operation_id(base_url: str, path: str) -> str:
    async with httpx.AsyncClient(base_url=base_url) as client:
        document = (await client.get("/openapi.json")).json()
    return str(document["paths"][path]["get"]["operationId"])


class TestSwaggerUI:
    async def test_authorize_try_it_out_and_execute(
        self, tab: BrowserTab, live_server: LiveServer, screenshot_dir: Path
    ) -> None:
        page, seeded = tab.page, live_server.seeded
        await page.goto("/docs")
        title = page.locator(".swagger-ui .info .title")
        await expect(title).to_contain_text("Campaign wiki public API", timeout=TIMEOUT_MS)

        await page.locator(".auth-wrapper button.authorize").click()
        dialog = page.locator(".dialog-ux .modal-ux")
        await expect(dialog).to_contain_text("bearerAuth")
        await dialog.locator("input").fill(seeded.token)
        await dialog.locator(".auth-btn-wrapper button.authorize").click()
        await expect(dialog.locator(".auth-btn-wrapper")).to_contain_text("Logout")
        await dialog.locator("button.btn-done").click()
        await page.screenshot(path=str(screenshot_dir / "docs-authorized.png"))

        operation = page.locator(f"#operations-sessions-{await _operation_id(live_server.base_url, SESSIONS_PATH)}")
        await operation.locator(".opblock-summary").click()
        await operation.locator("button.try-out__btn").click()
        async with page.expect_response(lambda r: r.url.startswith(live_server.base_url + SESSIONS_PATH)) as answer:
            await operation.locator("button.execute").click()
        response = await answer.value
        assert response.status == 200
        assert response.request.headers["authorization"] == f"Bearer {seeded.token}"

        live = operation.locator(".live-responses-table")
        await expect(live.locator("tr.response .response-col_status")).to_have_text("200", timeout=TIMEOUT_MS)
        body = live.locator("tr.response .response-col_description pre").first
        for session_title in seeded.session_titles:
            await expect(body).to_contain_text(session_title, timeout=TIMEOUT_MS)
        await expect(body).not_to_contain_text(seeded.private_session_title)
        await live.scroll_into_view_if_needed()
        await page.screenshot(path=str(screenshot_dir / "docs-try-it-out.png"))

        assert tab.offsite_requests == []
        assert tab.script_errors == []
