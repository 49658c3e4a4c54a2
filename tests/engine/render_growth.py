"""How render time grows with an input: checks for time in n squared that hold on a slow
or loaded machine, because each compares two renders measured in the same run."""

from __future__ import annotations

import functools
import gc
import random
import time
from collections.abc import Callable

from engine.markdown import PublicMarkdown, render_public
from tests.benchmarks.generate import Blocks


def timed_render(raw: str) -> tuple[PublicMarkdown, float]:
    """One render of `raw` and its CPU time, the cyclic collector off throughout, as during
    a render. Otherwise the collection its first allocation may trigger walks this test
    process's whole heap, hypothesis's included: twice in 60,000 examples a document that
    renders in 2 ms measured over a second."""
    gc.disable()
    try:
        started = time.process_time()
        public = render_public(raw)
        return public, time.process_time() - started
    finally:
        gc.enable()


def render_cpu_s(raw: str) -> float:
    return timed_render(raw)[1]


def cpu_ratio_of_8x_the_input(make_raw: Callable[[int], str], count: int) -> float:
    """CPU time of rendering `make_raw(8 * count)` over that of `make_raw(count)`: about
    8 when rendering is linear, 64 when it takes time in n squared."""
    render_cpu_s(make_raw(count // 10))  # warm
    large, small = make_raw(8 * count), make_raw(count)
    return min(render_cpu_s(large) for _ in range(2)) / min(render_cpu_s(small) for _ in range(2))


@functools.cache
def ordinary_markdown(size: int) -> str:
    """`size` bytes of ordinary wiki Markdown: the benchmark generator's summaries
    (headings, paragraphs, lists, quotes, tables, links, one part of each GM-only form)."""
    return Blocks(random.Random(7)).document("Reference", size)


def ordinary_markdown_cpu_s(size: int) -> float:
    """CPU time of one render of `ordinary_markdown(size)`."""
    return render_cpu_s(ordinary_markdown(size))
