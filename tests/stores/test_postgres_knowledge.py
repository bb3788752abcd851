"""PostgreSQL specifics of the knowledge store: SKIP LOCKED claims, serialization failures,
HNSW indexes per model (used by the planner), tsvector, atomicity and query plans."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import numpy as np
import pytest
from pgvector import HalfVector

from omoide.errors import StoreError, VersionConflict
from omoide.keys import session_key
from omoide.models import Message
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash
from omoide.stores._knowledge_common import vector_index_name
from omoide.stores.knowledge import ArchivePlan, ChunkDraft, EmbeddingRow, SourceDraft, SourceStatus
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres._knowledge import CLAIM_SQL, SESSIONS_TO_ARCHIVE_SQL
from omoide.stores.postgres._sessions import list_sessions_query
from omoide.stores.postgres._source_reads import list_sources_query
from omoide.stores.postgres.vector import register_vector_types
from omoide.stores.sessions import SessionFilter

pytestmark = pytest.mark.postgres


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(pg_url, settings=Settings(db_pool_max=10)) as s:
        yield s


@pytest.fixture
async def admin(pg_url: str, store: PostgresStore) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(pg_url)
    await register_vector_types(conn, "public")
    try:
        yield conn
    finally:
        await conn.close()


async def _session(store: PostgresStore, n: int, user: str = "u1"):
    session = await store.sessions.get_or_create_session(
        session_key(platform="discord", workspace="g1", channel="c1", user=user)
    )
    for i in range(n):
        await store.sessions.append_message(session.id, Message.user(f"message {i + 1}", author_id=user))
    fresh = await store.sessions.get_session_by_id(session.id)
    assert fresh is not None
    return fresh


def _plan(session, keep: int = 2) -> ArchivePlan:
    return ArchivePlan(
        session_id=session.id,
        expected_version=session.version,
        upto_seq=session.last_seq,
        source=SourceDraft(workspace_id="g1", type="discord_session", title="log"),
        chunks=[ChunkDraft(content="**Andy**: 天気は晴れ", lexical="andy 天気 は 晴れ", token_count=5)],
        keep_newest=keep,
    )


async def _documents(store: PostgresStore, n: int) -> list[int]:
    return [
        (await store.knowledge.add_source(SourceDraft(workspace_id="g1", type="document", title=f"d{i}"), []))[0]
        for i in range(n)
    ]


async def _explain(conn: asyncpg.Connection, sql: str, *args: object) -> str:
    return "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + sql, *args))


# ---------------------------------------------------------------------------- claims


async def test_claim_skips_rows_locked_by_another_connection(store: PostgresStore, admin: asyncpg.Connection) -> None:
    ids = await _documents(store, 3)
    tx = admin.transaction()
    await tx.start()
    try:
        await admin.fetchval("SELECT id FROM knowledge_sources WHERE id = $1 FOR UPDATE", ids[0])
        async with asyncio.timeout(5):  # SKIP LOCKED: does not wait for the other worker
            assert await store.knowledge.claim_sources(limit=10, lease_seconds=60) == ids[1:]
    finally:
        await tx.rollback()
    assert await store.knowledge.claim_sources(limit=10, lease_seconds=60) == ids[:1]


async def test_claim_walks_the_queue_index(store: PostgresStore, admin: asyncpg.Connection) -> None:
    await admin.execute(
        "INSERT INTO knowledge_sources (workspace_id, type, status) "
        "SELECT 'g1', 'document', CASE WHEN i % 50 = 0 THEN 'pending' ELSE 'ready' END FROM generate_series(1, 20000) i"
    )
    await admin.execute("ANALYZE knowledge_sources")
    plan = await _explain(admin, CLAIM_SQL, 16, 600.0)
    assert "knowledge_sources_claimable" in plan, plan


# ---------------------------------------------------------------------- archiving


async def test_an_append_committing_during_the_archive_is_a_version_conflict(
    store: PostgresStore, admin: asyncpg.Connection
) -> None:
    """The archive waits for the session's row lock; the holder commits a change → 40001 → VersionConflict."""
    session = await _session(store, 6)
    tx = admin.transaction()
    await tx.start()
    await admin.execute("UPDATE sessions SET version = version + 1 WHERE id = $1", session.id)  # an append in flight
    archive = asyncio.create_task(store.knowledge.archive_session(_plan(session)))
    await asyncio.sleep(0.3)
    assert not archive.done(), "the archive must wait for the session's row lock"
    await tx.commit()
    with pytest.raises(VersionConflict) as info:
        await archive
    assert info.value.details["actual_version"] == session.version + 1
    assert await store.knowledge.list_sources() == []
    assert len(await store.sessions.messages(session.id)) == 6


async def test_a_lock_holder_that_rolls_back_lets_the_archive_through(
    store: PostgresStore, admin: asyncpg.Connection
) -> None:
    session = await _session(store, 6)
    tx = admin.transaction()
    await tx.start()
    await admin.execute("UPDATE sessions SET version = version + 1 WHERE id = $1", session.id)
    archive = asyncio.create_task(store.knowledge.archive_session(_plan(session)))
    await asyncio.sleep(0.2)
    await tx.rollback()
    result = await archive
    assert result.source_id is not None and result.pruned == 4


