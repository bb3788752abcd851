"""SQLite specifics of the knowledge store: FTS5, float32 BLOBs, query plans, atomicity, several stores on one file."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import StoreError, VersionConflict
from omoide.keys import session_key
from omoide.models import Message
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash
from omoide.stores.knowledge import ArchivePlan, ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.sqlite import SqliteStore
from omoide.stores.sqlite._knowledge import CLAIM_SQL, SESSIONS_TO_ARCHIVE_SQL


def _open(path: Path) -> SqliteStore:
    return SqliteStore(f"sqlite:///{path}", settings=Settings(), migrate=True)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with _open(tmp_path / "k.db") as s:
        yield s


def _raw(store: SqliteStore) -> sqlite3.Connection:
    return sqlite3.connect(store.path)


async def _session(store: SqliteStore, n: int, user: str = "u1"):
    session = await store.sessions.get_or_create_session(
        session_key(platform="discord", workspace="g1", channel="c1", user=user)
    )
    for i in range(n):
        await store.sessions.append_message(session.id, Message.user(f"message {i + 1}", author_id=user))
    fresh = await store.sessions.get_session_by_id(session.id)
    assert fresh is not None
    return fresh


def _plan(session, chunks: list[ChunkDraft], keep: int = 2) -> ArchivePlan:
    return ArchivePlan(
        session_id=session.id,
        expected_version=session.version,
        upto_seq=session.last_seq,
        source=SourceDraft(workspace_id="g1", type="discord_session", title="log"),
        chunks=chunks,
        keep_newest=keep,
    )


async def test_chunk_lexical_is_in_fts5(store: SqliteStore) -> None:
    _, [_, b] = await store.knowledge.add_source(
        SourceDraft(workspace_id="g1", type="document", title="t"),
        [
            ChunkDraft(content="誕生日は3月15日", lexical="誕生 日 は 3 月 15 日", token_count=8),
            ChunkDraft(content="天気は晴れ", lexical="天気 は 晴れ", token_count=4),
        ],
    )
    with _raw(store) as conn:
        hits = conn.execute("SELECT rowid FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH '天気'").fetchall()
    assert [h[0] for h in hits] == [b]


async def test_vectors_are_float32_little_endian_blobs(store: SqliteStore) -> None:
    _, [chunk] = await store.knowledge.add_source(
        SourceDraft(workspace_id="g1", type="document", title="t"),
        [ChunkDraft(content="x", lexical="x", token_count=1)],
    )
    vector = np.linspace(-1, 1, 16, dtype=np.float32)
    await store.knowledge.put_embeddings(
        model="m16", dimensions=16, rows=[EmbeddingRow(chunk, vector, content_hash("x"))]
    )
    with _raw(store) as conn:
        blob, dims, digest, workspace = conn.execute(
            "SELECT embedding, dimensions, content_hash, workspace_id FROM chunk_embeddings"
        ).fetchone()
    assert (len(blob), dims, digest, workspace) == (64, 16, content_hash("x"), "g1")
    assert np.array_equal(np.frombuffer(blob, dtype="<f4"), vector)
    got = await store.knowledge.get_embedding(chunk, model="m16")
    assert got is not None and np.array_equal(got, vector)  # exact: no half precision on SQLite
    got[0] = 5.0  # a writable copy, not a view of the row


async def test_queue_and_archiver_queries_use_their_indexes(store: SqliteStore) -> None:
    with _raw(store) as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + SESSIONS_TO_ARCHIVE_SQL, ("2026-01-01T00:00:00.000000+00:00", 50, 10)
        ).fetchall()
        assert "sessions_unarchived_idx" in " ".join(str(r[-1]) for r in plan)
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + CLAIM_SQL, ("2026-01-01T00:00:00.000000+00:00", "2025-01-01", 10)
        ).fetchall()
        steps = " ".join(str(r[-1]) for r in plan)
        assert "knowledge_sources_claimable_idx" in steps and "TEMP B-TREE" not in steps  # no sort of the queue


async def test_a_failure_late_in_the_archive_rolls_everything_back(store: SqliteStore) -> None:
    session = await _session(store, 6)
    with _raw(store) as conn:
        conn.execute(
            "CREATE TRIGGER fail_prune BEFORE DELETE ON session_messages BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
    plan = _plan(session, [ChunkDraft(content="c", lexical="c", token_count=1)])
    with pytest.raises(StoreError, match="disk on fire"):
        await store.knowledge.archive_session(plan)
    assert await store.knowledge.list_sources() == []
    with _raw(store) as conn:
        assert conn.execute("SELECT count(*) FROM knowledge_chunks").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM knowledge_chunks_fts").fetchone()[0] == 0
        conn.execute("DROP TRIGGER fail_prune")
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and (after.version, after.archived_seq) == (session.version, 0)
    assert len(await store.sessions.messages(session.id)) == 6
    assert (await store.knowledge.archive_session(plan)).pruned == 4  # the same plan still applies


async def test_two_stores_on_one_file_claim_disjoint_sources(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with _open(path) as one, _open(path) as two:
        for i in range(20):
            await one.knowledge.add_source(SourceDraft(workspace_id="g1", type="document", title=f"d{i}"), [])
        batches = await asyncio.gather(
            *(s.knowledge.claim_sources(limit=3, lease_seconds=60) for _ in range(4) for s in (one, two))
        )
    claimed = [i for b in batches for i in b]
    assert len(claimed) == len(set(claimed)) == 20


async def test_archive_from_another_store_conflicts_with_appends(tmp_path: Path) -> None:
    """An archiver process and a bot process on one file: the version guard holds across connections."""
    path = tmp_path / "shared.db"
    async with _open(path) as bot, _open(path) as archiver:
        session = await _session(bot, 10)
        plan = _plan(session, [ChunkDraft(content="c", lexical="c", token_count=1)])
        await bot.sessions.append_message(session.id, Message.user("late"))
        with pytest.raises(VersionConflict):
            await archiver.knowledge.archive_session(plan)
        fresh = await archiver.sessions.get_session_by_id(session.id)
        assert fresh is not None
        result = await archiver.knowledge.archive_session(
            ArchivePlan(
                **{**{f: getattr(plan, f) for f in plan.__dataclass_fields__}, "expected_version": fresh.version}
            )
        )
        assert result.pruned == 9  # archived up to 10 of 11; the newest 2 (10, 11) stay
        assert [m.seq for m in await bot.sessions.messages(session.id)] == [10, 11]
