"""The embedding job's progress record (:mod:`omoide.workers.progress`), read by other processes."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from omoide.workers import progress
from omoide.workers.progress import ProgressRecorder, progress_path, read_progress


def test_where_the_record_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress_path(f"sqlite:///{tmp_path}/o.db") == tmp_path / "o.db.progress.json"
    assert progress_path("sqlite:///:memory:") is None
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    one = progress_path("postgresql://omoide:secret@db.example:5432/omoide")
    other = progress_path("postgresql://omoide:changed@db.example:5432/omoide")
    assert one == other  # the password is not part of the key
    assert one is not None and one.parent == tmp_path / "state" / "omoide" / "progress"
    assert progress_path("postgresql://omoide@db.example:5432/other") != one


def test_a_record_round_trips_with_rate_and_eta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/o.db"
    rec = ProgressRecorder(url, job="embedder", model="hashing:v1@384")
    progress._IN_PROCESS.clear()
    assert read_progress(url) is None  # nothing recorded before the first count
    rec.set_total(100)
    monkeypatch.setattr(progress, "WRITE_EVERY_SECONDS", 0.0)
    rec.advance(40)
    progress._IN_PROCESS.clear()  # as another process sees it: from the file
    got = read_progress(url)
    assert got is not None and got.running and (got.done, got.total) == (40, 100)
    assert got.rate is not None and got.rate > 0 and got.eta_seconds is not None
    assert "40/100 chunks" in got.describe() and "left" in got.describe()
    rec.finish()
    progress._IN_PROCESS.clear()
    done = read_progress(url)
    assert done is not None and not done.running and "embedded with hashing:v1@384" in done.describe()


def test_stale_and_dead_records_are_ignored(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/o.db"
    rec = ProgressRecorder(url, job="embedder", model="m")
    rec.set_total(10)
    progress._IN_PROCESS.clear()
    path = progress_path(url)
    assert path is not None
    data = json.loads(path.read_text())
    data["updated_at"] = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    path.write_text(json.dumps(data))
    assert read_progress(url) is None
    data["updated_at"] = datetime.now(UTC).isoformat()
    data["pid"] = _dead_pid()
    path.write_text(json.dumps(data))
    got = read_progress(url)
    assert got is not None and got.running is False  # its process is gone
    path.write_text("{not json")
    assert read_progress(url) is None


def test_an_unwritable_place_never_fails_the_job(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    rec = ProgressRecorder(f"sqlite:///{blocker}/o.db", job="embed", model="m")  # its folder is a file
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


async def test_the_worker_records_its_embedding_progress(
    settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`omoide status` in another process reads what the worker's embedding job did."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # PostgreSQL: the record lives there
    from importers.dce import ALICE, document, message, t, write
    from omoide import Memory

    from .helpers import tuned

    s = tuned(settings, embedder="hashing", worker_embed_interval_seconds=0.05, embed_batch_size=4)
    msgs = [message(t(3, 9, i), f"message number {i} about the weather", ALICE, increment=i) for i in range(40)]
    path = write(tmp_path / "general.json", document(msgs))
    async with Memory.open(s) as mem:
        summary = await mem.knowledge.import_export(path)
        progress._IN_PROCESS.clear()
        async with mem.workers(archive=False, expire=False, summarise=False):
            import asyncio

            for _ in range(400):  # the worker may take several rounds under load: wait for the last
                job = read_progress(mem.settings.database_url)
                if job is not None and not job.running and job.done == summary.chunks:
                    break
                await asyncio.sleep(0.05)
        assert job is not None and not job.running
        assert job.job == "embedder" and job.model == mem.embedder.model_id
        assert job.done == job.total == summary.chunks
