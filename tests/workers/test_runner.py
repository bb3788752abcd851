"""WorkerRunner: intervals, backoff, logging, graceful and forced shutdown (no database needed)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass
from typing import Any

import pytest
import structlog

from omoide.errors import ConfigError, StoreUnavailable
from omoide.workers import Job, WorkerRunner, backoff_delay, check_jobs


@dataclass
class Report:
    done: int = 0
    retry: bool = False

    @property
    def idle(self) -> bool:
        return self.done == 0

    @property
    def retry_later(self) -> bool:
        return self.retry

    def as_log(self) -> dict[str, Any]:
        return {"done": self.done, "duration_ms": 0.1}


def test_backoff_doubles_up_to_the_cap():
    assert [backoff_delay(1.0, n, 10.0) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert backoff_delay(20.0, 3, 10.0) == 20.0  # never shorter than the interval
    assert backoff_delay(0.5, 10_000, 60.0) == 60.0


def test_job_names_are_checked():
    assert check_jobs(["archiver", " Embedder ", "archiver"]) == ["archiver", "embedder"]
    with pytest.raises(ConfigError, match="unknown worker job"):
        check_jobs(["archiver", "summariser2"])
    with pytest.raises(ConfigError, match="no worker job"):
        check_jobs([""])


async def test_jobs_run_on_their_intervals_until_stopped():
    calls: dict[str, int] = {"a": 0, "b": 0}

    def job(name: str, interval: float) -> Job:
        async def run(stop: asyncio.Event) -> Report:
            calls[name] += 1
            return Report(done=1)

        return Job(name, interval, run)

    runner = WorkerRunner([job("a", 0.01), job("b", 10.0)], shutdown_timeout=1.0)
    task = asyncio.create_task(runner.run())
    await asyncio.sleep(0.2)
    runner.stop()
    await asyncio.wait_for(task, 2)
    assert calls["a"] >= 5
    assert calls["b"] == 1  # the long sleep is interrupted by stop, not waited out
    assert runner.runs == calls and runner.cancelled == []


async def test_failures_back_off_and_the_job_carries_on():
    times: list[float] = []

    async def flaky(stop: asyncio.Event) -> Report:
        times.append(time.perf_counter())
        if len(times) <= 3:
            raise StoreUnavailable("database is down")
        return Report(done=1)

    runner = WorkerRunner([Job("flaky", 0.02, flaky, max_backoff=0.1)], shutdown_timeout=1.0)
    task = asyncio.create_task(runner.run())
    while len(times) < 5:
        await asyncio.sleep(0.01)
    runner.stop()
    await task
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[0] >= 0.035  # 0.02 × 2
    assert gaps[1] >= 0.075  # 0.02 × 4
    assert gaps[2] >= 0.095  # capped at 0.1


async def test_retry_later_reports_back_off_too():
    times: list[float] = []

    async def throttled(stop: asyncio.Event) -> Report:
        times.append(time.perf_counter())
        return Report(done=1, retry=len(times) < 3)

    runner = WorkerRunner([Job("t", 0.02, throttled, max_backoff=1.0)], shutdown_timeout=1.0)
    task = asyncio.create_task(runner.run())
    while len(times) < 3:
        await asyncio.sleep(0.01)
    runner.stop()
    await task
    assert times[2] - times[1] >= 0.075


async def test_a_bug_in_a_job_stops_the_runner():
    async def broken(stop: asyncio.Event) -> Report:
        raise ZeroDivisionError("bug")

    async def fine(stop: asyncio.Event) -> Report:
        return Report()

    runner = WorkerRunner([Job("broken", 0.01, broken), Job("fine", 0.01, fine)], shutdown_timeout=1.0)
    with pytest.raises(ExceptionGroup) as info:
        await asyncio.wait_for(runner.run(), 2)
    assert info.group_contains(ZeroDivisionError)


async def test_in_flight_work_finishes_when_stopped():
    finished = []

    async def slow(stop: asyncio.Event) -> Report:
        await asyncio.sleep(0.2)  # one unit of work that must not be cut
        finished.append(True)
        return Report(done=1)

    runner = WorkerRunner([Job("slow", 5.0, slow)], shutdown_timeout=2.0)
    task = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    runner.stop()
    await asyncio.wait_for(task, 3)
    assert finished == [True] and runner.cancelled == []


async def test_work_that_overruns_the_shutdown_timeout_is_cancelled():
    cancelled = []

    async def stubborn(stop: asyncio.Event) -> Report:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return Report()

    runner = WorkerRunner([Job("stubborn", 1.0, stubborn)], shutdown_timeout=0.1)
    task = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    runner.stop()
    await asyncio.wait_for(task, 3)
    assert time.perf_counter() - started < 1.0
    assert cancelled == [True] and runner.cancelled == ["stubborn"]


async def test_a_second_stop_cancels_at_once():
    async def stubborn(stop: asyncio.Event) -> Report:
        await asyncio.sleep(30)
        return Report()

    runner = WorkerRunner([Job("stubborn", 1.0, stubborn)], shutdown_timeout=60)
    task = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    runner.stop()
    await asyncio.sleep(0.05)
    assert not task.done()
    runner.stop()  # the second Ctrl-C
    await asyncio.wait_for(task, 2)
    assert runner.cancelled == ["stubborn"]


@pytest.fixture
def all_levels():
    """Log every level while the test runs (an entry point may have configured WARNING before)."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(**saved)


async def test_runs_are_logged_with_counts_and_durations(all_levels):
    async def busy(stop: asyncio.Event) -> Report:
        return Report(done=3)

    with structlog.testing.capture_logs() as logs:
        runner = WorkerRunner([Job("busy", 0.01, busy)], shutdown_timeout=1.0)
        task = asyncio.create_task(runner.run())
        await asyncio.sleep(0.05)
        runner.stop()
        await task
    runs = [e for e in logs if e["event"] == "worker_run"]
    assert runs and runs[0]["log_level"] == "info"
    assert runs[0]["worker"] == "busy" and runs[0]["done"] == 3 and "duration_ms" in runs[0]
    events = [e["event"] for e in logs]
    assert events[0] == "worker_started" and events[-1] == "worker_stopped"


def test_a_runner_needs_jobs():
    with pytest.raises(ValueError, match="at least one job"):
        WorkerRunner([], shutdown_timeout=1)
