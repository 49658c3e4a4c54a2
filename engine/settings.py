"""The one settings object. Nothing else in the project reads the environment."""

from __future__ import annotations

from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MIN_PEPPER_LENGTH = 32

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./campaign.db"


def normalize_database_url(url: str) -> str:
    """Pick the async driver for a plain URL, so operators can paste the usual form."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + url.split("://", 1)[1]
    return url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    api_key_pepper: SecretStr | None = None

    rate_limit_ip: str = "600 per minute"
    rate_limit_failed_auth: str = "20 per 10 minutes"
    rate_limit_key: str = "120 per minute"
    rate_limit_owner: str = "300 per minute"

    trusted_proxies: Annotated[list[IPv4Network | IPv6Network], NoDecode] = Field(
        default_factory=list
    )
    # Browser origins allowed to read responses (CORS), comma-separated. Empty: no CORS
    # headers at all, so browsers keep other sites' scripts from reading the API.
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    graphiql: bool = True
    # Internal tools may want introspection; public exposure of the schema is a choice.
    graphql_introspection: bool = True

    # A query that runs longer than this is cancelled and answered with the 500 body.
    statement_timeout_ms: int = Field(default=5000, gt=0)
    db_pool_size: int = Field(default=10, gt=0)
    db_pool_timeout_s: float = Field(default=5.0, gt=0)
    # A read connection older than this (less up to a tenth, at random) is closed rather
    # than reused: its server-side memory is given back, and a moved DATABASE_URL host
    # (a failover behind a DNS name) is followed. 0 keeps connections until they fail.
    db_pool_max_lifetime_s: float = Field(default=3600.0, ge=0)
    # Waiting on the limiter storage longer than this is treated as unavailable (503).
    redis_timeout_s: float = Field(default=1.0, gt=0)
    redis_pool_size: int = Field(default=64, gt=0)

    # A verified key is remembered this long per process: a revocation takes effect
    # within this time. 0 checks the key store on every request.
    key_cache_s: float = Field(default=5.0, ge=0)
    # While the key store is unreachable, recently verified keys are still recognized
    # for this long, so their requests get the query's 500 rather than a 503.
    key_cache_stale_s: float = Field(default=300.0, ge=0)

    log_level: str = "INFO"
    # GET /metrics (Prometheus text). Off by default: it reveals traffic and routes, so
    # when on, keep it reachable only from the monitoring network, never the public.
    metrics_enabled: bool = False

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        return normalize_database_url(value)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        if isinstance(value, str):
            return [ip_network(part.strip(), strict=False) for part in value.split(",") if part.strip()]
        return value

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def pepper(self) -> bytes | None:
        """The pepper when it is usable, else None (key checks then cannot be completed)."""
        if self.api_key_pepper is None:
            return None
        secret = self.api_key_pepper.get_secret_value()
        if len(secret) < MIN_PEPPER_LENGTH:
            return None
        return secret.encode()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
