"""The ``worker_state`` table (:mod:`omoide.stores.worker_state`) on every store mode: upserts, order, ages,
pruning, argument checks, and a database not migrated that far."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from omoide.errors import InvalidInput
from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores.worker_state import MAX_PAYLOAD_BYTES, WorkerStateStore, worker_state_of


async def test_rows_upsert_and_come_back_newest_first_with_their_age(store: Any) -> None:
    state = worker_state_of(store)
    assert isinstance(state, WorkerStateStore) and worker_state_of(store) is state  # one per store
    assert await state.rows("runner") == []
    await state.put("runner", "host-a:1", {"jobs": ["embedder"], "running": True})
    await asyncio.sleep(0.01)
    await state.put("runner", "host-b:2", {"jobs": ["archiver"], "running": True, "note": "日本語"})
    await asyncio.sleep(0.01)
    await state.put("runner", "host-a:1", {"jobs": ["embedder"], "running": False})  # replaces, now newest
    await state.put("progress", "embed@host-a:1", {"done": 3})
    rows = await state.rows("runner")
    assert [r.key for r in rows] == ["host-a:1", "host-b:2"]
    assert rows[0].payload == {"jobs": ["embedder"], "running": False}
    assert rows[1].payload["note"] == "日本語"
    assert all(r.kind == "runner" and r.updated_at.tzinfo is not None for r in rows)
    assert all(-1.0 < r.age_seconds < 30.0 for r in rows)  # the database's clock: just written
    assert [r.key for r in await state.rows("runner", limit=1)] == ["host-a:1"]
    assert [r.key for r in await state.rows("progress")] == ["embed@host-a:1"]


async def test_prune_by_age_and_by_count(store: Any) -> None:
    state = worker_state_of(store)
    for i in range(5):
        await state.put("error", f"e{i}", {"i": i})
        await asyncio.sleep(0.005)
    assert await state.prune("error", keep=3) == 2
    assert [r.payload["i"] for r in await state.rows("error")] == [4, 3, 2]
    assert await state.prune("error", older_than=3600) == 0
    await asyncio.sleep(0.05)
    await state.put("error", "fresh", {"i": 9})
    assert await state.prune("error", older_than=0.04) == 3  # only the one just written stays
    assert [r.key for r in await state.rows("error")] == ["fresh"]
    assert [r.key for r in await state.rows("runner")] == []  # kinds are separate


async def test_bad_arguments_are_refused(store: Any) -> None:
    state = worker_state_of(store)
    with pytest.raises(InvalidInput, match="kind"):
        await state.put("gossip", "k", {})
    with pytest.raises(InvalidInput, match="key"):
        await state.put("runner", "", {})
    with pytest.raises(InvalidInput, match="JSON object"):
        await state.put("runner", "k", {"x": object()})
    with pytest.raises(InvalidInput, match="bytes"):
        await state.put("error", "k", {"message": "x" * (MAX_PAYLOAD_BYTES + 1)})
    with pytest.raises(InvalidInput, match="limit"):
        await state.rows("runner", limit=0)
    with pytest.raises(InvalidInput, match="older_than"):
        await state.prune("runner")


async def test_a_database_before_the_migration_has_no_rows(db_url: str, tmp_path: Path) -> None:
    """`omoide status` against a database an older omoide migrated: nothing reported, no error."""
    settings = Settings(database_url=db_url, transcripts_dir=tmp_path / "t")
    async with open_store(settings=settings) as migrated:
        pass
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            conn.execute("DROP TABLE worker_state")
    else:
        conn = await asyncpg.connect(db_url)
        try:
            await conn.execute("DROP TABLE worker_state")
        finally:
            await conn.close()
    async with open_store(settings=settings, migrate=False) as old:
        assert migrated is not old
        assert await worker_state_of(old).rows("runner") == []


async def test_a_reporter_forgets_runners_silent_for_a_day(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from omoide.workers import health
    from omoide.workers.health import WorkerReporter, workers_health

    state = worker_state_of(store)
    await state.put(
        "runner", "gone-host:1", {"host": "gone-host", "pid": 1, "jobs": [], "started_at": "x", "running": True}
    )
    await asyncio.sleep(0.05)
    monkeypatch.setattr(health, "FORGET_SECONDS", 0.04)  # "a day" for this test
    reporter = WorkerReporter(store, jobs=["expiry"])
    assert await reporter.heartbeat()
    assert [r.key for r in await state.rows("runner")] == [reporter.key]  # the silent one is gone
    assert (await workers_health(store)).state == "alive"
    await state.put(
        "runner", "new-host:2", {"host": "new-host", "pid": 2, "jobs": [], "started_at": "x", "running": True}
    )
    await asyncio.sleep(0.05)
    assert await reporter.heartbeat()  # pruned at most hourly: the new one stays until then
    assert {r.key for r in await state.rows("runner")} == {reporter.key, "new-host:2"}
