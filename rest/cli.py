"""The operator's command line, `campaign-api` (contract §7).

Each command parses its arguments, calls the engine and prints. Every failure ends as one
line on stderr and a non-zero exit code, never a traceback. Secrets are printed only
where the contract asks for them: the token of `keys create` and of `demo`.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TextIO, TypeVar

import uvicorn
from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from engine.db import Database
from engine.demo_setup import example_commands, prepare_demo
from engine.errors import DomainError
from engine.importer import ImportSummary, import_campaign_export
from engine.keys import create_api_key, list_api_keys, revoke_api_key
from engine.migrations import upgrade_database
from engine.preflight import (
    configuration_problems,
    describe_database_error,
    redacted_database_url,
    run_checks,
    serving_refusal,
)
from engine.record_writer import WriteProgress
from engine.settings import Settings
from engine.tables import ApiKey, Campaign, User
from engine.upgrade import upgrade_renderings
from rest.http_protocol import BoundedHttpToolsProtocol

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
APP_FACTORY = "rest.app:create_app"
# Work that ends sooner shows no progress; after, a line this often to a file or pipe (a
# terminal gets one line rewritten in place).
PROGRESS_AFTER_S = 3.0
PROGRESS_EVERY_S = 10.0

T = TypeVar("T")
Command = Callable[[argparse.Namespace, Settings], int]


class CommandError(Exception):
    """A problem the operator can fix; the message is printed as it is."""

    def __init__(self, message: str, *, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def main(argv: list[str] | None = None, *, settings: Settings | None = None) -> int:
    """Run one command; `settings` replaces the environment (tests)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        command: Command = args.command
        return command(args, settings if settings is not None else Settings())
    except CommandError as exc:
        return _fail(str(exc), exit_code=exc.exit_code)
    except DomainError as exc:
        return _fail(str(exc))
    except SQLAlchemyError as exc:
        return _fail(f"database error: {describe_database_error(exc)}")
    except ValidationError as exc:
        return _fail(f"invalid configuration: {_one_line(str(exc))}")
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # the promise is "never a traceback", whatever failed
        return _fail(f"unexpected {type(exc).__name__}: {_one_line(str(exc))}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="campaign-api", description="Operate the public campaign API.")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    db = commands.add_parser("db", help="database schema").add_subparsers(required=True, metavar="ACTION")
    db.add_parser(
        "upgrade",
        help="apply the migrations to DATABASE_URL, then render again every record an older Markdown renderer "
        "(or none) rendered; the server refuses to start until this has run",
    ).set_defaults(command=db_upgrade)

    load = commands.add_parser(
        "import",
        help="load a campaign export (upsert by id, all or nothing); prints created / updated / unchanged / "
        "deleted per type",
        description="Load a campaign export in one transaction. Records equal to their stored rows are left "
        "alone; changed Markdown is rendered once, on every core. The change feed records what clients can "
        "see change.",
    )
    load.add_argument("file", type=Path, metavar="FILE")
    load.add_argument(
        "--replace",
        action="store_true",
        help="the file is the whole state of each campaign in its `campaigns` array: their sessions, locations, "
        "characters, factions and items that it lacks are deleted (in the same transaction)",
    )
    load.set_defaults(command=import_export)

    keys = commands.add_parser("keys", help="API keys").add_subparsers(required=True, metavar="ACTION")
    create = keys.add_parser("create", help="issue a key; prints the token, alone, once")
    create.add_argument("--campaign", required=True, metavar="ID")
    create.add_argument("--owner", required=True, metavar="ID", help="user id the key's owner limit counts")
    create.add_argument("--label", metavar="TEXT")
    create.set_defaults(command=keys_create)
    revoke = keys.add_parser("revoke", help="revoke a key")
    revoke.add_argument("key_id", metavar="KEY_ID")
    revoke.set_defaults(command=keys_revoke)
    listing = keys.add_parser("list", help="list keys (never secrets)")
    listing.add_argument("--campaign", metavar="ID")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(command=keys_list)

    serve_parser = commands.add_parser("serve", help="run the API (REST and GraphQL)")
    _add_address_arguments(serve_parser)
    serve_parser.add_argument("--workers", type=_positive_int, default=1, metavar="N")
    serve_parser.set_defaults(command=serve)

    commands.add_parser(
        "check", help="check database (migrations, stale renderings), Redis and pepper"
    ).set_defaults(command=check)

    demo_parser = commands.add_parser("demo", help="set up a local demo with no configuration, then serve")
    _add_address_arguments(demo_parser)
    demo_parser.set_defaults(command=demo)
    return parser


def db_upgrade(_args: argparse.Namespace, settings: Settings) -> int:
    upgrade_database(settings.database_url)
    progress = _ProgressLine(sys.stderr, noun="records rendered again")
    try:
        rendered = _run_in_session(settings, lambda db: upgrade_renderings(db, progress=progress))
    finally:
        progress.finish()
    print(f"database {redacted_database_url(settings)} is at the latest revision")
    if rendered.records:
        print(f"rendered {rendered.records:,} records again ({rendered.bytes / 1e6:,.1f} MB of Markdown)")
    return EXIT_OK


def import_export(args: argparse.Namespace, settings: Settings) -> int:
    source: Path = args.file
    if not source.is_file():
        raise CommandError(f"cannot read {source}: no such file")
    progress = _ProgressLine(sys.stderr, noun="records imported")
    try:
        summary = _run_in_session(
            settings,
            lambda db: import_campaign_export(db, source=source, progress=progress, replace=args.replace),
        )
    finally:
        progress.finish()
    print(f"imported {source}")
    print(_format_summary(summary))
    return EXIT_OK


def keys_create(args: argparse.Namespace, settings: Settings) -> int:
    pepper = settings.pepper
    if pepper is None:
        raise CommandError("API_KEY_PEPPER is not set or shorter than 32 characters: keys cannot be issued")

    async def issue(db: AsyncSession) -> str:
        if await db.get(Campaign, args.campaign) is None:
            raise CommandError(f'unknown campaign "{args.campaign}"')
        if await db.get(User, args.owner) is None:
            raise CommandError(f'unknown user "{args.owner}"')
        issued = await create_api_key(
            db, campaign_id=args.campaign, owner_id=args.owner, label=args.label, pepper=pepper
        )
        return issued.token

    print(_run_in_session(settings, issue))
    return EXIT_OK


def keys_revoke(args: argparse.Namespace, settings: Settings) -> int:
    if not _run_in_session(settings, lambda db: revoke_api_key(db, key_id=args.key_id)):
        raise CommandError(f'no API key with id "{args.key_id}"')
    print(f"revoked key {args.key_id}")
    return EXIT_OK


def keys_list(args: argparse.Namespace, settings: Settings) -> int:
    keys = _run_in_session(settings, lambda db: list_api_keys(db, campaign_id=args.campaign))
    listed = [_key_listing(key) for key in keys]
    if args.json:
        print(json.dumps(listed, indent=2))
    elif not listed:
        print("no API keys")
    else:
        headers = ("KEY ID", "CAMPAIGN", "OWNER", "LABEL", "CREATED", "REVOKED")
        print(_format_table(headers, [[value or "-" for value in entry.values()] for entry in listed]))
    return EXIT_OK


def serve(args: argparse.Namespace, settings: Settings) -> int:
    return _run_server(settings, host=args.host, port=args.port, workers=args.workers)


def _run_server(
    settings: Settings, *, host: str, port: int, workers: int, listener: socket.socket | None = None
) -> int:
    """Serve until stopped; on `listener` (already bound to host:port) when given."""
    problems = configuration_problems(settings)
    if problems:
        # Said once, here: each worker would fail on it and be started again, endlessly.
        raise CommandError("; ".join(problems), exit_code=EXIT_USAGE)
    if workers > 1 and settings.redis_url is None:
        raise CommandError(
            "--workers above 1 needs REDIS_URL: without it each worker counts rate limits in its own "
            "memory, multiplying every limit by the number of workers",
            exit_code=EXIT_USAGE,
        )
    # Not on a database that misses a migration or holds stale renderings (text a newer
    # renderer removes may be in them).
    refusal = asyncio.run(serving_refusal(settings))
    if refusal is not None:
        raise CommandError(f"not serving: {refusal}")
    # After draining, uvicorn re-raises the SIGTERM that stopped it, so the default action
    # would end the process "killed by SIGTERM" (status 143). A requested stop that
    # completed gracefully is a success for a supervisor: exit 0.
    signal.signal(signal.SIGTERM, _exit_after_graceful_stop)
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        fd=listener.fileno() if listener is not None else None,
        workers=workers,
        loop="uvloop",
        # httptools, a C parser (h11, pure Python, took 3-9 % of a worker's CPU), through a
        # subclass that keeps the bound h11 gave and stock httptools lacks: a request head or
        # trailer section past 16 KiB is refused with a 431, not buffered whole and served.
        http=BoundedHttpToolsProtocol,
        # The app takes the client IP from the socket and trusts X-Forwarded-For only from
        # TRUSTED_PROXIES; uvicorn rewriting the peer first would bypass that.
        proxy_headers=False,
        # The app writes one JSON access line per request (with the route template and key
        # id); uvicorn's own line would repeat it in plain text with the raw query string.
        access_log=False,
        log_level=settings.log_level.lower(),
    )
    return EXIT_OK


