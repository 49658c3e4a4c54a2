"""`campaign-api` run in-process through `main()`, configured only by the environment.

Each test starts from no configuration (a fresh working directory, no settings variables)
and sets what it needs, against a fresh migrated database per backend.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn
from sqlalchemy.engine import make_url

from engine.db import Database
from engine.keys import hash_secret
from engine.record_writer import WriteProgress
from engine.rendering import CURRENT_RENDERER
from engine.settings import Settings
from rest.cli import _ProgressLine, main
from rest.http_protocol import BoundedHttpToolsProtocol
from tests.cluster.sentinel import sentinel_group
from tests.conftest import TEST_PEPPER
from tests.contract.server import free_port
from tests.databases import BACKENDS, migrated_database
from tests.factories import age_renderings, unique_id
from tests.services import POSTGRES_ADMIN_URL, REDIS_URL, require_service

TOKEN = re.compile(r"cpk_([a-z2-7]{12})_([A-Za-z0-9_-]{43})")
DEMO_EXPORT = resources.files("engine") / "demo" / "campaign.json"

# (variable, value, what the one line says): URLs no server state would make usable.
UNUSABLE_URLS = [
    ("DATABASE_URL", "mysql://u:s3cret@localhost/campaign", "unsupported database 'mysql'"),
    ("DATABASE_URL", "postgresql://u:s3cret@localhost:5x432/campaign", "cannot be parsed"),
    ("REDIS_URL", "redis+cluster://:s3cret@127.0.0.1:7000", "Redis Cluster is not supported"),
    ("REDIS_URL", "redis+sentinel://:s3cret@127.0.0.1:26379", "needs the service name"),
    ("REDIS_URL", "http://127.0.0.1:6379", "unsupported scheme 'http'"),
]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Cli = Callable[..., Result]


@pytest.fixture(scope="module", params=BACKENDS)
def cli_database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with migrated_database(request.param, tmp_path_factory.mktemp("cli")) as url:
        yield url


@pytest.fixture
def fresh_logging() -> Iterator[None]:
    """Logging as in a new `campaign-api` process: other tests' `create_app()` configures
    the root logger for the server (INFO to stderr), which a CLI run never inherits."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def unconfigured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh_logging: None) -> pytest.MonkeyPatch:
    """A machine with no configuration: empty working directory, no settings variables."""
    monkeypatch.chdir(tmp_path)
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


