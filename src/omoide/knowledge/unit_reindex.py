"""``omoide reindex --units``: retrieval units for chunks written before units existed.

New chunks get their units as they are written (the per-line tokens, ``unit_lexical``) and
embedded (the per-line vectors, with the chunk's own vector). Chunks stored by an older
omoide have neither, and search ranks them as whole chunks until :func:`reindex_units` has
run, in two phases:

1. **lexical** — for every chunk with line records and no unit tokens
   (:meth:`~omoide.stores.knowledge.KnowledgeStore.chunks_missing_units`), the tokens of
   each line (:func:`~omoide.stores.units.unit_lexical_of`), written with
   :meth:`~omoide.stores.knowledge.KnowledgeStore.put_unit_lexical` (skipped when an
   erasure rewrote the chunk meanwhile: the rewrite brought its own);
2. **vectors** — for every stored vector of the embedding model whose chunk has line
   records and no unit vectors, the unit vectors with the reader's; then, while the line reader
   is on, the reader's vectors alone of those embedded before it existed
   (:meth:`~omoide.knowledge.embedding.EmbeddingProcessor.backfill_units`).

Both phases page by chunk id through "what is still missing", so the queries are the cursor:
an interrupted run loses nothing and a rerun finishes the job. Search keeps working meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from omoide.knowledge.embedding import EmbeddingProcessor
from omoide.stores.knowledge import ChunkText, KnowledgeStore, UnitLexicalRow
from omoide.stores.units import unit_lexical_of

log = structlog.get_logger(__name__)

UnitPhase = Literal["lexical", "vectors"]
OnUnitProgress = Callable[[UnitPhase, int, int], None]
"""Progress callback: ``(phase, chunks done, chunks to do)`` after each batch."""

LEXICAL_BATCH = 500
"""Chunks read and written per round of the lexical phase."""


@dataclass(slots=True)
class UnitReindexReport:
    """What one :func:`reindex_units` run did.

    Attributes:
        model: the embedding model whose vectors got unit vectors (``None``: the vector phase
            was not run).
        lexical: chunks given unit tokens.
        unusable: chunks left without units because their line records do not fit their
            content (they stay searchable as whole chunks).
        vectors: chunks given unit vectors; ``units``: the unit vectors written.
        skipped: chunks whose unit texts the provider refused.
        stopped: the run ended early because a stop was requested (rerun to finish).
    """

    model: str | None
    lexical: int = 0
    unusable: int = 0
    vectors: int = 0
    units: int = 0
    skipped: int = 0
    stopped: bool = False
    duration_s: float = 0.0

    def as_log(self) -> dict[str, Any]:
        """The counts and the duration, for a structured log line or ``--json``."""
        return {
            "model": self.model,
            "lexical": self.lexical,
            "unusable": self.unusable,
            "vectors": self.vectors,
            "units": self.units,
            "skipped": self.skipped,
            "stopped": self.stopped,
            "duration_ms": round(self.duration_s * 1000, 1),
        }


def _lexical_rows(chunks: Sequence[ChunkText]) -> tuple[list[UnitLexicalRow], int]:
    """The unit tokens of ``chunks``, and how many have unusable line records."""
    rows: list[UnitLexicalRow] = []
    unusable = 0
    for chunk in chunks:
        tokens = unit_lexical_of(chunk.content, chunk.location)
        if tokens is None:
            # line records that do not fit the text: no units can be cut; an empty list marks
            # the chunk done (it is searched as a whole chunk) so reruns and status move on
            unusable += 1
            tokens = ()
        rows.append(UnitLexicalRow(chunk_id=chunk.id, content=chunk.content, unit_lexical=tokens))
    return rows, unusable


async def reindex_units(
    store: KnowledgeStore,
    processor: EmbeddingProcessor | None,
    *,
    stop: asyncio.Event | None = None,
    on_progress: OnUnitProgress | None = None,
    lexical_batch: int = LEXICAL_BATCH,
) -> UnitReindexReport:
    """Build the units of chunks that have none (see the module docstring).

    Args:
        store: the knowledge store.
        processor: embeds the unit vectors of its model's stored vectors; ``None``: the
            lexical phase only.
        stop: when set, stop after the batch in flight (``report.stopped``).
        on_progress: ``(phase, done, total)`` after each batch; ``total`` is counted at the
            start of the phase (``knowledge_status``) and never less than ``done``.
        lexical_batch: chunks per round of the lexical phase.

    Raises:
        ProviderError: the embedder kept failing, or rejected the credentials (the lexical
            phase is done by then, and the vectors written so far are kept).
        StoreError: the store failed.
    """
    started = time.perf_counter()
    report = UnitReindexReport(model=None if processor is None else processor.model)
    status = await store.knowledge_status()

    total, done, cursor = status.units_missing, 0, 0
    if on_progress is not None:
        on_progress("lexical", 0, total)
    while not (stop is not None and stop.is_set()):
        chunks = await store.chunks_missing_units(after_id=cursor, limit=lexical_batch)
        if not chunks:
            break
        cursor = chunks[-1].id
        rows, unusable = await asyncio.to_thread(_lexical_rows, chunks)
        report.lexical += await store.put_unit_lexical(rows) if rows else 0
        report.unusable += unusable
        done += len(chunks)
        total = max(total, done)
        if on_progress is not None:
            on_progress("lexical", done, total)
    if report.unusable:
        log.warning("unit_reindex_unusable_line_records", chunks=report.unusable)

    if processor is not None and not (stop is not None and stop.is_set()):
        total, done = status.unit_vectors_missing.get(processor.model, 0), 0
        if processor.reads_lines():  # the reader's vectors come with the unit vectors
            total = max(total, status.reader_vectors_missing.get(processor.model, 0))
        if on_progress is not None:
            on_progress("vectors", 0, total)

        def advance(n: int) -> None:
            nonlocal done, total
            done += n
            total = max(total, done)
            if on_progress is not None:
                on_progress("vectors", done, total)

        embedded = await processor.backfill_units(stop=stop, on_chunks=advance)
        report.vectors, report.units, report.skipped = embedded.chunks, embedded.units, embedded.skipped

    report.stopped = stop is not None and stop.is_set()
    report.duration_s = time.perf_counter() - started
    log.info("unit_reindex_done", **report.as_log())
    return report


__all__ = ["LEXICAL_BATCH", "OnUnitProgress", "UnitPhase", "UnitReindexReport", "reindex_units"]