def _exit_after_graceful_stop(_signal: int, _frame: object) -> None:
    raise SystemExit(EXIT_OK)


def check(_args: argparse.Namespace, settings: Settings) -> int:
    results = asyncio.run(run_checks(settings))
    for result in results:
        if result.ok:
            print(f"ok: {result.message}")
        else:
            print(f"problem: {result.message}", file=sys.stderr)
    return EXIT_OK if all(result.ok for result in results) else EXIT_FAILURE


def demo(args: argparse.Namespace, settings: Settings) -> int:
    # First, so that a busy port stops the demo before it writes anything; then served as
    # it is, so that nothing can take the port while the demo is prepared.
    with _listen_for_demo(args.host, args.port) as listener:
        return _prepare_and_serve_demo(args, settings, listener)


def _prepare_and_serve_demo(args: argparse.Namespace, settings: Settings, listener: socket.socket) -> int:
    setup = prepare_demo(settings)
    if setup.generated_pepper_in is not None:
        print(
            f"generated API_KEY_PEPPER and saved it to {setup.generated_pepper_in} (mode 0600); "
            "keep it: keys issued under it stop working if it changes",
            file=sys.stderr,
        )
    print(f"demo campaign loaded into {redacted_database_url(settings)}")
    print(f"API key (shown once): {setup.token}")
    print("try:")
    for line in example_commands(setup.token, host=args.host, port=args.port):
        print(f"  {line}")
    sys.stdout.flush()
    return _run_server(settings, host=args.host, port=args.port, workers=1, listener=listener)


