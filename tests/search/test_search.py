"""Memory.search end to end on SQLite and PostgreSQL: modes, RRF, filters, Japanese, explain, fallback."""

from __future__ import annotations

from datetime import timedelta

import pytest

from omoide import Memory
from omoide.errors import InvalidInput
from omoide.providers.base import RerankResult

from .helpers import T0, seed, tuned


def contents(result):
    return [h.content for h in result.hits]


async def test_hybrid_japanese_word_inside_a_sentence(mem: Memory):
    await seed(mem)
    result = await mem.search("天気", workspace="g1", k=3)
    assert result.mode == "hybrid"
    assert "明日の天気は晴れ" in result.hits[0].content
    hit = result.hits[0]
    assert hit.rank == 1
    assert hit.scores.lexical is not None and hit.scores.vector is not None and hit.scores.fused is not None
    assert hit.score == hit.scores.fused
    assert hit.chunk.channel_id == "general"
    assert hit.jump_url == "https://discord.com/channels/g1/general/m1"
    assert hit.chunk.started_at == T0 + timedelta(hours=2)
    assert set(result.timings) >= {"embed", "search", "fetch"}
    assert not result.fallback and result.notes == ()


async def test_workspace_scope(mem: Memory):
    await seed(mem)
    result = await mem.search("andy", workspace="g1", k=10)
    assert result.hits
    assert all("別のサーバー" not in h.content for h in result.hits)
    other = await mem.search("andy", workspace="other", mode="lexical")
    assert [h.content for h in other.hits] and "別のサーバー" in other.hits[0].content


@pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
async def test_modes_and_explain(mem: Memory, mode):
    await seed(mem)
    result = await mem.search("HNSW インデックス", workspace="g1", k=2, mode=mode, explain=True)
    assert result.mode == mode
    assert "HNSW" in result.hits[0].content
    ranks = result.hits[0].ranks
    assert ranks is not None and ranks["fused"] == 1
    expected = {"vector", "lexical"} if mode == "hybrid" else {mode}
    assert expected <= set(ranks)
    if mode == "lexical":
        assert result.hits[0].scores.vector is None and "embed" not in result.timings
    if mode == "vector":
        assert result.hits[0].scores.lexical is None


async def test_rrf_fuses_both_lists_with_one_constant(mem: Memory):
    await seed(mem)
    query = "embedder multilingual"
    vector = await mem.search(query, workspace="g1", mode="vector", k=7)
    lexical = await mem.search(query, workspace="g1", mode="lexical", k=7)
    hybrid = await mem.search(query, workspace="g1", mode="hybrid", k=7, explain=True)
    v = {h.chunk.chunk_id: h.rank for h in vector.hits}
    lx = {h.chunk.chunk_id: h.rank for h in lexical.hits}
    expected = {cid: sum(1 / (60 + r[cid]) for r in (v, lx) if cid in r) for cid in set(v) | set(lx)}
    for h in hybrid.hits:
        assert h.scores.fused == pytest.approx(expected[h.chunk.chunk_id])
    assert [h.scores.fused for h in hybrid.hits] == sorted((h.scores.fused for h in hybrid.hits), reverse=True)


async def test_filters(mem: Memory):
    await seed(mem)
    in_dev = await mem.search("検索", workspace="g1", channel="dev", k=10)
    assert in_dev.hits and all(h.chunk.channel_id == "dev" for h in in_dev.hits)
    by_bob = await mem.search("the", workspace="g1", author="u2", k=10)
    assert by_bob.hits and all("u2" in h.chunk.author_ids for h in by_bob.hits)
    late = await mem.search("ラーメン", workspace="g1", since=T0 + timedelta(hours=60), k=10)
    assert late.hits and all(h.chunk.started_at >= T0 + timedelta(hours=60) for h in late.hits)
    early = await mem.search("ラーメン", workspace="g1", until=T0 + timedelta(hours=1), k=10)
    assert all(h.chunk.started_at <= T0 + timedelta(hours=1) for h in early.hits)
    nothing = await mem.search("ラーメン", workspace="g1", channel="no-such-channel")
    assert nothing.hits == ()


