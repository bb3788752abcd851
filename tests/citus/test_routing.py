"""omoide on Citus: the layout ``omoide migrate`` makes, and that hot queries go to one shard.

Every statement a bot runs on its hot path names its workspace, so Citus routes it whole to
the one worker holding that workspace's shard group ("router" query, ``Task Count: 1`` in
``EXPLAIN``), never fanning out to all shards. HNSW settings must reach that worker: a
``LIMIT 200`` search returns 200 rows, not pgvector's default 40.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np
import pytest
from pgvector import HalfVector

from omoide.keys import session_key
from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres import _knowledge as kops
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres import _sessions as sessions_sql
from omoide.stores.postgres._bm25 import LexemeStats, common_terms
from omoide.stores.postgres._knowledge import vector_index_name
from omoide.stores.postgres.citus import DISTRIBUTED_TABLES, REFERENCE_TABLES
from omoide.stores.search import SearchFilters

MODEL = "route-model"
DIMS = 16
N = 3000  # enough rows that the worker's planner walks the HNSW graph for ORDER BY … LIMIT


@pytest.fixture
async def citus_store(citus_url: str, tmp_path: Any):
    settings = Settings(database_url=citus_url, transcripts_dir=tmp_path / "t", db_pool_max=6)
    async with PostgresStore(citus_url, settings=settings) as store:
        yield store


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, HalfVector):
        value = str(value.to_list())
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text.replace("'", "''") + "'"


async def _plan(conn: asyncpg.Connection, sql: str, *args: Any) -> str:
    """``EXPLAIN`` of the statement with its parameters written in as literals, as the executor
    sees them (Citus cannot EXPLAIN some parameterised statements it runs fine)."""
    inlined = re.sub(r"\$(\d+)", lambda m: _literal(args[int(m.group(1)) - 1]), sql)
    return "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + inlined))


def _routed(plan: str) -> bool:
    return "Task Count: 1\n" in plan + "\n"


async def _load(store: PostgresStore) -> tuple[list[int], np.ndarray]:
    """N chunks with vectors in workspace g1 (and a few in other workspaces), indexed and analysed."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((N, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    drafts = [ChunkDraft(content=f"chunk {i}", lexical=f"chunk word{i % 50}", token_count=2) for i in range(N)]
    _, ids = await store.knowledge.add_source(SourceDraft(workspace_id="g1", type="discord_channel", title="t"), drafts)
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(chunk_id=c, vector=vectors[i]) for i, c in enumerate(ids)]
    )
    for ws in ("g2", "g3"):
        _, other = await store.knowledge.add_source(
            SourceDraft(workspace_id=ws, type="discord_channel", title="o"), drafts[:20]
        )
        await store.knowledge.put_embeddings(
            model=MODEL,
            dimensions=DIMS,
            rows=[EmbeddingRow(chunk_id=c, vector=vectors[i]) for i, c in enumerate(other)],
        )
    await store.knowledge.ensure_vector_index(model=MODEL, dimensions=DIMS)  # kept by TRUNCATE: maybe there already
    async with store.pool.acquire() as conn:
        await conn.execute("ANALYZE knowledge_chunks, chunk_embeddings")
    return list(ids), vectors


async def test_workspace_tables_are_distributed_and_colocated(citus_store: PostgresStore) -> None:
    async with citus_store.pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT logicalrelid::regclass::text AS t, partmethod::text AS partmethod, colocationid, "
            "column_to_column_name(logicalrelid, partkey) AS col FROM pg_dist_partition"
        )
    layout = {r["t"]: r for r in rows}
    for table in DISTRIBUTED_TABLES:
        assert layout[table]["partmethod"] == "h" and layout[table]["col"] == "workspace_id", table
    assert len({layout[t]["colocationid"] for t in DISTRIBUTED_TABLES}) == 1  # one shard group per workspace
    for table in REFERENCE_TABLES:
        assert layout[table]["partmethod"] == "n", table
    assert "schema_migrations" not in layout  # the migrator's own table stays on the coordinator


async def test_migrate_again_changes_nothing(citus_store: PostgresStore) -> None:
    assert await asyncio.gather(citus_store.migrate(), citus_store.migrate()) == [[], []]


async def test_hot_session_statements_are_router_queries(citus_store: PostgresStore) -> None:
    key = session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    session = await citus_store.sessions.get_or_create_session(key)
    now = datetime.now(UTC)
    async with citus_store.pool.acquire() as conn:
        plans = {
            "by key": await _plan(conn, sessions_sql._SELECT_SESSION_BY_KEY, key.value, "g1"),
            "append: next seq": await _plan(conn, sessions_sql.BUMP_SEQ, session.id, now, "g1"),
            "append: insert": await _plan(
                conn,
                sessions_sql.INSERT_MESSAGE,
                session.id,
                "g1",
                1,
                "user",
                json.dumps([]),
                "u1",
                "U",
                False,
                "m1",
                now,
                3,
            ),
            "duplicate check": await _plan(conn, sessions_sql._SELECT_BY_PLATFORM_ID, "g1", "m1"),
            "history": await _plan(conn, sessions_sql._HISTORY, session.id, 20, "g1"),
            "update": await _plan(conn, sessions_sql._UPDATE_SESSION, session.id, 1, None, None, "g1"),
            "archive lock": await _plan(conn, kops._LOCK_SESSION_ROW, session.id, "g1"),
            "archive finish": await _plan(conn, kops._FINISH_ARCHIVE, session.id, 1, 1, "active", "g1"),
            "embed claim": await _plan(conn, kops.CLAIM_IN_WORKSPACE_SQL, 16, 600.0, "g1"),
        }
    fanned_out = {name: plan for name, plan in plans.items() if not _routed(plan)}
    assert not fanned_out, fanned_out


