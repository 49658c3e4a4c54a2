"""The sync loop of the README and the example client (docs/sync_client.py), run against a server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.contract.campaign import LISTS
from tests.contract.client import ApiClient
from tests.contract.server import ApiServer

# Both databases; one limiter storage is enough for a client that is never limited.
pytestmark = [pytest.mark.xdist_group("contract"), pytest.mark.parametrize("storage", ["memory"], indirect=True)]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "docs" / "sync_client.py"


class _RoundDone(Exception):
    """Raised by the patched sleep: the loop has read the feed to its end once."""


def readme_loop() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Keeping a copy in sync", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_readme_loop_copies_every_visible_record(
    api: ApiServer, client: ApiClient, token_a: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEY", token_a)
    monkeypatch.setenv("API", f"{api.base_url}/api/public/v1/")

    def stop(_seconds: float) -> None:
        raise _RoundDone

    monkeypatch.setattr(time, "sleep", stop)
    namespace: dict[str, Any] = {}
    with pytest.raises(_RoundDone):
        exec(readme_loop(), namespace)  # noqa: S102 (the README's own code, run as a reader would)
    expected = {
        f"{path}/{urllib.parse.quote(record['id'], safe='')}": record["id"]
        for path, (records, _) in LISTS.items()
        for record in records
    }
    assert set(namespace["copy"]) == set(expected) == set(namespace["tags"])
    for record in list(expected)[:5]:
        assert namespace["copy"][record] == client.api(record, token=token_a).json()


def run_client(api: ApiServer, token: str, directory: Path) -> str:
    completed = subprocess.run(
        [sys.executable, str(CLIENT), "--base", api.base_url, "--dir", str(directory), "--once"],
        env={"PATH": os.environ.get("PATH", ""), "KEY": token},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_a_first_round_copies_every_visible_record_and_a_second_finds_nothing_new(
    api: ApiServer, client: ApiClient, token_a: str, tmp_path: Path
) -> None:
    mirror = tmp_path / "mirror"
    visible = sum(len(records) for records, _ in LISTS.values())
    assert run_client(api, token_a, mirror) == f"synced: {visible} fetched, 0 unchanged, 0 removed\n"

    files = {path.relative_to(mirror).as_posix() for path in mirror.glob("*/*.json")}
    expected = {
        f"{path}/{urllib.parse.quote(record['id'], safe='')}.json"
        for path, (records, _) in LISTS.items()
        for record in records
    }
    assert files == expected
    for path, (records, _) in LISTS.items():
        for record in records[:3]:
            served = client.api(f"{path}/{record['id']}", token=token_a)
            stored = mirror / path / f"{urllib.parse.quote(record['id'], safe='')}.json"
            assert stored.read_bytes() == served.content
    state = json.loads((mirror / "state.json").read_text())
    assert state["cursor"] and len(state["etags"]) == visible

    assert run_client(api, token_a, mirror) == "synced: 0 fetched, 0 unchanged, 0 removed\n"
