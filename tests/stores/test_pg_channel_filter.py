"""PostgreSQL: a channel-filtered vector search tests its HNSW candidates against a bitmap of the
channel's chunk ids instead of joining each candidate to its chunk row (issue 18 point 5)."""

from __future__ import annotations

import numpy as np
import pytest
from pgvector import HalfVector

from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres._knowledge import vector_index_name
from omoide.stores.search import SearchFilters

pytestmark = pytest.mark.postgres

MODEL = "channel-model"
DIMS = 16
N = 2000


@pytest.fixture
async def pg_store(pg_url, tmp_path):
    settings = Settings(database_url=pg_url, transcripts_dir=tmp_path / "t", db_pool_max=4)
    async with PostgresStore(pg_url, settings=settings) as store:
        yield store


async def _load(store: PostgresStore) -> tuple[list[int], np.ndarray]:
    """Two workspaces; in g1 channel ``mid`` holds every 10th chunk, ``rare`` every 100th."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((N, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    def channel(i: int) -> str:
        return "rare" if i % 100 == 0 else "mid" if i % 10 == 0 else "common"

    ids: list[int] = []
    for workspace, part in (("g1", range(0, N, 2)), ("g2", range(1, N, 2))):
        drafts = [ChunkDraft(content=f"c{i}", lexical=f"c{i}", token_count=1, channel_id=channel(i)) for i in part]
        _, got = await store.knowledge.add_source(SourceDraft(workspace_id=workspace, type="doc", title="t"), drafts)
        await store.knowledge.put_embeddings(
            model=MODEL,
            dimensions=DIMS,
            rows=[EmbeddingRow(chunk_id=c, vector=vectors[i]) for c, i in zip(got, part, strict=True)],
        )
        ids.extend(got)
    assert await store.knowledge.ensure_vector_index(model=MODEL, dimensions=DIMS)
    async with store.pool.acquire() as conn:
        await conn.execute("VACUUM ANALYZE knowledge_chunks")
        await conn.execute("ANALYZE chunk_embeddings")
    return ids, vectors


def test_id_bitmap_is_get_bits_order_and_refuses_empty_or_too_wide(monkeypatch):
    lo, hi, bitmap = sops.id_bitmap([10, 12, 19, 27]) or (0, 0, b"")
    assert (lo, hi) == (10, 27)
    bits = [(bitmap[i // 8] >> (i % 8)) & 1 for i in range(hi - lo + 1)]  # get_bit: bit 0 = least significant
    assert [lo + i for i, b in enumerate(bits) if b] == [10, 12, 19, 27]
    assert sops.id_bitmap([]) is None
    monkeypatch.setattr(sops, "MAX_BITMAP_BYTES", 2)
    assert sops.id_bitmap([1, 9]) == (1, 9, bytes([1, 1]))
    assert sops.id_bitmap([1, 17]) is None  # 3 bytes > 2: the join is used instead


def test_filter_limits_grow_with_the_index():
    assert sops.filter_limits(200, 0) == (sops.EXACT_LIMIT, 0)  # unknown (Citus coordinator, never analysed)
    assert sops.filter_limits(200, 5_000) == (sops.EXACT_LIMIT, 0)  # small: exact or the planner's join
    exact, bitmap = sops.filter_limits(200, 1_000_000)
    assert exact == int((sops.EXACT_COST_RATIO * 200 * 1_000_000) ** 0.5)  # 24,494
    assert exact < 40_000 < bitmap == int((sops.BITMAP_COST_RATIO * 200 * 1_000_000) ** 0.5)  # 40k: the bitmap
    assert sops.filter_limits(200, 10_000_000)[1] == sops.BITMAP_LIMIT  # capped
    # one index of 100M: exact up to 245k chunks, past the cap (such a guild wants its own shard)
    assert sops.filter_limits(200, 100_000_000) == (244_948, 0)


async def test_get_bit_reads_the_bitmap_as_built(pg_store):
    rng = np.random.default_rng(3)
    ids = sorted({int(x) for x in rng.integers(1000, 5000, size=300)})
    lo, hi, bitmap = sops.id_bitmap(ids) or (0, 0, b"")
    async with pg_store.pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT i FROM generate_series($1::bigint, $2::bigint) i WHERE get_bit($3::bytea, (i - $1)::integer) = 1",
            lo,
            hi,
            bitmap,
        )
    assert [r["i"] for r in rows] == ids


async def test_bitmap_ranking_equals_the_joined_and_the_exact_ones(pg_store):
    ids, vectors = await _load(pg_store)
    g1 = {ids[j]: i for j, i in enumerate(range(0, N, 2))}
    for channel, step in (("mid", 10), ("rare", 100)):
        f = SearchFilters("g1", channel_ids=(channel,))
        for q in (vectors[3], vectors[500], -vectors[7]):
            async with pg_store.pool.acquire() as conn:
                bitmap = await sops.vector_ranking(
                    conn, MODEL, q, f, 10, ef_search=100, schema=None, exact_limit=0, bitmap_limit=10_000
                )
                joined = await sops.vector_ranking(conn, MODEL, q, f, 10, ef_search=100, schema=None, exact_limit=0)
                exact = await sops.vector_ranking(conn, MODEL, q, f, 10, ef_search=100, schema=None, exact_limit=10_000)
            assert len(bitmap) == 10
            assert all(g1[h.chunk_id] % step == 0 and g1[h.chunk_id] % 2 == 0 for h in bitmap)  # g1, that channel
            assert [h.chunk_id for h in bitmap] == [h.chunk_id for h in joined] == [h.chunk_id for h in exact]
            assert [round(h.score, 3) for h in bitmap] == [round(h.score, 3) for h in exact]


async def test_bitmap_statement_scans_hnsw_without_touching_chunk_rows(pg_store):
    ids, vectors = await _load(pg_store)
    sql = sops.bitmap_vector_sql(MODEL, DIMS, None)
    lo, hi, bitmap = sops.id_bitmap(ids[:50]) or (0, 0, b"")
    async with pg_store.pool.acquire() as conn:
        await conn.execute("SET enable_sort = off")  # at 2,000 rows a sort would do: take the plan under test
        try:
            plan = "\n".join(
                r[0] for r in await conn.fetch("EXPLAIN " + sql, HalfVector(vectors[0]), "g1", lo, hi, bitmap, 10)
            )
        finally:
            await conn.execute("RESET enable_sort")
    assert vector_index_name(MODEL, DIMS) in plan, plan
    assert "knowledge_chunks" not in plan, plan


async def test_a_filter_spanning_too_wide_ids_falls_back_to_the_join(pg_store, monkeypatch):
    _ids, vectors = await _load(pg_store)
    monkeypatch.setattr(sops, "MAX_BITMAP_BYTES", 1)
    f = SearchFilters("g1", channel_ids=("mid",))
    async with pg_store.pool.acquire() as conn:
        got = await sops.vector_ranking(conn, MODEL, vectors[1], f, 5, ef_search=100, schema=None, bitmap_limit=10_000)
        want = await sops.vector_ranking(conn, MODEL, vectors[1], f, 5, ef_search=100, schema=None, exact_limit=10_000)
    assert [h.chunk_id for h in got] == [h.chunk_id for h in want]


async def test_the_store_search_uses_the_bitmap_between_the_limits(pg_store, monkeypatch):
    """Through ``PostgresSearch``: a filter above the exact limit and within the bitmap limit runs
    the bitmap statement (the statements sent are counted)."""
    _ids, vectors = await _load(pg_store)
    sent: list[str] = []
    original = sops._bitmap_statement

    async def spy(*args, **kwargs):
        found = await original(*args, **kwargs)
        sent.append("bitmap" if found else "none")
        return found

    monkeypatch.setattr(sops, "_bitmap_statement", spy)
    monkeypatch.setattr(sops, "filter_limits", lambda k, rows: (20, 10_000))
    mid = await pg_store.search.vector_ranking(
        model=MODEL, query=vectors[2], filters=SearchFilters("g1", channel_ids=("mid",)), k=10
    )
    rare = await pg_store.search.vector_ranking(
        model=MODEL, query=vectors[2], filters=SearchFilters("g1", channel_ids=("rare",)), k=10
    )
    assert sent == ["bitmap"]  # mid: 180 chunks of g1 (> 20: bitmap); rare: 20 (exact)
    assert len(mid) == 10 and len(rare) == 10


async def test_migration_13_serves_a_channels_ids_from_the_index(pg_store):
    await _load(pg_store)
    async with pg_store.pool.acquire() as conn:
        names = {
            r["indexname"]
            for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'knowledge_chunks'")
        }
        definition = await conn.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_chunks_workspace_channel_ids'"
        )
        await conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        try:
            plan = "\n".join(
                r[0]
                for r in await conn.fetch(
                    "EXPLAIN SELECT array_agg(c.id) FROM knowledge_chunks c "
                    "WHERE c.workspace_id = $1 AND c.channel_id = ANY($2::text[])",
                    "g1",
                    ["mid"],
                )
            )
        finally:
            await conn.execute("RESET enable_seqscan; RESET enable_bitmapscan")
    assert "knowledge_chunks_workspace_channel_started" not in names  # replaced, not doubled
    assert "INCLUDE (id)" in definition
    assert "Index Only Scan using knowledge_chunks_workspace_channel_ids" in plan, plan


async def test_fetch_with_units_in_the_workspace_is_the_same_fetch(pg_store):
    """The workspace makes the fetch a router query on Citus; on one server the rows are the same,
    and ids of another workspace are left out."""
    ids, _vectors = await _load(pg_store)
    some = ids[:5] + ids[-5:]  # five of g1, five of g2
    async with pg_store.pool.acquire() as conn:
        by_id, units = await sops.fetch_chunks_with_units(conn, some, MODEL)
        in_g1, units_g1 = await sops.fetch_chunks_with_units(conn, some, MODEL, workspace_id="g1")
        lexical_only, _ = await sops.fetch_chunks_with_units(conn, some, None, workspace_id="g2")
    assert [h.chunk_id for h in by_id] == some
    assert [h.chunk_id for h in in_g1] == some[:5] and in_g1 == by_id[:5]
    assert units_g1 == {k: v for k, v in units.items() if k in set(some[:5])}
    assert [h.chunk_id for h in lexical_only] == some[5:]