async def test_k_and_pipeline_sizes(mem: Memory):
    await seed(mem)
    assert len((await mem.search("the", workspace="g1", k=1)).hits) == 1
    async with Memory.open(tuned(mem.settings, search_fused=2, search_top_k=5)) as small:
        # the fused pool grows to k when k is larger than search_fused
        assert len((await small.search("alice andy 天気 HNSW ラーメン release", workspace="g1", k=4)).hits) == 4
        assert len((await small.search("alice andy 天気 HNSW ラーメン release", workspace="g1")).hits) == 5


async def test_bad_input(mem: Memory):
    with pytest.raises(InvalidInput, match="empty"):
        await mem.search("   ", workspace="g1")
    with pytest.raises(InvalidInput, match="mode"):
        await mem.search("x", workspace="g1", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="k must be"):
        await mem.search("x", workspace="g1", k=0)
    with pytest.raises(InvalidInput, match="since"):
        await mem.search("x", workspace="g1", since=T0, until=T0 - timedelta(days=1))


async def test_no_vectors_for_the_embedder_uses_lexical(mem: Memory):
    await seed(mem)
    # the chunks were embedded by hashing@384; hashing@64 is another model with no vectors yet
    async with Memory.open(tuned(mem.settings, embedder="hashing@64")) as other:
        result = await other.search("天気", workspace="g1", mode="vector")
    assert result.fallback
    assert "no chunk in scope has a vector" in result.notes[0]
    assert "明日の天気" in result.hits[0].content


async def test_vector_failure_when_embedder_cannot_be_built(mem: Memory):
    await seed(mem)
    async with Memory.open(tuned(mem.settings, embedder="openai:text-embedding-3-small")) as broken:
        result = await broken.search("天気", workspace="g1")
    assert result.fallback
    assert result.notes and "lexical results only" in result.notes[0]
    assert "明日の天気" in result.hits[0].content


class ReverseReranker:
    """A real Reranker implementation scoring by position (last candidate best), for ordering tests."""

    model_id = "reverse"

    async def rerank(self, query, documents, *, top_k=None):
        n = len(documents)
        out = [RerankResult(i, float(i)) for i in reversed(range(n))]
        return out[:top_k] if top_k else out


async def test_rerank_stage(mem: Memory):
    await seed(mem)
    plain = await mem.search("the andy 天気", workspace="g1", k=3, explain=True)
    mem._reranker, mem._reranker_built = ReverseReranker(), True
    result = await mem.search("the andy 天気", workspace="g1", k=3, explain=True)
    assert result.reranked and "rerank" in result.timings
    assert result.hits[0].scores.rerank is not None and result.hits[0].score == result.hits[0].scores.rerank
    assert result.hits[0].ranks["rerank"] == 1
    assert [h.rank for h in result.hits] == [1, 2, 3]
    assert result.hits[0].ranks["fused"] > plain.hits[0].ranks["fused"]


async def test_stage_scores_are_each_kinds_best_even_when_a_list_repeats_an_id(mem: Memory):
    """The fused hits' per-stage scores come from the lists by rank: the best of the lists of one
    kind (expansions add lists), and a list that repeats an id is searched instead."""
    from omoide.search.pipeline import _Lists
    from omoide.stores.knowledge import ChunkId
    from omoide.stores.search import RankedChunk

    a, b, c = (ChunkId(i) for i in (await seed(mem))[:3])
    lists = _Lists()
    lists.add("vector", [RankedChunk(a, 0.9), RankedChunk(b, 0.8)])
    lists.add("vector#2", [RankedChunk(b, 0.95), RankedChunk(a, 0.7)])
    lists.add("lexical", [RankedChunk(c, 7.0), RankedChunk(c, 6.0), RankedChunk(a, 5.0)])  # c twice
    hits = await mem.search_pipeline()._fuse(lists, 3, units=False, workspace="g1")
    scores = {h.chunk.chunk_id: h.scores for h in hits}
    assert (scores[a].vector, scores[a].lexical) == (0.9, 5.0)  # a's rank in "lexical" is 2, its entry 3rd
    assert (scores[b].vector, scores[b].lexical) == (0.95, None)
    assert (scores[c].vector, scores[c].lexical) == (None, 7.0)
    assert hits[0].ranks == {"vector": 1, "vector#2": 2, "lexical": 2, "fused": 1}
