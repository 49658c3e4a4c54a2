"""API keys: `cpk_<key_id>_<secret>`, stored only as HMAC-SHA256(pepper, secret).

The key id (12 lowercase base32 characters) is public and appears in logs and listings;
the secret (43 URL-safe base64 characters, 32 random bytes) is shown once at creation
and never stored or logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from engine.db import Reader, fetch
from engine.errors import InvalidApiKey, ServiceUnavailable
from engine.read_pool import ReadFailed
from engine.statements import ReadStatement
from engine.tables import ApiKey

TOKEN_PREFIX = "cpk_"  # noqa: S105 (a public prefix, not a secret)
_TOKEN_SHAPE = re.compile(r"cpk_([a-z2-7]{12})_([A-Za-z0-9_-]{43})", re.ASCII)
# Compared against when the key id is unknown, so that path does the same work.
_ABSENT_HASH = "0" * 64
_KEY_BY_ID = ReadStatement(
    select(
        col(ApiKey.key_id),
        col(ApiKey.campaign_id),
        col(ApiKey.owner_id),
        col(ApiKey.secret_hash),
        col(ApiKey.revoked_at),
    ).where(col(ApiKey.key_id) == bindparam("key_id"))
)


@dataclass(frozen=True, slots=True)
class VerifiedKey:
    key_id: str
    campaign_id: str
    owner_id: str


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key_id: str
    token: str


def hash_secret(secret: str, *, pepper: bytes) -> str:
    return hmac.new(pepper, secret.encode("ascii"), hashlib.sha256).hexdigest()


def _new_key_id() -> str:
    return base64.b32encode(secrets.token_bytes(10)).decode("ascii").lower()[:12]


def _new_secret() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")


def parse_token(token: str) -> tuple[str, str]:
    """(key_id, secret) of a well-formed token; InvalidApiKey when malformed."""
    match = _TOKEN_SHAPE.fullmatch(token)
    if match is None:
        raise InvalidApiKey()
    return match.group(1), match.group(2)


def require_pepper(pepper: bytes | None) -> bytes:
    if pepper is None:
        raise ServiceUnavailable("API key pepper is missing or shorter than 32 characters")
    return pepper


async def _check_stored_key(db: Reader, *, key_id: str, secret_hash: str) -> VerifiedKey:
    try:
        rows = await fetch(db, _KEY_BY_ID, {"key_id": key_id})
    except ReadFailed as exc:
        raise ServiceUnavailable("key store unreachable") from exc
    row = rows[0] if rows else None
    expected = row.secret_hash if row is not None else _ABSENT_HASH
    matches = hmac.compare_digest(secret_hash, expected)
    if row is None or not matches or row.revoked_at is not None:
        raise InvalidApiKey()
    return VerifiedKey(key_id=row.key_id, campaign_id=row.campaign_id, owner_id=row.owner_id)


class KeyVerifier:
    """Verifies bearer tokens, with a short per-process memory of recent successes.

    A success is reused for `fresh_s` seconds (so a revocation takes effect within that
    time on every worker) and, while the key store cannot be reached, for `stale_s`
    seconds: a client whose key was just verified then gets the query's own 500 with its
    rate headers instead of a 503, and nothing is readable anyway while the store is down.
    Entries are keyed by the HMAC of the secret, never the secret itself.
    """

    def __init__(self, *, pepper: bytes | None, fresh_s: float, stale_s: float, max_entries: int = 10_000) -> None:
        self.pepper = pepper
        self.fresh_s = fresh_s
        self.stale_s = stale_s
        self.max_entries = max_entries
        self._verified: dict[tuple[str, str], tuple[float, VerifiedKey]] = {}

    async def verify(self, db: Reader, *, token: str) -> VerifiedKey:
        """The key a bearer token names, if the token is valid and the key not revoked.

        Raises InvalidApiKey for every client-side failure (one error, no hint which) and
        ServiceUnavailable when verification cannot be completed (no pepper, no database).
        """
        pepper = require_pepper(self.pepper)
        key_id, secret = parse_token(token)
        secret_hash = hash_secret(secret, pepper=pepper)
        entry_key = (key_id, secret_hash)
        cached = self._verified.get(entry_key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self.fresh_s:
            return cached[1]
        try:
            verified = await _check_stored_key(db, key_id=key_id, secret_hash=secret_hash)
        except ServiceUnavailable:
            if cached is not None and now - cached[0] < self.stale_s:
                return cached[1]
            raise
        except InvalidApiKey:
            self._verified.pop(entry_key, None)
            raise
        if len(self._verified) >= self.max_entries:
            self._verified.clear()
        self._verified[entry_key] = (now, verified)
        return verified

    def fresh(self, token: str) -> VerifiedKey | None:
        """The key `verify` would return for `token` from memory alone, with no I/O and no
        possible failure: verified with this very secret less than `fresh_s` ago. None
        otherwise (no pepper, malformed token, no entry, or only a stale one), and `verify`
        decides. The entry is found by the secret's HMAC, as in `verify`: a wrong secret
        finds nothing, and no comparison involves the secret itself. On a miss the guard
        calls `verify`, which parses and hashes the token again (about 2 µs), rather than
        `verify` changing shape for the cache's sake."""
        if self.pepper is None:
            return None
        try:
            key_id, secret = parse_token(token)
        except InvalidApiKey:
            return None
        cached = self._verified.get((key_id, hash_secret(secret, pepper=self.pepper)))
        if cached is None or time.monotonic() - cached[0] >= self.fresh_s:
            return None
        return cached[1]


async def create_api_key(
    db: AsyncSession, *, campaign_id: str, owner_id: str, label: str | None, pepper: bytes | None
) -> IssuedKey:
    usable_pepper = require_pepper(pepper)
    key_id, secret = _new_key_id(), _new_secret()
    db.add(
        ApiKey(
            key_id=key_id,
            campaign_id=campaign_id,
            owner_id=owner_id,
            label=label,
            secret_hash=hash_secret(secret, pepper=usable_pepper),
            created_at=datetime.now(UTC),
        )
    )
    await db.flush()
    return IssuedKey(key_id=key_id, token=f"{TOKEN_PREFIX}{key_id}_{secret}")


async def revoke_api_key(db: AsyncSession, *, key_id: str) -> bool:
    """Mark a key revoked. False when no such key exists; revoking twice keeps the first time."""
    key = await db.get(ApiKey, key_id)
    if key is None:
        return False
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
        await db.flush()
    return True


async def list_api_keys(db: AsyncSession, *, campaign_id: str | None = None) -> Sequence[ApiKey]:
    statement = select(ApiKey).order_by(ApiKey.created_at, ApiKey.key_id)  # type: ignore[arg-type]
    if campaign_id is not None:
        statement = statement.where(col(ApiKey.campaign_id) == campaign_id)
    return (await db.execute(statement)).scalars().all()
