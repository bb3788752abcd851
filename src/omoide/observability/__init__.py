"""Watching a deployment: Prometheus metrics (:mod:`.metrics`), optional OpenTelemetry spans
(:mod:`.tracing`), provider-call instrumentation (:mod:`.providers`) and what the workers report
across processes — liveness and recent errors (:mod:`.worker_status`)."""

from __future__ import annotations

from omoide.observability.metrics import Metrics, active_metrics, install_metrics
from omoide.observability.tracing import span

__all__ = ["Metrics", "active_metrics", "install_metrics", "span"]
