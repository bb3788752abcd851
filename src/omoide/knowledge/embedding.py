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

Failures:

* a *transient* provider error (:attr:`ProviderError.retryable <omoide.errors.ProviderError>`:
  rate limits, 5xx, timeouts) puts the claimed sources back to ``pending`` with the error,
  ends the run and tells the caller to back off (``report.transient_error``); a source that
  has been claimed ``embed_max_attempts`` times is marked ``failed`` instead;
* a *permanent* one (a 4xx such as a text the model refuses) is narrowed down to its
  source, which is marked ``failed`` with the error, while the others carry on;
* a bad API key (:class:`~omoide.errors.AuthenticationFailed`) fails no source: they go back
  to ``pending`` and the error propagates, since every call would fail alike;
* a source claimed more than ``embed_max_attempts`` times without ever finishing (its
  worker keeps dying on it) is marked ``failed`` rather than crash the next worker too.

Vectors are stored per ``(chunk, model)``, so :meth:`EmbeddingProcessor.backfill` can
embed every chunk for a new model beside the old one (``omoide reindex``) while search keeps
using the old model until the setting is switched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from omoide.errors import AuthenticationFailed, NotFoundError, ProviderError, ProviderUnavailable
from omoide.providers.base import Embedder, Vector
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash
from omoide.stores.knowledge import ChunkText, EmbeddingRow, KnowledgeStore, SourceId, SourceStatus
from omoide.text.chat_lines import chunk_embedding_text

log = structlog.get_logger(__name__)

OnChunks = Callable[[int], None]
"""Progress callback: called with the number of chunks just embedded."""

_ERROR_CHARS = 500


def _short(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:_ERROR_CHARS]


@dataclass(slots=True)
class EmbedReport:
    """What one embedding run did.

    Attributes:
        model: the embedding model id.
        claimed / ready / failed / retried / released: sources claimed, finished, failed,
            put back to pending after a transient error, handed back unfinished on stop.
        chunks: vectors written. skipped: chunks left without a vector (backfill only:
            the provider refused them).
        transient_error: set when the run stopped early on a transient provider error
            (back off before the next run).
        stopped: the run ended early because a stop was requested.
        index_created: the ANN index for the model was created in this run.
    """

    model: str
    claimed: int = 0
    ready: int = 0
    failed: int = 0
    retried: int = 0
    released: int = 0
    chunks: int = 0
    skipped: int = 0
    batches: int = 0
    duration_s: float = 0.0
    stopped: bool = False
    transient_error: str | None = None
    index_created: bool = False

    @property
    def idle(self) -> bool:
        """Nothing was claimed or embedded."""
        return self.claimed == 0 and self.chunks == 0 and self.skipped == 0

    @property
    def retry_later(self) -> bool:
        """A transient provider error ended the run: back off."""
        return self.transient_error is not None

    def as_log(self) -> dict[str, Any]:
        """The counts and the duration, for a structured log line."""
        out: dict[str, Any] = {
            "model": self.model,
            "claimed": self.claimed,
            "ready": self.ready,
            "failed": self.failed,
            "retried": self.retried,
            "released": self.released,
            "chunks": self.chunks,
            "batches": self.batches,
            "duration_ms": round(self.duration_s * 1000, 1),
            "stopped": self.stopped,
        }
        if self.skipped:
            out["skipped"] = self.skipped
        if self.transient_error:
            out["transient_error"] = self.transient_error
        if self.index_created:
            out["index_created"] = True
        return out


