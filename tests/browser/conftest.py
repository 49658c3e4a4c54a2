"""The real app on a free port, a seeded SQLite database, and Debian's Chromium.

The server is uvicorn in a thread of the test process (its own event loop), serving
`create_app()` exactly as deployed, assets included. Chromium is the system one
(/usr/bin/chromium), driven by Playwright's async API on the tests' event loop (its sync
API would keep a loop running on the main thread and break every asyncio test after it);
`playwright install` is never run. Without Chromium, Playwright or the UI assets these
tests skip, and under CI=true they fail.
"""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import uvicorn

from engine.db import Database
from engine.keys import create_api_key
from engine.settings import Settings
from engine.tables import Location
from rest.app import create_app
from rest.ui_assets import GRAPHIQL_ASSETS, SWAGGER_UI_ASSETS, missing_assets
from tests.conftest import TEST_PEPPER
from tests.databases import sqlite_database
from tests.factories import add_campaign, add_entity, add_session, at
from tests.services import running_in_ci

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Route

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
STARTUP_TIMEOUT_S = 20.0


def _unavailable(reason: str) -> None:
    if running_in_ci():
        pytest.fail(reason + " (required under CI=true)")
    pytest.skip(reason)


def require_browser_stack() -> None:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    if importlib.util.find_spec("playwright") is None:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    missing = missing_assets(GRAPHIQL_ASSETS + SWAGGER_UI_ASSETS)
    if missing:
        _unavailable(f"UI assets missing ({', '.join(missing)}): run `make install`")


@dataclass(frozen=True, slots=True)
class Seeded:
    token: str
    session_titles: tuple[str, ...]
    private_session_title: str
    location_name: str
    child_location_name: str


@dataclass(frozen=True, slots=True)
class LiveServer:
    base_url: str
    seeded: Seeded


@pytest.fixture(scope="session")
def browser_database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser_stack()
    with sqlite_database(tmp_path_factory.mktemp("browser")) as url:
        yield url


@pytest.fixture(scope="session")
def browser_settings(browser_database_url: str) -> Settings:
    return Settings(_env_file=None, database_url=browser_database_url, api_key_pepper=TEST_PEPPER)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
async def seeded(browser_settings: Settings) -> AsyncIterator[Seeded]:
    database = Database(browser_settings)
    try:
        async with database.session() as db:
            campaign = await add_campaign(db, name="Shards of Karsk")
            titles = ("The Sunken Library", "Ashes over Karsk")
            for day, title in enumerate(titles, 1):
                await add_session(db, campaign_id=campaign.id, title=title, recording_date=at(day=day))
            await add_session(db, campaign_id=campaign.id, title="GM prep: the betrayal", visibility="private")
            karsk = await add_entity(db, table=Location, campaign_id=campaign.id, name="Karsk")
            await add_entity(db, table=Location, campaign_id=campaign.id, name="Old Harbour", parent_id=karsk.id)
            issued = await create_api_key(
                db, campaign_id=campaign.id, owner_id=campaign.owner_id, label="browser", pepper=browser_settings.pepper
            )
    finally:
        await database.dispose()
    yield Seeded(
        token=issued.token,
        session_titles=titles,
        private_session_title="GM prep: the betrayal",
        location_name="Karsk",
        child_location_name="Old Harbour",
    )


@pytest.fixture(scope="session")
def live_server(browser_settings: Settings, seeded: Seeded) -> Iterator[LiveServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(browser_settings), log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="browser-live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the live server did not start")
        time.sleep(0.05)
    try:
        yield LiveServer(base_url=f"http://127.0.0.1:{port}", seeded=seeded)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    require_browser_stack()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@dataclass(slots=True)
class BrowserTab:
    """A page in a fresh context that records (and blocks) anything off the host, and JS errors."""

    page: Page
    offsite_requests: list[str]
    script_errors: list[str]


@pytest.fixture
async def tab(browser: Browser, live_server: LiveServer) -> AsyncIterator[BrowserTab]:
    context = await browser.new_context(base_url=live_server.base_url, viewport={"width": 1400, "height": 900})
    offsite: list[str] = []
    errors: list[str] = []

    async def same_host_only(route: Route) -> None:
        url = route.request.url
        if url.startswith((live_server.base_url + "/", "data:", "blob:")):
            await route.continue_()
        else:
            offsite.append(url)
            await route.abort()

    await context.route("**/*", same_host_only)
    page = await context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield BrowserTab(page=page, offsite_requests=offsite, script_errors=errors)
    finally:
        await context.close()