async def test_search_statements_are_router_queries_using_the_indexes(citus_store: PostgresStore) -> None:
    await _load(citus_store)
    query = HalfVector(np.ones(DIMS, dtype=np.float32))
    filters = SearchFilters("g1")
    narrow = SearchFilters("g1", channel_ids=("c9",))
    vector, _ = sops.vector_sql(MODEL, DIMS, filters, None)
    exact, _ = sops.exact_vector_sql(MODEL, DIMS, narrow, None)
    lexical, lexical_args = sops.lexical_ranking_sql(["word7"], filters, 10)
    async with citus_store.pool.acquire() as conn:
        plans = {
            "vector": await _plan(conn, vector, query, "g1", 10),
            "exact vector": await _plan(conn, exact, query, "g1", ["c9"], 10),
            "lexical": await _plan(conn, lexical, *lexical_args),
        }
    fanned_out = {name: plan for name, plan in plans.items() if not _routed(plan)}
    assert not fanned_out, fanned_out
    assert vector_index_name(MODEL, DIMS) in plans["vector"], plans["vector"]  # the shard's HNSW index


COMMON_WORDS = LexemeStats({"chunk": 0.9, "word7": 0.02}, 0.001, 1_000_000.0)
"""Statistics saying ``chunk`` is in 90 % of a million rows: the lexical ranking sets it aside
(``common_terms``) and takes its other path, which once re-read the driving rows by ``id`` alone
and so ran on all 32 shards (three distributed subplans; measured 2026-11-26: the coordinator
8 ms and the worker *without* the workspace 15 ms of CPU per search)."""


@pytest.mark.parametrize(
    "filters",
    [
        SearchFilters("g1"),
        SearchFilters("g1", channel_ids=("c9",)),
        SearchFilters("g1", source_types=("discord_channel",)),
    ],
    ids=["workspace", "channel", "source type"],
)
async def test_lexical_ranking_with_common_words_is_one_router_query(
    citus_store: PostgresStore, filters: SearchFilters
) -> None:
    assert common_terms(["chunk", "word7"], COMMON_WORDS) == {"chunk": 900_000.0}
    lexical, args = sops.lexical_ranking_sql(["chunk", "word7"], filters, 10, COMMON_WORDS)
    async with citus_store.pool.acquire() as conn:
        plan = await _plan(conn, lexical, *args)
    assert _routed(plan) and "Subplan" not in plan, plan


async def test_limit_200_returns_200_rows_through_the_hnsw_index(citus_store: PostgresStore) -> None:
    """The HNSW settings reach the worker (SET LOCAL, propagated); a coordinator-only setting would not."""
    _, vectors = await _load(citus_store)
    filters = SearchFilters("g1")
    ranked = await citus_store.search.vector_ranking(model=MODEL, query=vectors[3], filters=filters, k=200)
    assert len(ranked) == 200
    # the control: the same query with the settings made on the coordinator only stops at ef_search = 40
    sql, args = sops.vector_sql(MODEL, DIMS, filters, None)
    args[0], args[-1] = HalfVector(vectors[3]), 200
    async with citus_store.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('hnsw.ef_search', '200', true)")
        coordinator_only = await conn.fetch(sql, *args)
    assert len(coordinator_only) < 200


async def test_concurrent_embed_claims_per_workspace_share_nothing(citus_store: PostgresStore) -> None:
    for ws in ("g1", "g2", "g3", "g4"):
        for i in range(5):
            await citus_store.knowledge.add_source(SourceDraft(workspace_id=ws, type="t", title=f"s{i}"), [])
    claims = await asyncio.gather(*(citus_store.knowledge.claim_sources(limit=3, lease_seconds=600) for _ in range(8)))
    claimed = [s for c in claims for s in c]
    assert len(claimed) == len(set(claimed))  # no source claimed twice
    # 8 × 3 could take all 20 at once, but a claimer reads only the first `limit` workspaces with work
    # and skips rows locked by the others, so under concurrency a few may be left (seen: 18 of 20 on a
    # loaded machine): the next claims take them, still once each
    while more := await citus_store.knowledge.claim_sources(limit=3, lease_seconds=600):
        claimed += more
    assert len(claimed) == len(set(claimed)) == 20