def _listen_for_demo(host: str, port: int) -> socket.socket:
    """A socket bound to host:port for the demo's server, as uvicorn would bind it."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {port} on {host} is already in use: stop what is listening there, or pick another "
                f"port with `make demo PORT={port + 1}` (or `campaign-api demo --port {port + 1}`)"
            ) from exc
        raise CommandError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    return listener


def _run_in_session(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `work` in one session: committed when it returns, rolled back when it raises."""

    async def run() -> T:
        database = Database(settings)
        try:
            async with database.session() as db:
                return await work(db)
        finally:
            await database.dispose()

    return asyncio.run(run())


class _ProgressLine:
    """How far a long import or re-rendering has come, with its throughput, once it has run
    PROGRESS_AFTER_S: rewritten in place on a terminal, a line every PROGRESS_EVERY_S
    otherwise (a log)."""

    def __init__(self, stream: TextIO, *, noun: str) -> None:
        self.stream = stream
        self.noun = noun
        self.in_place = stream.isatty()
        self.shown_at: float | None = None

    def __call__(self, progress: WriteProgress) -> None:
        now = time.monotonic()
        if progress.elapsed_s < PROGRESS_AFTER_S:
            return
        if not self.in_place and self.shown_at is not None and now - self.shown_at < PROGRESS_EVERY_S:
            return
        elapsed = max(progress.elapsed_s, 1e-6)
        line = (
            f"{progress.records:,} {self.noun} ({progress.records / elapsed:,.0f}/s); "
            f"rendered {progress.rendered_records:,} ({progress.rendered_bytes / 1e6:,.1f} MB of Markdown, "
            f"{progress.rendered_bytes / 1e6 / elapsed:,.2f} MB/s) in {progress.elapsed_s:,.0f} s"
        )
        self.stream.write(f"\r{line}" if self.in_place else f"{line}\n")
        self.stream.flush()
        self.shown_at = now

    def finish(self) -> None:
        if self.in_place and self.shown_at is not None:
            self.stream.write("\n")
            self.stream.flush()


def _format_summary(summary: ImportSummary) -> str:
    rows = [
        [array, str(count.created), str(count.updated), str(count.unchanged), str(count.deleted)]
        for array, count in summary.counts.items()
    ]
    table = _format_table(("RECORDS", "CREATED", "UPDATED", "UNCHANGED", "DELETED"), rows)
    rendered = f"rendered {summary.rendered_records:,} records ({summary.rendered_bytes / 1e6:,.1f} MB of Markdown)"
    if summary.rerendered_records:
        rendered += f"; {summary.rerendered_records:,} records of an older renderer rendered again"
    return f"{table}\n{rendered}"


def _key_listing(key: ApiKey) -> dict[str, str | None]:
    # Named fields only: the stored hash must never reach the output.
    return {
        "key_id": key.key_id,
        "campaign_id": key.campaign_id,
        "owner_id": key.owner_id,
        "label": key.label,
        "created_at": _timestamp(key.created_at),
        "revoked_at": _timestamp(key.revoked_at),
    }


def _timestamp(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


def _format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    )


def _add_address_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _fail(message: str, *, exit_code: int = EXIT_FAILURE) -> int:
    print(f"campaign-api: error: {_one_line(message)}", file=sys.stderr)
    return exit_code


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())
