"""compose.yaml and deploy/ describe what tests/cluster runs: the same variables, the same
health checks, the same proxy and pooler settings.

Nothing here can start a container (no Docker engine on these machines); what can be
checked is that each file agrees with the service's settings and with the tests' harness.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from engine.limiter_redis import parse_sentinel_url
from engine.preflight import configuration_problems
from engine.settings import Settings
from tests.cluster.haproxy import BACKEND, deployed_sections
from tests.cluster.pgbouncer import DEPLOYED_CONFIG as PGBOUNCER_CONFIG
from tests.cluster.pgbouncer import deployed_settings

ROOT = Path(__file__).resolve().parents[2]
# What tests/cluster sets on every host (tests/cluster/hosts.py, tests/faults/common.py).
CLUSTER_VARIABLES = {"DATABASE_URL", "REDIS_URL", "TRUSTED_PROXIES", "API_KEY_PEPPER"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def api_environment(compose: dict[str, Any]) -> dict[str, str]:
    return {name: str(value) for name, value in compose["services"]["api"]["environment"].items()}


def test_every_api_variable_is_a_setting_and_the_urls_are_usable(api_environment: dict[str, str]) -> None:
    assert set(api_environment) >= CLUSTER_VARIABLES
    assert all(name.lower() in Settings.model_fields for name in api_environment), api_environment
    values = {name.lower(): value for name, value in api_environment.items()}
    values["api_key_pepper"] = "p" * 32  # compose takes it from the shell
    settings = Settings(_env_file=None, **values)  # type: ignore[arg-type]
    assert configuration_problems(settings) == []


def test_only_the_proxy_is_trusted(compose: dict[str, Any], api_environment: dict[str, str]) -> None:
    proxy = compose["services"]["haproxy"]
    assert api_environment["TRUSTED_PROXIES"] == proxy["networks"]["campaign"]["ipv4_address"]
    assert "ports" not in compose["services"]["api"]  # clients cannot reach a host around the proxy


def test_the_proxy_runs_the_deployed_configuration(compose: dict[str, Any]) -> None:
    proxy = compose["services"]["haproxy"]
    assert "./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in proxy["volumes"]
    sections = deployed_sections()
    assert "option forwardfor" in sections["defaults"]
    [published] = proxy["ports"]
    assert sections["frontend api"][0] == f"bind :{published.split(':')[1]}"
    [template] = [line for line in sections[f"backend {BACKEND}"] if line.startswith("server-template")]
    assert template.split()[3] == f"api:{_dockerfile_port()}"


def test_the_health_checks_are_readyz(compose: dict[str, Any]) -> None:
    assert "http-check send meth GET uri /readyz" in deployed_sections()[f"backend {BACKEND}"]
    check = " ".join(compose["services"]["api"]["healthcheck"]["test"])
    assert f"http://127.0.0.1:{_dockerfile_port()}/readyz" in check


def test_the_database_is_reached_through_pgbouncer_in_transaction_mode(
    compose: dict[str, Any], api_environment: dict[str, str]
) -> None:
    url = urlsplit(api_environment["DATABASE_URL"])
    pgbouncer = deployed_settings()
    assert (url.hostname, str(url.port)) == ("pgbouncer", pgbouncer["listen_port"])
    assert pgbouncer["pool_mode"] == "transaction"
    assert "ignore_startup_parameters" not in pgbouncer  # stock: the service needs nothing set
    assert "./deploy/pgbouncer.ini:/etc/pgbouncer/pgbouncer.ini:ro" in compose["services"]["pgbouncer"]["volumes"]
    databases = PGBOUNCER_CONFIG.read_text().split("[databases]")[1].split("[pgbouncer]")[0]
    assert re.search(rf"^{re.escape(url.path.lstrip('/'))} = host=postgres ", databases, re.MULTILINE)


def test_the_limiter_follows_the_sentinels_of_the_deployed_configuration(
    compose: dict[str, Any], api_environment: dict[str, str]
) -> None:
    target = parse_sentinel_url(api_environment["REDIS_URL"])
    services = compose["services"]
    for host, port in target.sentinels:
        assert "redis-sentinel" in " ".join(services[host]["command"]) and port == 26379
    sentinel_config = (ROOT / "deploy" / "sentinel.conf").read_text()
    assert f"sentinel monitor {target.service_name} redis-primary 6379 2" in sentinel_config
    assert "--replicaof" in services["redis-replica"]["command"]


def _dockerfile_port() -> int:
    match = re.search(r'"--port", "(\d+)"', (ROOT / "Dockerfile").read_text())
    assert match is not None
    return int(match.group(1))