async def test_two_processes_migrating_a_fresh_citus_database_distribute_it_once(citus_url: str, tmp_path: Any) -> None:
    """A new database with Citus on every node: two migrators at once; one does the work, the other waits."""
    from urllib.parse import urlsplit, urlunsplit

    name = f"omoide_fresh_{os.getpid()}"
    parts = urlsplit(citus_url)

    def url(host: str, port: int, db: str) -> str:
        user = parts.username or "postgres"
        return urlunsplit((parts.scheme, f"{user}@{host}:{port}", "/" + db, "", ""))

    admin = await asyncpg.connect(citus_url)
    try:
        nodes = [
            (str(r["nodename"]), int(r["nodeport"]))
            for r in await admin.fetch(
                "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY nodeport"
            )
        ]
    finally:
        await admin.close()
    coordinator = (parts.hostname or "127.0.0.1", parts.port or 5432)
    everywhere = [coordinator, *nodes]
    for host, port in everywhere:
        conn = await asyncpg.connect(url(host, port, "postgres"))
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            await conn.execute(f"CREATE DATABASE {name}")
        finally:
            await conn.close()
        conn = await asyncpg.connect(url(host, port, name))
        try:
            await conn.execute("CREATE EXTENSION citus; CREATE EXTENSION vector")
        finally:
            await conn.close()
    fresh = url(*coordinator, name)
    conn = await asyncpg.connect(fresh)
    try:
        await conn.execute("SELECT citus_set_coordinator_host($1, $2)", coordinator[0], coordinator[1])
        for host, port in nodes:
            await conn.execute("SELECT citus_add_node($1, $2)", host, port)
    finally:
        await conn.close()
    try:
        stores = [PostgresStore(fresh, migrate=False) for _ in range(2)]
        applied = await asyncio.gather(*(s.migrate() for s in stores))
        assert sorted(len(a) for a in applied)[0] == 0 and max(len(a) for a in applied) > 0
        conn = await asyncpg.connect(fresh)
        try:
            distributed = {r[0] for r in await conn.fetch("SELECT logicalrelid::regclass::text FROM pg_dist_partition")}
        finally:
            await conn.close()
        assert set(DISTRIBUTED_TABLES) | set(REFERENCE_TABLES) <= distributed
    finally:
        for host, port in reversed(everywhere):
            conn = await asyncpg.connect(url(host, port, "postgres"))
            try:
                await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            finally:
                await conn.close()


async def test_a_filtered_search_is_sized_by_its_workspaces_shard(citus_store: PostgresStore) -> None:
    """The filter's plan (exact, id bitmap or joined HNSW scan: ``filter_limits``) is sized by the
    rows of the index the search scans. On Citus that is the workspace's shard — the coordinator's
    own table is an empty shell (``reltuples`` 0), which used to send every channel filter to the
    joined scan — so its count is read from the nodes. The bitmap path ranks as the exact one."""
    from omoide.stores.postgres import citus

    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((N, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    drafts = [
        ChunkDraft(content=f"chunk {i}", lexical=f"chunk {i}", token_count=2, channel_id="mid" if i % 10 == 0 else "c")
        for i in range(N)
    ]
    _, ids = await citus_store.knowledge.add_source(
        SourceDraft(workspace_id="g1", type="discord_channel", title="t"), drafts
    )
    await citus_store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(chunk_id=c, vector=vectors[i]) for i, c in enumerate(ids)]
    )
    await citus_store.knowledge.ensure_vector_index(model=MODEL, dimensions=DIMS)
    search = citus_store.search
    async with citus_store.pool.acquire() as conn:
        await conn.execute("ANALYZE knowledge_chunks, chunk_embeddings")
        assert await conn.fetchval("SELECT reltuples FROM pg_class WHERE oid = 'chunk_embeddings'::regclass") <= 0
        rows = await search._rows(conn, "g1")  # type: ignore[attr-defined]
        shard = await citus.shard_of(conn, "g1")
        assert rows == (await citus.shard_rows(conn))[shard] == pytest.approx(N, rel=0.05)
    where = {c: i for i, c in enumerate(ids)}
    narrow = SearchFilters("g1", channel_ids=("mid",))
    for q in (vectors[3], -vectors[7]):
        async with citus_store.pool.acquire() as conn:
            common = {"ef_search": 100, "schema": None, "citus": True}
            bitmap = await sops.vector_ranking(conn, MODEL, q, narrow, 10, exact_limit=0, bitmap_limit=10_000, **common)
            exact = await sops.vector_ranking(conn, MODEL, q, narrow, 10, exact_limit=10_000, **common)
        assert len(bitmap) == 10 and all(where[h.chunk_id] % 10 == 0 for h in bitmap)
        assert [h.chunk_id for h in bitmap] == [h.chunk_id for h in exact]
    found = await search.vector_ranking(model=MODEL, query=vectors[3], filters=narrow, k=10)
    assert len(found) == 10 and all(where[h.chunk_id] % 10 == 0 for h in found)
