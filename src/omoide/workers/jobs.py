"""The built-in worker jobs: archiver, embedder and session expiry, built from a ``Memory``.

* ``archiver`` — :class:`~omoide.knowledge.archiver.SessionArchiver` every
  ``worker_archive_interval_seconds``;
* ``embedder`` — :class:`~omoide.knowledge.embedding.EmbeddingProcessor` every
  ``worker_embed_interval_seconds``; its first run also embeds chunks stored while another
  embedding model was configured (:meth:`~omoide.knowledge.embedding.EmbeddingProcessor.backfill`)
  and rebuilds the lexical index if another search tokenizer wrote it
  (:mod:`omoide.search.lexical_index`);
* ``expiry`` — :meth:`Sessions.expire_idle <omoide.sessions.Sessions.expire_idle>` every
  ``worker_expire_interval_seconds`` (an expired session's unarchived messages are still
  archived: the archiver takes sessions of any status);
* ``summariser`` — :meth:`SummaryGenerator.run <omoide.summaries.service.SummaryGenerator.run>`
  every ``worker_summary_interval_seconds`` (seed 003's rolling summaries; it calls the chat
  model only for the scopes whose triggers fired).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import structlog

from omoide.knowledge.archiver import ChannelNames
from omoide.knowledge.embedding import EmbeddingProcessor, EmbedReport
from omoide.search.lexical_index import lexical_index_is_stale
from omoide.workers.progress import ProgressRecorder
from omoide.workers.runner import Job, RunReport, WorkerRunner

if TYPE_CHECKING:
    from omoide.engine import Memory

JOB_NAMES = ("archiver", "embedder", "expiry", "summariser")


@dataclass(frozen=True, slots=True)
class ExpireReport:
    """What one expiry run did."""

    expired: int
    duration_s: float

    @property
    def idle(self) -> bool:
        return self.expired == 0

    @property
    def retry_later(self) -> bool:
        return False

    def as_log(self) -> dict[str, Any]:
        return {"expired": self.expired, "duration_ms": round(self.duration_s * 1000, 1)}


def archive_job(mem: Memory, *, channel_names: ChannelNames | None = None) -> Job:
    """Archive due sessions every ``worker_archive_interval_seconds``."""
    archiver = mem.knowledge.archiver(channel_names=channel_names)

    async def run(stop: asyncio.Event) -> RunReport:
        return await archiver.run(stop=stop)

    settings = mem.settings
    return Job("archiver", settings.worker_archive_interval_seconds, run, settings.worker_max_backoff_seconds)


def embed_job(mem: Memory) -> Job:
    """Embed pending chunks every ``worker_embed_interval_seconds`` (a catch-up of every chunk first).

    Each run that embeds something records its progress for ``omoide status`` and
    ``GET /v1/status`` (:mod:`omoide.workers.progress`).
    """
    settings = mem.settings
    state: dict[str, EmbeddingProcessor] = {}

    async def run(stop: asyncio.Event) -> RunReport:
        processor = state.get("processor")
        first = processor is None
        if processor is None:
            await _rebuild_stale_lexical_index(mem)
            processor = mem.knowledge.embedding_processor()
            state["processor"] = processor
        tracker = _Tracker(mem, processor.model)
        try:
            if first:
                # the chunks of waiting sources are the claims' (one worker each): not caught up here
                catch_up = await processor.backfill(stop=stop, on_chunks=tracker, settled_only=True)
                return _merge(catch_up, await processor.run(stop=stop, on_chunks=tracker))
            return await processor.run(stop=stop, on_chunks=tracker)
        finally:
            await tracker.finish()

    return Job("embedder", settings.worker_embed_interval_seconds, run, settings.worker_max_backoff_seconds)


COUNT_WAIT_SECONDS = 2.0  # how long the end of an embedding run waits for its total to be counted


class _Tracker:
    """The embedding job's ``on_chunks``: records progress once the run embeds something, and
    counts the chunks waiting then (a store query only for runs that have work)."""

    def __init__(self, mem: Memory, model: str) -> None:
        self.mem = mem
        self.model = model
        self.recorder: ProgressRecorder | None = None
        self.counting: asyncio.Task[None] | None = None
        self.started = time.monotonic()

    def __call__(self, chunks: int) -> None:
        if self.recorder is None:
            self.recorder = ProgressRecorder(self.mem.store, job="embedder", model=self.model, started=self.started)
            self.counting = asyncio.get_running_loop().create_task(self._count())
        self.recorder.advance(chunks)

    async def _count(self) -> None:
        recorder = self.recorder
        assert recorder is not None
        done = recorder.done
        try:
            status = await self.mem.knowledge.status()
        except Exception:  # progress is best effort: the run itself reports store failures
            return
        recorder.set_total(done + max(0, status.chunks - status.embedded.get(self.model, 0)))

    async def finish(self) -> None:
        """Record the end of the run, with its total: a short run may end before the count it
        started came back, so the count is awaited (briefly) rather than dropped."""
        if self.counting is not None and not self.counting.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self.counting), timeout=COUNT_WAIT_SECONDS)
            self.counting.cancel()
        if self.recorder is not None:  # a run cut short keeps its total: "18/144 chunks" says so
            self.recorder.finish()
            await self.recorder.flush()


async def _rebuild_stale_lexical_index(mem: Memory) -> None:
    """After an upgrade that changed the search tokenizer, re-tokenise the index once."""
    if await lexical_index_is_stale(mem.store.search):
        log = structlog.get_logger(__name__)
        log.info("lexical_reindex_started", reason="the search tokenizer changed")
        report = await mem.knowledge.reindex_lexical()
        log.info("lexical_reindex_done", tokenizer=report.tokenizer, previous=report.previous, rows=report.rows)


def _merge(catch_up: EmbedReport, report: EmbedReport) -> EmbedReport:
    report.chunks += catch_up.chunks
    report.units += catch_up.units
    report.skipped += catch_up.skipped
    report.batches += catch_up.batches
    report.duration_s += catch_up.duration_s
    report.index_created = report.index_created or catch_up.index_created
    return report


def expire_job(mem: Memory) -> Job:
    """Expire idle sessions every ``worker_expire_interval_seconds``."""

    async def run(stop: asyncio.Event) -> RunReport:
        started = time.perf_counter()
        expired = await mem.sessions.expire_idle()
        return ExpireReport(expired, time.perf_counter() - started)

    settings = mem.settings
    return Job("expiry", settings.worker_expire_interval_seconds, run, settings.worker_max_backoff_seconds)


def summarise_job(mem: Memory) -> Job:
    """Update due summaries every ``worker_summary_interval_seconds``."""
    generator = mem.summary_generator()

    async def run(stop: asyncio.Event) -> RunReport:
        return await generator.run(stop=stop)

    settings = mem.settings
    return Job("summariser", settings.worker_summary_interval_seconds, run, settings.worker_max_backoff_seconds)


def build_jobs(
    mem: Memory,
    *,
    archive: bool = True,
    embed: bool = True,
    expire: bool = True,
    summarise: bool = True,
    channel_names: ChannelNames | None = None,
) -> list[Job]:
    """The built-in jobs that are switched on."""
    jobs: list[Job] = []
    if archive:
        jobs.append(archive_job(mem, channel_names=channel_names))
    if embed:
        jobs.append(embed_job(mem))
    if expire:
        jobs.append(expire_job(mem))
    if summarise:
        jobs.append(summarise_job(mem))
    return jobs


class JobSwitches(TypedDict, total=False):
    """The keywords of :func:`build_jobs` (every job on by default), passed on by :func:`worker_runner`."""

    archive: bool
    embed: bool
    expire: bool
    summarise: bool
    channel_names: ChannelNames | None


def worker_runner(mem: Memory, **switches: Unpack[JobSwitches]) -> WorkerRunner:
    """A :class:`~omoide.workers.runner.WorkerRunner` with the chosen built-in jobs of ``mem`` (not started)."""
    return WorkerRunner(
        build_jobs(mem, **switches),
        shutdown_timeout=mem.settings.worker_shutdown_timeout_seconds,
        store=mem.store,
    )


__all__ = [
    "JOB_NAMES",
    "ExpireReport",
    "JobSwitches",
    "archive_job",
    "build_jobs",
    "embed_job",
    "expire_job",
    "summarise_job",
    "worker_runner",
]
