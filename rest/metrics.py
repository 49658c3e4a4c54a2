"""`GET /metrics`: the Prometheus text exposition, mounted only when METRICS_ENABLED is true.

It needs no key and is not rate limited, and it reveals traffic per route: expose it to
the monitoring network only (bind it behind the proxy, or block /metrics there).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder
from starlette.responses import Response

METRICS_PATH = "/metrics"


async def metrics(request: Request) -> Response:
    # The text format Prometheus asks for (OpenMetrics or the classic 0.0.4 text).
    encode, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encode(REGISTRY), headers={"Content-Type": content_type})


def build_metrics_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)
    router.add_api_route(METRICS_PATH, metrics, methods=["GET"])
    return router