async def test_appends_queued_behind_the_archive_get_later_seqs(store: PostgresStore) -> None:
    session = await _session(store, 10)
    archive = asyncio.create_task(store.knowledge.archive_session(_plan(session, keep=0)))
    appends = [
        asyncio.create_task(store.sessions.append_message(session.id, Message.user(f"late {i}"))) for i in range(5)
    ]
    [outcome] = await asyncio.gather(archive, return_exceptions=True)
    await asyncio.gather(*appends)
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and after.last_seq == 15
    remaining = [m.seq for m in await store.sessions.messages(session.id)]
    if isinstance(outcome, VersionConflict):  # an append went first: nothing was archived or deleted
        assert after.archived_seq == 0 and remaining == list(range(1, 16))
    else:  # the archive went first: the appends got 11..15 and all of them are kept
        assert not isinstance(outcome, BaseException), outcome
        assert after.archived_seq == 10 and remaining == [11, 12, 13, 14, 15]


async def test_a_failure_late_in_the_archive_rolls_everything_back(
    store: PostgresStore, admin: asyncpg.Connection
) -> None:
    session = await _session(store, 6)
    await admin.execute(
        "CREATE FUNCTION fail_prune() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$"
    )
    await admin.execute(
        "CREATE TRIGGER fail_prune BEFORE DELETE ON session_messages FOR EACH ROW EXECUTE FUNCTION fail_prune()"
    )
    with pytest.raises(StoreError, match="disk on fire"):
        await store.knowledge.archive_session(_plan(session))
    assert await admin.fetchval("SELECT count(*) FROM knowledge_sources") == 0
    assert await admin.fetchval("SELECT count(*) FROM knowledge_chunks") == 0
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and (after.version, after.archived_seq) == (session.version, 0)
    await admin.execute("DROP TRIGGER fail_prune ON session_messages")
    assert (await store.knowledge.archive_session(_plan(session))).pruned == 4


async def test_sessions_to_archive_uses_the_partial_index(store: PostgresStore, admin: asyncpg.Connection) -> None:
    async with admin.transaction():
        await admin.execute("SET LOCAL enable_seqscan = off")
        plan = await _explain(admin, SESSIONS_TO_ARCHIVE_SQL, await admin.fetchval("SELECT now()"), 50, 100)
    assert "sessions_unarchived" in plan, plan


async def test_the_inspector_filters_use_their_indexes(store: PostgresStore, admin: asyncpg.Connection) -> None:
    """Sessions by channel / user and a session's archived sources are index lookups, not scans."""
    wanted = {
        "sessions_workspace_channel_active": list_sessions_query(SessionFilter("g1", channel_id="c1"), 50, 0),
        "sessions_workspace_user_active": list_sessions_query(SessionFilter("g1", user_id="u1"), 50, 0),
        "knowledge_sources_origin_session": list_sources_query("g1", 7, 50, 0),
    }
    await admin.execute(
        "INSERT INTO knowledge_sources (workspace_id, type, status, metadata) "
        "SELECT 'g1', 'discord_session', 'ready', jsonb_build_object('origin_session_id', i % 2000) "
        "FROM generate_series(1, 20000) i"
    )
    await admin.execute("ANALYZE knowledge_sources")
    async with admin.transaction():
        await admin.execute("SET LOCAL enable_seqscan = off")
        for index, (sql, args) in wanted.items():
            plan = await _explain(admin, sql, *args)
            assert index in plan, plan


async def test_chunks_get_a_generated_tsvector(store: PostgresStore, admin: asyncpg.Connection) -> None:
    session = await _session(store, 4)
    result = await store.knowledge.archive_session(_plan(session))
    hits = await admin.fetch("SELECT id FROM knowledge_chunks WHERE lexical_tsv @@ to_tsquery('simple', '天気')")
    assert [h["id"] for h in hits] == list(result.chunk_ids)


# -------------------------------------------------------------------------- vectors


async def test_vector_index_per_model_serves_cosine_order(store: PostgresStore, admin: asyncpg.Connection) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 64)).astype(np.float32)
    _, chunk_ids = await store.knowledge.add_source(
        SourceDraft(workspace_id="g1", type="document", title="t"),
        [ChunkDraft(content=f"c{i}", lexical=f"c{i}", token_count=1) for i in range(200)],
    )
    rows = [EmbeddingRow(c, v) for c, v in zip(chunk_ids, vectors, strict=True)]
    assert await store.knowledge.put_embeddings(model="m64", dimensions=64, rows=rows) == 200
    await store.knowledge.put_embeddings(
        model="other", dimensions=3, rows=[EmbeddingRow(chunk_ids[0], np.ones(3, np.float32))]
    )

    assert await store.knowledge.ensure_vector_index(model="m64", dimensions=64) is True
    assert await store.knowledge.ensure_vector_index(model="m64", dimensions=64) is False
    name = vector_index_name("m64", 64)
    indexdef = await admin.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = $1", name)
    assert "USING hnsw" in indexdef and "halfvec_cosine_ops" in indexdef and "(model = 'm64'::text)" in indexdef
    assert "m='16'" in indexdef and "ef_construction='128'" in indexdef

    await admin.execute("ANALYZE chunk_embeddings")
    query = "SELECT chunk_id FROM chunk_embeddings WHERE model = 'm64' ORDER BY (embedding::halfvec(64)) <=> $1 LIMIT 5"
    async with admin.transaction():
        await admin.execute("SET LOCAL enable_seqscan = off")  # 200 rows: an exact sort would be cheaper
        await admin.execute("SET LOCAL enable_sort = off")
        plan = await _explain(admin, query, HalfVector(vectors[42]))
        assert name in plan, plan
        assert await admin.fetchval(query, HalfVector(vectors[42])) == chunk_ids[42]


