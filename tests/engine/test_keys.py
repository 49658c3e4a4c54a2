from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.db import Reader
from engine.errors import InvalidApiKey, ServiceUnavailable
from engine.keys import KeyVerifier, VerifiedKey, create_api_key, list_api_keys, revoke_api_key
from engine.settings import Settings
from engine.tables import ApiKey
from tests.conftest import TEST_PEPPER
from tests.factories import add_campaign

PEPPER = TEST_PEPPER.encode()


async def verify_once(db: Reader, *, token: str, pepper: bytes | None) -> VerifiedKey:
    """One verification against the store, remembering nothing."""
    return await KeyVerifier(pepper=pepper, fresh_s=0, stale_s=0).verify(db, token=token)


@pytest.fixture
async def issued(db: AsyncSession) -> tuple[str, str, str]:
    campaign = await add_campaign(db)
    assert campaign.owner_id is not None
    key = await create_api_key(db, campaign_id=campaign.id, owner_id=campaign.owner_id, label="bot", pepper=PEPPER)
    return key.token, campaign.id, campaign.owner_id


class TestVerify:
    async def test_valid_key_gives_campaign_and_owner(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token, campaign_id, owner_id = issued
        verified = await verify_once(db, token=token, pepper=PEPPER)
        assert (verified.campaign_id, verified.owner_id) == (campaign_id, owner_id)
        assert token.startswith(f"cpk_{verified.key_id}_")

    async def test_token_shape(self, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        prefix, rest = token[:4], token[4:]
        assert prefix == "cpk_" and len(rest) == 12 + 1 + 43 and rest[12] == "_"

    async def test_wrong_secret(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        last = "A" if token[-1] != "A" else "B"
        with pytest.raises(InvalidApiKey):
            await verify_once(db, token=token[:-1] + last, pepper=PEPPER)

    async def test_unknown_key_id(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        with pytest.raises(InvalidApiKey):
            await verify_once(db, token="cpk_aaaaaaaaaaaa" + token[16:], pepper=PEPPER)

    @pytest.mark.parametrize(
        "token",
        [
            "",
            "cpk_",
            "not-a-key",
            "cpk_AAAAAAAAAAAA_" + "a" * 43,
            "cpk_aaaaaaaaaaaa_" + "a" * 42,
            "cpk_aaaaaaaaaaaa_" + "a" * 44,
            "cpk_aaaaaaaaaaa1_" + "a" * 43,
        ],
    )
    async def test_malformed(self, db: AsyncSession, token: str) -> None:
        with pytest.raises(InvalidApiKey):
            await verify_once(db, token=token, pepper=PEPPER)

    async def test_revoked(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        key_id = token[4:16]
        assert await revoke_api_key(db, key_id=key_id) is True
        with pytest.raises(InvalidApiKey):
            await verify_once(db, token=token, pepper=PEPPER)

    async def test_revoke_unknown_is_false(self, db: AsyncSession) -> None:
        assert await revoke_api_key(db, key_id="aaaaaaaaaaaa") is False

    async def test_missing_pepper_cannot_complete(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        with pytest.raises(ServiceUnavailable):
            await verify_once(db, token=issued[0], pepper=None)

    @pytest.mark.parametrize("configured", [None, "", "x" * 31])
    def test_short_or_missing_pepper_is_unusable(self, configured: str | None) -> None:
        settings = Settings(_env_file=None, api_key_pepper=configured)  # type: ignore[call-arg]
        assert settings.pepper is None

    def test_long_enough_pepper_is_used(self) -> None:
        assert Settings(_env_file=None, api_key_pepper="x" * 32).pepper == b"x" * 32  # type: ignore[call-arg]

    async def test_other_pepper_fails(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        with pytest.raises(InvalidApiKey):
            await verify_once(db, token=issued[0], pepper=b"x" * 40)


class TestFreshLookup:
    """KeyVerifier.fresh: the key a token names only when verify() would answer it from
    memory, without I/O; the guard then counts the request in one limiter round trip."""

    async def test_a_key_verified_just_now_is_fresh(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        verifier = KeyVerifier(pepper=PEPPER, fresh_s=60, stale_s=300)
        token = issued[0]
        assert verifier.fresh(token) is None  # never verified: verify() must read the store
        verified = await verifier.verify(db, token=token)
        assert verifier.fresh(token) == verified

    async def test_a_wrong_secret_is_never_fresh(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        verifier = KeyVerifier(pepper=PEPPER, fresh_s=60, stale_s=300)
        token = issued[0]
        await verifier.verify(db, token=token)
        for position in (17, len(token) - 1):  # first and last character of the secret
            changed = "A" if token[position] != "A" else "B"
            assert verifier.fresh(token[:position] + changed + token[position + 1 :]) is None
        assert verifier.fresh(token[:-1]) is None  # malformed
        assert verifier.fresh("cpk_aaaaaaaaaaaa" + token[16:]) is None  # another key id, same secret

    async def test_another_pepper_or_none_finds_nothing(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        verifier = KeyVerifier(pepper=PEPPER, fresh_s=60, stale_s=300)
        verified = await verifier.verify(db, token=token)
        # The same entries under another pepper: the secret's HMAC differs, nothing matches.
        verifier.pepper = b"y" * 40
        assert verifier.fresh(token) is None
        verifier.pepper = None
        assert verifier.fresh(token) is None
        verifier.pepper = PEPPER
        assert verifier.fresh(token) == verified

    async def test_an_entry_past_fresh_s_is_not_fresh(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        never = KeyVerifier(pepper=PEPPER, fresh_s=0, stale_s=300)
        await never.verify(db, token=token)
        assert never.fresh(token) is None  # KEY_CACHE_S=0: every request reads the store
        verifier = KeyVerifier(pepper=PEPPER, fresh_s=0.3, stale_s=300)
        verified = await verifier.verify(db, token=token)
        assert verifier.fresh(token) == verified
        await asyncio.sleep(0.35)
        # Stale: still kept for an outage of the key store, but only verify() may use it.
        assert verifier.fresh(token) is None


class TestStorage:
    async def test_secret_is_not_stored(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        secret = token[17:]
        stored = (await db.execute(select(ApiKey))).scalars().all()
        for key in stored:
            assert secret not in repr(key.model_dump())
            assert len(key.secret_hash) == 64

    async def test_list_filters_by_campaign(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        _, campaign_id, _ = issued
        other = await add_campaign(db)
        assert other.owner_id is not None
        await create_api_key(db, campaign_id=other.id, owner_id=other.owner_id, label=None, pepper=PEPPER)
        keys = await list_api_keys(db, campaign_id=campaign_id)
        assert [key.campaign_id for key in keys] == [campaign_id]
        assert len(await list_api_keys(db)) >= 2
