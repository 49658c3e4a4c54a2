"""How render time grows with the size of an input: a check for time in n squared that
holds on a loaded machine (a ratio of two sizes, each the best of two runs)."""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.markdown import render_public


def cpu_ratio_of_8x_the_input(make_raw: Callable[[int], str], count: int) -> float:
    """CPU time of rendering `make_raw(8 * count)` over that of `make_raw(count)`: about
    8 when rendering is linear, 64 when it takes time in n squared."""

    def cpu(size: int) -> float:
        raw = make_raw(size)
        started = time.process_time()
        render_public(raw)
        return time.process_time() - started

    cpu(count // 10)  # warm
    return min(cpu(8 * count) for _ in range(2)) / min(cpu(count) for _ in range(2))