async def test_an_invalid_index_left_by_an_interrupted_build_is_rebuilt(
    store: PostgresStore, admin: asyncpg.Connection
) -> None:
    assert await store.knowledge.ensure_vector_index(model="m8", dimensions=8) is True
    name = vector_index_name("m8", 8)
    # what a CREATE INDEX CONCURRENTLY killed half-way leaves behind
    await admin.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass", name)
    assert await store.knowledge.ensure_vector_index(model="m8", dimensions=8) is True  # dropped and built again
    assert await admin.fetchval("SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass", name) is True
    assert await store.knowledge.ensure_vector_index(model="m8", dimensions=8) is False


async def test_vector_index_quotes_any_model_id_and_uses_settings(pg_url: str) -> None:
    model = "o'brien\"; DROP TABLE sessions; --"
    settings = Settings(hnsw_m=8, hnsw_ef_construction=32)
    async with PostgresStore(pg_url, settings=settings) as store:
        results = await asyncio.gather(
            *(store.knowledge.ensure_vector_index(model=model, dimensions=16) for _ in range(4))
        )
        assert sorted(results) == [False, False, False, True]  # concurrent callers: one creates it
        async with store.pool.acquire() as conn:
            indexdef = await conn.fetchval(
                "SELECT indexdef FROM pg_indexes WHERE indexname = $1", vector_index_name(model, 16)
            )
            assert await conn.fetchval("SELECT to_regclass('sessions')") is not None
    assert "(model = 'o''brien\"; DROP TABLE sessions; --'::text)" in indexdef
    assert "m='8'" in indexdef and "ef_construction='32'" in indexdef


async def test_halfvec_round_trip_and_model_of_another_size(store: PostgresStore, admin: asyncpg.Connection) -> None:
    _, [chunk] = await store.knowledge.add_source(
        SourceDraft(workspace_id="g7", type="document", title="t"),
        [ChunkDraft(content="x", lexical="x", token_count=1)],
    )
    vector = np.array([0.1, -0.25, 0.5, 65504.0], dtype=np.float32)
    digest = content_hash("x")  # of the chunk's text: a vector of other text would be refused
    assert (
        await store.knowledge.put_embeddings(model="m4", dimensions=4, rows=[EmbeddingRow(chunk, vector, digest)]) == 1
    )
    row = await admin.fetchrow(
        "SELECT workspace_id, dimensions, content_hash, vector_dims(embedding) AS d FROM chunk_embeddings"
    )
    assert (row["workspace_id"], row["dimensions"], row["content_hash"], row["d"]) == ("g7", 4, digest, 4)
    got = await store.knowledge.get_embedding(chunk, model="m4")
    assert got is not None
    np.testing.assert_allclose(got, vector, rtol=1e-3)


async def test_status_and_sources_after_a_pipeline_run(store: PostgresStore) -> None:
    session = await _session(store, 5)
    result = await store.knowledge.archive_session(_plan(session))
    assert result.source_id is not None
    [claimed] = await store.knowledge.claim_sources(limit=5, lease_seconds=60)
    missing = await store.knowledge.chunks_missing_embedding(model="m3", source_ids=[claimed])
    await store.knowledge.put_embeddings(
        model="m3", dimensions=3, rows=[EmbeddingRow(c.id, np.ones(3, np.float32)) for c in missing]
    )
    await store.knowledge.finish_source(claimed, status=SourceStatus.READY)
    status = await store.knowledge.knowledge_status()
    assert status.sources["ready"] == 1 and status.embedded == {"m3": 1} and status.unarchived_messages == 0
    [source] = await store.knowledge.list_sources()
    assert source.status is SourceStatus.READY and source.chunk_count == 1 and source.attempts == 1


def test_hnsw_settings_are_validated() -> None:
    from omoide.errors import ConfigError
    from omoide.settings import load_settings

    with pytest.raises(ConfigError, match="hnsw_ef_construction"):
        load_settings(hnsw_m=40, hnsw_ef_construction=64)
    with pytest.raises(ConfigError, match="HNSW_M"):
        load_settings(hnsw_m=1)
    assert load_settings(hnsw_m=32, hnsw_ef_construction=64).hnsw_m == 32
