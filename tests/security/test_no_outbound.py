"""URL-valued content is returned, never fetched (no server-side request forgery).

Records of a campaign of their own carry URLs pointing at a listener on loopback, in
every place a URL can be stored: `image_url`, `icon`, Markdown images, links, reference
definitions and raw HTML in summaries and descriptions. Every REST and GraphQL read of
them must leave the listener untouched.
"""

from __future__ import annotations

import select
import socket
import uuid
from collections.abc import Iterator

import pytest

from engine.db import Database
from engine.keys import create_api_key
from engine.settings import Settings
from engine.tables import Character
from tests import factories
from tests.security.world import PEPPER, PREFIX, World, asgi_client, settings_for


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        yield server


def _markdown(url: str) -> str:
    return (
        f"# Map\n\n![the map]({url}/image.png)\n\n[the site]({url}/page)\n\n[ref]: {url}/reference\n\n"
        f'<img src="{url}/raw.png">\n\n<iframe src="{url}/frame"></iframe>\n'
    )


async def test_stored_urls_are_never_dereferenced(world: World, listener: socket.socket) -> None:
    host, port = listener.getsockname()
    url = f"http://{host}:{port}"
    tag = uuid.uuid4().hex[:6]
    database = Database(Settings(_env_file=None, database_url=world.database_url))  # type: ignore[call-arg]
    try:
        async with database.session() as db:
            owner = await factories.add_user(db, user_id=f"UsrC{tag}")
            campaign = await factories.add_campaign(db, campaign_id=f"CmpC{tag}", owner_id=owner.id)
            session = await factories.add_session(db, campaign_id=campaign.id, summary=_markdown(url))
            location = await factories.add_entity(
                db, campaign_id=campaign.id, image_url=f"{url}/location.png", icon=f"{url}/icon.png",
                description=_markdown(url),
            )
            character = await factories.add_entity(
                db, table=Character, campaign_id=campaign.id, image_url=f"{url}/c.png", description=_markdown(url)
            )
            key = await create_api_key(db, campaign_id=campaign.id, owner_id=owner.id, label=None,
                                       pepper=PEPPER.encode())
    finally:
        await database.dispose()

    auth = {"Authorization": f"Bearer {key.token}"}
    async with asgi_client(settings_for(world)) as client:
        paths = [
            "sessions", f"sessions/{session.id}", "locations", f"locations/{location.id}",
            "characters", f"characters/{character.id}",
        ]
        for path in paths:
            response = await client.get(f"{PREFIX}/{path}", headers=auth)
            assert response.status_code == 200
        record = (await client.get(f"{PREFIX}/locations/{location.id}", headers=auth)).json()
        assert record["image_url"] == f"{url}/location.png"
        assert f"{url}/image.png" in record["description_markdown"]
        query = (
            "{ locations(limit: 10) { data { imageUrl icon descriptionMarkdown descriptionText parent { id }"
            " children(limit: 10) { id } } } sessions(limit: 10) { data { summaryMarkdown summaryText } }"
            " characters(limit: 10) { data { descriptionMarkdown } } }"
        )
        graphql = await client.post("/graphql", json={"query": query}, headers=auth)
        assert graphql.status_code == 200 and "errors" not in graphql.json()

    pending, _, _ = select.select([listener], [], [], 0.5)
    assert not pending, "the service opened a connection to a URL stored in a record"
