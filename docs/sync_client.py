"""Keep a local copy of a campaign in sync with the public API: an example client (stdlib only).

    KEY=cpk_... python docs/sync_client.py [--base http://127.0.0.1:8000] [--dir mirror] [--once]

The copy is a directory: one file per record, `<type>s/<id>.json`, holding the record's
single-record body exactly as served, and `state.json`, holding where to resume the change
feed and the ETag of each record. Each round reads the feed from the stored cursor: an
`upsert` is fetched again (with If-None-Match, so an unchanged body costs no transfer), a
`delete` removes the file. The first round, from no cursor, fetches every visible record.
Without --once it polls every --every seconds. It waits out 429s (Retry-After) and retries
5xx a few times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

RETRIES = 5


class Api:
    def __init__(self, base: str, key: str) -> None:
        if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
            raise SystemExit(f"--base must be an http(s) URL, not {base!r}")
        self.base = base.rstrip("/") + "/api/public/v1/"
        self.key = key

    def get(self, path: str, *, etag: str | None = None) -> tuple[int, str | None, bytes]:
        """(status, ETag, body) of a GET; 200, 304 and 404 are answers, others are retried."""
        headers = {"Authorization": f"Bearer {self.key}"}
        if etag is not None:
            headers["If-None-Match"] = etag
        for attempt in range(RETRIES):
            # An http(s) URL: the scheme was checked when the client was made.
            request = urllib.request.Request(self.base + path, headers=headers)  # noqa: S310
            try:
                with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                    return response.status, response.headers.get("ETag"), response.read()
            except urllib.error.HTTPError as error:
                if error.code in (304, 404):
                    return error.code, error.headers.get("ETag"), b""
                if error.code == 429:
                    time.sleep(int(error.headers.get("Retry-After", "1")))
                elif error.code >= 500 and attempt < RETRIES - 1:
                    time.sleep(2**attempt)
                else:
                    raise
        raise RuntimeError(f"GET {path}: still limited after {RETRIES} attempts")


class Mirror:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state_file = directory / "state.json"
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        self.cursor: str | None = state.get("cursor")
        self.etags: dict[str, str] = state.get("etags", {})

    def path(self, record: str) -> Path:
        kind, record_id = record.split("/", 1)
        return self.directory / kind / (urllib.parse.quote(record_id, safe="") + ".json")

    def store(self, record: str, body: bytes, etag: str | None) -> None:
        target = self.path(record)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        if etag is not None:
            self.etags[record] = etag

    def remove(self, record: str) -> None:
        self.path(record).unlink(missing_ok=True)
        self.etags.pop(record, None)

    def save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.state_file.with_suffix(".tmp")
        temporary.write_text(json.dumps({"cursor": self.cursor, "etags": self.etags}))
        temporary.replace(self.state_file)  # a crash leaves the old state, never half of one


def sync_once(api: Api, mirror: Mirror) -> dict[str, int]:
    """Follow the feed from the stored cursor to its end; what was done, by kind."""
    done = {"fetched": 0, "unchanged": 0, "removed": 0}
    while True:
        query = {"limit": "100", **({"cursor": mirror.cursor} if mirror.cursor else {})}
        status, _, body = api.get("changes?" + urllib.parse.urlencode(query))
        if status != 200:
            raise RuntimeError(f"the change feed answered {status}")
        page: dict[str, Any] = json.loads(body)
        for entry in page["data"]:
            record = f"{entry['type']}s/{entry['id']}"
            if entry["change"] == "delete":
                mirror.remove(record)
                done["removed"] += 1
                continue
            path = f"{entry['type']}s/{urllib.parse.quote(entry['id'], safe='')}"
            status, etag, body = api.get(path, etag=mirror.etags.get(record))
            if status == 200:
                mirror.store(record, body, etag)
                done["fetched"] += 1
            elif status == 304:
                done["unchanged"] += 1
            else:  # gone since the entry was written: its delete entry follows
                mirror.remove(record)
                done["removed"] += 1
        # Only after the page's records are stored: a crash repeats a page, never skips one.
        mirror.cursor = page["pagination"]["next_cursor"]
        mirror.save()
        if not page["pagination"]["has_more"]:
            return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--dir", type=Path, default=Path("mirror"))
    parser.add_argument("--once", action="store_true", help="one round, then exit")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between rounds")
    args = parser.parse_args(argv)
    api, mirror = Api(args.base, os.environ["KEY"]), Mirror(args.dir)
    while True:
        done = sync_once(api, mirror)
        print(f"synced: {done['fetched']} fetched, {done['unchanged']} unchanged, {done['removed']} removed")
        if args.once:
            return 0
        time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main())
