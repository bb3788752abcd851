"""One call for the engine's operations: a span and a latency observation around append, search, ask, recall.

``with operation("search", workspace=ws): ...`` is all a library entry point needs: the span
``omoide.search`` (workspace only, never the query) and ``omoide_operation_seconds{operation="search"}``
when metrics are on — for HTTP requests and library calls alike (a request whose handler
observed its operation is not observed again by the request middleware).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from omoide.observability.metrics import observe_operation
from omoide.observability.tracing import SpanHandle, span


@contextlib.contextmanager
def operation(name: str, *, workspace: Any = None, **attributes: Any) -> Iterator[SpanHandle]:
    """A span ``omoide.<name>`` with the workspace, and the operation's latency (successful calls only).

    Example:
        >>> with operation("search", workspace="g1", mode="hybrid"):   # doctest: +SKIP
        ...     result = await pipeline.search(...)
    """
    started = time.perf_counter()
    ws = None if workspace is None else str(workspace)
    with span(f"omoide.{name}", workspace=ws, **attributes) as traced:
        yield traced
    observe_operation(name, time.perf_counter() - started)


__all__ = ["operation"]
