"""The embedding jobs' progress, readable by every process and host that reaches the store.

A worker (``omoide worker``, ``mem.workers()``) or ``omoide embed`` records what it is doing
— chunks done out of how many, since when, the rate and the time left — as a ``progress`` row of
the store's ``worker_state`` table (:mod:`omoide.stores.worker_state`), one row per job and
process (``embedder@host:pid``), rewritten at most once a second. ``omoide status``,
``GET /v1/status`` and the inspector read it with :func:`read_progress`, on any host.

Why the database and not a file beside it (as before): on PostgreSQL the worker and the HTTP
server usually run on different hosts, and a file is per host. The table costs one small upsert a
second while a job embeds (and none while it idles). SQLite uses the same table (one code path,
and an in-memory database needs nothing else).

Recording never fails a job and never makes it wait: :class:`ProgressRecorder`'s methods are
synchronous (they are called between embedding batches), each write runs as a background task
of the event loop, a newer snapshot replaces one still waiting to be written, and a failed write
is logged once (DEBUG) and skipped. A record is ignored once it is older than
:data:`STALE_SECONDS` by the database's clock, and a running record whose process, on the
reader's host, is gone reads as finished (a worker killed with SIGKILL never clears it); records
older than :data:`PRUNE_SECONDS` are deleted by the next job that starts.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import structlog

from omoide.errors import OmoideError
from omoide.stores.worker_state import WorkerStateRow, WorkerStateStore, worker_state_of

if TYPE_CHECKING:
    from omoide.stores.base import Store

log = structlog.get_logger(__name__)

STALE_SECONDS = 120.0
"""A record not rewritten for this long is ignored (its writer is stuck or gone)."""

WRITE_EVERY_SECONDS = 1.0
"""Shortest pause between two writes of the record while a job runs."""

PRUNE_SECONDS = 7 * 24 * 3600.0
"""Progress records older than this are deleted when a job starts."""

READ_LIMIT = 50
"""The newest records :func:`read_progress` looks at (one per job and process)."""


@dataclass(frozen=True, slots=True)
class JobProgress:
    """One job's progress.

    Attributes:
        job: ``embedder`` (the worker's embedding job) or ``embed`` (``omoide embed``).
        model: the embedding model id.
        done: chunks embedded since the job started.
        total: chunks that were waiting when it started, plus any that arrived since (``None``: not counted yet).
        started_at / updated_at: when the job started and when this record was written (UTC, ISO 8601;
            ``updated_at`` as read back is the database's clock).
        rate: chunks per second since the job started (``None`` before the first chunk).
        eta_seconds: seconds left at that rate (``None`` when unknown).
        pid / host: the writing process.
        running: ``False`` once the job finished (the record then says what it did).
    """

    job: str
    model: str
    done: int
    total: int | None
    started_at: str
    updated_at: str
    rate: float | None
    eta_seconds: float | None
    pid: int
    host: str
    running: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for people: ``embedding with M: 340/1,360 chunks, 2.1 chunks/s, about 8 min left``."""
        of = f"/{self.total:,}" if self.total is not None else ""
        text = f"{'embedding' if self.running else 'embedded'} with {self.model}: {self.done:,}{of} chunks"
        if self.rate is not None:
            text += f", {self.rate:.1f} chunks/s"
        if self.running and self.eta_seconds is not None:
            text += f", about {_duration(self.eta_seconds)} left"
        return text + f" ({self.job}, pid {self.pid} on {self.host})"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _now() -> datetime:
    return datetime.now(UTC)


class ProgressRecorder:
    """Records one job's progress in ``store`` (see the module docstring).

    Args:
        store: the store the job works on (its ``worker_state`` table takes the record).
        job: the job's name (``embedder``, ``embed``).
        model: the embedding model id.
        started: when the job started (``time.monotonic()``; default: now).

    Example:
        >>> rec = ProgressRecorder(mem.store, job="embed", model="hashing:v1@256")  # doctest: +SKIP
        >>> rec.set_total(1200); rec.advance(64); rec.finish()                      # doctest: +SKIP
        >>> await rec.flush()  # before closing the store: the last record is written  # doctest: +SKIP
    """

    def __init__(self, store: Store, *, job: str, model: str, started: float | None = None) -> None:
        self.state: WorkerStateStore = worker_state_of(store)
        self.job = job
        self.model = model
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.key = f"{job}@{self.host}:{self.pid}"
        self.done = 0
        self.total: int | None = None
        now = time.monotonic()
        self._started = now if started is None else started  # the rate counts from the job's start
        self._started_at = (_now() - timedelta(seconds=now - self._started)).isoformat()
        self._written = -float("inf")
        self._latest: JobProgress | None = None
        self._writing: asyncio.Task[None] | None = None
        self._pruned = False
        self._warned = False

    def set_total(self, total: int | None) -> None:
        """How many chunks the job has to do (done so far included)."""
        self.total = None if total is None else max(total, self.done)
        self._record(force=True)

    def advance(self, chunks: int) -> None:
        """``chunks`` more are done (recorded at once the first time, then at most once a second)."""
        first = self.done == 0
        self.done += chunks
        if self.total is not None and self.done > self.total:
            self.total = self.done
        self._record(force=first)

    def finish(self) -> None:
        """The job ended: the record says so (``running`` false) until the next job starts."""
        self._record(force=True, running=False)

    async def flush(self) -> None:
        """Wait until the newest snapshot is written (or failed: that is logged, not raised)."""
        while self._writing is not None and not self._writing.done():
            await asyncio.shield(self._writing)

    def snapshot(self, *, running: bool = True) -> JobProgress:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = self.done / elapsed if self.done else None
        eta = None
        if rate and self.total is not None:
            eta = max(0.0, (self.total - self.done) / rate)
        return JobProgress(
            job=self.job,
            model=self.model,
            done=self.done,
            total=self.total,
            started_at=self._started_at,
            updated_at=_now().isoformat(),
            rate=None if rate is None else round(rate, 3),
            eta_seconds=None if eta is None else round(eta, 1),
            pid=self.pid,
            host=self.host,
            running=running,
        )

    def _record(self, *, force: bool = False, running: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._written < WRITE_EVERY_SECONDS:
            return
        self._written = now
        self._latest = self.snapshot(running=running)
        if self._writing is not None and not self._writing.done():
            return  # the task in flight writes this newer snapshot next
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._warn("no event loop runs in this thread")
            return
        self._writing = loop.create_task(self._write_latest(), name=f"omoide-progress-{self.job}")

    async def _write_latest(self) -> None:
        while self._latest is not None:
            record, self._latest = self._latest, None
            try:
                if not self._pruned:
                    self._pruned = True
                    await self.state.prune("progress", older_than=PRUNE_SECONDS)
                await self.state.put("progress", self.key, record.as_dict())
            except Exception as exc:  # best effort: never the job's failure (StoreError, a closed store, …)
                self._warn(f"{type(exc).__name__}: {exc}")

    def _warn(self, error: str) -> None:
        if not self._warned:
            self._warned = True
            log.debug("progress_not_recorded", job=self.job, error=error)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def _from_row(row: WorkerStateRow) -> JobProgress | None:
    data = row.payload
    try:
        record = JobProgress(**{k: data[k] for k in JobProgress.__dataclass_fields__ if k in data})
    except TypeError:  # a field missing: written by something else
        return None
    return replace(record, updated_at=row.updated_at.isoformat())  # the database's clock


async def progress_records(store: Store, *, max_age: float = STALE_SECONDS) -> list[JobProgress]:
    """Every fresh job record in ``store``: running ones first, then the most recently written.

    A running record whose process is gone (on this host) reads as finished. A store that cannot
    be read gives ``[]`` (logged): status readers show the store's counts without it.
    """
    try:
        rows = await worker_state_of(store).rows("progress", limit=READ_LIMIT)
    except (OmoideError, OSError) as exc:
        log.debug("progress_not_read", error=str(exc))
        return []
    here = socket.gethostname()
    fresh: list[JobProgress] = []
    for row in rows:
        record = _from_row(row)
        if record is None or row.age_seconds > max_age:
            continue
        if record.running and record.host == here and not _alive(record.pid):
            record = replace(record, running=False)
        fresh.append(record)
    return sorted(fresh, key=lambda r: (r.running, r.updated_at), reverse=True)


async def read_progress(store: Store, *, max_age: float = STALE_SECONDS) -> JobProgress | None:
    """The latest job progress recorded in ``store``, or ``None`` (none, or all stale).

    A running job wins over a finished one; a finished job's record is returned too while it is
    fresh, so a status read just after a run still says what it did.
    """
    records = await progress_records(store, max_age=max_age)
    return records[0] if records else None


__all__ = [
    "PRUNE_SECONDS",
    "STALE_SECONDS",
    "WRITE_EVERY_SECONDS",
    "JobProgress",
    "ProgressRecorder",
    "progress_records",
    "read_progress",
]
