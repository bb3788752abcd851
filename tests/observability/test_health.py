"""Worker liveness and recent errors across processes, kept in the store (workers.health), and /readyz:
database reachable, migrations current, workers alive — with the reason when not ready."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from omoide import Memory
from omoide.errors import ProviderUnavailable, StoreUnavailable
from omoide.stores.worker_state import worker_state_of
from omoide.workers import health
from omoide.workers.health import (
    KEEP_ERRORS,
    WorkerReporter,
    recent_worker_errors,
    worker_runners,
    workers_health,
)
from omoide.workers.runner import Job, WorkerRunner


async def test_reporters_of_several_processes_share_the_store(store: Any):
    assert (await workers_health(store)).state == "none" and (await workers_health(store)).ok
    one = WorkerReporter(store, jobs=["archiver"])
    other = WorkerReporter(store, jobs=["embedder"])
    other.pid = one.pid + 1_000_000  # another process (not alive: this host has no such pid)
    assert await one.heartbeat() and await other.heartbeat()
    await one.error("archiver", "STORE_UNAVAILABLE", "database is down")
    await other.error("embedder", "RETRY_LATER", "x" * 2000)
    assert {r.pid for r in await worker_runners(store)} == {one.pid, other.pid}
    errors = await recent_worker_errors(store)
    assert [(e.job, e.code) for e in errors] == [("embedder", "RETRY_LATER"), ("archiver", "STORE_UNAVAILABLE")]
    assert len(errors[0].message) == health.MESSAGE_CHARS
    assert (await workers_health(store)).state == "alive"  # this process reports
    for i in range(KEEP_ERRORS + 5):
        await one.error("archiver", "X", str(i))
    assert len(await recent_worker_errors(store, limit=1000)) == KEEP_ERRORS
    assert (await recent_worker_errors(store, limit=1))[0].message == str(KEEP_ERRORS + 4)


async def test_a_stopped_or_silent_worker_is_not_alive(store: Any, monkeypatch: pytest.MonkeyPatch):
    reporter = WorkerReporter(store, jobs=["archiver"])
    await reporter.heartbeat(running=False)
    got = await workers_health(store)
    assert (got.ok, got.state) == (False, "stopped") and "stopped at" in got.reason
    await reporter.heartbeat()
    monkeypatch.setattr(health, "ALIVE_SECONDS", -1.0)  # every report is now too old
    got = await workers_health(store)
    assert (got.ok, got.state) == (False, "dead") and "stuck or gone" in got.reason
    assert [r.key for r in await worker_state_of(store).rows("runner")] == [reporter.key]


async def test_the_runner_reports_failures_transient_errors_and_stops(store: Any):
    class Retry:
        idle = False
        retry_later = True

        def as_log(self) -> dict[str, Any]:
            return {"transient_error": "429 from the embedding API"}

    calls = 0

    async def flaky(stop: asyncio.Event) -> Retry:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StoreUnavailable("database is down")
        if calls == 2:
            raise ProviderUnavailable("upstream 503", provider="x")
        runner.stop()
        return Retry()

    runner = WorkerRunner([Job("embedder", 0.001, flaky, max_backoff=0.002)], shutdown_timeout=1, store=store)
    await asyncio.wait_for(runner.run(), 10)
    assert [(e.job, e.code, e.message) for e in await recent_worker_errors(store)] == [
        ("embedder", "RETRY_LATER", "429 from the embedding API"),
        ("embedder", "PROVIDER_UNAVAILABLE", "upstream 503"),
        ("embedder", "STORE_UNAVAILABLE", "database is down"),
    ]
    (me,) = await worker_runners(store)
    assert me.jobs == ("embedder",) and me.running is False  # it said it stopped


async def test_readyz_ready(client: httpx.AsyncClient, memory: Memory):
    got = await client.get("/readyz")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["status"] == "ready" and body["schema_version"] == body["latest_schema_version"]
    assert body["checks"] == {"database": "ok", "migrations": "current", "workers": "none"}
    async with memory.workers():
        await asyncio.sleep(0.2)
        alive = await client.get("/readyz")
        assert alive.status_code == 200 and alive.json()["checks"]["workers"] == "alive"


async def test_readyz_says_why_it_is_not_ready(
    client: httpx.AsyncClient, memory: Memory, monkeypatch: pytest.MonkeyPatch
):
    async def old() -> int:
        return 1

    monkeypatch.setattr(memory.store, "schema_version", old)
    await WorkerReporter(memory.store, jobs=["archiver"]).heartbeat(running=False)
    got = await client.get("/readyz")
    assert got.status_code == 503 and got.headers["content-type"].startswith("application/problem+json")
    body = got.json()
    assert body["code"] == "NOT_READY"
    assert body["checks"] == {"database": "ok", "migrations": "pending", "workers": "stopped"}
    assert "omoide migrate" in body["detail"] and "workers stopped" in body["detail"]

    async def down() -> int:
        raise StoreUnavailable("database is down")

    monkeypatch.setattr(memory.store, "schema_version", down)
    body = (await client.get("/readyz")).json()
    assert body["checks"]["database"] == "unreachable" and "not reachable" in body["detail"]
