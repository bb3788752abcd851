"""``omoide reindex --compact``: per-message vectors stored in an older form, rewritten as int8.

Each stored vector of a chat chunk carries one unit vector and one line-reader vector per line
(:mod:`omoide.stores.units`). Since 2026-11-27 they are stored as int8 with a scale per line
(:mod:`omoide.stores.unit_codec`), about half the bytes of the float16 (PostgreSQL) and a
third of the float32 (SQLite) that older omoide versions wrote — with the same rankings. Rows
written before keep their form, and are read as they are, until :func:`compact_line_vectors`
rewrites them (:meth:`~omoide.stores.knowledge.KnowledgeStore.compact_line_vectors`, page by
page by chunk id; nothing is embedded again).

Cost: every row rewritten is a new row version. On PostgreSQL that version goes into every
index of ``chunk_embeddings``, the HNSW index included — about 200 rows a second at 1M chunks
on two cores (``docs/benchmarks.md``, "Per-message vectors as int8"). The space freed is the
database's to reuse: SQLite's ``VACUUM`` gives it back to the disk, PostgreSQL's autovacuum
makes it reusable (``VACUUM FULL chunk_embeddings`` gives it back, holding an exclusive lock
while it rewrites the table).

The read is the cursor: an interrupted run loses nothing and a rerun finishes the job. Search
keeps working throughout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from omoide.stores.knowledge import KnowledgeStore

log = structlog.get_logger(__name__)

COMPACT_BATCH = 200
"""Stored vectors read and rewritten per round (~18-26 KB each in the older forms)."""

OnCompactProgress = Callable[[int, int], None]
"""Progress callback: ``(chunk id reached, highest chunk id with a vector)`` after each round."""


@dataclass(slots=True)
class CompactionReport:
    """What one :func:`compact_line_vectors` run did.

    Attributes:
        rewritten: stored vectors whose per-message vectors were rewritten as int8.
        stopped: the run ended early because a stop was requested (rerun to finish).
    """

    rewritten: int = 0
    stopped: bool = False
    duration_s: float = 0.0

    def as_log(self) -> dict[str, Any]:
        """The counts and the duration, for a structured log line or ``--json``."""
        return {"rewritten": self.rewritten, "stopped": self.stopped, "duration_ms": round(self.duration_s * 1000, 1)}


async def compact_line_vectors(
    store: KnowledgeStore,
    *,
    stop: asyncio.Event | None = None,
    on_progress: OnCompactProgress | None = None,
    batch: int = COMPACT_BATCH,
) -> CompactionReport:
    """Rewrite every per-message vector stored in an older form as int8 (see the module docstring).

    Args:
        store: the knowledge store.
        stop: when set, stop after the round in flight (``report.stopped``).
        on_progress: ``(chunk id reached, highest chunk id)`` after each round.
        batch: stored vectors per round.

    Raises:
        StoreError: the store failed (what was rewritten so far is kept).
    """
    started = time.perf_counter()
    report = CompactionReport()
    after: int | None = 0
    while after is not None and not (stop is not None and stop.is_set()):
        page = await store.compact_line_vectors(after_id=after, limit=batch)
        report.rewritten += page.rewritten
        after = page.after_id
        if on_progress is not None:
            last = page.last_chunk_id
            on_progress(last if after is None else min(after, last), last)
    report.stopped = after is not None
    report.duration_s = time.perf_counter() - started
    log.info("line_vectors_compacted", **report.as_log())
    return report


__all__ = ["COMPACT_BATCH", "CompactionReport", "OnCompactProgress", "compact_line_vectors"]
