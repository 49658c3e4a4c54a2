"""Seeded generator of a large campaign export (contract §8), streamed to disk.

    python tests/benchmarks/generate.py --out artifacts/bench/export.json [--seed 7]

Writes the export one record at a time (orjson per record into a buffered file, never the
whole document in memory) and, beside it, `<out>.manifest.json` with the ids the benchmark
needs (campaign, owner, the ~20 KB and ~200 B sessions, a location with children) and the
counts. The same seed and sizes give the same bytes.

Shape (defaults):

- 1 user; the benchmark campaign and one other campaign with a few records of each type.
- sessions: 112,000 public + 12,000 private (~10 %) in the benchmark campaign: ~10 % are
  undated and sort last, so page 1,000 at limit 100 lands among the dated sessions (where
  a keyset seek matters) rather than in the undated tail; summaries of 200 B to 20 KB
  (triangular, mode 3 KB: most are short, the export is ~1 GB) of Markdown with
  every GM-only form of contract §6 (`:::gm` containers, GM heading sections, HTML and
  Obsidian comments, Foundry `<section class="secret">`) among public headings, lists,
  tables, links, images, quotes and code; ~10 % undated; timestamps in several offsets.
- 20,000 locations in a four-level hierarchy (parent_id; children may precede parents in
  the file), 10,000 each of characters, factions and items; ~10 % hidden; sort orders
  0..99 with ~20 % null; names drawn from a small vocabulary (many ties, broken by id).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson


def _vocabulary(text: str) -> tuple[str, ...]:
    return tuple(text.split())


WORDS = _vocabulary(
    "harbor heist tide warden brass compass salt marsh lantern crypt ember vault raven oath "
    "shadow tavern ferry smuggler goblin ogre bridge tower moon rune blade storm cellar cult "
    "relic archive mire lich throne siren reef duke merchant caravan ruin forge ash glacier "
    "hollow spire grove pilgrim bandit map key ledger bell crown"
)
GM_WORDS = _vocabulary("twist betrayal hidden traitor spy ambush lie curse doppelganger secret")
NAME_PARTS = _vocabulary(
    "Old New Upper Lower North South East West Black White Red Iron Silver Golden Misty Broken Sunken High Deep Far"
)
PLACE_KINDS = ("settlement", "region", "dungeon", "landmark", "building", "wilderness", "plane")
ENTITY_TYPES = {
    "characters": ("npc", "pc", "villain", "ally", "deity"),
    "factions": ("guild", "cult", "noble_house", "order", "gang"),
    "items": ("weapon", "armor", "artifact", "potion", "scroll", "trinket"),
}
ICONS = (None, None, "🏰", "⚔️", "🗝️", "castle", "skull", "tree")
OFFSETS = (UTC, UTC, UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5)))
EPOCH = datetime(2019, 1, 1, tzinfo=UTC)
SPAN_S = 6 * 365 * 24 * 3600
POOL_SIZE = 4000


class Blocks:
    """Pools of pre-built Markdown blocks, so a summary is a cheap join of random picks."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.public = [self._public_block() for _ in range(POOL_SIZE)]
        self.public_heading = [f"## {self._words(2, 5).title()}\n" for _ in range(200)]
        gm_makers = (
            self._gm_container,
            self._gm_heading_section,
            self._html_comment,
            self._obsidian_comment,
            self._secret_section,
        )
        # One pool per GM form: every document gets one of each, at random places.
        self.gm = [[make() for _ in range(400)] for make in gm_makers]

    def _words(self, low: int, high: int, vocabulary: tuple[str, ...] = WORDS) -> str:
        return " ".join(self.rng.choices(vocabulary, k=self.rng.randint(low, high)))

    def _sentence(self) -> str:
        words = self._words(6, 16)
        kind = self.rng.random()
        if kind < 0.15:
            words += f" with **{self._words(1, 3)}**"
        elif kind < 0.25:
            words += f" and *{self._words(1, 2)}*"
        elif kind < 0.35:
            words += f" near [{self._words(1, 3)}](https://wiki.example.org/{self.rng.randrange(10**6)})"
        elif kind < 0.40:
            words += f" `{self._words(1, 2)}`"
        elif kind < 0.45:
            words += f" ![{self._words(1, 2)}](https://img.example.org/{self.rng.randrange(10**6)}.png)"
        return words[0].upper() + words[1:] + "."

    def _paragraph(self) -> str:
        return " ".join(self._sentence() for _ in range(self.rng.randint(1, 5))) + "\n"

    def _public_block(self) -> str:
        kind = self.rng.random()
        if kind < 0.45:
            return self._paragraph()
        if kind < 0.55:
            return f"{'#' * self.rng.randint(2, 4)} {self._words(2, 5).title()}\n"
        if kind < 0.70:
            marker = self.rng.choice(("-", "*", "1."))
            return "".join(f"{marker} {self._sentence()}\n" for _ in range(self.rng.randint(2, 6)))
        if kind < 0.80:
            columns = self.rng.randint(2, 4)
            head = "| " + " | ".join(self._words(1, 2).title() for _ in range(columns)) + " |\n"
            rule = "|" + "---|" * columns + "\n"
            rows = "".join(
                "| " + " | ".join(self._words(1, 3) for _ in range(columns)) + " |\n"
                for _ in range(self.rng.randint(1, 5))
            )
            return head + rule + rows
        if kind < 0.90:
            return "> " + self._sentence() + "\n> " + self._sentence() + "\n"
        if kind < 0.95:
            return f"```\n{self._words(3, 8)}\n{self._words(3, 8)}\n```\n"
        return f"[{self._words(1, 2)}]: https://wiki.example.org/ref/{self.rng.randrange(10**6)}\n"

    def _secret(self) -> str:
        return self._words(3, 12, GM_WORDS + WORDS[:10])

    def _gm_container(self) -> str:
        opener = self.rng.choice((":::gm", ":::GM", "::: gm-only", ":::dm", ":::secret"))
        inner = f"{self._secret()}\n"
        if self.rng.random() < 0.3:
            inner += f":::note\n{self._secret()}\n:::\n"
        return f"{opener}\n{inner}:::\n"

    def _gm_heading_section(self) -> str:
        title = self.rng.choice(("GM notes", "GM", "Secrets", "DM only:", "[GM] Plans", "gm-only"))
        return f"## {title}\n\n{self._secret()}\n\n- {self._secret()}\n"

    def _html_comment(self) -> str:
        if self.rng.random() < 0.5:
            return f"{self._sentence()} <!-- {self._secret()} --> {self._sentence()}\n"
        return f"<!--\n{self._secret()}\n{self._secret()}\n-->\n"

    def _obsidian_comment(self) -> str:
        if self.rng.random() < 0.5:
            return f"{self._sentence()} %% {self._secret()} %% {self._sentence()}\n"
        return f"%%\n{self._secret()}\n%%\n"

    def _secret_section(self) -> str:
        return f'<section class="secret" id="secret-{self.rng.randrange(10**6)}">\n{self._secret()}\n</section>\n'

    def document(self, title: str, size: int) -> str:
        """About `size` bytes: a title, public blocks, one block of each GM-only form."""
        rng = self.rng
        parts = [f"# {title}\n"]
        total = len(parts[0])
        gm_blocks = [rng.choice(pool) for pool in self.gm]
        total += sum(len(block) + 1 for block in gm_blocks)
        public = self.public
        while total < size:
            block = rng.choice(public)
            if total + len(block) > size and total + 40 > size:
                break
            parts.append(block)
            total += len(block) + 1
        for block in gm_blocks:
            position = rng.randint(1, len(parts))
            if block.startswith("## "):
                # A GM heading hides everything up to the next heading of its level:
                # follow it with a public one so the rest of the document stays public.
                block += "\n" + rng.choice(self.public_heading)
            parts.insert(position, block)
        return "\n".join(parts)

    def tiny_document(self, title: str) -> str:
        """~200 bytes that still hold every GM-only form."""
        return (
            f"# {title}\n\nThe party met the **duke**.\n\n"
            ":::gm\nhe is a spy\n:::\n"
            "Quiet night. <!-- ambush --> Rain %% twist %% fell.\n"
            '<section class="secret">curse</section>\n\n'
            "## GM notes\n\nbetrayal\n"
        )


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.blocks = Blocks(self.rng)

    def new_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def timestamp(self, *, null_share: float = 0.0, after: str | None = None) -> str | None:
        if null_share and self.rng.random() < null_share:
            return None
        moment = EPOCH + timedelta(seconds=self.rng.randrange(SPAN_S))
        if after is not None:
            moment = datetime.fromisoformat(after) + timedelta(seconds=self.rng.randrange(1, 90 * 86400))
        return moment.astimezone(self.rng.choice(OFFSETS)).isoformat()

    def sort_order(self) -> int | None:
        return None if self.rng.random() < 0.2 else self.rng.randrange(100)

    def place_name(self) -> str:
        rng = self.rng
        return f"{rng.choice(NAME_PARTS)} {rng.choice(WORDS).title()}" + (
            f" {rng.choice(WORDS)}" if rng.random() < 0.5 else ""
        )

    def description(self, title: str) -> str | None:
        roll = self.rng.random()
        if roll < 0.1:
            return None
        if roll < 0.15:
            return "<!-- only GM notes here -->\n:::gm\nall secret\n:::\n"
        return self.blocks.document(title, self.rng.randint(150, 4000))

    def session(self, campaign_id: str, number: int, *, public: bool, size: int | None = None) -> dict[str, Any]:
        rng = self.rng
        title = f"Session {number}: {self.blocks._words(2, 5).title()}"
        created = self.timestamp()
        if size is None:
            size = int(rng.triangular(200, 20_000, 3_000))
        known = size is not None  # the benchmarked sessions always have a summary
        summary = self.blocks.tiny_document(title) if size <= 250 else self.blocks.document(title, size)
        return {
            "id": self.new_id(),
            "campaign_id": campaign_id,
            "title": title,
            "status": rng.choice(("completed", "completed", "completed", "processing", "failed")),
            "recording_date": self.timestamp(null_share=0.1),
            "created_at": created,
            "updated_at": self.timestamp(after=created) if rng.random() < 0.9 else None,
            "session_type": rng.choice(("audio", "text_doc")),
            "visibility": "public" if public else "private",
            "summary": summary if known or rng.random() < 0.97 else None,
        }

    def entity(self, campaign_id: str, kind: str, *, hidden: bool | None = None) -> dict[str, Any]:
        rng = self.rng
        name = self.place_name() if kind == "locations" else self.blocks._words(1, 3).title()
        created = self.timestamp(null_share=0.05)
        record: dict[str, Any] = {
            "id": self.new_id(),
            "campaign_id": campaign_id,
            "name": name,
            "icon": rng.choice(ICONS),
            "hidden_from_wiki": rng.random() < 0.1 if hidden is None else hidden,
            "type": rng.choice(PLACE_KINDS if kind == "locations" else ENTITY_TYPES[kind]),
            "image_url": f"https://img.example.org/{kind}/{rng.randrange(10**6)}.png" if rng.random() < 0.5 else None,
            "sort_order": self.sort_order(),
            "description": self.description(name),
            "created_at": created,
            "updated_at": self.timestamp(after=created) if created and rng.random() < 0.8 else None,
        }
        return record


