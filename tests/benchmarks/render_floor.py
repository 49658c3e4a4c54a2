"""What 100 KB of dense Markdown costs to render, against what the libraries alone cost.

    python -m tests.benchmarks.render_floor [--size 100000] [--runs 2]

For inputs made of tens of thousands of tiny blocks or inline nodes (the slowest shapes
found for `render_public`), prints CPU seconds of:

- `render_public` (GM stripping, normalization to a fixed point, the text form);
- stock `mdformat.text(raw, extensions={"gfm"})`: one parse and one render by the
  libraries the renderer is built on, nothing of ours but the two text helpers that
  engine/mdformat_speedups.py replaces in the whole process (same output, less time;
  skipped where the stock code takes time in n squared: lists, task lists and paragraphs
  of thousands of lines);
- markdown-it-py's own CommonMark parse alone, the floor of any renderer on markdown-it;
- 100 KB of ordinary Markdown (the benchmark generator's summaries), for scale.

and the import's estimate of the render (engine/markdown_cost.py, in millions of render
units, about seconds here), which must not fall below the render's CPU on any shape.

Then, for each shape, the largest input the importer accepts (its estimate within the
budget) and what rendering it costs: the worst of these is the most CPU an accepted text
under 100 KB can take.

Figures are the minimum over `--runs` of `time.process_time()` with the cyclic collector
off, as during a render.
"""

from __future__ import annotations

import argparse
import functools
import gc
import random
import sys
import time
from collections.abc import Callable

import mdformat
from markdown_it import MarkdownIt

from engine.markdown import render_public
from engine.markdown_cost import render_cost
from tests.benchmarks.generate import Blocks

Shape = Callable[[int], str]


def _repeat(unit: str) -> Shape:
    return lambda size: unit * (size // len(unit))


@functools.cache
def _blocks() -> Blocks:
    return Blocks(random.Random(7))


# name -> (raw Markdown of about `size` bytes, whether stock mdformat is linear on it).
SHAPES: dict[str, tuple[Shape, bool]] = {
    "list items `- a`": (_repeat("- a\n"), False),
    "ordered items `1. a`": (_repeat("1. a\n"), False),
    "task items `- [ ] a`": (_repeat("- [ ] a\n"), False),
    "paragraphs `a`": (_repeat("a\n\n"), True),
    "ATX headings `# a`": (_repeat("# a\n"), True),
    "setext headings": (_repeat("a\n-\n\n"), True),
    "one-link paragraphs": (_repeat("[a](b)\n\n"), True),
    "quote lines `> a`": (_repeat("> a\n"), True),
    "table rows": (lambda size: "|a|b|\n|-|-|\n" + "|a|b|\n" * ((size - 12) // 6), True),
    "`![` run closed by `]`": (lambda size: "![" * (size // 2 - 1) + "]", True),
    "`[` run closed by `]`": (lambda size: "[" * (size - 1) + "]", True),
    "emphasis paragraph": (_repeat("*a* "), True),
    "`1) a` items": (_repeat("1) a\n"), False),
    "`* a` items": (_repeat("* a\n"), False),
    "nested items `- - - - a`": (_repeat("- - - - a\n"), False),
    "items `- 1) a`": (_repeat("- 1) a\n"), False),
    "8-column table rows": (
        lambda size: "|a|b|c|d|e|f|g|h|\n|-|-|-|-|-|-|-|-|\n" + "|a|b|c|d|e|f|g|h|\n" * (size // 18),
        True,
    ),
    "wide table header": (lambda size: "|" + "a|" * (size // 4) + "\n|" + "-|" * (size // 4) + "\n", True),
    "dollar paragraph `$a$`": (_repeat("$a$ "), True),
    "lines of `<`": (_repeat("<\n"), False),
    "lines of `&`": (_repeat("&\n"), False),
    "lines of `[`": (_repeat("[\n"), False),
    "lines of `_`": (_repeat("_\n"), False),
    "items `- npc_1`": (lambda size: "".join(f"- npc_{number}\n" for number in range(size // 11)), False),
    "items through quotes `1) > `": (_repeat("1) > " * 5 + "a\n"), False),
    "e-mail autolinks `a@b.c`": (_repeat("a@b.c\t"), True),
    "emphasized e-mail pairs": (_repeat("*a@b.c\ta@b.c*\t"), True),
    "www autolinks `www.a.b`": (_repeat("www.a.b\t"), True),
    "ordinary Markdown": (lambda size: _blocks().document("Reference", size), True),
}


def shapes(size: int) -> dict[str, tuple[str, bool]]:
    """name -> (raw Markdown of about `size` bytes, whether stock mdformat is linear on it)."""
    return {name: (make(size), stock_linear) for name, (make, stock_linear) in SHAPES.items()}


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
    print(f"{'input':28} {'render_public':>14} {'stock mdformat':>15} {'markdown-it parse':>18} {'estimate':>9}")
    for name, (raw, stock_linear) in shapes(args.size).items():
        ours = cpu_s(lambda raw=raw: render_public(raw), args.runs)
        stock = cpu_s(lambda raw=raw: mdformat.text(raw, extensions={"gfm"}), args.runs) if stock_linear else None
        parse = cpu_s(lambda raw=raw: commonmark.parse(raw), args.runs)
        stock_shown = f"{stock:15.2f}" if stock is not None else f"{'n squared':>15}"
        estimate = render_cost(raw).units / 1e6
        print(f"{name:28} {ours:14.2f} {stock_shown} {parse:18.2f} {estimate:9.2f}", flush=True)
    print(f"\nAt the import limit: the largest accepted input of each shape, best of {args.runs}")
    print(f"{'input':28} {'bytes':>8} {'render_public':>14}")
    worst = 0.0
    for name, (make, _) in SHAPES.items():
        accepted = largest_accepted(make, args.size)
        ours = cpu_s(lambda accepted=accepted: render_public(accepted), args.runs)
        worst = max(worst, ours)
        print(f"{name:28} {len(accepted.encode()):8,} {ours:14.2f}", flush=True)
    print(f"{'worst':28} {'':8} {worst:14.2f}")
    return 0


def largest_accepted(make: Shape, size: int) -> str:
    """The largest input of the shape, up to `size` bytes, within the import's render
    budget (a bisection: the estimate grows with the size)."""
    low, high = 0, size
    while low < high:
        middle = (low + high + 1) // 2
        cost = render_cost(make(middle))
        if cost.units <= cost.budget:
            low = middle
        else:
            high = middle - 1
    return make(low)


if __name__ == "__main__":
    sys.exit(main())
