"""``GET /metrics``: Prometheus metrics of this server, off by default, optionally behind a key.

:func:`install_observability` is what ``create_app`` calls: with ``OMOIDE_METRICS_ENABLED`` it
makes the app's :class:`~omoide.observability.metrics.Metrics` (its own registry), makes them the
process's active metrics (so the workers and provider calls in this process report to them),
and adds the request middleware; spans per request are added either way (no-ops without an
OpenTelemetry SDK).

Queue depths are read from the store when scraped (at most once every
:data:`QUEUE_READ_SECONDS`, so a fast scraper does not load the database). ``unsummarised`` is
the channels, threads and users with messages in the summary window: what the next
summariser run reviews (summaries have no queue of their own; the run is a periodic pass).
"""

from __future__ import annotations

import hmac
import time
from datetime import timedelta

from fastapi import APIRouter, FastAPI, Request, Response

from omoide.engine import Memory
from omoide.errors import NotFoundError
from omoide.models import utcnow
from omoide.observability.metrics import CONTENT_TYPE, Metrics, install_metrics
from omoide.server.auth import MemoryDep
from omoide.server.middleware import RequestMetricsMiddleware
from omoide.server.problems import ApiKeyRejected
from omoide.settings import Settings
from omoide.stores.summaries import SummaryScope

router = APIRouter(tags=["health"])

QUEUE_READ_SECONDS = 10.0


@router.get(
    "/metrics",
    summary="Prometheus metrics (OMOIDE_METRICS_ENABLED; Bearer OMOIDE_METRICS_KEY when set)",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {}}}, 404: {"description": "Metrics are off."}},
)
async def metrics(request: Request, memory: MemoryDep) -> Response:
    """Requests by route and status, search / ask / recall latency, queue depths, worker runs, provider calls
    and tokens. See docs/operations.md for a scrape config."""
    settings = memory.settings
    found: Metrics | None = getattr(request.app.state, "metrics", None)
    if not settings.metrics_enabled or found is None:
        raise NotFoundError("metrics are off: set OMOIDE_METRICS_ENABLED=true (and OMOIDE_METRICS_KEY to protect them)")
    if settings.metrics_key is not None:
        given = request.headers.get("authorization", "")
        token = given[7:] if given[:7].lower() == "bearer " else ""
        if not hmac.compare_digest(token.encode(), settings.metrics_key.get_secret_value().encode()):
            raise ApiKeyRejected("/metrics needs 'Authorization: Bearer <OMOIDE_METRICS_KEY>'")
    await _read_queues(request, memory, found)
    return Response(found.render(), media_type=CONTENT_TYPE)


async def _read_queues(request: Request, memory: Memory, metrics: Metrics) -> None:
    """Set ``omoide_queue_depth`` from the store's counts (all workspaces), at most every few seconds."""
    state = request.app.state
    now = time.monotonic()
    if now - getattr(state, "metrics_queues_read", -QUEUE_READ_SECONDS) < QUEUE_READ_SECONDS:
        return
    state.metrics_queues_read = now
    status = await memory.store.knowledge.knowledge_status(workspace_id=None)
    most_embedded = max(status.embedded.values(), default=0)
    metrics.queue_depth.labels(queue="unarchived").set(status.unarchived_messages)
    metrics.queue_depth.labels(queue="unembedded").set(max(status.chunks - most_embedded, 0))
    metrics.queue_depth.labels(queue="embedding_failed").set(status.sources.get("failed", 0))
    since = utcnow() - timedelta(hours=memory.settings.summary_window_hours)
    scopes = 0
    for scope in (SummaryScope.CHANNEL, SummaryScope.THREAD, SummaryScope.USER):
        scopes += len(await memory.store.summaries.active_scopes(since=since, scope=scope))
    metrics.queue_depth.labels(queue="unsummarised").set(scopes)


def install_observability(app: FastAPI, settings: Settings) -> Metrics | None:
    """Metrics (when enabled) and request spans for ``app``; the app's metrics, or ``None``.

    Example:
        >>> install_observability(app, settings)   # in create_app  # doctest: +SKIP
    """
    found = Metrics() if settings.metrics_enabled else None
    if found is not None:
        install_metrics(found)
    app.state.metrics = found
    app.add_middleware(RequestMetricsMiddleware, metrics=found)
    app.include_router(router)
    return found


__all__ = ["QUEUE_READ_SECONDS", "install_observability", "router"]
