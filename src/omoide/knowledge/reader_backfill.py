"""The line reader's vectors for chunks embedded before it existed (``omoide reindex --units``).

Their unit vectors are there; only the reader runs (~0.5 ms of CPU a message) and its vectors are
added with reader-only rows (:meth:`~omoide.stores.knowledge.KnowledgeStore.put_unit_vectors`
keeps what a row does not carry), so the embedder is not called again. Pages by chunk id through
"what still has no reader's vectors": resumable, and an erasure that rewrote a chunk meanwhile
makes its row skipped (the content hash no longer matches).
"""

from __future__ import annotations

import asyncio

import structlog

from omoide.knowledge.chunk_vectors import reader_vectors
from omoide.knowledge.embed_report import EmbedReport, OnChunks
from omoide.providers.local.line_reader import LineReader
from omoide.stores._erasure_common import content_hash
from omoide.stores.knowledge import KnowledgeStore, LineVectorsRow

log = structlog.get_logger(__name__)


async def backfill_reader(
    store: KnowledgeStore,
    reader: LineReader,
    model: str,
    dimensions: int,
    size: int,
    report: EmbedReport,
    *,
    stop: asyncio.Event | None = None,
    on_chunks: OnChunks | None = None,
) -> None:
    """Give the reader's vectors to ``model``'s stored vectors that have none, ``size`` chunks a
    round; ``report.chunks`` counts the chunks given them (``report.stopped`` when ``stop`` was set)."""
    cursor = 0
    while not (stop is not None and stop.is_set()):
        chunks = await store.embeddings_missing_units(model=model, after_id=cursor, limit=size, reader=True)
        if not chunks:
            break
        cursor = chunks[-1].id
        read = await reader_vectors(reader, chunks)
        rows = [
            LineVectorsRow(chunk_id=c.id, content_hash=content_hash(c.content), reader_vectors=r)
            for c, r in zip(chunks, read, strict=True)
            if r is not None
        ]
        if rows:
            report.chunks += await store.put_unit_vectors(model=model, dimensions=dimensions, rows=rows)
        report.batches += 1
        log.debug("reader_batch_stored", model=model, chunks=len(rows))
        if on_chunks is not None:
            on_chunks(len(chunks))
    if stop is not None and stop.is_set():
        report.stopped = True


__all__ = ["backfill_reader"]
