"""The GraphiQL and /docs pages: assets from this host only, instructions when absent."""

from __future__ import annotations

import hashlib
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
from rest.ui_assets import GRAPHIQL_ASSETS, SWAGGER_UI_ASSETS, href, missing_assets
from tests.services import running_in_ci

LINKED = re.compile(r'(?:src|href)="([^"]*)"')
# static/vendor/<the file's sha256, 16 hex digits>/<its path in rest/static/vendor>
VERSIONED = re.compile(r"static/vendor/[0-9a-f]{16}/[\w./-]+")
IMMUTABLE = "public, max-age=31536000, immutable"


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
        assert any(VERSIONED.fullmatch(link) for link in links)
        assert all(VERSIONED.fullmatch(link) or link == "data:," for link in links), links
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
        assert href("swagger-ui/swagger-ui-bundle.js") in r.text
        assert '"validatorUrl": null' in r.text
        r = await client.get("/redoc")
        assert (r.status_code, r.json()) == (404, {"error": "Not found"})

    async def test_assets_are_served_immutable_under_their_digest(self, client: httpx.AsyncClient) -> None:
        _require_assets()
        asset = "graphiql/graphiql.min.js"
        content = (ui_assets.VENDOR_DIR / asset).read_bytes()
        url = "/" + href(asset)
        assert url == f"/static/vendor/{hashlib.sha256(content).hexdigest()[:16]}/{asset}"
        r = await client.get(url, headers={"Accept-Encoding": "identity"})
        assert (r.status_code, r.content) == (200, content)
        assert r.headers["content-type"] == "text/javascript; charset=utf-8"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers.get_list("cache-control") == [IMMUTABLE]
        assert r.headers["vary"] == "Accept-Encoding" and "content-encoding" not in r.headers
        # The pages themselves are never stored.
        page = await client.get("/docs")
        assert page.headers.get_list("cache-control") == ["no-store"]

    async def test_gzip_is_made_once_and_served_to_who_asks(self, client: httpx.AsyncClient) -> None:
        _require_assets()
        url = "/" + href("swagger-ui/swagger-ui.css")
        raw = await client.get(url, headers={"Accept-Encoding": "gzip"})
        assert raw.headers["content-encoding"] == "gzip"
        assert raw.content == (ui_assets.VENDOR_DIR / "swagger-ui/swagger-ui.css").read_bytes()  # httpx decodes
        assert int(raw.headers["content-length"]) < len(raw.content) / 4

    @pytest.mark.parametrize(
        "path",
        [
            "/static/vendor/graphiql/graphiql.min.js",  # unversioned
            "/static/vendor/0000000000000000/graphiql/graphiql.min.js",  # another digest
            "/static/vendor/{digest}/graphiql//graphiql.min.js",  # another spelling
            "/static/vendor/{digest}/../../app.py",
            "/static/vendor/{digest}/graphiql/graphiql.min.js.map",  # not installed
        ],
    )
    async def test_any_other_url_is_the_json_404(self, client: httpx.AsyncClient, path: str) -> None:
        _require_assets()
        digest = href("graphiql/graphiql.min.js").split("/")[2]
        r = await client.get(path.format(digest=digest))
        assert (r.status_code, r.json()) == (404, {"error": "Not found"})
        assert r.headers.get_list("cache-control") == ["no-store"]


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
