"""Prometheus metrics, one :class:`Metrics` per app over its own ``CollectorRegistry``.

Why a registry per app and not prometheus-client's global one: two apps in one process (the
tests, an embedding app) would otherwise collide on metric names, and a library should not
fill a process-wide registry its host never asked for.

The library layers that have no app at hand (the worker runner, provider calls) report to the
*active* metrics: the :class:`Metrics` last installed with :func:`install_metrics` (the app
does it when ``OMOIDE_METRICS_ENABLED`` is on), else to nothing — a disabled deployment pays
one attribute check per event.

Labels never carry user data: routes are the path templates (``/v1/users/{user_id}/memories``),
providers their model ids, jobs their names.

``prometheus-client`` comes with the ``[server]`` extra; it is imported only when a
:class:`Metrics` is made, so the library and the workers run without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds; from a cached SQLite recall (~5 ms) to a slow model's answer (a minute)."""

JOB_BUCKETS = (0.01, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0)
"""Seconds of one worker run: an idle poll to a long embedding round."""

QUEUES = ("unarchived", "unembedded", "embedding_failed", "unsummarised")
"""The ``queue`` label of ``omoide_queue_depth``."""

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus' text exposition format."""


class Metrics:
    """Every metric omoide exports, registered in ``registry`` (a new one by default).

    Example:
        >>> m = Metrics()
        >>> m.requests.labels(method="GET", route="/healthz", status="200").inc()
        >>> b"omoide_http_requests_total" in m.render()
        True
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "omoide_http_requests",
            "HTTP requests by method, route template and status.",
            ["method", "route", "status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "omoide_http_request_seconds",
            "HTTP request latency by method and route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.operation_seconds = Histogram(
            "omoide_operation_seconds",
            "Latency of search, ask and recall (HTTP and library calls alike).",
            ["operation"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge(
            "omoide_queue_depth",
            "Work waiting, read from the store at scrape time: unarchived messages, "
            "chunks without a vector of the most-used embedder, sources whose embedding failed, scopes the next "
            "summariser run reviews.",
            ["queue"],
            registry=r,
        )
        self.job_seconds = Histogram(
            "omoide_worker_job_seconds",
            "Duration of one worker run, by job.",
            ["job"],
            buckets=JOB_BUCKETS,
            registry=r,
        )
        self.job_runs = Counter(
            "omoide_worker_job_runs",
            "Worker runs by job and outcome (ok, idle, retry, failed).",
            ["job", "outcome"],
            registry=r,
        )
        self.job_failures = Counter(
            "omoide_worker_job_failures",
            "Worker runs that failed, by job and error code.",
            ["job", "code"],
            registry=r,
        )
        self.provider_seconds = Histogram(
            "omoide_provider_call_seconds",
            "Provider call latency by role (llm, embedder, reranker), model and call.",
            ["role", "model", "call"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.provider_errors = Counter(
            "omoide_provider_call_errors",
            "Provider calls that failed, by role, model and error code.",
            ["role", "model", "code"],
            registry=r,
        )
        self.tokens = Counter(
            "omoide_provider_tokens",
            "Tokens used by chat models, by model and kind (input, output).",
            ["model", "kind"],
            registry=r,
        )
        self.embedded_texts = Counter(
            "omoide_provider_embedded_texts",
            "Texts embedded, by model.",
            ["model"],
            registry=r,
        )

    def render(self) -> bytes:
        """The registry in Prometheus' text format."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


_active: Metrics | None = None


def active_metrics() -> Metrics | None:
    """The metrics the library layers report to, or ``None`` (metrics are off)."""
    return _active


def install_metrics(metrics: Metrics | None) -> Metrics | None:
    """Make ``metrics`` the active ones (``None``: off); return the ones it replaces."""
    global _active
    previous, _active = _active, metrics
    return previous


@contextlib.contextmanager
def metrics_installed(metrics: Metrics) -> Iterator[Metrics]:
    """``metrics`` active inside the block, the previous ones after it (for tests and scripts)."""
    previous = install_metrics(metrics)
    try:
        yield metrics
    finally:
        install_metrics(previous)


_observed_in_request: ContextVar[set[str] | None] = ContextVar("omoide_observed_operations", default=None)


def observe_operation(operation: str, seconds: float) -> None:
    """Record a search / ask / recall / append latency when metrics are on (once per call: an HTTP
    request whose handler observed its operation is not observed again by the request middleware)."""
    seen = _observed_in_request.get()
    if seen is not None:
        seen.add(operation)
    m = _active
    if m is not None:
        m.operation_seconds.labels(operation=operation).observe(seconds)


@contextlib.contextmanager
def request_operations() -> Iterator[set[str]]:
    """The operations observed while the block runs (the request middleware's view of its handler)."""
    seen: set[str] = set()
    token = _observed_in_request.set(seen)
    try:
        yield seen
    finally:
        _observed_in_request.reset(token)


__all__ = [
    "CONTENT_TYPE",
    "JOB_BUCKETS",
    "LATENCY_BUCKETS",
    "QUEUES",
    "Metrics",
    "active_metrics",
    "install_metrics",
    "metrics_installed",
    "observe_operation",
    "request_operations",
]