class StreamWriter:
    """`{"array": [record, ...], ...}` written record by record."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("wb", buffering=4 << 20)
        self.file.write(b"{")
        self.arrays = 0
        self.in_array = 0
        self.bytes = 1

    def array(self, name: str, records: Iterator[dict[str, Any]]) -> int:
        write = self.file.write
        head = (b"," if self.arrays else b"") + orjson.dumps(name) + b":["
        write(head)
        count = 0
        dumps = orjson.dumps
        for record in records:
            data = dumps(record)
            if count:
                write(b",\n")
            write(data)
            count += 1
        write(b"]")
        self.arrays += 1
        return count

    def close(self) -> None:
        self.file.write(b"}\n")
        self.file.close()


def location_records(gen: Generator, campaign_id: str, total: int, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """A four-level hierarchy, shuffled so some children precede their parents.

    Held in memory to shuffle: 20,000 records with descriptions are ~40 MB.
    """
    level_sizes = [20, 380, 3600]
    level_sizes.append(total - sum(level_sizes))
    levels: list[list[dict[str, Any]]] = []
    for depth, size in enumerate(level_sizes):
        records = []
        for _ in range(size):
            record = gen.entity(campaign_id, "locations")
            record["parent_id"] = gen.rng.choice(levels[depth - 1])["id"] if depth else None
            records.append(record)
        levels.append(records)
    # The benchmarked location: a visible region with visible children and a description.
    children_count: dict[str, int] = {}
    for record in levels[2]:
        if not record["hidden_from_wiki"]:
            children_count[record["parent_id"]] = children_count.get(record["parent_id"], 0) + 1
    chosen = next(
        r for r in levels[1] if not r["hidden_from_wiki"] and r["description"] and children_count.get(r["id"], 0) >= 5
    )
    manifest["location_id"] = chosen["id"]
    manifest["location_visible_children"] = children_count[chosen["id"]]
    records = [record for level in levels for record in level]
    gen.rng.shuffle(records)
    return records


def generate(
    out: Path, *, seed: int, public_sessions: int, private_sessions: int, locations: int, entities: int
) -> dict[str, Any]:
    gen = Generator(seed)
    user_id, campaign_id, other_campaign_id = gen.new_id(), gen.new_id(), gen.new_id()
    manifest: dict[str, Any] = {
        "seed": seed,
        "user_id": user_id,
        "campaign_id": campaign_id,
        "other_campaign_id": other_campaign_id,
    }
    writer = StreamWriter(out)
    counts = {}
    counts["users"] = writer.array("users", iter([{"id": user_id, "name": "Benchmark GM"}]))
    counts["campaigns"] = writer.array(
        "campaigns",
        iter(
            [
                {"id": campaign_id, "name": "Benchmark campaign", "owner_id": user_id},
                {"id": other_campaign_id, "name": "Other campaign", "owner_id": user_id},
            ]
        ),
    )

    total_sessions = public_sessions + private_sessions
    # Known records at fixed positions in the (seeded) sequence.
    big_at, small_at = total_sessions // 3, total_sessions // 2

    def sessions() -> Iterator[dict[str, Any]]:
        private_left, public_left = private_sessions, public_sessions
        for number in range(total_sessions):
            if number in (big_at, small_at):
                public = True
            else:
                remaining = private_left + public_left
                public = gen.rng.random() >= private_left / remaining if remaining else True
            if public:
                public_left -= 1
            else:
                private_left -= 1
            size = 20_000 if number == big_at else 200 if number == small_at else None
            record = gen.session(campaign_id, number + 1, public=public, size=size)
            if number == big_at:
                record["recording_date"] = "2024-03-01T19:00:00+00:00"
                manifest["session_20kb_id"] = record["id"]
                manifest["session_20kb_bytes"] = len(record["summary"].encode())
            elif number == small_at:
                record["recording_date"] = "2024-03-02T19:00:00+00:00"
                manifest["session_200b_id"] = record["id"]
                manifest["session_200b_bytes"] = len(record["summary"].encode())
            yield record
        for number in range(5):
            yield gen.session(other_campaign_id, number + 1, public=True)

    counts["sessions"] = writer.array("sessions", sessions())

    def wiki_locations() -> Iterator[dict[str, Any]]:
        yield from location_records(gen, campaign_id, locations, manifest)
        roots: list[str] = []
        for _ in range(5):
            record = gen.entity(other_campaign_id, "locations", hidden=False)
            record["parent_id"] = roots[0] if roots else None
            roots.append(record["id"])
            yield record

    counts["locations"] = writer.array("locations", wiki_locations())
    for kind in ("characters", "factions", "items"):

        def entity_records(kind: str = kind) -> Iterator[dict[str, Any]]:
            for _ in range(entities):
                yield gen.entity(campaign_id, kind)
            for _ in range(3):
                yield gen.entity(other_campaign_id, kind)

        counts[kind] = writer.array(kind, entity_records())
    writer.close()
    manifest["counts"] = counts
    manifest["public_sessions"] = public_sessions
    manifest["bytes"] = out.stat().st_size
    return manifest


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".manifest.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--public-sessions", type=int, default=112_000)
    parser.add_argument("--private-sessions", type=int, default=12_000)
    parser.add_argument("--locations", type=int, default=20_000)
    parser.add_argument("--entities", type=int, default=10_000, help="characters, factions and items each")
    parser.add_argument("--force", action="store_true", help="regenerate even if an identical export exists")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # Same generator, same parameters, same size on disk: the bytes would be the same.
    fingerprint = {
        "generator": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "arguments": [args.seed, args.public_sessions, args.private_sessions, args.locations, args.entities],
    }
    existing = manifest_path(args.out)
    if not args.force and args.out.exists() and existing.exists():
        previous = orjson.loads(existing.read_bytes())
        if previous.get("fingerprint") == fingerprint and previous.get("bytes") == args.out.stat().st_size:
            print(f"generate: {args.out} is up to date ({previous['bytes'] / 1e6:.0f} MB)", file=sys.stderr)
            return 0
    started = time.perf_counter()
    manifest = generate(
        args.out,
        seed=args.seed,
        public_sessions=args.public_sessions,
        private_sessions=args.private_sessions,
        locations=args.locations,
        entities=args.entities,
    )
    manifest["generate_s"] = round(time.perf_counter() - started, 1)
    manifest["fingerprint"] = fingerprint
    manifest_path(args.out).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    print(
        f"generate: {manifest['bytes'] / 1e6:.0f} MB, {sum(manifest['counts'].values())} records "
        f"in {manifest['generate_s']} s -> {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
