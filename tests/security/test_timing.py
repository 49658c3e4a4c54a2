"""Absent, hidden and foreign ids take the same time: one code path, one query.

Requests for the three kinds are interleaved (a shuffled triple per round) so that drift
in the machine's load hits all three alike; each kind's median is compared with the
others'. The tolerance comes from the measured spread: the larger of 2 ms and three times
the larger median absolute deviation. A lookup that answered "hidden" differently from
"absent" (an extra query, an early return) would show as a shift of the median well
beyond that.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import AsyncIterator
from urllib.parse import quote

import httpx
import pytest

from tests.security.world import PREFIX, RECORD_TYPE_BY_PATH, RecordType, World, asgi_client, settings_for

ROUNDS = 200
WARM_UP_ROUNDS = 20
FLOOR_S = 0.002


@pytest.fixture(scope="module")
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(settings_for(world)) as http:
        http.headers.update(world.auth)
        yield http


def _mad(samples: list[float]) -> float:
    median = statistics.median(samples)
    return statistics.median(abs(sample - median) for sample in samples)


# Sessions and wiki entities are read by two functions; each is timed on one backend.
PATH_BY_BACKEND = {"postgresql": "sessions", "sqlite": "characters"}


async def test_absent_hidden_and_foreign_ids_take_the_same_time(client: httpx.AsyncClient, world: World) -> None:
    path = PATH_BY_BACKEND[world.backend]
    record_type: RecordType = RECORD_TYPE_BY_PATH[path]
    ids = world.ids[path]
    kinds = {"absent": world.absent_id(record_type), "hidden": ids.hidden[0], "foreign": ids.foreign[0]}
    urls = {kind: f"{PREFIX}/{path}/{quote(record_id, safe='')}" for kind, record_id in kinds.items()}
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    order = list(kinds)
    shuffle = random.Random(20240501).shuffle
    for round_number in range(WARM_UP_ROUNDS + ROUNDS):
        shuffle(order)
        for kind in order:
            started = time.perf_counter()
            response = await client.get(urls[kind])
            elapsed = time.perf_counter() - started
            assert response.status_code == 404
            if round_number >= WARM_UP_ROUNDS:
                samples[kind].append(elapsed)

    medians = {kind: statistics.median(values) for kind, values in samples.items()}
    tolerance = max(FLOOR_S, 3 * max(_mad(values) for values in samples.values()))
    report = ", ".join(f"{kind} {median * 1000:.2f} ms" for kind, median in medians.items())
    assert max(medians.values()) - min(medians.values()) <= tolerance, (
        f"medians differ by more than {tolerance * 1000:.2f} ms: {report}"
    )
