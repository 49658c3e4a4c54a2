"""What an import costs now that it renders: figures for one export, printed as a table.

    python tests/benchmarks/import_cost.py --export artifacts/bench/export.json [--baseline-rev ad3911f]

1. The renderer alone, per KB of raw Markdown, on a sample of the export's summaries (CPU
   time, in this process): `render_public` whole, and its parts through the public
   functions of engine.markdown: `strip_gm_content` (removal and normalization, at least
   two mdformat passes), `markdown_to_text` (one more), and one pass over text that is
   already normalized (half of `strip_gm_content` on its own output).
2. `campaign-api import` into a fresh PostgreSQL database (first import: every summary
   rendered on every core), then the same file again (nothing changed: nothing written).
3. The baseline: version `--baseline-rev` (1.0.0, before rendering moved to write time,
   extracted with `git archive`) importing the same file twice into a database of its own
   schema; its second import is a plain upsert of every row. The target for an unchanged
   re-import is at most 1.2x that.

Wall time, CPU time (the import and its rendering processes) and peak RSS (its processes
together) of each import. Databases are created and dropped; nothing else is left behind.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.run import CLI, base_env, log, postgres_database, timed_import  # noqa: E402

SAMPLE = 300


def renderer_cost(export: Path) -> dict[str, float]:
    """ms of CPU per KB of raw Markdown, for the renderer and its parts."""
    from engine.export_stream import iter_records
    from engine.markdown import markdown_to_text, render_public, strip_gm_content

    summaries = [
        raw["summary"]
        for array, _, raw in iter_records(export, arrays=_ARRAYS, wanted=("sessions",))
        if array == "sessions" and raw.get("summary")
    ]
    sample = random.Random(7).sample(summaries, min(SAMPLE, len(summaries)))
    kilobytes = sum(len(raw.encode()) for raw in sample) / 1024
    normalized = [strip_gm_content(raw) for raw in sample]

    def per_kb(work: Any, inputs: list[str]) -> float:
        started = time.process_time()
        for text in inputs:
            work(text)
        return (time.process_time() - started) * 1000 / kilobytes

    return {
        "sample_kb": kilobytes,
        "render_public": per_kb(render_public, sample),
        "strip_gm_content": per_kb(strip_gm_content, sample),
        "markdown_to_text": per_kb(markdown_to_text, normalized),
        "one_pass": per_kb(strip_gm_content, normalized) / 2,
    }


_ARRAYS = ("users", "campaigns", "sessions", "locations", "characters", "factions", "items")


def baseline_tree(revision: str, directory: Path) -> Path:
    """The source of `revision`, extracted (the repository's objects are only read)."""
    archive = directory / "baseline.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), revision], check=True)
    source = directory / "baseline"
    with tarfile.open(archive) as tar:
        tar.extractall(source, filter="data")
    return source


# The baseline's own CLI, from the tree PYTHONPATH names: the editable install's import
# finder, which would serve this checkout's modules first, is taken out; the CLI lived in
# engine/cli.py before it moved to rest/cli.py.
BASELINE_CLI = [
    sys.executable,
    "-c",
    "import importlib, importlib.util, sys; "
    "sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]; "
    "cli = 'rest.cli' if importlib.util.find_spec('rest.cli') else 'engine.cli'; "
    "sys.exit(importlib.import_module(cli).main())",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, required=True)
    parser.add_argument("--baseline-rev", default="ad3911f")
    args = parser.parse_args(argv)
    export: Path = args.export.resolve()
    size_mb = export.stat().st_size / 1e6

    log(f"renderer cost on {SAMPLE} summaries")
    cost = renderer_cost(export)
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="import-cost-") as workdir:
        work = Path(workdir)
        with postgres_database() as url:
            env = base_env(url, "redis://127.0.0.1:1/0", pepper="x" * 32)
            subprocess.run([str(CLI), "db", "upgrade"], env=env, cwd=work, check=True, capture_output=True)
            for name in ("first import", "unchanged re-import"):
                log(f"{name} ({size_mb:.0f} MB)")
                figures[name] = timed_import(env, work, export, work / f"{name}.log")
        source = baseline_tree(args.baseline_rev, work)
        with postgres_database() as url:
            env = {**base_env(url, "redis://127.0.0.1:1/0", pepper="x" * 32), "PYTHONPATH": str(source)}
            subprocess.run([*BASELINE_CLI, "db", "upgrade"], env=env, cwd=source, check=True, capture_output=True)
            for name in (f"{args.baseline_rev}: first import", f"{args.baseline_rev}: re-import (plain upsert)"):
                log(name)
                figures[name] = timed_import(
                    env, source, export, work / "baseline.log", importer=[*BASELINE_CLI, "import"]
                )

    print(f"\nRenderer, ms of CPU per KB of raw Markdown ({cost['sample_kb']:,.0f} KB sampled from {export.name}):")
    for part in ("render_public", "strip_gm_content", "markdown_to_text", "one_pass"):
        print(f"  {part:18} {cost[part]:6.2f}")
    print(f"\nImports of {export.name} ({size_mb:,.0f} MB) on PostgreSQL, {os.cpu_count()} CPUs:")
    print(f"  {'':46} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
    for name, figure in figures.items():
        print(f"  {name:46} {figure['wall_s']:8.1f} {figure['cpu_s']:8.1f} {figure['peak_rss_mb']:12.0f}")
    unchanged = figures["unchanged re-import"]["wall_s"]
    plain = figures[f"{args.baseline_rev}: re-import (plain upsert)"]["wall_s"]
    print(f"\n  unchanged re-import / plain upsert: {unchanged / plain:.2f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
