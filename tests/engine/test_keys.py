from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import InvalidApiKey, ServiceUnavailable
from engine.keys import create_api_key, list_api_keys, revoke_api_key, verify_api_key
from engine.settings import Settings
from engine.tables import ApiKey
from tests.conftest import TEST_PEPPER
from tests.factories import add_campaign

PEPPER = TEST_PEPPER.encode()


@pytest.fixture
async def issued(db: AsyncSession) -> tuple[str, str, str]:
    campaign = await add_campaign(db)
    assert campaign.owner_id is not None
    key = await create_api_key(db, campaign_id=campaign.id, owner_id=campaign.owner_id, label="bot", pepper=PEPPER)
    return key.token, campaign.id, campaign.owner_id


class TestVerify:
    async def test_valid_key_gives_campaign_and_owner(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token, campaign_id, owner_id = issued
        verified = await verify_api_key(db, token=token, pepper=PEPPER)
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
            await verify_api_key(db, token=token[:-1] + last, pepper=PEPPER)

    async def test_unknown_key_id(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        with pytest.raises(InvalidApiKey):
            await verify_api_key(db, token="cpk_aaaaaaaaaaaa" + token[16:], pepper=PEPPER)

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
            await verify_api_key(db, token=token, pepper=PEPPER)

    async def test_revoked(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        token = issued[0]
        key_id = token[4:16]
        assert await revoke_api_key(db, key_id=key_id) is True
        with pytest.raises(InvalidApiKey):
            await verify_api_key(db, token=token, pepper=PEPPER)

    async def test_revoke_unknown_is_false(self, db: AsyncSession) -> None:
        assert await revoke_api_key(db, key_id="aaaaaaaaaaaa") is False

    async def test_missing_pepper_cannot_complete(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        with pytest.raises(ServiceUnavailable):
            await verify_api_key(db, token=issued[0], pepper=None)

    @pytest.mark.parametrize("configured", [None, "", "x" * 31])
    def test_short_or_missing_pepper_is_unusable(self, configured: str | None) -> None:
        settings = Settings(_env_file=None, api_key_pepper=configured)  # type: ignore[call-arg]
        assert settings.pepper is None

    def test_long_enough_pepper_is_used(self) -> None:
        assert Settings(_env_file=None, api_key_pepper="x" * 32).pepper == b"x" * 32  # type: ignore[call-arg]

    async def test_other_pepper_fails(self, db: AsyncSession, issued: tuple[str, str, str]) -> None:
        with pytest.raises(InvalidApiKey):
            await verify_api_key(db, token=issued[0], pepper=b"x" * 40)


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
