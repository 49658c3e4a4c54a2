"""The GraphiQL and /docs pages: assets from this host only, instructions when absent."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from rest import ui_assets
from rest.app import create_app
from rest.docs_page import docs_page
from rest.graphiql import graphiql_page
from rest.ui_assets import GRAPHIQL_ASSETS, SWAGGER_UI_ASSETS, missing_assets
from tests.services import running_in_ci

LINKED = re.compile(r'(?:src|href)="([^"]*)"')


def _require_assets() -> None:
    missing = missing_assets(GRAPHIQL_ASSETS + SWAGGER_UI_ASSETS)
    if missing:
        message = f"UI assets missing ({', '.join(missing)}): run `make install`"
        if running_in_ci():
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}")  # type: ignore[call-arg]
    app = create_app(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        yield client
    await app.state.runtime.database.dispose()


@pytest.fixture
def no_assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ui_assets, "VENDOR_DIR", tmp_path / "empty")


class TestPagesWithAssets:
    @pytest.mark.parametrize("page", [graphiql_page, lambda: docs_page(openapi_url="/openapi.json")])
    def test_link_only_local_assets(self, page: object) -> None:
        _require_assets()
        html = page()  # type: ignore[operator]
        links = LINKED.findall(html)
        assert any(link.startswith("static/vendor/") for link in links)
        assert all(link.startswith("static/vendor/") or link == "data:," for link in links), links
        assert "https://" not in html and "http://" not in html

    def test_graphiql_opens_with_the_bearer_header_and_an_example(self) -> None:
        _require_assets()
        html = graphiql_page()
        assert '\\"Authorization\\": \\"Bearer \\"' in html
        assert "sessions(limit: 5)" in html and "children {" in html
        assert "shouldPersistHeaders: false" in html

    async def test_docs_is_ours_and_redoc_stays_off(self, client: httpx.AsyncClient) -> None:
        _require_assets()
        r = await client.get("/docs")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/html")
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "static/vendor/swagger-ui/swagger-ui-bundle.js" in r.text
        assert '"validatorUrl": null' in r.text
        r = await client.get("/redoc")
        assert (r.status_code, r.json()) == (404, {"error": "Not found"})

    async def test_assets_are_served_with_the_security_headers(self, client: httpx.AsyncClient) -> None:
        _require_assets()
        r = await client.get("/static/vendor/graphiql/graphiql.min.js")
        assert r.status_code == 200
        assert "javascript" in r.headers["content-type"]
        assert r.headers["x-content-type-options"] == "nosniff"

    async def test_an_absent_asset_is_the_json_404(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/static/vendor/graphiql/graphiql.min.js.map")
        assert (r.status_code, r.json()) == (404, {"error": "Not found"})
        r = await client.get("/static/vendor/../app.py")
        assert (r.status_code, r.json()) == (404, {"error": "Not found"})


@pytest.mark.usefixtures("no_assets")
class TestPagesWithoutAssets:
    def test_graphiql_says_how_to_install_them(self) -> None:
        html = graphiql_page()
        assert "make install" in html and "scripts/fetch_ui_assets.py" in html
        assert "/static/vendor/graphiql/graphiql.min.js" in html
        assert "<script" not in html

    async def test_docs_says_how_to_install_them(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/docs")
        assert r.status_code == 200
        assert "make install" in r.text and "<script" not in r.text

    async def test_the_graphql_endpoint_serves_the_instructions(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/graphql", headers={"Accept": "text/html"})
        assert r.status_code == 200
        assert "make install" in r.text
