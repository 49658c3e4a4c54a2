"""The process's Prometheus metrics (prometheus-client's default registry).

Framework-free, so every floor can count what only it sees: the REST layer requests and
their latency, the rate limiter its rejections and storage failures, the schema its
operation durations, the database engine its driver errors. Labels take values from
small fixed sets (route templates, never raw paths; limit names; status codes), so the
number of series stays bounded whatever clients send. Each worker process has its own
counters; scrape every worker (or run one per container).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Histogram
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUESTS = Counter(
    "campaign_api_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ("method", "route", "status"),
)
HTTP_REQUEST_DURATION = Histogram(
    "campaign_api_http_request_duration_seconds",
    "Time from receiving a request to the end of its response, by method, route template and status.",
    ("method", "route", "status"),
    buckets=LATENCY_BUCKETS,
)
RATE_LIMIT_REJECTIONS = Counter(
    "campaign_api_rate_limit_rejections",
    "Requests rejected with 429, by the limit that rejected them (ip, failed_auth, key, owner).",
    ("limit",),
)
RATE_LIMIT_STORAGE_ERRORS = Counter(
    "campaign_api_rate_limit_storage_errors",
    "Failures of the rate-limit storage (Redis or memory): each one answers 503 or fails readiness.",
)
DATABASE_ERRORS = Counter(
    "campaign_api_database_errors",
    "Errors raised by the database driver (connection failures, statement timeouts, ...).",
)
GRAPHQL_OPERATION_DURATION = Histogram(
    "campaign_api_graphql_operation_duration_seconds",
    "Time to parse, validate and execute one GraphQL operation (REST endpoints included).",
    ("operation_type", "outcome"),
    buckets=LATENCY_BUCKETS,
)


def _count_database_error(_context: Any) -> None:
    DATABASE_ERRORS.inc()


def watch_database_errors(engine: AsyncEngine) -> None:
    """Count every driver error of this engine (idempotent)."""
    target = engine.sync_engine
    if not event.contains(target, "handle_error", _count_database_error):
        event.listen(target, "handle_error", _count_database_error)
