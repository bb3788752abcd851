"""PostgreSQL's lexical ranking plan (one index scan per term) gives exactly the reference ranking.

The reference is the literal form of the ranking (``bm25_sql`` without ``length``): every match of
the driving terms is read, tested against every term on its ``tsvector`` and measured by it. The
plan the store runs (:func:`omoide.stores.postgres._search.lexical_ranking_sql`) finds each term's
matches by its own GIN scan, reads the stored ``lexical_len``, and — when the statistics set common
words aside — takes a common word's bit among the driving rows from a GIN scan of "a driving word
*and* the common word" instead of reading those rows' ``tsvector`` again. Both must return the same
ids, scores and order (ties by id) for every filter, on a workspace holding most rows and on small
ones, for ``k`` below and above the number of matches, with and without common words set aside.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, SourceDraft
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres._bm25 import LexemeStats, bm25_sql, common_terms, scored_terms
from omoide.stores.search import SearchFilters

pytestmark = pytest.mark.postgres

WORDS = [f"w{i}" for i in range(40)]
START = datetime(2026, 1, 1, tzinfo=UTC)
PRUNING = LexemeStats({"w1": 0.4, "w2": 0.3, "w3": 0.2}, floor=0.001, rows=100_000)
"""Statistics that make w1, w2 and w3 common (a query naming them matches more than
``PRUNE_ABOVE`` rows of 100k), so those stop driving the candidates."""

FILTERS = [
    SearchFilters("big"),
    SearchFilters("mid"),
    SearchFilters("small"),
    SearchFilters("nobody"),
    SearchFilters("big", viewer="u2"),
    SearchFilters("big", viewer="u1"),
    SearchFilters("big", public_only=True),
    SearchFilters("big", channel_ids=("c1",)),
    SearchFilters("big", channel_ids=("c0", "c2"), author_ids=("u3",)),
    SearchFilters("big", source_types=("document",)),
    SearchFilters("small", source_types=("discord_channel",)),
    SearchFilters("big", author_ids=("u3",)),
    SearchFilters("big", thread_ids=("t1",)),
    SearchFilters("big", since=START + timedelta(days=100)),
    SearchFilters("mid", until=START + timedelta(days=60)),
    SearchFilters("big", since=START + timedelta(days=30), until=START + timedelta(days=90), viewer="u1"),
]
QUERIES = [
    ["w5"],
    ["w6", "w7"],
    ["w1", "w8"],  # one common word, one driving
    ["w2", "w1", "w30"],  # two common words
    ["w1", "w2", "w3", "w9", "w10"],
    ["w1", "w2"],  # common only: the commonest is set aside, the other drives
    ["w11", "absent"],
    ["absent"],
    ["^", "w12"],  # a token without a lexeme is left out
    list(WORDS),
]


@pytest.fixture
async def store(pg_url: str, tmp_path: Any) -> Any:
    """900 chunks: 70 % in ``big`` (two source types, three channels, two threads, some private,
    five authors, spread over 150 days), 20 % in ``mid``, 10 % in ``small``; 3–30 words from 40
    each (so lengths vary), and some exact duplicates (so BM25 scores tie)."""
    settings = Settings(database_url=pg_url, transcripts_dir=tmp_path / "t", db_pool_max=2)
    rng = random.Random(16)
    async with PostgresStore(pg_url, settings=settings) as s:
        for workspace, count in [("big", 630), ("mid", 180), ("small", 90)]:
            for part in range(3):
                drafts = []
                for i in range(count // 3):
                    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
                    if i % 10 == 9:
                        words = drafts[-1].lexical  # an exact duplicate: a tie
                    day = START + timedelta(days=rng.randint(0, 150))
                    drafts.append(
                        ChunkDraft(
                            content=words,
                            lexical=words,
                            token_count=8,
                            channel_id=f"c{i % 3}",
                            thread_id=f"t{i % 2}" if i % 4 == 0 else None,
                            author_ids=(f"u{i % 5}",),
                            started_at=day,
                            ended_at=day + timedelta(hours=rng.randint(0, 48)),
                        )
                    )
                source = SourceDraft(
                    workspace_id=workspace,
                    type="document" if part == 2 else "discord_channel",
                    title=f"{workspace}{part}",
                    private=part == 1,
                    members=("u1",) if part == 1 else (),
                )
                await s.knowledge.add_source(source, drafts)
        async with s.pool.acquire() as conn:
            await conn.execute("ANALYZE knowledge_chunks")
        yield s


def _reference_sql(
    tokens: Sequence[str], filters: SearchFilters, k: int, stats: LexemeStats | None
) -> tuple[str, list[Any]]:
    """Every match tested against every term on its ``tsvector`` (``bm25_sql`` without ``length``)."""
    args: list[Any] = []
    terms = scored_terms(tokens)
    sql = bm25_sql(
        from_=sops._from_chunks(filters),
        table="knowledge_chunks",
        alias="c",
        columns="c.id",
        where=sops.filter_sql(filters, args),
        args=args,
        terms=terms,
        k=k,
        common=common_terms(terms, stats),
        docs=None if stats is None else stats.rows,
    )
    return sql, args


async def test_the_term_scans_rank_exactly_as_the_reference(store: PostgresStore) -> None:
    assert common_terms(["w1", "w8"], PRUNING) == {"w1": pytest.approx(40_000)}  # pruning really happens
    assert set(common_terms(["w2", "w1", "w30"], PRUNING)) == {"w1", "w2"}
    compared = nonempty = 0
    async with store.pool.acquire() as conn:
        for filters, k, tokens, stats in itertools.product(FILTERS, [1, 7, 60, 1000], QUERIES, [None, PRUNING]):
            sql, args = sops.lexical_ranking_sql(tokens, filters, k, stats)
            got = [(r["id"], r["score"]) for r in await conn.fetch(sql, *args)]
            sql, args = _reference_sql(tokens, filters, k, stats)
            want = [(r["id"], r["score"]) for r in await conn.fetch(sql, *args)]
            assert got == want, (tokens, filters, k, stats)
            compared += 1
            nonempty += bool(got)
    assert compared == len(FILTERS) * 4 * len(QUERIES) * 2
    assert nonempty > compared // 2  # most cases rank something


async def test_common_words_are_scored_on_their_index_scans(store: PostgresStore) -> None:
    """With a common word set aside, the plan has one scan per term (the common one intersected
    with the driving ones inside the GIN index) and no join back to the chunks to read
    ``tsvector``s; its scores still count the common word for the driving rows holding it."""
    filters = SearchFilters("big")
    sql, args = sops.lexical_ranking_sql(["w1", "w8"], filters, 20, PRUNING)
    assert "bm25_qdc0" in sql and "JOIN knowledge_chunks" not in sql
    async with store.pool.acquire() as conn:
        rows = await conn.fetch(sql, *args)
        both = {
            r["id"]
            for r in await conn.fetch(
                "SELECT id FROM knowledge_chunks WHERE workspace_id = 'big' "
                "AND lexical_tsv @@ to_tsquery('simple', 'w1 & w8')"
            )
        }
    assert both and rows[0]["id"] in both  # the rows holding both words come first
    assert {r["bm25_mask"] for r in rows if r["id"] in both} == {0b11}


async def test_the_ranking_is_planned_for_each_workspace(store: PostgresStore) -> None:
    """A pooled connection never caches a generic plan of the ranking (one costed for an average
    workspace): after more runs than PostgreSQL needs to switch (five), every execution was
    planned for its own workspace."""
    async with store.pool.acquire() as conn:
        assert await conn.fetchval("SHOW plan_cache_mode") == "force_custom_plan"
        for workspace in ["big", "small"] * 4:
            sql, args = sops.lexical_ranking_sql(["w5"], SearchFilters(workspace), 10)
            await conn.fetch(sql, *args)
        sql, _ = sops.lexical_ranking_sql(["w5"], SearchFilters("big"), 10)
        generic, custom = await conn.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", sql
        )
    assert generic == 0 and custom >= 8
