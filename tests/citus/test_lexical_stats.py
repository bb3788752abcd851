"""Lexical ranking on Citus ranks as one server would: the lexeme statistics and the IDFs' N come
from the shards (the coordinator's ``knowledge_chunks`` is an empty shell with no statistics).

Without this, the ranking's N was the number of matches (the shell's ``reltuples`` is 0) and
common-word pruning never ran: the same rows ranked differently from a single server.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, SourceDraft
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres._bm25 import BM25_B, BM25_K1, LexemeStats, lexeme_stats, merge_stats
from omoide.stores.search import SearchFilters

WORDS = [f"w{i}" for i in range(30)]


def _bm25(texts: dict[int, set[str]], terms: list[str], n_docs: float) -> list[tuple[int, float]]:
    """The ranking ``omoide.stores.postgres._bm25`` computes, in Python: over the rows matching any
    term, IDF ``ln(1 + (N − df + 0.5) / (df + 0.5))``, length = distinct lexemes, one count per term."""
    matched = {i: words for i, words in texts.items() if words & set(terms)}
    avglen = max(sum(len(w) for w in matched.values()) / len(matched), 1.0)
    idf = {
        t: math.log(
            1
            + max(n_docs - sum(t in w for w in matched.values()) + 0.5, 0)
            / (sum(t in w for w in matched.values()) + 0.5)
        )
        for t in terms
    }
    scores = {
        i: sum(idf[t] for t in terms if t in words)
        * (BM25_K1 + 1)
        / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(words) / avglen))
        for i, words in matched.items()
    }
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def test_merged_shard_statistics_weigh_each_shard_by_its_rows() -> None:
    a = LexemeStats({"x": 0.5}, floor=0.01, rows=100)
    b = LexemeStats({"y": 0.2}, floor=0.03, rows=300)
    merged = merge_stats([a, b])
    assert merged is not None and merged.rows == 400
    assert merged.shares["x"] == pytest.approx((50 + 0.015 * 300) / 400)  # b lists no x: half its floor
    assert merged.floor == pytest.approx((1 + 9) / 400)
    assert merge_stats([]) is None


async def test_lexical_ranking_uses_every_shards_rows(citus_url: str, tmp_path: Any) -> None:
    rng = np.random.default_rng(3)
    settings = Settings(database_url=citus_url, transcripts_dir=tmp_path / "t", db_pool_max=4)
    async with PostgresStore(citus_url, settings=settings) as store:
        texts: dict[int, set[str]] = {}
        for workspace, n in (("g1", 60), ("g2", 140), ("g3", 100)):
            lines = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)))) for _ in range(n)]
            drafts = [ChunkDraft(content=t, lexical=t, token_count=3) for t in lines]
            _, ids = await store.knowledge.add_source(
                SourceDraft(workspace_id=workspace, type="discord_channel", title=workspace), drafts
            )
            if workspace == "g1":
                texts = {int(i): set(t.split()) for i, t in zip(ids, lines, strict=True)}
        async with store.pool.acquire() as conn:
            await conn.execute("ANALYZE knowledge_chunks")  # Citus analyses every shard
            stats = await lexeme_stats(conn, "knowledge_chunks", citus=True)
            assert await lexeme_stats(conn, "knowledge_chunks") is None  # the coordinator's shell has none
        assert stats is not None and stats.rows == pytest.approx(300)
        assert stats.rows_with("w1") == pytest.approx(300 * stats.shares["w1"])
        for terms in (["w1", "w2"], ["w5"], ["w7", "w11", "w13"]):
            got = await store.search.lexical_ranking(tokens=terms, filters=SearchFilters("g1"), k=20)
            want = _bm25(texts, terms, 300)[:20]
            assert [c.chunk_id for c in got] == [i for i, _ in want], terms
            assert [c.score for c in got] == pytest.approx([s for _, s in want]), terms
