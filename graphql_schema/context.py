"""What a GraphQL execution carries: the request's reader, the campaign scope, loaders.

Sibling fields resolve concurrently; every read goes through `read()`, which runs them
one at a time. With the request's reader that keeps a request to one pooled connection
at a time (unserialized, sibling reads would each borrow one: tests/perf counts them);
with a session (the CLI, tests) it is required, a session running one statement at a time.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Row
from strawberry.dataloader import DataLoader

from engine.db import Reader
from engine.records import CampaignScope, visible_children_by_parent, visible_locations_by_id

T = TypeVar("T")


class CampaignContext:
    """The execution context of one GraphQL operation, scoped to one campaign."""

    def __init__(self, *, db: Reader, scope: CampaignScope) -> None:
        self.db = db
        self.scope = scope
        self._lock = asyncio.Lock()
        self._children_loaders: dict[int, DataLoader[str, list[Row[Any]]]] = {}

    # Batched per operation: one query per nesting level, whatever the page size. Made on
    # first use: the REST documents, most operations, never nest locations.
    @functools.cached_property
    def location_by_id(self) -> DataLoader[str, Row[Any] | None]:
        return DataLoader(load_fn=self._load_locations)

    def children_of(self, limit: int) -> DataLoader[str, list[Row[Any]]]:
        """The first `limit` visible children of each parent: one loader per limit, so
        that each batch is one query with one bound (aliases may ask for several)."""
        loader = self._children_loaders.get(limit)
        if loader is None:
            loader = self._children_loaders[limit] = DataLoader(
                load_fn=functools.partial(self._load_children, limit=limit)
            )
        return loader

    async def read(self, query: Callable[[Reader], Awaitable[T]]) -> T:
        async with self._lock:
            return await query(self.db)

    async def _load_locations(self, ids: Sequence[str]) -> list[Row[Any] | None]:
        found = await self.read(lambda db: visible_locations_by_id(db, scope=self.scope, location_ids=ids))
        return [found.get(location_id) for location_id in ids]

    async def _load_children(self, ids: Sequence[str], *, limit: int) -> list[list[Row[Any]]]:
        found = await self.read(
            lambda db: visible_children_by_parent(db, scope=self.scope, parent_ids=ids, limit=limit)
        )
        return [found[parent_id] for parent_id in ids]
