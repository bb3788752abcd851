"""The embedding processor: chunks without a vector → vectors, per embedding model.

The archiver writes chunks with no embedding and their source ``pending``. A run of
:class:`EmbeddingProcessor`:

1. makes sure the ANN index for the model exists (PostgreSQL: HNSW with
   ``halfvec_cosine_ops``; a no-op on SQLite);
2. claims up to ``embed_claim_size`` sources (``pending`` ones, and ``processing`` ones whose
   lease of ``embed_lease_seconds`` ran out because their worker died) — on PostgreSQL with
   ``FOR UPDATE SKIP LOCKED``, so any number of workers can run;
3. embeds the claimed sources' chunks that have no vector for the model yet, in batches of
   ``embed_batch_size`` across sources (few provider calls), stores the vectors, and marks
   the sources ``ready``; repeats until nothing is left to claim.

Failures: a *transient* provider error (:attr:`ProviderError.retryable
<omoide.errors.ProviderError>`: rate limits, 5xx, timeouts) puts the claimed sources back to
``pending`` with the error, ends the run and tells the caller to back off
(``report.transient_error``); a source claimed ``embed_max_attempts`` times is marked
``failed`` instead. A *permanent* one (a 4xx such as a text the model refuses) is narrowed
down to its source, which is marked ``failed``, while the others carry on. A bad API key
(:class:`~omoide.errors.AuthenticationFailed`) fails no source: they go back to ``pending``
and the error propagates. A source claimed more than ``embed_max_attempts`` times without
ever finishing (its worker keeps dying on it) is marked ``failed``.

Vectors are stored per ``(chunk, model)``, so :meth:`EmbeddingProcessor.backfill` can
embed every chunk for a new model beside the old one (``omoide reindex``) while search keeps
using the old model until the setting is switched.

Units: a chunk with line records (:mod:`omoide.stores.units`) also gets one vector per line,
computed from the line with its neighbours (:func:`~omoide.stores.units.unit_embedding_texts`),
sent with the chunk texts of the batch and stored in the chunk's row
(``EmbeddingRow.unit_vectors``), with the line reader's vector of each line
(``EmbeddingRow.reader_vectors``, :mod:`omoide.providers.local.line_reader`, when it is
installed and ``line_reader`` is not ``off``); older chunks get theirs from
:meth:`EmbeddingProcessor.backfill_units` (``omoide reindex --units``).

Progress (``on_chunks``): a batch is then sent and stored in slices of about one provider
request, each reported once stored (:class:`~omoide.knowledge.embed_report.ChunkProgress`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
import structlog
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from omoide.errors import AuthenticationFailed, NotFoundError, ProviderError
from omoide.knowledge.chunk_vectors import (
    ChunkVectors,
    UnitVectors,
    check_count,
    chunk_text,
    pooled_vectors,
    unit_texts,
    with_reader,
    within,
)
from omoide.knowledge.claim_lease import keeping_claims
from omoide.knowledge.embed_report import (
    ERROR_CHARS,
    PROGRESS_TEXTS,
    ChunkProgress,
    EmbedReport,
    OnChunks,
    Transient,
    short_error,
    units_written,
)
from omoide.knowledge.reader_backfill import backfill_reader
from omoide.providers.base import Embedder, PartsEmbedder, Vector
from omoide.providers.local.line_reader import LineReader, line_reader
from omoide.settings import Settings
from omoide.stores._erasure_common import LINES_KEY, content_hash
from omoide.stores.knowledge import ChunkText, EmbeddingRow, KnowledgeStore, LineVectorsRow, SourceId, SourceStatus

log = structlog.get_logger(__name__)


class EmbeddingProcessor:
    """Embeds pending knowledge chunks with one embedder (see the module docstring).

    Args:
        store: the knowledge store whose chunks it embeds.
        embedder: the embedder; its ``model_id`` names the vectors.
        settings: ``embed_*`` settings, and the provider timeout.

    Example:
        >>> processor = EmbeddingProcessor(store.knowledge, build_embedder(settings), settings)  # doctest: +SKIP
        >>> report = await processor.run()                                             # doctest: +SKIP
    """

    def __init__(self, store: KnowledgeStore, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.model = embedder.model_id
        self._index_checked = False
        # one provider call may retry inside the provider; bound the whole of it
        self.call_timeout = settings.provider_timeout_seconds * (settings.provider_max_retries + 1) + 5.0

    # ---------------------------------------------------------------- embedding

    async def _embed_texts(self, texts: Sequence[str]) -> list[Vector]:
        """One ``embed_documents`` call (the provider splits it by its ``max_batch``), bounded in time."""
        # the bound is per provider request: a batch with its unit texts may take several
        per_request = max(1, int(getattr(self.embedder, "max_batch", 0) or 0) or len(texts))
        timeout = self.call_timeout * max(1, math.ceil(len(texts) / per_request))
        vectors = await within(self.embedder.embed_documents(list(texts)), timeout, self.model)
        check_count(vectors, texts, self.model, what="texts")
        return vectors

    def _line_reader(self) -> LineReader | None:
        """The line reader (loaded on first use, once per process), or ``None``."""
        return line_reader(self.settings.line_reader)

    def reads_lines(self) -> bool:
        """Whether the line reader's vectors are stored with the unit vectors (it is on and loads)."""
        return self._line_reader() is not None

    async def _embed(self, chunks: Sequence[ChunkText], *, units_only: bool = False) -> list[ChunkVectors]:
        """The vectors of ``chunks`` and of their units (``units_only``: the units only), from one
        provider call, with the line reader's vectors of the units."""
        embedded = await self._embed_vectors(chunks, units_only=units_only)
        return await with_reader(await asyncio.to_thread(self._line_reader), chunks, embedded)

    async def _embed_vectors(self, chunks: Sequence[ChunkText], *, units_only: bool) -> list[ChunkVectors]:
        if self.settings.unit_vectors == "pooled" and isinstance(self.embedder, PartsEmbedder):
            pooled = await pooled_vectors(self.embedder, chunks, self._embed_texts, self.call_timeout)
            if pooled is not None:
                return pooled
        texts: list[str] = []
        plan: list[tuple[int, int, int]] = []  # per chunk: its text's index (-1: none), first unit, units
        for chunk in chunks:
            at = -1
            if not units_only:
                at = len(texts)
                texts.append(chunk_text(chunk.content))
            units = unit_texts(chunk) or []
            plan.append((at, len(texts), len(units)))
            texts.extend(units)
        vectors = await self._embed_texts(texts) if texts else []
        return [
            ChunkVectors(
                vectors[at] if at >= 0 else None,
                np.stack(vectors[first : first + n]).astype(np.float32, copy=False) if n else None,
            )
            for at, first, n in plan
        ]

    def _slices(self, chunks: Sequence[ChunkText], progress: ChunkProgress) -> list[Sequence[ChunkText]]:
        """The batch as it is sent and stored: whole, or — when progress is reported — in slices of
        whole chunks of about one provider request (:data:`PROGRESS_TEXTS`, or ``max_batch``
        texts: a chunk's text and one per line record), each stored before the next is sent."""
        if progress.on_chunks is None:
            return [chunks]
        step = max(PROGRESS_TEXTS, int(getattr(self.embedder, "max_batch", 0) or 0))
        out: list[Sequence[ChunkText]] = []
        start = size = 0
        for end, chunk in enumerate(chunks, start=1):
            size += 1 + len(chunk.location.get(LINES_KEY) or ())
            if size >= step or end == len(chunks):
                out.append(chunks[start:end])
                start, size = end, 0
        return out

    async def _put(self, chunks: Sequence[ChunkText], embedded: Sequence[ChunkVectors]) -> tuple[int, int]:
        """Store chunk vectors with their unit vectors; ``(chunks written, unit vectors written)``."""
        rows: list[EmbeddingRow] = []
        for chunk, got in zip(chunks, embedded, strict=True):
            assert got.vector is not None
            rows.append(
                EmbeddingRow(
                    chunk_id=chunk.id,
                    vector=got.vector,
                    content_hash=content_hash(chunk.content),
                    unit_vectors=got.units,
                    reader_vectors=got.reader,
                )
            )
        if not rows:
            return 0, 0
        written = await self.store.put_embeddings(model=self.model, dimensions=self.embedder.dimensions, rows=rows)
        return written, units_written(rows, written)

    async def _put_units(self, chunks: Sequence[ChunkText], embedded: Sequence[ChunkVectors]) -> tuple[int, int]:
        """Add unit vectors to stored chunk vectors; ``(chunks given units, unit vectors written)``."""
        dims = self.embedder.dimensions
        rows = [
            LineVectorsRow(
                chunk_id=c.id,
                content_hash=content_hash(c.content),
                unit_vectors=got.units,
                reader_vectors=got.reader,
            )
            for c, got in zip(chunks, embedded, strict=True)
            if got.units is not None
        ]
        if not rows:
            return 0, 0
        written = await self.store.put_unit_vectors(model=self.model, dimensions=dims, rows=rows)
        return written, units_written(rows, written)

    async def ensure_index(self) -> bool:
        """Create the ANN index for this model if the backend has one; ``True`` if created now."""
        created = await self.store.ensure_vector_index(model=self.model, dimensions=self.embedder.dimensions)
        self._index_checked = True
        if created:
            log.info("vector_index_created", model=self.model, dimensions=self.embedder.dimensions)
        return created

    # ---------------------------------------------------------------- claimed sources

    async def run(self, *, stop: asyncio.Event | None = None, on_chunks: OnChunks | None = None) -> EmbedReport:
        """Claim and embed sources until none is left (or a stop is requested).

        Args:
            stop: when set, nothing more is claimed; the batch in flight is stored and the
                unfinished sources are handed back (``pending``, the claim not counted as an
                attempt) for another worker. A cancelled run hands its claimed sources back too.
            on_chunks: progress callback.

        Raises:
            AuthenticationFailed: the embedder rejected the credentials (sources stay pending).
            StoreError: the store failed.
        """
        started = time.perf_counter()
        report = EmbedReport(model=self.model)
        if not self._index_checked:
            report.index_created = await self.ensure_index()
        settings = self.settings
        while not (stop is not None and stop.is_set()):
            claimed = await self.store.claim_sources(
                limit=settings.embed_claim_size, lease_seconds=settings.embed_lease_seconds
            )
            if not claimed:
                break
            report.claimed += len(claimed)
            log.debug("embed_claimed", model=self.model, source_ids=list(claimed))
            try:
                async with keeping_claims(self.store, claimed, self.settings.embed_lease_seconds, self.model):
                    await self._round(claimed, report, stop, on_chunks)
            except asyncio.CancelledError:
                # cancelled (a second signal, or the shutdown timeout): hand back what is still
                # claimed before going, so nothing waits embed_lease_seconds for the lease to run out
                await self._release_on_cancel(claimed)
                raise
            except Transient as exc:
                report.transient_error = short_error(exc.cause)
                log.warning("embed_transient_error", model=self.model, error=report.transient_error)
                break
        if stop is not None and stop.is_set():
            report.stopped = True
        report.duration_s = time.perf_counter() - started
        return report

    async def _round(
        self, claimed: Sequence[SourceId], report: EmbedReport, stop: asyncio.Event | None, on_chunks: OnChunks | None
    ) -> None:
        settings = self.settings
        live: list[SourceId] = []
        found = await asyncio.gather(*(self.store.get_source(source_id) for source_id in claimed))
        for source_id, source in zip(claimed, found, strict=True):
            if source is None:  # deleted meanwhile
                continue
            if source.attempts > settings.embed_max_attempts:
                error = f"gave up after {source.attempts - 1} claims that never finished (a worker died each time)"
                if source.error:
                    error += f"; last error: {source.error}"
                await self.store.finish_source(source_id, status=SourceStatus.FAILED, error=error[:ERROR_CHARS])
                report.failed += 1
                log.error("embed_source_failed", source_id=source_id, error=error, attempts=source.attempts)
                continue
            live.append(source_id)
        pending: dict[SourceId, None] = dict.fromkeys(live)  # claimed, not finished (ordered)
        cursor = 0
        try:
            while pending:
                if stop is not None and stop.is_set():
                    await self._release(pending, report)
                    return
                chunks = await self.store.chunks_missing_embedding(
                    model=self.model, source_ids=list(pending), after_id=cursor, limit=settings.embed_batch_size
                )
                if not chunks:
                    break
                cursor = chunks[-1].id
                await self._batch(chunks, pending, report, on_chunks)
        except AuthenticationFailed as exc:
            await self._release(pending, report, error=short_error(exc))
            raise
        except Transient as exc:
            await self._back_off(pending, report, error=short_error(exc.cause))
            raise
        # a chunk rewritten meanwhile (a user's erasure) lost its vector, or its new one was refused
        # as stale: its source goes back to pending, and the next claim embeds it
        unfinished = {
            c.source_id
            for c in await self.store.chunks_missing_embedding(
                model=self.model, source_ids=list(pending), limit=settings.embed_batch_size
            )
        }
        ready = [s for s in pending if s not in unfinished]
        await self._finish_all(ready, SourceStatus.READY)
        report.ready += len(ready)
        if unfinished:
            await self._finish_all([s for s in pending if s in unfinished], SourceStatus.PENDING)
            log.info("embed_sources_changed_meanwhile", model=self.model, source_ids=sorted(unfinished))
        log.debug("embed_sources_ready", model=self.model, source_ids=ready)

    async def _batch(
        self,
        chunks: Sequence[ChunkText],
        pending: dict[SourceId, None],
        report: EmbedReport,
        on_chunks: OnChunks | None,
    ) -> None:
        progress = ChunkProgress(on_chunks)
        for part in self._slices(chunks, progress):
            embedded = await self._embed_or_error(part)
            if isinstance(embedded, ProviderError):
                await self._isolate(part, pending, report, progress, embedded)
                continue
            await self._store_batch(part, embedded, report, progress)

    async def _isolate(
        self,
        chunks: Sequence[ChunkText],
        pending: dict[SourceId, None],
        report: EmbedReport,
        progress: ChunkProgress,
        first: ProviderError,
    ) -> None:
        """A permanent error hit a batch: embed it source by source and fail only the culprits."""
        by_source: dict[SourceId, list[ChunkText]] = {}
        for chunk in chunks:
            by_source.setdefault(chunk.source_id, []).append(chunk)
        if len(by_source) == 1:
            (source_id,) = by_source
            await self._fail(source_id, pending, report, first)
            return
        for source_id, group in by_source.items():
            embedded = await self._embed_or_error(group)
            if isinstance(embedded, ProviderError):
                await self._fail(source_id, pending, report, embedded)
                continue
            await self._store_batch(group, embedded, report, progress)

    async def _embed_or_error(self, chunks: Sequence[ChunkText]) -> list[ChunkVectors] | ProviderError:
        """:meth:`_embed`, with a permanent provider error returned (the caller fails the batch's
        sources); an authentication failure and a retryable error (as :class:`Transient`) raise."""
        try:
            return await self._embed(chunks)
        except AuthenticationFailed:
            raise
        except ProviderError as exc:
            if exc.retryable:
                raise Transient(exc) from exc
            return exc

    async def _store_batch(
        self, chunks: Sequence[ChunkText], embedded: list[ChunkVectors], report: EmbedReport, progress: ChunkProgress
    ) -> None:
        written, units = await self._put(chunks, embedded)
        report.chunks += written
        report.units += units
        report.batches += 1
        log.debug("embed_batch_stored", model=self.model, chunks=written)
        progress(chunks)

    async def _fail(
        self, source_id: SourceId, pending: dict[SourceId, None], report: EmbedReport, exc: ProviderError
    ) -> None:
        error = short_error(exc)
        await self.store.finish_source(source_id, status=SourceStatus.FAILED, error=error)
        pending.pop(source_id, None)
        report.failed += 1
        log.error("embed_source_failed", source_id=source_id, model=self.model, error=error)

    async def _back_off(self, pending: dict[SourceId, None], report: EmbedReport, *, error: str) -> None:
        """After a transient error: back to ``pending``, or ``failed`` once out of attempts."""
        for source_id in list(pending):
            source = await self.store.get_source(source_id)
            attempts = source.attempts if source is not None else 0
            if attempts >= self.settings.embed_max_attempts:
                message = f"gave up after {attempts} attempts; last error: {error}"[:ERROR_CHARS]
                await self.store.finish_source(source_id, status=SourceStatus.FAILED, error=message)
                report.failed += 1
                log.error("embed_source_failed", source_id=source_id, model=self.model, error=message)
            else:
                await self.store.finish_source(source_id, status=SourceStatus.PENDING, error=error)
                report.retried += 1
        pending.clear()

    async def _release(self, pending: dict[SourceId, None], report: EmbedReport, *, error: str | None = None) -> None:
        """Hand unfinished sources back (``pending``) so another worker takes them at once.

        On a stop (no ``error``) the claim is not counted as an attempt; after an error it is.
        """
        if error is None:
            await self.store.release_sources(list(pending))
        else:
            await self._finish_all(list(pending), SourceStatus.PENDING, error=error)
        report.released += len(pending)
        pending.clear()

    async def _release_on_cancel(self, claimed: Sequence[SourceId]) -> None:
        """The claimed sources still ``processing`` back to ``pending``, shielded from the cancellation."""
        try:
            released = await asyncio.shield(self.store.release_sources(list(claimed)))
        except Exception:  # the store is unreachable: the lease runs out instead
            log.warning("embed_release_failed", model=self.model, source_ids=list(claimed), exc_info=True)
            return
        log.info("embed_released_on_cancel", model=self.model, released=released)

    async def _finish_all(
        self, source_ids: Sequence[SourceId], status: SourceStatus, *, error: str | None = None
    ) -> None:
        """Finish several sources at once (concurrently on PostgreSQL); a deleted source is skipped."""

        async def finish(source_id: SourceId) -> None:
            try:
                await self.store.finish_source(source_id, status=status, error=error)
            except NotFoundError:
                log.debug("embed_source_gone", source_id=source_id)

        async with asyncio.TaskGroup() as group:
            for source_id in source_ids:
                group.create_task(finish(source_id))

    # ---------------------------------------------------------------- every chunk

    async def backfill(
        self,
        *,
        stop: asyncio.Event | None = None,
        on_chunks: OnChunks | None = None,
        create_index: bool = True,
        settled_only: bool = False,
    ) -> EmbedReport:
        """Embed every chunk that has no vector for this model, whatever its source's status.

        Used by ``omoide reindex --model …`` (a new model, beside the old one) and by the
        worker when it starts (chunks stored while another model was configured). Sources
        are not claimed and their status is left alone. A transient error is retried a few
        times with backoff; chunks the provider refuses are skipped (``report.skipped``).

        Args:
            stop: when set, stop after the batch in flight.
            on_chunks: progress callback.
            create_index: create the ANN index at the end (faster than growing it row by row).
            settled_only: only chunks of sources no claim will embed (``ready`` / ``failed``): the
                worker's catch-up, so N workers starting at once leave the waiting sources to the
                claims (one worker each) instead of all embedding them.

        Raises:
            ProviderError: a transient error persisted, or the credentials were rejected.
        """
        started = time.perf_counter()
        report = EmbedReport(model=self.model)
        size = self.settings.embed_batch_size

        async def missing(after: int) -> list[ChunkText]:
            return await self.store.chunks_missing_embedding(
                model=self.model, source_ids=None, after_id=after, limit=size, settled_only=settled_only
            )

        await self._page_through(missing, self._put, report, units_only=False, stop=stop, on_chunks=on_chunks)
        if create_index and not report.stopped:
            report.index_created = await self.ensure_index()
        report.duration_s = time.perf_counter() - started
        return report

    async def _page_through(
        self,
        missing: Callable[[int], Awaitable[list[ChunkText]]],
        put: Callable[[Sequence[ChunkText], Sequence[ChunkVectors]], Awaitable[tuple[int, int]]],
        report: EmbedReport,
        *,
        units_only: bool,
        stop: asyncio.Event | None,
        on_chunks: OnChunks | None,
    ) -> None:
        """Page through ``missing(after_id)`` by chunk id, embed each page and ``put`` it; the
        counts go into ``report`` (``stopped`` when ``stop`` was set)."""
        cursor = 0
        while not (stop is not None and stop.is_set()):
            chunks = await missing(cursor)
            if not chunks:
                break
            cursor = chunks[-1].id
            progress = ChunkProgress(on_chunks)
            for part in self._slices(chunks, progress):
                embedded = await self._embed_retrying(part, report, units_only=units_only)
                kept = [(c, e) for c, e in zip(part, embedded, strict=True) if e is not None]
                written, units = await put([c for c, _ in kept], [e for _, e in kept])
                report.chunks += written
                report.units += units
                report.batches += 1
                # the same event as a claimed batch: a worker's first run stores its batches here, and
                # whoever watches the log (the SIGKILL test, an operator) must see the progress
                log.debug("embed_batch_stored", model=self.model, chunks=written, units=units, catch_up=True)
                progress(part)
        if stop is not None and stop.is_set():
            report.stopped = True

    async def _embed_retrying(
        self, chunks: Sequence[ChunkText], report: EmbedReport, *, units_only: bool = False
    ) -> list[ChunkVectors | None]:
        """Embed with retries on transient errors; a refused batch is retried chunk by chunk
        (``None``: the provider refused that chunk, counted in ``report.skipped``)."""
        try:
            return list(await self._with_retries(chunks, units_only=units_only))
        except AuthenticationFailed:
            raise
        except ProviderError as exc:
            if exc.retryable:
                raise
            if len(chunks) == 1:
                report.skipped += 1
                log.warning("embed_chunk_skipped", chunk_id=chunks[0].id, model=self.model, error=short_error(exc))
                return [None]
        out: list[ChunkVectors | None] = []
        for chunk in chunks:
            out.extend(await self._embed_retrying([chunk], report, units_only=units_only))
        return out

    async def _with_retries(self, chunks: Sequence[ChunkText], *, units_only: bool) -> list[ChunkVectors]:
        def transient(exc: BaseException) -> bool:
            return isinstance(exc, ProviderError) and exc.retryable

        async for attempt in AsyncRetrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(self.settings.embed_max_attempts),
            wait=wait_random_exponential(multiplier=0.5, max=self.settings.worker_max_backoff_seconds),
            reraise=True,
        ):
            with attempt:
                return await self._embed(chunks, units_only=units_only)
        raise AssertionError("unreachable")  # pragma: no cover

    # ---------------------------------------------------------------- units of stored vectors

    async def backfill_units(
        self,
        *,
        stop: asyncio.Event | None = None,
        on_chunks: OnChunks | None = None,
        batch_size: int | None = None,
    ) -> EmbedReport:
        """Give unit vectors to this model's stored vectors that have none (chunks embedded
        before units existed), then — while the line reader is on — the reader's vectors to those
        that have unit vectors but none of the reader's (chunks embedded before it existed: only the
        reader runs, ~0.5 ms a message, the embedder is not called): ``omoide reindex --units``.

        Pages through ``embeddings_missing_units`` by chunk id, embeds the unit texts of
        ``embed_batch_size`` chunks per provider call and stores them with ``put_unit_vectors``
        (skipped when the chunk was rewritten meanwhile: the next embedding pass brings both).
        Resumable: what is done drops out of the query. Chunks the provider refuses are
        skipped (``report.skipped``); a transient error is retried a few times with backoff.

        Args:
            stop: when set, stop after the batch in flight (``report.stopped``).
            on_chunks: progress: called with the number of chunks just handled.
            batch_size: chunks per provider call (default ``embed_batch_size``).

        Returns:
            A report whose ``chunks`` is the number of chunks given unit vectors and ``units``
            the unit vectors written.

        Raises:
            ProviderError: a transient error persisted, or the credentials were rejected.
        """
        started = time.perf_counter()
        report = EmbedReport(model=self.model)
        size = batch_size or self.settings.embed_batch_size

        async def missing(after: int) -> list[ChunkText]:
            return await self.store.embeddings_missing_units(model=self.model, after_id=after, limit=size)

        await self._page_through(missing, self._put_units, report, units_only=True, stop=stop, on_chunks=on_chunks)
        reader = await asyncio.to_thread(self._line_reader)
        if reader is not None and not (stop is not None and stop.is_set()):
            dims = self.embedder.dimensions
            await backfill_reader(self.store, reader, self.model, dims, size, report, stop=stop, on_chunks=on_chunks)
        report.duration_s = time.perf_counter() - started
        return report


__all__ = ["EmbedReport", "EmbeddingProcessor", "OnChunks", "UnitVectors", "chunk_text", "content_hash", "unit_texts"]
