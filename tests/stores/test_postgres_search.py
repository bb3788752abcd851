"""PostgreSQL search specifics: the HNSW index is used, iterative scans fill k, seed 004's L2 defect."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime

import numpy as np
import pytest
from pgvector import HalfVector

from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres._knowledge import vector_index_name
from omoide.stores.search import RankedChunk, SearchFilters
from search_helpers import vector_search

pytestmark = pytest.mark.postgres

MODEL = "bench-model's"  # a quote in the model id: the literal must be escaped
DIMS = 32
N = 3000


@pytest.fixture
async def pg_store(pg_url, tmp_path):
    settings = Settings(database_url=pg_url, transcripts_dir=tmp_path / "t", db_pool_max=4)
    async with PostgresStore(pg_url, settings=settings) as store:
        yield store


async def _load(store: PostgresStore, *, rare_every: int = 100) -> tuple[list[int], np.ndarray, set[int]]:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((N, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    drafts = [
        ChunkDraft(
            content=f"chunk {i}",
            lexical=f"chunk {i}",
            token_count=2,
            channel_id="rare" if i % rare_every == 0 else "common",
        )
        for i in range(N)
    ]
    _, ids = await store.knowledge.add_source(SourceDraft(workspace_id="g1", type="discord_channel", title="t"), drafts)
    rows = [EmbeddingRow(chunk_id=cid, vector=vectors[i]) for i, cid in enumerate(ids)]
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
    assert await store.knowledge.ensure_vector_index(model=MODEL, dimensions=DIMS)
    async with store.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    rare = {ids[i] for i in range(0, N, rare_every)}
    return list(ids), vectors, rare


async def test_vector_query_uses_the_models_hnsw_index(pg_store):
    await _load(pg_store)
    for filters in (SearchFilters("g1"), SearchFilters("g1", viewer="u1")):  # the vectors alone, and joined
        sql, _args = sops.vector_sql(MODEL, DIMS, filters, None)
        args = [HalfVector(np.ones(DIMS, dtype=np.float32)), "g1", *_args[2:-1], 10]
        async with pg_store.pool.acquire() as conn, conn.transaction():
            # 3,000 vectors: ranking the workspace's rows exactly (a sort) is the planner's cheaper
            # plan for the vectors alone, as it should be; the point here is that the index's
            # expression serves the query (at 1M chunks the planner takes it by itself)
            await conn.execute("SET LOCAL enable_sort = off")
            plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + sql, *args))
        assert vector_index_name(MODEL, DIMS) in plan, plan


async def test_selective_filter_returns_k_rows_through_the_index(pg_store):
    ids, vectors, rare = await _load(pg_store)  # the filter keeps 1% of the rows
    query = vectors[17]
    f = SearchFilters("g1", channel_ids=("rare",))
    async with pg_store.pool.acquire() as conn:
        # the planner rightly picks an exact plan for 30 rows; make it take the HNSW path under test
        await conn.execute("SET enable_sort = off; SET enable_bitmapscan = off")
        try:
            sql, _ = sops.vector_sql(MODEL, DIMS, f, None)
            plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + sql, HalfVector(query), "g1", ["rare"], 10))
            ranking = await sops.vector_ranking(conn, MODEL, query, f, 10, ef_search=40, schema=None, exact_limit=0)
            hits = ranking
            exact_hits = await sops.vector_ranking(conn, MODEL, query, f, 10, ef_search=40, schema=None)
            # without the iterative scan (seed 004's query shape) the same filter starves
            async with conn.transaction():
                await conn.execute("SET LOCAL hnsw.iterative_scan = off; SET LOCAL hnsw.ef_search = 40")
                plain = await conn.fetch(sql, HalfVector(query), "g1", ["rare"], 10)
        finally:
            await conn.execute("RESET enable_sort; RESET enable_bitmapscan")
    assert vector_index_name(MODEL, DIMS) in plan, plan
    assert len(hits) == 10 and {h.chunk_id for h in hits} <= rare
    assert [h.chunk_id for h in exact_hits] == [h.chunk_id for h in hits]
    assert len(plain) < 10
    # the ten are the exact nearest rare chunks (recall 1.0 at this size)
    rare_pos = [ids.index(c) for c in sorted(rare)]
    exact = sorted(rare_pos, key=lambda i: -float(vectors[i] @ query))[:10]
    assert [h.chunk_id for h in hits] == [ids[i] for i in exact]


async def test_store_vector_search_fills_k_with_a_one_percent_filter(pg_store):
    _, vectors, rare = await _load(pg_store)
    hits = await vector_search(
        pg_store.search, model=MODEL, query=vectors[5], filters=SearchFilters("g1", channel_ids=("rare",)), k=25
    )
    assert len(hits) == 25 and {h.chunk_id for h in hits} <= rare
    assert [h.rank for h in hits] == list(range(1, 26))
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


async def test_cosine_not_l2_seed_004(pg_store):
    """A long vector pointing the same way is the best cosine match (L2 would rank it last)."""
    drafts = [ChunkDraft(content=n, lexical=n, token_count=1) for n in ("same-direction", "close-l2")]
    _, (far, near) = await pg_store.knowledge.add_source(
        SourceDraft(workspace_id="g1", type="document", title="t"), drafts
    )
    q = np.zeros(DIMS, dtype=np.float32)
    q[0] = 1.0
    long_same = q * 50.0
    close = q.copy()
    close[1] = 0.9
    await pg_store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[EmbeddingRow(chunk_id=far, vector=long_same), EmbeddingRow(chunk_id=near, vector=close)],
    )
    hits = await vector_search(pg_store.search, model=MODEL, query=q, filters=SearchFilters("g1"), k=2)
    assert [h.chunk_id for h in hits] == [far, near]
    assert hits[0].score == pytest.approx(1.0, abs=1e-3)


def test_tsquery_text_quotes_every_token():
    assert sops.tsquery_text(["天気", "it's", "a\\b", "x|y"]) == "'天気' | 'it''s' | 'a\\\\b' | 'x|y'"


def test_vector_sql_uses_a_quoted_model_literal_and_cosine():
    sql, _ = sops.vector_sql("m'; DROP TABLE x; --", 384, SearchFilters("g1"), None)
    assert "e.model = 'm''; DROP TABLE x; --'" in sql
    assert "<=>" in sql and "<->" not in sql
    assert "(e.embedding::halfvec(384)) <=>" in sql


@pytest.mark.parametrize(
    "filters",
    [
        SearchFilters("g1", channel_ids=("c",)),
        SearchFilters("g1", thread_ids=("t",)),
        SearchFilters("g1", author_ids=("a",)),
        SearchFilters("g1", source_types=("discord_channel",)),
        SearchFilters("g1", since=datetime(2026, 1, 1, tzinfo=UTC)),
        SearchFilters("g1", until=datetime(2026, 1, 1, tzinfo=UTC)),
        SearchFilters("g1", viewer="u1"),
        SearchFilters("g1", public_only=True),
    ],
    ids=["channel", "thread", "author", "source type", "since", "until", "viewer", "public only"],
)
def test_vector_sql_joins_the_chunks_only_when_a_filter_reads_them(filters: SearchFilters):
    whole, _ = sops.vector_sql(MODEL, DIMS, SearchFilters("g1"), None)
    assert "knowledge_chunks" not in whole and " c." not in whole  # the vectors alone
    narrowed, _ = sops.vector_sql(MODEL, DIMS, filters, None)
    assert "JOIN knowledge_chunks c ON c.id = e.chunk_id AND c.workspace_id = e.workspace_id" in narrowed
    assert ("JOIN knowledge_sources s" in narrowed) == bool(filters.source_types)


async def test_the_whole_workspace_ranking_without_the_join_is_the_joined_one(pg_store):
    _, vectors, _ = await _load(pg_store)
    async with pg_store.pool.acquire() as conn:
        for i in (0, 17, 1234):
            alone = await sops.vector_ranking(
                conn, MODEL, vectors[i], SearchFilters("g1"), 50, ef_search=50, schema=None
            )
            joined = await sops.vector_ranking(  # no chunk is private: the viewer keeps them all, through the join
                conn, MODEL, vectors[i], SearchFilters("g1", viewer="u1"), 50, ef_search=50, schema=None
            )
            assert [r.chunk_id for r in alone] == [r.chunk_id for r in joined] and len(alone) == 50


async def test_small_filtered_sets_are_ranked_exactly_without_the_index(pg_store):
    _, _, _ = await _load(pg_store)
    f = SearchFilters("g1", channel_ids=("rare",))
    sql, _args = sops.exact_vector_sql(MODEL, DIMS, f, None)
    async with pg_store.pool.acquire() as conn:
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM knowledge_chunks WHERE channel_id = 'rare'")]
        plan = "\n".join(
            r[0]
            for r in await conn.fetch("EXPLAIN " + sql, HalfVector(np.ones(DIMS, dtype=np.float32)), "g1", ["rare"], 10)
        )
        assert vector_index_name(MODEL, DIMS) not in plan, plan
        ranked = await sops.vector_ranking(
            conn, MODEL, np.ones(DIMS, dtype=np.float32), f, 10, ef_search=40, schema=None
        )
    assert len(ranked) == 10 and {r.chunk_id for r in ranked} <= set(ids)


async def _lexical_corpus(store: PostgresStore) -> dict[str, int]:
    """600 chunks about meetings, 30 that also name sapporo, one that names only sapporo."""
    texts = [f"meeting notes {i}" for i in range(600)]
    texts += [f"meeting in sapporo {i}" for i in range(30)]
    texts.append("the venue in sapporo is booked")
    drafts = [ChunkDraft(content=t, lexical=t, token_count=4, channel_id="c") for t in texts]
    _, ids = await store.knowledge.add_source(SourceDraft(workspace_id="g1", type="discord_channel", title="t"), drafts)
    async with store.pool.acquire() as conn:
        await conn.execute("ANALYZE knowledge_chunks")
    return {"only_sapporo": ids[-1], "first_both": ids[600]}


async def test_lexeme_statistics_come_from_the_planner(pg_store):
    from omoide.stores.postgres._bm25 import lexeme_stats

    await _lexical_corpus(pg_store)
    async with pg_store.pool.acquire() as conn:
        stats = await lexeme_stats(conn, "knowledge_chunks")
    assert stats is not None and stats.rows >= 631
    assert stats.shares["meeting"] == pytest.approx(630 / 631, abs=0.01)
    assert stats.rows_with("meeting") > stats.rows_with("sapporo") > 0


async def test_common_words_stop_driving_the_candidates_and_the_top_stays(pg_store):
    """With statistics saying "meeting" is in 90% of 100k rows, only the rows naming sapporo
    (and a sample of the others) are scored; the ranking's top is the exact ranking's."""
    from omoide.stores.postgres._bm25 import COMMON_SAMPLE, LexemeStats, common_terms

    ids = await _lexical_corpus(pg_store)
    stats = LexemeStats({"meeting": 0.9, "notes": 0.5}, floor=0.001, rows=100_000)
    assert common_terms(["meeting", "sapporo"], stats) == {"meeting": pytest.approx(90_000)}
    assert common_terms(["meeting", "sapporo"], None) == {}
    assert common_terms(["sapporo"], stats) == {}  # one word: nothing to prune
    assert common_terms(["sapporo", "venue"], stats) == {}  # few rows: exact
    many = LexemeStats({"meeting": 0.9}, floor=0.001, rows=10_000_000)
    assert common_terms(["rare1", "rare2", "rare3", "rare4", "rare5"], many) == {}  # rare words always drive
    assert set(common_terms(["meeting", "rare1"], many)) == {"meeting"}
    f = SearchFilters("g1")
    async with pg_store.pool.acquire() as conn:
        exact = await sops.lexical_ranking(conn, ["meeting", "sapporo"], f, 20)
        pruned = await sops.lexical_ranking(conn, ["meeting", "sapporo"], f, 20, stats)
        tail = await sops.lexical_ranking(conn, ["meeting", "sapporo"], f, 400, stats)
    assert [r.chunk_id for r in pruned[:10]] == [r.chunk_id for r in exact[:10]]
    assert pruned[0].chunk_id == ids["first_both"]
    assert ids["only_sapporo"] in [r.chunk_id for r in tail]
    assert len(tail) == 31 + COMMON_SAMPLE  # every sapporo row, and a sample of the meeting-only rows


async def test_common_words_are_not_read_when_the_rare_ones_fill_the_list(pg_store):
    """31 rows name sapporo: a list of 31 is filled by them, so the 600 meeting rows are never
    visited (their posting list is only intersected with sapporo's inside the index); a list of
    32 samples them for its tail."""
    from omoide.stores.postgres._bm25 import LexemeStats

    await _lexical_corpus(pg_store)
    stats = LexemeStats({"meeting": 0.9}, floor=0.001, rows=100_000)
    f = SearchFilters("g1")
    async with pg_store.pool.acquire() as conn:
        exact = await sops.lexical_ranking(conn, ["meeting", "sapporo"], f, 31)
        full = await sops.lexical_ranking(conn, ["meeting", "sapporo"], f, 31, stats)
        assert [r.chunk_id for r in full] == [r.chunk_id for r in exact]
        assert len(await sops.lexical_ranking(conn, ["meeting", "sapporo"], f, 32, stats)) == 32

        def plan_sql(k: int) -> tuple[str, list[object]]:
            sql, args = sops.lexical_ranking_sql(["meeting", "sapporo"], f, k, stats)
            return "EXPLAIN (ANALYZE, COSTS OFF) " + sql, args

        await conn.execute("SET enable_seqscan = off")  # a tiny table: make the planner use the GIN index
        sql, args = plan_sql(31)
        plan = "\n".join(r[0] for r in await conn.fetch(sql, *args))
        sql, args = plan_sql(32)
        sampled = "\n".join(r[0] for r in await conn.fetch(sql, *args))
        await conn.execute("RESET enable_seqscan")
    assert plan.count("Bitmap Index Scan") == 3 and "(never executed)" in plan
    assert "(never executed)" not in sampled


async def test_ranking_by_term_scans_equals_testing_each_row(pg_store):
    """The chunks' ranking finds each term's matches by its own index scan and reads the stored
    ``lexical_len`` (never a ``tsvector``); testing every match against every term and measuring
    its ``tsvector`` gives the same ids in the same order with the same scores — with and without
    common words set aside, with a filter, and for a word that is in no row."""
    from omoide.stores.postgres._bm25 import LexemeStats, bm25_sql, common_terms, scored_terms
    from omoide.stores.postgres._search import filter_sql

    rng = np.random.default_rng(9)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 30)))) for _ in range(800)]
    drafts = [ChunkDraft(content=t, lexical=t, token_count=4, channel_id=f"c{i % 3}") for i, t in enumerate(texts)]
    await pg_store.knowledge.add_source(SourceDraft(workspace_id="g1", type="discord_channel", title="t"), drafts)
    stats = LexemeStats({"w1": 0.4, "w2": 0.3}, floor=0.001, rows=100_000)
    queries = [["w3", "w7"], ["w1", "w5", "w9", "w11"], ["w2", "w1", "w30"], ["w4", "absent"], ["w8"]]
    async with pg_store.pool.acquire() as conn:
        for tokens, filters, pruning in itertools.product(
            queries, [SearchFilters("g1"), SearchFilters("g1", channel_ids=("c1",))], [None, stats]
        ):
            by_term, args = sops.lexical_ranking_sql(tokens, filters, 50, pruning)
            assert "lexical_len" in by_term
            row_args: list[object] = []
            terms = scored_terms(tokens)
            by_row = bm25_sql(
                from_=sops._from_chunks(filters),
                table="knowledge_chunks",
                alias="c",
                columns="c.id",
                where=filter_sql(filters, row_args),
                args=row_args,
                terms=terms,
                k=50,
                common=common_terms(terms, pruning),
                docs=None if pruning is None else pruning.rows,  # N of the IDFs: the statistics' row count
            )
            got = [(r["id"], r["score"]) for r in await conn.fetch(by_term, *args)]
            want = [(r["id"], r["score"]) for r in await conn.fetch(by_row, *row_args)]
            assert [i for i, _ in got] == [i for i, _ in want], (tokens, filters, pruning)
            assert [s for _, s in got] == pytest.approx([s for _, s in want]), (tokens, filters, pruning)
            assert got, (tokens, filters)


async def test_the_index_tokenizer_is_reused_and_forgotten_on_writes(pg_store, pg_url, tmp_path, monkeypatch):
    """Every search asks which tokenizer wrote the index: the answer is reused for a few seconds,
    this store's own writes and reindexes forget it at once, another process's are seen after."""
    import omoide.stores.postgres.search as pg_module

    assert await pg_store.search.lexical_tokenizer() is None
    drafts = [ChunkDraft(content="hello", lexical="hello", token_count=1, channel_id="c")]
    await pg_store.knowledge.add_source(SourceDraft(workspace_id="g1", type="discord_channel", title="t"), drafts)
    current = await pg_store.search.lexical_tokenizer()
    assert current is not None  # the store's own write is seen at once
    other = PostgresStore(pg_url, settings=Settings(database_url=pg_url, transcripts_dir=tmp_path / "t2"))
    async with other:
        await other.lexical_index.set_lexical_tokenizer("ngram:v1")
        assert await other.search.lexical_tokenizer() == "ngram:v1"  # its own reindex: at once
        assert await pg_store.search.lexical_tokenizer() == current  # another process's: not yet
        monkeypatch.setattr(pg_module, "TOKENIZER_TTL", 0.0)
        assert await pg_store.search.lexical_tokenizer() == "ngram:v1"  # after the reuse time


async def test_pooled_connections_start_with_the_pipelines_hnsw_settings(pg_url, tmp_path):
    """Every pooled connection starts with an iterative HNSW scan and the pipeline's ef_search
    (``search_candidates`` rows), so the pipeline's vector search is one statement — and a 1%
    filter still fills k through it; another k sets its own for one transaction, as before."""
    settings = Settings(database_url=pg_url, transcripts_dir=tmp_path / "t", search_candidates=25, hnsw_ef_search=20)
    async with PostgresStore(pg_url, settings=settings) as store:
        _, vectors, rare = await _load(store)
        f = SearchFilters("g1", channel_ids=("rare",))
        statements: list[str] = []
        async with store.pool.acquire() as conn:
            assert await conn.fetchval("SHOW hnsw.ef_search") == "25"
            assert await conn.fetchval("SHOW hnsw.iterative_scan") == "relaxed_order"
            conn.add_query_logger(lambda record: statements.append(record.query))
            await conn.execute("SET enable_sort = off; SET enable_bitmapscan = off")  # the HNSW path, under test

            async def logged(k: int) -> tuple[list[RankedChunk], list[str]]:
                await asyncio.sleep(0.05)  # the logger is called soon after each statement, not during it
                statements.clear()
                ranking = await sops.vector_ranking(
                    conn, MODEL, vectors[5], f, k, ef_search=20, schema=None, exact_limit=0, session_ef_search=25
                )
                await asyncio.sleep(0.05)
                return ranking, list(statements)

            session, sent = await logged(25)
            assert len(sent) == 1 and "ORDER BY" in sent[0]
            other, sent = await logged(20)
            assert len(sent) == 4, sent  # BEGIN, SET LOCAL, the query, COMMIT
            assert await conn.fetchval("SHOW hnsw.ef_search") == "25"  # the local setting is gone
            await conn.execute("RESET enable_sort; RESET enable_bitmapscan")
    assert len(session) == 25 and {r.chunk_id for r in session} <= rare
    assert [r.chunk_id for r in other] == [r.chunk_id for r in session[:20]]


async def test_stale_lexeme_statistics_are_served_while_a_task_reads_them_again(pg_store):
    """The first lexical search reads the statistics; past their reuse time a search gets the old
    ones at once while one task reads them again (on Citus that read asks every node); closing
    the store cancels a refresh still pending."""
    from omoide.stores.postgres.search import LEXEME_STATS_TTL, STATS_REFRESH

    await _lexical_corpus(pg_store)
    search, db = pg_store.search, pg_store.search._db
    assert db.stats.read_at == float("-inf")
    assert await search.lexical_ranking(tokens=["sapporo"], filters=SearchFilters("g1"), k=5)
    first = db.stats.value
    assert first is not None and db.stats.fresh(LEXEME_STATS_TTL) and not db.background  # read by the search itself

    db.stats.read_at -= LEXEME_STATS_TTL + 1
    stale_at = db.stats.read_at
    async with pg_store.pool.acquire() as conn:
        served = await search._lexeme_stats(conn)
        again = await search._lexeme_stats(conn)
    assert served is first and again is first  # at once, the old statistics
    assert [t.get_name() for t in db.background] == [STATS_REFRESH]  # one refresh, not two
    await asyncio.gather(*db.background)
    assert db.stats.read_at > stale_at and db.stats.value is not None and not db.background

    db.stats.read_at -= LEXEME_STATS_TTL + 1
    async with pg_store.pool.acquire() as conn:
        await search._lexeme_stats(conn)
    pending = set(db.background)
    await db.close()
    assert all(t.done() for t in pending) and not db.background