@pytest.fixture
def configured(unconfigured: pytest.MonkeyPatch, cli_database_url: str) -> pytest.MonkeyPatch:
    unconfigured.setenv("DATABASE_URL", cli_database_url)
    unconfigured.setenv("API_KEY_PEPPER", TEST_PEPPER)
    return unconfigured


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    def run(*args: str | Path) -> Result:
        capsys.readouterr()
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def served(unconfigured: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """uvicorn.run replaced by a recorder: the calls `serve` would have made."""
    calls: list[dict[str, Any]] = []
    unconfigured.setattr(uvicorn, "run", lambda app, **options: calls.append({"app": app, **options}))
    # `serve` installs a SIGTERM handler for the server process; keep it out of pytest's.
    previous = signal.getsignal(signal.SIGTERM)
    yield calls
    signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def demo_loaded(configured: pytest.MonkeyPatch, cli: Cli) -> None:
    with resources.as_file(DEMO_EXPORT) as export:
        assert cli("import", export).code == 0


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


def summary_rows(out: str) -> dict[str, tuple[int, ...]]:
    """records -> (created, updated, unchanged, deleted), from the summary table."""
    rows = [line.split() for line in out.splitlines()]
    return {row[0]: tuple(map(int, row[1:])) for row in rows if len(row) == 5 and row[1].isdigit()}


def write_export(directory: Path, prefix: str, *, bad_title: bool = False) -> Path:
    session: dict[str, Any] = {
        "id": f"{prefix}-s",
        "campaign_id": f"{prefix}-c",
        "title": 5 if bad_title else "Smoke on the Ridge",
        "status": "completed",
        "session_type": "audio",
        "visibility": "public",
        "recording_date": "2024-05-01T19:00:00+02:00",
    }
    export = {
        "sessions": [session],
        "users": [{"id": f"{prefix}-u", "name": "Mara"}],
        "campaigns": [{"id": f"{prefix}-c", "name": "Ashfall", "owner_id": f"{prefix}-u"}],
    }
    path = directory / f"{prefix}.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    return path


class TestDbUpgrade:
    @pytest.fixture
    def empty_database_url(self, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
        if request.param == "sqlite":
            yield f"sqlite:///{tmp_path / 'fresh.db'}"
            return
        admin = make_url(POSTGRES_ADMIN_URL)
        require_service("PostgreSQL", admin.host or "127.0.0.1", admin.port or 5432)
        name = f"campaign_cli_{unique_id('db')}"
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        try:
            yield admin.set(database=name).render_as_string(hide_password=False)
        finally:
            with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @pytest.mark.parametrize("empty_database_url", BACKENDS, indirect=True)
    def test_migrates_an_empty_database(
        self, unconfigured: pytest.MonkeyPatch, cli: Cli, empty_database_url: str
    ) -> None:
        unconfigured.setenv("DATABASE_URL", empty_database_url)
        unconfigured.setenv("API_KEY_PEPPER", TEST_PEPPER)
        before = cli("check")
        assert before.code == 1 and "database" in one_line(before.err)

        upgraded = cli("db", "upgrade")
        assert (upgraded.code, upgraded.err) == (0, "")
        assert "latest revision" in upgraded.out

        after = cli("check")
        assert (after.code, after.err) == (0, "")
        assert "migrated to head" in after.out
        assert cli("db", "upgrade").code == 0  # running it again is harmless


class TestImport:
    def test_prints_created_then_unchanged(self, configured: pytest.MonkeyPatch, cli: Cli, tmp_path: Path) -> None:
        export = write_export(tmp_path, unique_id("cli"))
        first = cli("import", export)
        assert (first.code, first.err) == (0, "")
        assert summary_rows(first.out) == {
            "users": (1, 0, 0, 0),
            "campaigns": (1, 0, 0, 0),
            "sessions": (1, 0, 0, 0),
            "locations": (0, 0, 0, 0),
            "characters": (0, 0, 0, 0),
            "factions": (0, 0, 0, 0),
            "items": (0, 0, 0, 0),
        }
        assert first.out.splitlines()[-1] == "rendered 1 records (0.0 MB of Markdown)"
        second = cli("import", export)
        assert summary_rows(second.out)["sessions"] == (0, 0, 1, 0)
        assert second.out.splitlines()[-1] == "rendered 0 records (0.0 MB of Markdown)"

    def test_invalid_record_is_one_line_and_nothing_is_written(
        self, configured: pytest.MonkeyPatch, cli: Cli, tmp_path: Path
    ) -> None:
        prefix = unique_id("cli")
        failed = cli("import", write_export(tmp_path, prefix, bad_title=True))
        assert (failed.code, failed.out) == (1, "")
        assert one_line(failed.err) == (
            f'campaign-api: error: sessions[0] (id "{prefix}-s"): title: Input should be a valid string'
        )
        # The user and campaign came first in the write order; they were rolled back too.
        key = cli("keys", "create", "--campaign", f"{prefix}-c", "--owner", f"{prefix}-u")
        assert key.code == 1 and f'unknown campaign "{prefix}-c"' in one_line(key.err)

    def test_malformed_json_names_the_position(self, configured: pytest.MonkeyPatch, cli: Cli, tmp_path: Path) -> None:
        export = tmp_path / "broken.json"
        export.write_text('{"users": [\n  {"id": "u"},,\n]}', encoding="utf-8")
        failed = cli("import", export)
        assert failed.code == 1
        assert "malformed JSON at line 2, column 15" in one_line(failed.err)

    def test_missing_file(self, configured: pytest.MonkeyPatch, cli: Cli) -> None:
        failed = cli("import", "nowhere.json")
        assert (failed.code, one_line(failed.err)) == (1, "campaign-api: error: cannot read nowhere.json: no such file")


    def test_replace_prints_what_it_deleted(self, configured: pytest.MonkeyPatch, cli: Cli, tmp_path: Path) -> None:
        prefix = unique_id("cli")
        export = json.loads(write_export(tmp_path, prefix).read_text(encoding="utf-8"))
        extra = {**export["sessions"][0], "id": f"{prefix}-s2"}
        full = tmp_path / "full.json"
        full.write_text(json.dumps({**export, "sessions": [*export["sessions"], extra]}), encoding="utf-8")
        assert summary_rows(cli("import", full).out)["sessions"] == (2, 0, 0, 0)
        replaced = cli("import", write_export(tmp_path, prefix), "--replace")
        assert (replaced.code, replaced.err) == (0, "")
        assert summary_rows(replaced.out)["sessions"] == (0, 0, 1, 1)


class TestProgress:
    def test_a_log_gets_a_line_with_throughput_once_the_work_is_long(self) -> None:
        stream = io.StringIO()
        line = _ProgressLine(stream, noun="records imported")
        line(WriteProgress(records=500, rendered_records=400, rendered_bytes=2_000_000, elapsed_s=1.0))
        assert stream.getvalue() == ""  # short work shows nothing
        line(WriteProgress(records=2_000, rendered_records=1_500, rendered_bytes=8_000_000, elapsed_s=4.0))
        line(WriteProgress(records=2_500, rendered_records=2_000, rendered_bytes=9_000_000, elapsed_s=4.5))
        line.finish()
        assert stream.getvalue() == (
            "2,000 records imported (500/s); rendered 1,500 (8.0 MB of Markdown, 2.00 MB/s) in 4 s\n"
        )


class TestStaleRenderings:
    """A database rendered by an older renderer (or before rendering moved to write time)."""

    @pytest.fixture(params=BACKENDS)
    def stale_database(
        self, request: pytest.FixtureRequest, unconfigured: pytest.MonkeyPatch, tmp_path: Path, cli: Cli
    ) -> Iterator[str]:
        with migrated_database(request.param, tmp_path) as url:
            unconfigured.setenv("DATABASE_URL", url)
            unconfigured.setenv("API_KEY_PEPPER", TEST_PEPPER)
            with resources.as_file(DEMO_EXPORT) as export:
                assert cli("import", export).code == 0
            settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
            asyncio.run(_age(settings, array="sessions", record_ids=["ash-s01", "ash-s02"]))
            yield url

    def test_serve_refuses_check_reports_upgrade_renders(
        self, stale_database: str, served: list[dict[str, Any]], cli: Cli
    ) -> None:
        refused = cli("serve")
        assert (refused.code, refused.out, served) == (1, "", [])
        assert one_line(refused.err) == (
            "campaign-api: error: not serving: 2 stored record(s) were rendered by an older Markdown renderer "
            f"than this campaign-api's (version {CURRENT_RENDERER}), or never: run `campaign-api db upgrade`"
        )
        checked = cli("check")
        assert checked.code == 1
        assert one_line(checked.err).startswith("problem: 2 stored record(s) were rendered by an older")

        upgraded = cli("db", "upgrade")
        assert (upgraded.code, upgraded.err) == (0, "")
        assert upgraded.out.splitlines()[-1].startswith("rendered 2 records again (0.0 MB of Markdown)")
        assert cli("serve").code == 0 and len(served) == 1

    def test_serve_refuses_a_database_behind_the_migrations(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli, tmp_path: Path
    ) -> None:
        with migrated_database("sqlite", tmp_path, revision="0001") as url:
            unconfigured.setenv("DATABASE_URL", url)
            refused = cli("serve")
        assert (refused.code, served) == (1, [])
        assert "at 0001, head is 0002 (run `campaign-api db upgrade`)" in one_line(refused.err)


async def _age(settings: Settings, *, array: str, record_ids: list[str]) -> None:
    database = Database(settings)
    try:
        async with database.session() as db:
            await age_renderings(db, array=array, record_ids=record_ids)
    finally:
        await database.dispose()


class TestKeys:
    def create(self, cli: Cli, *, campaign: str = "ashfall", owner: str = "mara", label: str = "bot") -> str:
        created = cli("keys", "create", "--campaign", campaign, "--owner", owner, "--label", label)
        assert (created.code, created.err) == (0, "")
        return created.out

    def test_create_prints_only_the_token(self, demo_loaded: None, cli: Cli) -> None:
        out = self.create(cli)
        assert out.endswith("\n") and TOKEN.fullmatch(one_line(out))

    @pytest.mark.parametrize(
        ("campaign", "owner", "message"),
        [("nope", "mara", 'unknown campaign "nope"'), ("ashfall", "ghost", 'unknown user "ghost"')],
    )
    def test_create_refuses_unknown_references(
        self, demo_loaded: None, cli: Cli, campaign: str, owner: str, message: str
    ) -> None:
        refused = cli("keys", "create", "--campaign", campaign, "--owner", owner)
        assert (refused.code, refused.out) == (1, "")
        assert one_line(refused.err) == f"campaign-api: error: {message}"

    def test_create_needs_the_pepper(self, demo_loaded: None, configured: pytest.MonkeyPatch, cli: Cli) -> None:
        configured.delenv("API_KEY_PEPPER")
        refused = cli("keys", "create", "--campaign", "ashfall", "--owner", "mara")
        assert (refused.code, refused.out) == (1, "")
        assert "API_KEY_PEPPER" in one_line(refused.err)

    def test_list_shows_keys_never_secrets(self, demo_loaded: None, cli: Cli) -> None:
        label = unique_id("label")
        key_id, secret = TOKEN.fullmatch(one_line(self.create(cli, label=label))).groups()  # type: ignore[union-attr]
        stored_hash = hash_secret(secret, pepper=TEST_PEPPER.encode())

        table = cli("keys", "list")
        assert table.code == 0
        header, *rows = table.out.splitlines()
        assert header.split() == ["KEY", "ID", "CAMPAIGN", "OWNER", "LABEL", "CREATED", "REVOKED"]
        row = next(line.split() for line in rows if line.startswith(key_id))
        assert row[1:4] == ["ashfall", "mara", label] and row[5] == "-"

        listed = cli("keys", "list", "--json")
        entry = next(item for item in json.loads(listed.out) if item["key_id"] == key_id)
        assert entry.keys() == {"key_id", "campaign_id", "owner_id", "label", "created_at", "revoked_at"}
        assert (entry["campaign_id"], entry["owner_id"], entry["label"], entry["revoked_at"]) == (
            "ashfall",
            "mara",
            label,
            None,
        )
        for output in (table.out, listed.out):
            assert secret not in output and stored_hash not in output

    def test_list_filters_by_campaign(self, demo_loaded: None, cli: Cli) -> None:
        mine = TOKEN.fullmatch(one_line(self.create(cli, campaign="ashfall", owner="mara")))
        other = TOKEN.fullmatch(one_line(self.create(cli, campaign="saltmarsh", owner="iris")))
        assert mine is not None and other is not None
        listed = json.loads(cli("keys", "list", "--campaign", "ashfall", "--json").out)
        assert {entry["campaign_id"] for entry in listed} == {"ashfall"}
        listed_ids = {entry["key_id"] for entry in listed}
        assert mine.group(1) in listed_ids and other.group(1) not in listed_ids

    def test_revoke(self, demo_loaded: None, cli: Cli) -> None:
        key_id = TOKEN.fullmatch(one_line(self.create(cli))).group(1)  # type: ignore[union-attr]
        revoked = cli("keys", "revoke", key_id)
        assert (revoked.code, revoked.out, revoked.err) == (0, f"revoked key {key_id}\n", "")
        entry = next(item for item in json.loads(cli("keys", "list", "--json").out) if item["key_id"] == key_id)
        assert entry["revoked_at"] is not None

    def test_revoke_unknown_key(self, configured: pytest.MonkeyPatch, cli: Cli) -> None:
        refused = cli("keys", "revoke", "aaaaaaaaaaaa")
        assert (refused.code, one_line(refused.err)) == (1, 'campaign-api: error: no API key with id "aaaaaaaaaaaa"')


class TestCheck:
    def test_all_ok(self, configured: pytest.MonkeyPatch, cli: Cli) -> None:
        result = cli("check")
        assert (result.code, result.err) == (0, "")
        assert [line.split(":")[0] for line in result.out.splitlines()] == ["ok", "ok", "ok", "ok"]
        assert "ok: stored renderings: all from the current Markdown renderer" in result.out.splitlines()

    @pytest.mark.parametrize("pepper", [None, "too-short"])
    def test_pepper_problem_is_one_line(self, configured: pytest.MonkeyPatch, cli: Cli, pepper: str | None) -> None:
        if pepper is None:
            configured.delenv("API_KEY_PEPPER")
        else:
            configured.setenv("API_KEY_PEPPER", pepper)
        result = cli("check")
        assert result.code == 1
        problem = one_line(result.err)
        assert problem.startswith("problem: API_KEY_PEPPER")
        assert pepper is None or pepper not in problem
        assert len(result.out.splitlines()) == 3  # database, renderings and Redis are fine

    @pytest.mark.parametrize(
        "database_url", ["postgresql://postgres@127.0.0.1:1/campaign", "sqlite:///missing-dir/campaign.db"]
    )
    def test_unreachable_database_is_one_line(
        self, unconfigured: pytest.MonkeyPatch, cli: Cli, database_url: str
    ) -> None:
        unconfigured.setenv("DATABASE_URL", database_url)
        unconfigured.setenv("API_KEY_PEPPER", TEST_PEPPER)
        result = cli("check")
        assert result.code == 1
        assert one_line(result.err).startswith("problem: database ")

    def test_redis(self, configured: pytest.MonkeyPatch, cli: Cli) -> None:
        url = make_url(REDIS_URL)
        require_service("Redis", url.host or "127.0.0.1", url.port or 6379)
        configured.setenv("REDIS_URL", REDIS_URL)
        assert cli("check").code == 0
        configured.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
        result = cli("check")
        assert result.code == 1 and one_line(result.err).startswith("problem: Redis redis://127.0.0.1:1/0")

    @pytest.mark.parametrize(("variable", "value", "said"), UNUSABLE_URLS)
    def test_an_unusable_url_is_one_problem_line(
        self, configured: pytest.MonkeyPatch, cli: Cli, variable: str, value: str, said: str
    ) -> None:
        configured.setenv(variable, value)
        result = cli("check")
        assert result.code == 1
        problem = one_line(result.err)
        assert problem.startswith(f"problem: {variable}") and said in problem, problem
        assert "s3cret" not in problem
        # The other checks still ran, and passed.
        checked = result.out.splitlines()
        assert checked and all(line.startswith("ok: ") for line in checked)
        assert "API_KEY_PEPPER" in checked[-1]

    def test_redis_behind_sentinel(self, configured: pytest.MonkeyPatch, cli: Cli, tmp_path: Path) -> None:
        with sentinel_group(tmp_path, replicas=0, sentinels=1, quorum=1) as group:
            configured.setenv("REDIS_URL", group.url)
            result = cli("check")
            assert (result.code, result.err) == (0, "")
            assert f"ok: Redis {group.url}: reachable (primary 127.0.0.1:{group.primary_port()})" in result.out
        result = cli("check")  # the Sentinel is gone
        assert result.code == 1
        assert one_line(result.err) == (
            f"problem: Redis {group.url}: unreachable (No master found for 'campaign' "
            "(no Sentinel answered, or none knows a healthy primary))"
        )


class TestServe:
    def test_runs_uvicorn_with_the_app_factory(self, served: list[dict[str, Any]], cli: Cli) -> None:
        assert cli("serve", "--host", "127.0.0.2", "--port", "9001").code == 0
        [options] = served
        assert {name: options[name] for name in ("app", "factory", "host", "port", "workers", "loop")} == {
            "app": "rest.app:create_app",
            "factory": True,
            "host": "127.0.0.2",
            "port": 9001,
            "workers": 1,
            "loop": "uvloop",
        }
        # The app reads the client IP from the socket itself (TRUSTED_PROXIES decides).
        assert options["proxy_headers"] is False
        # httptools with a bound on request heads (tests/fuzz/test_oversized.py), no access log.
        assert options["http"] is BoundedHttpToolsProtocol
        assert options["access_log"] is False

    def test_several_workers_need_redis(self, served: list[dict[str, Any]], cli: Cli) -> None:
        refused = cli("serve", "--workers", "2")
        assert (refused.code, refused.out, served) == (2, "", [])
        assert "REDIS_URL" in one_line(refused.err)

    def test_several_workers_with_redis(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli
    ) -> None:
        unconfigured.setenv("REDIS_URL", REDIS_URL)
        assert cli("serve", "--workers", "3").code == 0
        assert served[0]["workers"] == 3

    @pytest.mark.parametrize(("variable", "value", "said"), UNUSABLE_URLS)
    def test_an_unusable_url_is_refused_before_any_worker_starts(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli, variable: str, value: str,
        said: str,
    ) -> None:
        unconfigured.setenv(variable, value)
        refused = cli("serve", "--workers", "2")
        assert (refused.code, refused.out, served) == (2, "", [])
        line = one_line(refused.err)
        assert line.startswith(f"campaign-api: error: {variable}") and said in line, line
        assert "s3cret" not in line

    def test_a_sentinel_url_is_served(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli
    ) -> None:
        unconfigured.setenv("REDIS_URL", "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/campaign")
        assert cli("serve", "--workers", "2").code == 0
        assert served[0]["workers"] == 2


class TestDemo:
    def test_fresh_machine(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli, tmp_path: Path
    ) -> None:
        port = free_port()
        result = cli("demo", "--port", str(port))
        assert result.code == 0, result.err

        env_file = tmp_path / ".env"
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        pepper = env_file.read_text(encoding="utf-8").removeprefix("API_KEY_PEPPER=").strip()
        assert len(pepper) >= 32
        assert ".env" in one_line(result.err) and pepper not in result.err + result.out
        assert (tmp_path / "campaign.db").is_file()

        token = TOKEN.search(result.out)
        assert token is not None
        assert (
            f"curl -H 'Authorization: Bearer {token.group(0)}' http://127.0.0.1:{port}/api/public/v1/sessions"
            in result.out
        )
        graphql = next(line for line in result.out.splitlines() if "/graphql" in line)
        assert f"http://127.0.0.1:{port}/graphql" in graphql and "children" in graphql and "sessions" in graphql
        assert served[0]["app"] == "rest.app:create_app" and served[0]["workers"] == 1
        # Served on the socket the demo bound before preparing anything.
        assert served[0]["fd"] is not None

        again = cli("demo", "--port", str(free_port()))
        assert again.code == 0 and again.err == ""  # the saved pepper is reused, not regenerated
        assert env_file.read_text(encoding="utf-8").count("API_KEY_PEPPER=") == 1

    def test_a_busy_port_stops_it_before_anything_is_written(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli, tmp_path: Path
    ) -> None:
        with socket.create_server(("127.0.0.1", 0)) as busy:
            port = busy.getsockname()[1]
            result = cli("demo", "--port", str(port))
        assert (result.code, result.out, served) == (1, "", [])
        assert result.err == (
            f"campaign-api: error: port {port} on 127.0.0.1 is already in use: stop what is listening there, "
            f"or pick another port with `make demo PORT={port + 1}` (or `campaign-api demo --port {port + 1}`)\n"
        )
        # Nothing imported, no key issued, no pepper generated.
        assert sorted(path.name for path in tmp_path.iterdir()) == []

    def test_serves_on_the_socket_it_bound(self, tmp_path: Path) -> None:
        """The real command, as `make demo PORT=...` runs it, in an empty directory."""
        port = free_port()
        environment = {name: value for name, value in os.environ.items() if name in ("PATH", "HOME", "LANG")}
        command = [str(Path(sys.executable).with_name("campaign-api")), "demo", "--port", str(port)]
        with subprocess.Popen(
            command, cwd=tmp_path, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        ) as demo:
            try:
                health: httpx.Response | None = None
                deadline = time.monotonic() + 60
                while health is None and time.monotonic() < deadline and demo.poll() is None:
                    try:
                        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    except httpx.TransportError:
                        time.sleep(0.2)
                assert health is not None and health.json() == {"status": "ok"}
            finally:
                demo.terminate()
                output = demo.communicate(timeout=30)[0].decode()
        assert demo.returncode == 0, output
        assert f"http://127.0.0.1:{port}/api/public/v1/sessions" in output

    def test_short_pepper_is_reported_not_replaced(
        self, unconfigured: pytest.MonkeyPatch, served: list[dict[str, Any]], cli: Cli, tmp_path: Path
    ) -> None:
        unconfigured.setenv("API_KEY_PEPPER", "short")
        result = cli("demo")
        assert (result.code, result.out, served) == (1, "", [])
        assert "API_KEY_PEPPER" in one_line(result.err)
        assert not (tmp_path / ".env").exists()

    def test_demo_campaign_shows_every_gm_only_form(self) -> None:
        demo = json.loads(DEMO_EXPORT.read_text(encoding="utf-8"))
        texts = "\n".join(
            record.get("summary") or record.get("description") or ""
            for array in ("sessions", "locations", "characters", "factions", "items")
            for record in demo[array]
        )
        for form in (":::gm", "::: GM-only", ":::secret", ":::dm", "## GM notes", "## [GM]", "<!--", "%%"):
            assert form in texts, form
        assert '<section class="secret"' in texts
        assert re.search(r"^\[[\w-]+\]: https://example.com/GMSECRET", texts, re.MULTILINE)
        assert "| --- |" in texts and "![" in texts
