"""Process-level tuning for omoide's long-running processes (``omoide serve``, the bots, the MCP server).

Python's cyclic garbage collector walks every object it tracks on each full collection. In a
long-running omoide process most of those are there from startup — imported modules and their
functions, the opened store, the loaded models' Python objects — and never become garbage, yet a full
collection walks them all: at 100k chunks on SQLite the longest pause was 62 ms, on the search that
happened to trigger it (docs/benchmarks.md, "Garbage collection").

:func:`freeze_startup_heap` moves everything alive at that moment into the collector's permanent
generation (:func:`gc.freeze`), so later collections walk only what was made since: the longest
pause fell to 6.7 ms. It is an application-level choice (it affects the whole process), so the
library never does it on its own; the commands that own their process call it once started.
"""

from __future__ import annotations

import gc

import structlog

log = structlog.get_logger(__name__)


def freeze_startup_heap() -> int:
    """Collect once, then freeze every object alive now (:func:`gc.freeze`); returns how many are frozen.

    Frozen objects are still freed by reference counting when their last reference goes; only a
    reference cycle among them is never collected. So call it once, after startup, not per
    request: what is alive then lives as long as the process anyway.
    """
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("startup_heap_frozen", objects=frozen)
    return frozen


__all__ = ["freeze_startup_heap"]
