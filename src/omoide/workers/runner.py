"""The worker runner: periodic jobs in one :class:`asyncio.TaskGroup`, with graceful shutdown.

Each :class:`Job` runs, sleeps ``interval`` seconds, and runs again. A run that fails with
an :class:`~omoide.errors.OmoideError` (database unreachable, provider down), or that asks
to back off (a transient provider error), waits twice as long each time, up to
``worker_max_backoff_seconds``; any other exception is a bug and stops the runner.

Shutdown (:meth:`WorkerRunner.stop`, or SIGTERM / SIGINT in :func:`serve`):

1. every job is told to stop: no new session, source or summary scope is started, the
   session, embedding batch or summary in flight finishes and commits, and unfinished sources
   are handed back;
2. the runner waits up to ``worker_shutdown_timeout_seconds`` for that;
3. whatever is still running is then cancelled. A cancelled store call rolls its
   transaction back (a source is never half-written), and a source left ``processing``
   is reclaimed by the next worker once its lease runs out.

A second signal (or ``stop(force=True)``) skips step 2.

Each run is logged as one structured ``worker_run`` event with the job's counts and
``duration_ms``: at INFO when it did something, at DEBUG when there was nothing to do.
It is also measured (``omoide_worker_job_seconds`` / ``omoide_worker_job_runs`` /
``omoide_worker_job_failures`` when metrics are on), traced (a ``omoide.worker.<job>`` span),
and, given the store, the runner reports its liveness and its failed runs in it for other
processes and hosts (:mod:`omoide.workers.health`: ``/readyz``, the inspector's recent errors).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from omoide.errors import OmoideError
from omoide.observability.metrics import active_metrics
from omoide.observability.tracing import span
from omoide.workers.health import HEARTBEAT_SECONDS, WorkerReporter

if TYPE_CHECKING:
    from omoide.stores.base import Store


class RunReport(Protocol):
    """What a job run returns."""

    @property
    def idle(self) -> bool:
        """Nothing was there to do."""

    @property
    def retry_later(self) -> bool:
        """The run hit a transient failure: back off before the next one."""

    def as_log(self) -> dict[str, Any]:
        """Counts and ``duration_ms`` for the log line."""


@dataclass(frozen=True, slots=True)
class Job:
    """A periodic job.

    Attributes:
        name: ``archiver``, ``embedder``, ``expiry``, … (the ``worker`` field of its logs).
        interval: seconds between the end of one run and the start of the next.
        run: one run; it must watch the stop event and end soon after it is set.
        max_backoff: the longest pause after failures.
    """

    name: str
    interval: float
    run: Callable[[asyncio.Event], Awaitable[RunReport]]
    max_backoff: float = 300.0


def backoff_delay(interval: float, failures: int, max_backoff: float) -> float:
    """``interval × 2^failures``, at most ``max_backoff`` (and never below ``interval``)."""
    if failures <= 0:
        return interval
    return max(interval, min(max_backoff, interval * (2.0 ** min(failures, 30))))


class WorkerRunner:
    """Runs jobs until stopped (see the module docstring).

    Args:
        jobs: the jobs to run, each in its own task.
        shutdown_timeout: seconds the jobs get to finish once stopped, before cancellation.
        store: the store the jobs work on: the runner reports its liveness and errors in it
            (:mod:`omoide.workers.health`), for every process and host; ``None``: it reports nothing.

    Example:
        >>> runner = WorkerRunner(jobs, shutdown_timeout=30)   # doctest: +SKIP
        >>> task = asyncio.create_task(runner.run())            # doctest: +SKIP
        >>> runner.stop(); await task                           # doctest: +SKIP
    """

    def __init__(self, jobs: Sequence[Job], *, shutdown_timeout: float, store: Store | None = None) -> None:
        if not jobs:
            raise ValueError("WorkerRunner needs at least one job")
        self.jobs = tuple(jobs)
        self.reporter = None if store is None else WorkerReporter(store, jobs=[j.name for j in jobs])
        self.shutdown_timeout = shutdown_timeout
        self.stopping = asyncio.Event()
        self._forced = asyncio.Event()
        self.runs: dict[str, int] = {job.name: 0 for job in self.jobs}
        # one logger per runner (not cached at import): follows the logging configured before it starts
        self.log = structlog.get_logger(__name__)
        self.cancelled: list[str] = []

    def stop(self, *, force: bool = False) -> None:
        """Ask every job to stop; with ``force`` (or when already stopping), cancel at once."""
        if force or self.stopping.is_set():
            self._forced.set()
        self.stopping.set()

    async def run(self) -> None:
        """Run the jobs until :meth:`stop`; return once every job has ended.

        Raises:
            ExceptionGroup: a job raised something other than an ``OmoideError`` (a bug).
        """
        self.log.info("worker_started", jobs=[job.name for job in self.jobs])
        started = time.perf_counter()
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._loop(job), name=f"omoide-{job.name}") for job in self.jobs]
                group.create_task(self._watchdog(tasks), name="omoide-worker-watchdog")
                if self.reporter is not None:
                    group.create_task(self._heartbeat(), name="omoide-worker-heartbeat")
        finally:
            if self.reporter is not None:
                await self.reporter.heartbeat(running=False)
        self.log.info(
            "worker_stopped",
            runs=dict(self.runs),
            cancelled=self.cancelled,
            uptime_s=round(time.perf_counter() - started, 3),
        )

    @contextlib.asynccontextmanager
    async def in_background(self) -> AsyncIterator[WorkerRunner]:
        """Run the jobs in a task of this event loop while the block runs; stop them gracefully on leaving it.

        In-flight work finishes (within ``shutdown_timeout``) and nothing new is claimed. A
        crash of the runner is logged (``workers_crashed``).
        """
        task = asyncio.create_task(self.run(), name="omoide-workers")

        def report_crash(done: asyncio.Task[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                self.log.error("workers_crashed", error=repr(done.exception()))

        task.add_done_callback(report_crash)
        try:
            yield self
        finally:
            self.stop()
            try:
                await task
            except asyncio.CancelledError:
                task.cancel()
                raise

    async def _heartbeat(self) -> None:
        """Tell other processes this one is alive, every ``HEARTBEAT_SECONDS`` until stopping."""
        assert self.reporter is not None
        while not self.stopping.is_set():
            await self.reporter.heartbeat()
            await self._sleep(HEARTBEAT_SECONDS)

    async def _report_error(self, job: str, code: str, message: str) -> None:
        if self.reporter is not None:
            await self.reporter.error(job, code, message)

    def _measure(self, job: str, outcome: str, seconds: float, code: str | None = None) -> None:
        m = active_metrics()
        if m is not None:
            m.job_seconds.labels(job=job).observe(seconds)
            m.job_runs.labels(job=job, outcome=outcome).inc()
            if code is not None:
                m.job_failures.labels(job=job, code=code).inc()

    async def _loop(self, job: Job) -> None:
        failures = 0
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                with span(f"omoide.worker.{job.name}", job=job.name) as traced:
                    report = await job.run(self.stopping)
                    traced.set(outcome="retry" if report.retry_later else "idle" if report.idle else "ok")
            except OmoideError as exc:
                self._measure(job.name, "failed", time.perf_counter() - started, exc.code)
                await self._report_error(job.name, exc.code, exc.message)
                failures += 1
                delay = backoff_delay(job.interval, failures, job.max_backoff)
                self.log.error(
                    "worker_run_failed",
                    worker=job.name,
                    error=exc.message,
                    code=exc.code,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    failures=failures,
                    retry_in_s=round(delay, 3),
                )
            else:
                self.runs[job.name] += 1
                failures = failures + 1 if report.retry_later else 0
                delay = backoff_delay(job.interval, failures, job.max_backoff)
                fields = report.as_log()
                await self._after_run(job.name, report, fields, time.perf_counter() - started)
                if failures:
                    self.log.warning("worker_run", worker=job.name, retry_in_s=round(delay, 3), **fields)
                elif report.idle:
                    self.log.debug("worker_run", worker=job.name, **fields)
                else:
                    self.log.info("worker_run", worker=job.name, **fields)
            await self._sleep(delay)

    async def _after_run(self, job: str, report: RunReport, fields: dict[str, Any], seconds: float) -> None:
        """Metrics for a run that returned; a transient failure or failed items are recent errors too."""
        if report.retry_later:
            self._measure(job, "retry", seconds, "RETRY_LATER")
            reason = fields.get("transient_error") or "a transient failure; backing off"
            await self._report_error(job, "RETRY_LATER", str(reason))
            return
        self._measure(job, "idle" if report.idle else "ok", seconds)
        failed = fields.get("failed")
        if isinstance(failed, int) and failed > 0:
            await self._report_error(job, "ITEMS_FAILED", f"{failed} item(s) failed in this run (see the worker log)")

    async def _sleep(self, seconds: float) -> None:
        try:
            async with asyncio.timeout(seconds):
                await self.stopping.wait()
        except TimeoutError:
            pass

    async def _watchdog(self, tasks: Sequence[asyncio.Task[None]]) -> None:
        """Once stopping: give the jobs ``shutdown_timeout`` seconds, then cancel what is left."""
        await self.stopping.wait()
        self.log.info("worker_stopping", timeout_s=self.shutdown_timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.shutdown_timeout
        forced = asyncio.ensure_future(self._forced.wait())
        remaining = {t for t in tasks if not t.done()}
        try:
            while remaining and not self._forced.is_set():
                left = deadline - loop.time()
                if left <= 0:
                    break
                done, _ = await asyncio.wait({*remaining, forced}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                remaining -= done
        finally:
            forced.cancel()
        for task in remaining:
            if not task.done():
                name = task.get_name().removeprefix("omoide-")
                self.cancelled.append(name)
                self.log.warning(
                    "worker_cancelled", worker=name, reason="forced" if self._forced.is_set() else "timeout"
                )
                task.cancel()


__all__ = ["Job", "RunReport", "WorkerRunner", "backoff_delay"]
