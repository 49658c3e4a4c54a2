"""The per-IP limits cannot be dodged with a forged X-Forwarded-For.

The client IP is the socket peer. Only when the peer is a listed TRUSTED_PROXIES address
does X-Forwarded-For count, and then the nearest hop that is not a trusted proxy is the
client: entries a client prepends to the header change nothing.
"""

from __future__ import annotations

from ipaddress import ip_network

import httpx

from tests.security.world import CLIENT_ADDRESS, PREFIX, World, asgi_client, settings_for

IP_LIMIT = 3
PROXY_NETWORK = ip_network(f"{CLIENT_ADDRESS[0]}/32")


async def _statuses(client: httpx.AsyncClient, world: World, forwarded: list[str]) -> list[int]:
    statuses = []
    for value in forwarded:
        response = await client.get(f"{PREFIX}/sessions", headers={**world.auth, "X-Forwarded-For": value})
        statuses.append(response.status_code)
    return statuses


async def test_without_trusted_proxies_the_header_is_ignored(world: World) -> None:
    async with asgi_client(settings_for(world, rate_limit_ip=f"{IP_LIMIT} per minute")) as client:
        statuses = await _statuses(client, world, [f"198.51.100.{n}" for n in range(IP_LIMIT + 2)])
    assert statuses == [200] * IP_LIMIT + [429, 429]


async def test_behind_a_trusted_proxy_each_client_has_its_own_count(world: World) -> None:
    settings = settings_for(world, rate_limit_ip=f"{IP_LIMIT} per minute", trusted_proxies=[PROXY_NETWORK])
    async with asgi_client(settings) as client:
        # Different clients behind the proxy: none is limited by the others.
        assert await _statuses(client, world, [f"198.51.100.{n}" for n in range(IP_LIMIT + 2)]) == [200] * 5
        # One client forging a different first hop each time is still one client.
        forged = [f"10.0.0.{n}, 192.0.2.50" for n in range(IP_LIMIT + 2)]
        assert await _statuses(client, world, forged) == [200] * IP_LIMIT + [429, 429]


async def test_failed_authentications_are_counted_per_real_client(world: World) -> None:
    settings = settings_for(world, rate_limit_failed_auth=f"{IP_LIMIT} per minute")
    async with asgi_client(settings) as client:
        for n in range(IP_LIMIT):
            response = await client.get(
                f"{PREFIX}/sessions",
                headers={"Authorization": "Bearer nope", "X-Forwarded-For": f"198.51.100.{n}"},
            )
            assert response.status_code == 401
        # The peer is blocked now, even with a good key and yet another forged address.
        response = await client.get(f"{PREFIX}/sessions", headers={**world.auth, "X-Forwarded-For": "198.51.100.99"})
        assert response.status_code == 429
        assert "retry-after" in response.headers


async def test_a_clients_own_header_line_before_the_proxys_changes_nothing(world: World) -> None:
    """HAProxy appends its own X-Forwarded-For line after one the client sent: the lines
    are one list (RFC 9110 §5.3), so the proxy's entry names the client, not the forgery."""
    settings = settings_for(world, rate_limit_ip=f"{IP_LIMIT} per minute", trusted_proxies=[PROXY_NETWORK])
    async with asgi_client(settings) as client:
        statuses = []
        for n in range(IP_LIMIT + 2):
            headers = [*world.auth.items(), ("X-Forwarded-For", f"10.9.9.{n}"), ("X-Forwarded-For", "192.0.2.50")]
            statuses.append((await client.get(f"{PREFIX}/sessions", headers=headers)).status_code)
    assert statuses == [200] * IP_LIMIT + [429, 429]
