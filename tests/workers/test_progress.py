"""The embedding job's progress record (:mod:`omoide.workers.progress`), kept in the store's ``worker_state``
table and read by other processes: round trip with rate and ETA, stale and dead records, a store that cannot
take it, and the worker's own job recording itself."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from omoide.errors import StoreUnavailable
from omoide.workers import progress
from omoide.workers.progress import ProgressRecorder, progress_records, read_progress


async def test_a_record_round_trips_with_rate_and_eta(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = ProgressRecorder(store, job="embedder", model="hashing:v1@384")
    assert await read_progress(store) is None  # nothing recorded before the first count
    rec.set_total(100)
    monkeypatch.setattr(progress, "WRITE_EVERY_SECONDS", 0.0)
    rec.advance(40)
    await rec.flush()
    got = await read_progress(store)
    assert got is not None and got.running and (got.done, got.total) == (40, 100)
    assert got.rate is not None and got.rate > 0 and got.eta_seconds is not None
    assert got.host == rec.host and got.pid == os.getpid() and got.job == "embedder"
    assert "40/100 chunks" in got.describe() and "left" in got.describe()
    rec.finish()
    await rec.flush()
    done = await read_progress(store)
    assert done is not None and not done.running and "embedded with hashing:v1@384" in done.describe()


async def test_writes_are_throttled_and_the_newest_snapshot_wins(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[dict[str, Any]] = []
    rec = ProgressRecorder(store, job="embed", model="m")
    real_put = rec.state.put

    async def put(kind: str, key: str, payload: Any) -> None:
        writes.append(dict(payload))
        await real_put(kind, key, payload)

    monkeypatch.setattr(rec.state, "put", put)
    rec.set_total(1000)
    for _ in range(200):  # 200 batches within a second: one write at once, the rest wait their turn
        rec.advance(5)
    rec.finish()
    await rec.flush()
    assert len(writes) <= 3, [w["done"] for w in writes]
    assert writes[-1]["done"] == 1000 and writes[-1]["running"] is False
    got = await read_progress(store)
    assert got is not None and got.done == 1000 and not got.running


async def test_stale_and_dead_records_are_ignored(store: Any) -> None:
    rec = ProgressRecorder(store, job="embedder", model="m")
    rec.set_total(10)
    await rec.flush()
    await asyncio.sleep(0.05)
    assert await read_progress(store, max_age=0.01) is None  # older than max_age (the database's clock)
    assert await read_progress(store) is not None
    ghost = ProgressRecorder(store, job="embedder", model="m")
    ghost.pid = _dead_pid()
    ghost.key = f"embedder@{ghost.host}:{ghost.pid}"
    ghost.set_total(5)
    await ghost.flush()
    records = await progress_records(store)
    assert [(r.pid, r.running) for r in records] == [(os.getpid(), True), (ghost.pid, False)]  # its process is gone


async def test_a_store_that_fails_never_fails_the_job(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = ProgressRecorder(store, job="embed", model="m")

    async def down(*args: Any, **kwargs: Any) -> None:
        raise StoreUnavailable("database is down")

    monkeypatch.setattr(rec.state, "put", down)
    rec.set_total(3)
    rec.advance(3)
    rec.finish()
    await rec.flush()  # logged, not raised
    monkeypatch.setattr(rec.state, "rows", down)
    assert await read_progress(store) is None  # and a failed read says nothing is known


def test_recording_outside_an_event_loop_is_skipped(tmp_path: Path) -> None:
    """`advance` called from a thread without a loop: nothing is written, nothing raised."""
    from omoide.settings import Settings
    from omoide.stores import open_store

    store = open_store(settings=Settings(database_url=f"sqlite:///{tmp_path}/o.db", transcripts_dir=tmp_path / "t"))
    rec = ProgressRecorder(store, job="embed", model="m")
    rec.set_total(3)
    rec.advance(3)
    rec.finish()


def _dead_pid() -> int:
    pid = 2**22 - 7
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


async def test_the_worker_records_its_embedding_progress(settings: Any, tmp_path: Path) -> None:
    """What the worker's embedding job did is in the store for any reader."""
    from importers.dce import ALICE, document, message, t, write
    from omoide import Memory

    from .helpers import tuned

    s = tuned(settings, embedder="hashing", worker_embed_interval_seconds=0.05, embed_batch_size=4)
    msgs = [message(t(3, 9, i), f"message number {i} about the weather", ALICE, increment=i) for i in range(40)]
    path = write(tmp_path / "general.json", document(msgs))
    async with Memory.open(s) as mem:
        summary = await mem.knowledge.import_export(path)
        async with mem.workers(archive=False, expire=False, summarise=False):
            for _ in range(400):  # the worker may take several rounds under load: wait for the last
                job = await read_progress(mem.store)
                if job is not None and not job.running and job.done == summary.chunks:
                    break
                await asyncio.sleep(0.05)
        assert job is not None and not job.running
        assert job.job == "embedder" and job.model == mem.embedder.model_id
        assert job.done == job.total == summary.chunks
