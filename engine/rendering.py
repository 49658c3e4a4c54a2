"""Public Markdown rendered for the write path, on every core once there is enough of it.

`engine.markdown.render_public` costs about 1.8 ms of CPU per KB of raw Markdown (mdformat,
pure Python: two parses, three renders), which makes it the expensive part of an import. A `RenderPool`
renders small amounts in the calling process and, past `inline_bytes` of raw Markdown,
hands the rest to worker processes (spawned, so they inherit no database connection or
event loop of the caller), in chunks of about `CHUNK_BYTES` so that every worker stays
busy. Each job also yields the digest of the record's single-record body, which needs
the rendering and is the other part of the work that grows with the text.

Workers import this module, `engine.markdown` and `engine.public_body` only.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from engine.markdown import RENDERER_VERSION, render_public
from engine.public_body import RENDERED_FIELDS, body_digest

# Versions are stored and compared as numbers: a row rendered by a lower version than this
# one is stale (engine/renderings.py).
CURRENT_RENDERER = int(RENDERER_VERSION)
# About 0.2 s of rendering: large enough that sending a chunk costs little beside it,
# small enough that the last chunks of a batch spread over every worker.
CHUNK_BYTES = 64 * 1024
# Below this much raw Markdown (a few seconds of rendering) starting processes costs more
# than it saves: small imports, the demo, tests.
INLINE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class RenderJob:
    record_type: str
    # The record's single-record body fields other than the two rendered ones.
    fields: dict[str, Any]
    source: str | None

    @property
    def size(self) -> int:
        """Bytes of raw Markdown (UTF-8)."""
        return len(self.source.encode("utf-8", "surrogatepass")) if self.source else 0


@dataclass(frozen=True, slots=True)
class Rendering:
    markdown: str
    text: str
    body_digest: str


def render(job: RenderJob) -> Rendering:
    public = render_public(job.source)
    markdown_field, text_field = RENDERED_FIELDS[job.record_type]
    values = {**job.fields, markdown_field: public.markdown, text_field: public.text}
    return Rendering(public.markdown, public.text, body_digest(job.record_type, values))


def render_all(jobs: Sequence[RenderJob]) -> list[Rendering]:
    return [render(job) for job in jobs]


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class RenderPool:
    """Renders jobs here until `inline_bytes` of raw Markdown have gone through, then on
    `processes` worker processes (none when `processes` is 1). Close it when done."""

    def __init__(self, *, processes: int | None = None, inline_bytes: int = INLINE_BYTES) -> None:
        self.processes = processes if processes is not None else available_cores()
        self._inline_left = inline_bytes
        self._executor: Executor | None = None

    @property
    def parallel(self) -> bool:
        """Whether worker processes have been started."""
        return self._executor is not None

    def submit(self, jobs: Sequence[RenderJob]) -> asyncio.Future[list[Rendering]]:
        """The renderings of `jobs`, in order; rendered at once when they stay inline."""
        size = sum(job.size for job in jobs)
        if self.processes <= 1 or size <= self._inline_left:
            self._inline_left -= size
            done: asyncio.Future[list[Rendering]] = asyncio.get_running_loop().create_future()
            done.set_result(render_all(jobs))
            return done
        executor = self._start()
        parts = [asyncio.wrap_future(executor.submit(render_all, chunk)) for chunk in _chunks(jobs)]
        return asyncio.ensure_future(_joined(parts))

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _start(self) -> Executor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"))
        return self._executor


def _chunks(jobs: Sequence[RenderJob]) -> list[list[RenderJob]]:
    chunks: list[list[RenderJob]] = [[]]
    size = 0
    for job in jobs:
        if size >= CHUNK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(job)
        size += job.size
    return chunks


async def _joined(parts: list[asyncio.Future[list[Rendering]]]) -> list[Rendering]:
    return [rendering for part in await asyncio.gather(*parts) for rendering in part]
