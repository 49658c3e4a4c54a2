"""What 100 KB of dense Markdown costs to render, against what the libraries alone cost.

    python -m tests.benchmarks.render_floor [--size 100000] [--runs 2]

For inputs made of tens of thousands of tiny blocks or inline nodes (the slowest shapes
found for `render_public`), prints CPU seconds of:

- `render_public` (GM stripping, normalization to a fixed point, the text form);
- stock `mdformat.text(raw, extensions={"gfm"})`: one parse and one render by the
  libraries the renderer is built on, nothing of ours (skipped where the stock code takes
  time in n squared: lists and task lists);
- markdown-it-py's own CommonMark parse alone, the floor of any renderer on markdown-it;
- 100 KB of ordinary Markdown (the benchmark generator's summaries), for scale.

Figures are the minimum over `--runs` of `time.process_time()` with the cyclic collector
off, as during a render.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable

import mdformat
from markdown_it import MarkdownIt

from engine.markdown import render_public
from tests.benchmarks.generate import Blocks


def shapes(size: int) -> dict[str, tuple[str, bool]]:
    """name -> (raw Markdown of about `size` bytes, whether stock mdformat is linear on it)."""

    def repeat(unit: str, stock_linear: bool = True) -> tuple[str, bool]:
        return unit * (size // len(unit)), stock_linear

    return {
        "list items `- a`": repeat("- a\n", stock_linear=False),
        "ordered items `1. a`": repeat("1. a\n", stock_linear=False),
        "task items `- [ ] a`": repeat("- [ ] a\n", stock_linear=False),
        "paragraphs `a`": repeat("a\n\n"),
        "ATX headings `# a`": repeat("# a\n"),
        "setext headings": repeat("a\n-\n\n"),
        "one-link paragraphs": repeat("[a](b)\n\n"),
        "quote lines `> a`": repeat("> a\n"),
        "table rows": ("|a|b|\n|-|-|\n" + "|a|b|\n" * ((size - 12) // 6), True),
        "`![` run closed by `]`": ("![" * (size // 2 - 1) + "]", True),
        "`[` run closed by `]`": ("[" * (size - 1) + "]", True),
        "emphasis paragraph": repeat("*a* "),
        "ordinary Markdown": (Blocks(random.Random(7)).document("Reference", size), True),
    }


def cpu_s(work: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.disable()
        try:
            started = time.process_time()
            work()
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    commonmark = MarkdownIt("commonmark")
    print(f"CPU seconds for {args.size:,} bytes, best of {args.runs}")
    print(f"{'input':28} {'render_public':>14} {'stock mdformat':>15} {'markdown-it parse':>18}")
    for name, (raw, stock_linear) in shapes(args.size).items():
        ours = cpu_s(lambda raw=raw: render_public(raw), args.runs)
        stock = cpu_s(lambda raw=raw: mdformat.text(raw, extensions={"gfm"}), args.runs) if stock_linear else None
        parse = cpu_s(lambda raw=raw: commonmark.parse(raw), args.runs)
        stock_shown = f"{stock:15.2f}" if stock is not None else f"{'n squared':>15}"
        print(f"{name:28} {ours:14.2f} {stock_shown} {parse:18.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