class _Transient(Exception):
    """Internal: a retryable provider error ended the round."""

    def __init__(self, cause: ProviderError) -> None:
        super().__init__(str(cause))
        self.cause = cause


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

    async def _embed(self, texts: Sequence[str]) -> list[Vector]:
        try:
            async with asyncio.timeout(self.call_timeout):
                vectors = await self.embedder.embed_documents([chunk_embedding_text(t) or t for t in texts])
        except TimeoutError as exc:
            raise ProviderUnavailable(
                f"the embedder {self.model} did not answer within {self.call_timeout:.0f} s", provider=self.model
            ) from exc
        if len(vectors) != len(texts):
            raise ProviderUnavailable(
                f"the embedder {self.model} returned {len(vectors)} vectors for {len(texts)} texts",
                provider=self.model,
            )
        return vectors

    async def _put(self, chunks: Sequence[ChunkText], vectors: Sequence[Vector]) -> int:
        rows = [
            EmbeddingRow(chunk_id=c.id, vector=v, content_hash=content_hash(c.content))
            for c, v in zip(chunks, vectors, strict=True)
        ]
        return await self.store.put_embeddings(model=self.model, dimensions=self.embedder.dimensions, rows=rows)

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
                await self._round(claimed, report, stop, on_chunks)
            except asyncio.CancelledError:
                # cancelled (a second signal, or the shutdown timeout): hand back what is still
                # claimed before going, so nothing waits embed_lease_seconds for the lease to run out
                await self._release_on_cancel(claimed)
                raise
            except _Transient as exc:
                report.transient_error = _short(exc.cause)
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
                await self.store.finish_source(source_id, status=SourceStatus.FAILED, error=error[:_ERROR_CHARS])
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
            await self._release(pending, report, error=_short(exc))
            raise
        except _Transient as exc:
            await self._back_off(pending, report, error=_short(exc.cause))
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
        try:
            vectors = await self._embed([c.content for c in chunks])
        except AuthenticationFailed:
            raise
        except ProviderError as exc:
            if exc.retryable:
                raise _Transient(exc) from exc
            await self._isolate(chunks, pending, report, on_chunks, exc)
            return
        written = await self._put(chunks, vectors)
        report.chunks += written
        report.batches += 1
        log.debug("embed_batch_stored", model=self.model, chunks=written)
        if on_chunks is not None:
            on_chunks(len(chunks))

    async def _isolate(
        self,
        chunks: Sequence[ChunkText],
        pending: dict[SourceId, None],
        report: EmbedReport,
        on_chunks: OnChunks | None,
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
            try:
                vectors = await self._embed([c.content for c in group])
            except AuthenticationFailed:
                raise
            except ProviderError as exc:
                if exc.retryable:
                    raise _Transient(exc) from exc
                await self._fail(source_id, pending, report, exc)
                continue
            report.chunks += await self._put(group, vectors)
            report.batches += 1
            if on_chunks is not None:
                on_chunks(len(group))

    async def _fail(
        self, source_id: SourceId, pending: dict[SourceId, None], report: EmbedReport, exc: ProviderError
    ) -> None:
        error = _short(exc)
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
                message = f"gave up after {attempts} attempts; last error: {error}"[:_ERROR_CHARS]
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

        Raises:
            ProviderError: a transient error persisted, or the credentials were rejected.
        """
        started = time.perf_counter()
        report = EmbedReport(model=self.model)
        cursor = 0
        while not (stop is not None and stop.is_set()):
            chunks = await self.store.chunks_missing_embedding(
                model=self.model, source_ids=None, after_id=cursor, limit=self.settings.embed_batch_size
            )
            if not chunks:
                break
            cursor = chunks[-1].id
            vectors = await self._embed_retrying(chunks, report)
            kept = [(c, v) for c, v in zip(chunks, vectors, strict=True) if v is not None]
            if kept:
                report.chunks += await self._put([c for c, _ in kept], [v for _, v in kept])
            report.batches += 1
            if on_chunks is not None:
                on_chunks(len(chunks))
        if stop is not None and stop.is_set():
            report.stopped = True
        elif create_index:
            report.index_created = await self.ensure_index()
        report.duration_s = time.perf_counter() - started
        return report

    async def _embed_retrying(self, chunks: Sequence[ChunkText], report: EmbedReport) -> list[Vector | None]:
        """Embed with retries on transient errors; a refused batch is retried chunk by chunk."""
        try:
            return list(await self._with_retries([c.content for c in chunks]))
        except AuthenticationFailed:
            raise
        except ProviderError as exc:
            if exc.retryable:
                raise
            if len(chunks) == 1:
                report.skipped += 1
                log.warning("embed_chunk_skipped", chunk_id=chunks[0].id, model=self.model, error=_short(exc))
                return [None]
        out: list[Vector | None] = []
        for chunk in chunks:
            out.extend(await self._embed_retrying([chunk], report))
        return out

    async def _with_retries(self, texts: Sequence[str]) -> list[Vector]:
        def transient(exc: BaseException) -> bool:
            return isinstance(exc, ProviderError) and exc.retryable

        async for attempt in AsyncRetrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(self.settings.embed_max_attempts),
            wait=wait_random_exponential(multiplier=0.5, max=self.settings.worker_max_backoff_seconds),
            reraise=True,
        ):
            with attempt:
                return await self._embed(texts)
        raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["EmbedReport", "EmbeddingProcessor", "OnChunks", "content_hash"]
