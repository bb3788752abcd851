"""Optional OpenTelemetry spans around append, search, ask, recall, provider calls and worker jobs.

``opentelemetry-api`` is imported when installed (``pip install 'omoide[otel]'``); without it
:func:`span` does nothing. With the API but no SDK configured, the API's own tracer is a
no-op too: spans cost something only once a host sets a ``TracerProvider`` (the SDK, an
exporter) — omoide never configures one itself.

What a span carries is an allow-list (:data:`ALLOWED_ATTRIBUTES`): the workspace, the job,
the provider's model id, counts and modes — never message text, queries, memory content or
keys. An attribute outside the list is dropped, so a careless caller cannot leak one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

try:  # optional: the [otel] extra
    from opentelemetry import trace as _trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # pragma: no cover - exercised only without the extra
    _trace = None  # type: ignore[assignment]

TRACER_NAME = "omoide"

ALLOWED_ATTRIBUTES = frozenset(
    {
        "omoide.workspace",
        "omoide.job",
        "omoide.outcome",
        "omoide.mode",
        "omoide.k",
        "omoide.count",
        "omoide.role",
        "omoide.model",
        "omoide.call",
        "omoide.tokens.input",
        "omoide.tokens.output",
        "omoide.error.code",
        "http.request.method",
        "http.route",
        "http.response.status_code",
    }
)
"""Span attributes omoide may set; anything else is dropped (no text, no keys)."""


def tracing_available() -> bool:
    """Whether ``opentelemetry-api`` is importable (spans can reach a configured SDK)."""
    return _trace is not None


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        name = key if key.startswith(("omoide.", "http.")) else f"omoide.{key}"
        if name in ALLOWED_ATTRIBUTES and isinstance(value, str | int | float | bool):
            out[name] = value
    return out


class SpanHandle:
    """What a ``with span(...)`` block gets: :meth:`set` adds allowed attributes later (counts, outcome)."""

    __slots__ = ("_span",)

    def __init__(self, inner: Any) -> None:
        self._span = inner

    def set(self, **attributes: Any) -> None:
        if self._span is not None:
            for key, value in _clean(attributes).items():
                self._span.set_attribute(key, value)


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[SpanHandle]:
    """A span named ``name`` (``omoide.search``, ``omoide.worker.embedder``…) around the block.

    Keyword attributes are short names of :data:`ALLOWED_ATTRIBUTES` (``workspace="g1"`` →
    ``omoide.workspace``); others are dropped. An exception marks the span as an error with
    its type (``error.type``) and omoide code, not its message (which may quote input).

    Example:
        >>> with span("omoide.search", workspace="g1", mode="hybrid") as s:
        ...     s.set(count=5)
    """
    if _trace is None:
        yield SpanHandle(None)
        return
    tracer = _trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(name, record_exception=False, set_status_on_exception=False) as inner:
        for key, value in _clean(attributes).items():
            inner.set_attribute(key, value)
        try:
            yield SpanHandle(inner)
        except BaseException as exc:
            inner.set_attribute("error.type", type(exc).__name__)
            code = getattr(exc, "code", None)
            if isinstance(code, str):
                inner.set_attribute("omoide.error.code", code)
            inner.set_status(Status(StatusCode.ERROR))
            raise


__all__ = ["ALLOWED_ATTRIBUTES", "TRACER_NAME", "SpanHandle", "span", "tracing_available"]
