"""The request pipeline before any query, in the documented order (contract §5):

client IP limit → failed-auth limit → key verification (a failure is counted for the IP,
then 401) → key limit → owner limit. Parameter validation and the query come after, in
the routes, so a bad key with a bad limit is a 401.

A key verified less than KEY_CACHE_S ago is verified from memory, with no I/O and no
possible failure; the four limits then run in one limiter round trip, in the same order
and with the same outcomes. Otherwise verification sits between two round trips.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from engine.db import Reader
from engine.errors import InvalidApiKey
from engine.keys import KeyVerifier, VerifiedKey, require_pepper
from engine.ratelimit import RateLimitExceeded, RateLimits, RateWindow
from engine.settings import Settings
from rest.forwarded import forwarded_client, is_trusted, parse_address

MAX_TOKEN_LENGTH = 256


@dataclass(frozen=True, slots=True)
class Principal:
    key: VerifiedKey
    key_window: RateWindow


def client_ip(request: Request, settings: Settings) -> str:
    """The socket peer, or behind a trusted proxy the client it names in X-Forwarded-For
    (every field line, walked from the right past the trusted proxies: rest/forwarded.py)."""
    peer = request.client.host if request.client else "unknown"
    proxies = settings.trusted_proxies
    if not proxies or not is_trusted(parse_address(peer), proxies):
        return peer
    return forwarded_client(request.headers.getlist("x-forwarded-for"), proxies) or peer


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header; InvalidApiKey otherwise."""
    if not authorization:
        raise InvalidApiKey()
    scheme, _, token = authorization.partition(" ")
    token = token.strip(" ")
    # RFC 9110: the scheme is case-insensitive.
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        raise InvalidApiKey()
    return token


class Guard:
    def __init__(self, *, settings: Settings, limits: RateLimits, verifier: KeyVerifier) -> None:
        self.settings = settings
        self.limits = limits
        self.verifier = verifier

    async def admit(self, request: Request, db: Reader) -> Principal:
        ip = client_ip(request, self.settings)
        key = self._fresh_key(request)
        if key is None:
            key, key_window = await self._admit_in_two_stages(request, db, ip)
        else:
            key_window = await self._admit_in_one_trip(request, ip, key)
        # Handled 404 and 500 responses report the key's window from here on.
        request.state.key_window = key_window
        return Principal(key=key, key_window=key_window)

    def _fresh_key(self, request: Request) -> VerifiedKey | None:
        """The request's key when verifying it needs no I/O and cannot fail (verified less
        than KEY_CACHE_S ago); None when verification must run between the limits."""
        try:
            token = bearer_token(request.headers.get("authorization"))
        except InvalidApiKey:
            return None
        return self.verifier.fresh(token)

    async def _admit_in_one_trip(self, request: Request, ip: str, key: VerifiedKey) -> RateWindow:
        """Every limit in one storage round trip: with verification unable to fail or wait,
        checking it first changes nothing but the number of round trips."""
        try:
            key_window = await self.limits.admit_request(ip, key_id=key.key_id, owner_id=key.owner_id)
        except RateLimitExceeded as exc:
            # Logged with the key id exactly when the two stages would have reached the key.
            if exc.after_authentication:
                request.state.key_id = key.key_id
            raise
        request.state.key_id = key.key_id
        return key_window

    async def _admit_in_two_stages(self, request: Request, db: Reader, ip: str) -> tuple[VerifiedKey, RateWindow]:
        """A key to look up (cache miss, or an entry only usable while the store is down) or
        a bad token: the IP limits first, verification (counting a failure), then the key's."""
        await self.limits.admit_client(ip)
        try:
            # No usable pepper: no key can be verified, so every request is the 503 (contract
            # §4), whatever its header says, and nothing counts as a failed authentication.
            require_pepper(self.verifier.pepper)
            token = bearer_token(request.headers.get("authorization"))
            key = await self.verifier.verify(db, token=token)
        except InvalidApiKey:
            await self.limits.record_failed_auth(ip)
            raise
        request.state.key_id = key.key_id
        return key, await self.limits.admit_key(key_id=key.key_id, owner_id=key.owner_id)
