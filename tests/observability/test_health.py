"""Worker liveness and recent errors across processes (workers.health), and /readyz: database reachable,
migrations current, workers alive — with the reason when not ready."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from omoide import Memory
from omoide.errors import ProviderUnavailable, StoreUnavailable
from omoide.workers import health
from omoide.workers.health import (
    KEEP_ERRORS,
    WorkerReporter,
    recent_worker_errors,
    state_path,
    worker_runners,
    workers_health,
)
from omoide.workers.runner import Job, WorkerRunner


def test_state_path_sits_beside_the_database_or_in_the_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert state_path(f"sqlite:///{tmp_path}/omoide.db") == tmp_path / "omoide.db.workers.json"
    assert state_path("sqlite:///:memory:") is None
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    pg = state_path("postgresql://u:secret@db.example/omoide")
    assert pg is not None and pg.parent == tmp_path / "state" / "omoide" / "workers" and "secret" not in str(pg)
    assert pg == state_path("postgresql://u:other@db.example/omoide")  # the password does not name the file


def test_reporters_of_several_processes_share_the_file(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/omoide.db"
    assert workers_health(url).state == "none" and workers_health(url).ok
    one = WorkerReporter(url, jobs=["archiver"])
    other = WorkerReporter(url, jobs=["embedder"])
    other.pid = one.pid + 1_000_000  # another process (not alive: this host has no such pid)
    one.heartbeat()
    other.heartbeat()
    one.error("archiver", "STORE_UNAVAILABLE", "database is down")
    other.error("embedder", "RETRY_LATER", "x" * 2000)
    assert {r.pid for r in worker_runners(url)} == {one.pid, other.pid}
    errors = recent_worker_errors(url)
    assert [(e.job, e.code) for e in errors] == [("embedder", "RETRY_LATER"), ("archiver", "STORE_UNAVAILABLE")]
    assert len(errors[0].message) == health.MESSAGE_CHARS
    assert workers_health(url).state == "alive"  # this process reports
    assert oct(os.stat(state_path(url)).st_mode & 0o777) == "0o644"  # type: ignore[arg-type]
    for i in range(KEEP_ERRORS + 5):
        one.error("archiver", "X", str(i))
    assert len(recent_worker_errors(url, limit=1000)) == KEEP_ERRORS
    assert recent_worker_errors(url, limit=1)[0].message == str(KEEP_ERRORS + 4)


def test_a_stopped_or_silent_worker_is_not_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    url = f"sqlite:///{tmp_path}/omoide.db"
    reporter = WorkerReporter(url, jobs=["archiver"])
    reporter.heartbeat(running=False)
    got = workers_health(url)
    assert (got.ok, got.state) == (False, "stopped") and "stopped at" in got.reason
    reporter.heartbeat()
    monkeypatch.setattr(health, "ALIVE_SECONDS", -1.0)  # every report is now too old
    got = workers_health(url)
    assert (got.ok, got.state) == (False, "dead") and "stuck or gone" in got.reason
    assert state_path(url).read_text()  # type: ignore[union-attr]
    data = json.loads(state_path(url).read_text())  # type: ignore[union-attr]
    assert list(data["runners"]) == [f"{reporter.host}:{reporter.pid}"]


def test_an_in_memory_database_reports_in_this_process():
    url = "sqlite:///:memory:"
    WorkerReporter(url, jobs=["expiry"]).error("expiry", "STORE_UNAVAILABLE", "gone")
    assert recent_worker_errors(url)[0].code == "STORE_UNAVAILABLE"


async def test_the_runner_reports_failures_transient_errors_and_stops(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/omoide.db"

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

    runner = WorkerRunner([Job("embedder", 0.001, flaky, max_backoff=0.002)], shutdown_timeout=1, database_url=url)
    await asyncio.wait_for(runner.run(), 10)
    assert [(e.job, e.code, e.message) for e in recent_worker_errors(url)] == [
        ("embedder", "RETRY_LATER", "429 from the embedding API"),
        ("embedder", "PROVIDER_UNAVAILABLE", "upstream 503"),
        ("embedder", "STORE_UNAVAILABLE", "database is down"),
    ]
    (me,) = worker_runners(url)
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
    WorkerReporter(memory.settings.database_url, jobs=["archiver"]).heartbeat(running=False)
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
