"""Concurrent load over every v1 endpoint, each answer checked against the one it should be.

The probes come from the route table: for each resource of `rest.routes.RESOURCES` its
list (a full first page, a page of one, the page after it by cursor) and its record (a
visible one, and one that must be a 404); then any other GET route of the API that the
served OpenAPI document lists without path parameters (the change feed, once it lands),
as it is. A templated route the table does not explain fails the build of the probes: it
needs a probe of its own here.

What each probe should answer is read once, one request at a time, from a reference
server that talks to PostgreSQL directly, and checked against the contract campaign
(the list's ids, the record's id). Under load every answer must then be byte for byte
that one: a 200 with another endpoint's rows is as wrong as a 500.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import orjson

from rest.routes import PREFIX, RESOURCES
from tests.contract.campaign import HIDDEN_IDS, VISIBLE_ID, expected_list
from tests.contract.client import ApiClient


@dataclass(frozen=True, slots=True)
class Probe:
    """One request and the exact answer it must get."""

    path: str
    params: tuple[tuple[str, str], ...] = ()
    status: int = 0
    body: bytes = b""

    def label(self) -> str:
        query = "&".join(f"{name}={value}" for name, value in self.params)
        return f"{self.path}?{query}" if query else self.path


def reference_probes(base_url: str, token: str) -> list[Probe]:
    """Every probe with the answer the reference server at `base_url` gives it."""
    with ApiClient(base_url) as client:
        paths = client.get("/openapi.json").json()["paths"]
    api_routes = [path for path, operations in paths.items() if path.startswith(PREFIX) and "get" in operations]
    return with_answers(base_url, token, probe_requests(api_routes))


def probe_requests(api_routes: Sequence[str]) -> list[Probe]:
    """Every probe, without its answer yet, for the API's GET routes (path templates)."""
    probes: list[Probe] = []
    explained = set()
    for resource in RESOURCES:
        collection = f"{PREFIX}/{resource.path}"
        probes += [Probe(collection), Probe(collection, (("limit", "1"),))]
        probes += [Probe(f"{collection}/{VISIBLE_ID[resource.path]}"), Probe(_hidden_record(resource.path))]
        explained |= {collection, f"{collection}/{{id}}"}
    for path in api_routes:
        if path in explained:
            continue
        assert "{" not in path, f"{path}: a route with path parameters needs its own probe in tests/cluster/load.py"
        probes.append(Probe(path))
    assert explained <= set(api_routes), "the route table and the served routes differ"
    return probes


def with_answers(base_url: str, token: str, probes: Sequence[Probe]) -> list[Probe]:
    """The probes with the answers a reference server gives them, one at a time; each list's
    second page added (by the cursor of its page of one)."""
    answered = []
    with ApiClient(base_url) as client:
        for probe in probes:
            response = client.get(probe.path, params=dict(probe.params), headers={"Authorization": f"Bearer {token}"})
            answered.append(Probe(probe.path, probe.params, response.status_code, response.content))
            if probe.params == (("limit", "1"),):
                cursor = response.json()["pagination"]["next_cursor"]
                assert cursor, probe.label()
                nxt = Probe(probe.path, (("limit", "1"), ("cursor", cursor)))
                following = client.get(nxt.path, params=dict(nxt.params), headers={"Authorization": f"Bearer {token}"})
                answered.append(Probe(nxt.path, nxt.params, following.status_code, following.content))
    _check_against_the_campaign(answered)
    return answered


def _hidden_record(path: str) -> str:
    return f"{PREFIX}/{path}/{HIDDEN_IDS[path][0]}"


def _check_against_the_campaign(probes: Sequence[Probe]) -> None:
    """The reference answers are the contract campaign's records, not merely what the
    reference server said."""
    by_label = {probe.label(): probe for probe in probes}
    for resource in RESOURCES:
        collection = f"{PREFIX}/{resource.path}"
        full = by_label[collection]
        assert full.status == 200, full
        ids = [item["id"] for item in orjson.loads(full.body)["data"]]
        assert ids == [item["id"] for item in expected_list(resource.path)][: len(ids)] and ids, collection
        record = by_label[f"{collection}/{VISIBLE_ID[resource.path]}"]
        assert record.status == 200 and orjson.loads(record.body)["id"] == VISIBLE_ID[resource.path], record
        hidden = by_label[_hidden_record(resource.path)]
        assert hidden.status == 404, hidden


@dataclass(frozen=True, slots=True)
class Outcome:
    probe: Probe
    started: float  # time.monotonic()
    finished: float
    status: int | None  # None: no HTTP answer at all
    body: bytes

    @property
    def as_expected(self) -> bool:
        return (self.status, self.body) == (self.probe.status, self.probe.body)

    def describe(self) -> str:
        return f"{self.probe.label()}: {self.status} {self.body[:200]!r}, expected {self.probe.status}"


@dataclass(slots=True)
class Load:
    """`clients` clients, each sending the probes in a random order one after the other,
    until `stop()`; what each request got."""

    base_url: str
    token: str
    probes: Sequence[Probe]
    clients: int = 8
    source_ips: Sequence[str | None] = (None,)
    timeout_s: float = 30.0
    _stopping: threading.Event = field(default_factory=threading.Event)
    _pool: ThreadPoolExecutor | None = None
    _running: list[Future[list[Outcome]]] = field(default_factory=list)

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(self.clients)
        self._running = [self._pool.submit(self._client, n) for n in range(self.clients)]

    def stop(self) -> list[Outcome]:
        self._stopping.set()
        outcomes = [outcome for running in self._running for outcome in running.result()]
        assert self._pool is not None
        self._pool.shutdown()
        return outcomes

    def run_for(self, seconds: float) -> list[Outcome]:
        self.start()
        time.sleep(seconds)
        return self.stop()

    def _client(self, number: int) -> list[Outcome]:
        outcomes = []
        order = random.Random(number)
        source_ip = self.source_ips[number % len(self.source_ips)]
        headers = {"Authorization": f"Bearer {self.token}"}
        # A plain client: what a proxy answers itself (a 502) is an outcome, not a failed check;
        # the API's answers are compared byte for byte with the reference's, which passed them.
        transport = httpx.HTTPTransport(local_address=source_ip)
        with httpx.Client(base_url=self.base_url, transport=transport, timeout=self.timeout_s) as client:
            while not self._stopping.is_set():
                probe = order.choice(self.probes)
                started = time.monotonic()
                try:
                    response = client.get(probe.path, params=dict(probe.params), headers=headers)
                    status, body = response.status_code, response.content
                except httpx.TransportError as exc:
                    status, body = None, repr(exc).encode()
                outcomes.append(Outcome(probe, started, time.monotonic(), status, body))
        return outcomes


def failures(outcomes: Sequence[Outcome]) -> list[Outcome]:
    return [outcome for outcome in outcomes if not outcome.as_expected]
