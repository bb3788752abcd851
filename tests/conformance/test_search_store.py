"""The SearchStore contract on every backend: scoping, each filter, Japanese tokens, ranking, bounds.

Chunks are written through the real KnowledgeStore path (``add_source`` + ``put_embeddings``)
and lexical tokens come from the real :func:`omoide.text.tokenize_for_search`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from omoide.errors import InvalidInput
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.search import ChunkHit, SearchFilters, SearchStore
from omoide.text import search_tokenizer_name, tokenize_for_search
from omoide.text.tokenize import is_synonym_token
from search_helpers import lexical_search, vector_search

T0 = datetime(2025, 11, 8, 12, 0, tzinfo=UTC)
MODEL = "test-model"
DIMS = 8


def _vec(seed: int, dims: int = DIMS) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


@dataclass
class Doc:
    text: str
    channel: str | None = "c1"
    thread: str | None = None
    authors: tuple[str, ...] = ("u1",)
    start: datetime | None = T0
    end: datetime | None = None
    vector: np.ndarray = field(default_factory=lambda: _vec(0))


async def _add(store, docs: list[Doc], *, workspace: str = "g1", type_: str = "discord_channel") -> list[int]:
    drafts = [
        ChunkDraft(
            content=d.text,
            lexical=" ".join(tokenize_for_search(d.text)),
            token_count=len(d.text),
            location={"message_ids": [f"m{i}"]},
            channel_id=d.channel,
            thread_id=d.thread,
            author_ids=d.authors,
            started_at=d.start,
            ended_at=d.end if d.end is not None else d.start,
        )
        for i, d in enumerate(docs)
    ]
    _, chunk_ids = await store.knowledge.add_source(
        SourceDraft(workspace_id=workspace, type=type_, title=f"#{type_}", uri="https://discord.com/channels/g1/c1"),
        drafts,
    )
    rows = [EmbeddingRow(chunk_id=cid, vector=d.vector) for cid, d in zip(chunk_ids, docs, strict=True)]
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
    return list(chunk_ids)


def _ids(hits: list[ChunkHit]) -> list[int]:
    return [h.chunk_id for h in hits]


def _tokens(text: str) -> list[str]:
    return tokenize_for_search(text)


async def test_store_satisfies_search_protocol(store):
    assert isinstance(store.search, SearchStore)


async def test_vector_search_ranks_by_cosine_similarity(store):
    vectors = [_vec(i) for i in range(6)]
    ids = await _add(store, [Doc(f"doc {i}", vector=v) for i, v in enumerate(vectors)])
    query = vectors[3] * 5.0  # the length must not matter: cosine
    hits = await vector_search(store.search, model=MODEL, query=query, filters=SearchFilters("g1"), k=6)
    assert hits[0].chunk_id == ids[3]
    assert hits[0].score == pytest.approx(1.0, abs=2e-3)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5, 6]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits)), "higher is better"
    expected = sorted(range(6), key=lambda i: -float(vectors[i] @ vectors[3]))
    assert _ids(hits) == [ids[i] for i in expected]
    for hit, i in zip(hits, expected, strict=True):
        assert hit.score == pytest.approx(float(vectors[i] @ vectors[3]), abs=5e-3)


async def test_rankings_are_the_searches_without_the_rows(store):
    """vector_ranking / lexical_ranking: the same ids, order and scores as the full searches."""
    docs = [Doc(f"release note {i} " + "plan " * (i % 3), vector=_vec(i), channel=f"c{i % 2}") for i in range(8)]
    await _add(store, docs)
    await _add(store, [Doc("release plan elsewhere", vector=_vec(1))], workspace="g2")
    for filters in (SearchFilters("g1"), SearchFilters("g1", channel_ids=("c1",))):
        full = await vector_search(store.search, model=MODEL, query=_vec(2), filters=filters, k=5)
        ranked = await store.search.vector_ranking(model=MODEL, query=_vec(2), filters=filters, k=5)
        assert [r.chunk_id for r in ranked] == _ids(full)
        assert [r.score for r in ranked] == pytest.approx([h.score for h in full])
        full_lex = await lexical_search(store.search, tokens=_tokens("release plan"), filters=filters, k=5)
        ranked_lex = await store.search.lexical_ranking(tokens=_tokens("release plan"), filters=filters, k=5)
        assert [r.chunk_id for r in ranked_lex] == _ids(full_lex)
        assert [r.score for r in ranked_lex] == pytest.approx([h.score for h in full_lex])
    assert await store.search.lexical_ranking(tokens=[], filters=SearchFilters("g1"), k=5) == []
    with pytest.raises(InvalidInput):
        await store.search.vector_ranking(model=MODEL, query=_vec(1), filters=SearchFilters("g1"), k=0)


async def test_vector_search_k_limits_and_other_models_are_ignored(store):
    await _add(store, [Doc(f"doc {i}", vector=_vec(i)) for i in range(5)])
    hits = await vector_search(store.search, model=MODEL, query=_vec(1), filters=SearchFilters("g1"), k=2)
    assert len(hits) == 2
    assert await vector_search(store.search, model="other-model", query=_vec(1), filters=SearchFilters("g1"), k=2) == []


async def test_hits_carry_chunk_and_source_fields(store):
    start, end = T0, T0 + timedelta(minutes=30)
    [cid] = await _add(
        store,
        [Doc("andy は 天気 の話をした", channel="c9", thread="t9", authors=("u1", "u2"), start=start, end=end)],
        type_="discord_channel",
    )
    for hits in (
        await vector_search(store.search, model=MODEL, query=_vec(0), filters=SearchFilters("g1"), k=1),
        await lexical_search(store.search, tokens=_tokens("天気"), filters=SearchFilters("g1"), k=1),
        await store.search.fetch_chunks([cid]),
    ):
        [hit] = hits
        assert hit.chunk_id == cid
        assert hit.content == "andy は 天気 の話をした"
        assert hit.location == {"message_ids": ["m0"]}
        assert (hit.channel_id, hit.thread_id, hit.author_ids) == ("c9", "t9", ("u1", "u2"))
        assert (hit.started_at, hit.ended_at) == (start, end)
        assert hit.started_at is not None and hit.started_at.tzinfo is not None
        assert (hit.source_type, hit.source_title, hit.source_uri) == (
            "discord_channel",
            "#discord_channel",
            "https://discord.com/channels/g1/c1",
        )


async def test_workspace_isolation(store):
    mine = await _add(store, [Doc("天気 weather report", vector=_vec(7))], workspace="g1")
    theirs = await _add(store, [Doc("天気 weather report", vector=_vec(7))] * 3, workspace="g2")
    f = SearchFilters("g1")
    assert _ids(await vector_search(store.search, model=MODEL, query=_vec(7), filters=f, k=10)) == mine
    assert _ids(await lexical_search(store.search, tokens=_tokens("weather 天気"), filters=f, k=10)) == mine
    other = SearchFilters("g2")
    assert sorted(_ids(await vector_search(store.search, model=MODEL, query=_vec(7), filters=other, k=10))) == sorted(
        theirs
    )
    assert await vector_search(store.search, model=MODEL, query=_vec(7), filters=SearchFilters("nobody"), k=10) == []


FILTER_DOCS = [
    Doc("deploy notes alpha", channel="c1", thread=None, authors=("u1",), start=T0),
    Doc("deploy notes beta", channel="c2", thread="t1", authors=("u2", "u3"), start=T0 + timedelta(days=1)),
    Doc("deploy notes gamma", channel="c2", thread="t2", authors=("u3",), start=T0 + timedelta(days=2)),
    Doc("deploy notes delta", channel=None, thread=None, authors=(), start=None),
]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (SearchFilters("g1"), [0, 1, 2, 3]),
        (SearchFilters("g1", channel_ids=("c2",)), [1, 2]),
        (SearchFilters("g1", channel_ids=("c1", "c2")), [0, 1, 2]),
        (SearchFilters("g1", thread_ids=("t1",)), [1]),
        (SearchFilters("g1", author_ids=("u3",)), [1, 2]),
        (SearchFilters("g1", author_ids=("u1", "u2")), [0, 1]),
        (SearchFilters("g1", since=T0 + timedelta(hours=12)), [1, 2]),
        (SearchFilters("g1", until=T0 + timedelta(days=1)), [0, 1]),
        (SearchFilters("g1", since=T0 + timedelta(days=1), until=T0 + timedelta(days=1)), [1]),
        (SearchFilters("g1", channel_ids=("c2",), author_ids=("u2",)), [1]),
        (SearchFilters("g1", channel_ids=("nope",)), []),
    ],
)
async def test_each_filter_applies_to_vector_and_lexical_search(store, filters, expected):
    ids = await _add(
        store, [Doc(d.text, d.channel, d.thread, d.authors, d.start, d.end, _vec(i)) for i, d in enumerate(FILTER_DOCS)]
    )
    await _add(store, [Doc("deploy notes other workspace", vector=_vec(0))], workspace="g2")
    want = sorted(ids[i] for i in expected)
    vector = await vector_search(store.search, model=MODEL, query=_vec(0), filters=filters, k=10)
    lexical = await lexical_search(store.search, tokens=_tokens("deploy"), filters=filters, k=10)
    assert sorted(_ids(vector)) == want
    assert sorted(_ids(lexical)) == want


async def test_source_type_filter_and_time_span_overlap(store):
    chat = await _add(store, [Doc("release plan", start=T0, end=T0 + timedelta(hours=5))], type_="discord_channel")
    doc = await _add(store, [Doc("release plan", start=T0, end=T0)], type_="document")
    f = SearchFilters("g1", source_types=("document",))
    assert _ids(await lexical_search(store.search, tokens=_tokens("release"), filters=f, k=5)) == doc
    assert _ids(await vector_search(store.search, model=MODEL, query=_vec(0), filters=f, k=5)) == doc
    # a span that starts before `since` but ends after it overlaps the range
    late = SearchFilters("g1", since=T0 + timedelta(hours=2))
    assert _ids(await lexical_search(store.search, tokens=_tokens("release"), filters=late, k=5)) == chat


async def test_selective_filter_still_returns_k_rows(store):
    docs = [Doc(f"note {i}", channel="rare" if i % 25 == 0 else "common", vector=_vec(i)) for i in range(200)]
    ids = await _add(store, docs)
    await store.knowledge.ensure_vector_index(model=MODEL, dimensions=DIMS)
    rare = {ids[i] for i in range(0, 200, 25)}
    f = SearchFilters("g1", channel_ids=("rare",))
    hits = await vector_search(store.search, model=MODEL, query=_vec(3), filters=f, k=5)
    assert len(hits) == 5 and set(_ids(hits)) <= rare
    assert len(await vector_search(store.search, model=MODEL, query=_vec(3), filters=f, k=50)) == len(rare)


async def test_japanese_word_inside_a_sentence_matches(store):
    ids = await _add(
        store,
        [
            Doc("今日はとても天気がいいので散歩に行きました"),
            Doc("明日の会議は午後三時からです"),
            Doc("天候が悪い日は家で本を読みます"),
        ],
    )
    words = [t for t in _tokens("天気") if not is_synonym_token(t)]
    hits = await lexical_search(store.search, tokens=words, filters=SearchFilters("g1"), k=10)
    assert _ids(hits) == [ids[0]]
    # with the word's Sudachi synonym group (tokenizer v3) 天候 matches too, below the word itself
    hits = await lexical_search(store.search, tokens=_tokens("天気"), filters=SearchFilters("g1"), k=10)
    assert _ids(hits) == [ids[0], ids[2]]
    hits = await lexical_search(store.search, tokens=_tokens("会議はいつ？"), filters=SearchFilters("g1"), k=10)
    assert hits and hits[0].chunk_id == ids[1]


async def test_lexical_ranking_prefers_more_and_denser_matches(store):
    ids = await _add(
        store,
        [
            Doc("kubernetes upgrade failed on the staging cluster yesterday after lunch meeting"),
            Doc("kubernetes kubernetes upgrade"),
            Doc("nothing relevant here at all"),
        ],
    )
    hits = await lexical_search(store.search, tokens=_tokens("kubernetes upgrade"), filters=SearchFilters("g1"), k=10)
    assert _ids(hits) == [ids[1], ids[0]]
    assert hits[0].score > hits[1].score > 0
    assert [h.rank for h in hits] == [1, 2]


async def test_lexical_ranking_weighs_rare_words_above_common_ones(store):
    """BM25's inverse document frequency on both backends: the chunk with the question's rare
    word beats chunks that only repeat its common word (PostgreSQL's ts_rank_cd, which has no
    IDF, ranked it last)."""
    common = [Doc(f"meeting notes meeting agenda meeting room {i}") for i in range(12)]
    ids = await _add(store, [*common, Doc("we booked the venue in sapporo for the offsite next month")])
    hits = await lexical_search(store.search, tokens=_tokens("meeting in sapporo"), filters=SearchFilters("g1"), k=5)
    assert hits[0].chunk_id == ids[-1]
    ranked = await store.search.lexical_ranking(tokens=_tokens("meeting in sapporo"), filters=SearchFilters("g1"), k=5)
    assert [r.chunk_id for r in ranked] == _ids(hits)


async def test_lexical_tokens_are_never_query_syntax(store):
    [cid] = await _add(store, [Doc('he said "hello" AND or NOT near(x) it\'s 100% a:b * ^ - | & ! \\')])
    f = SearchFilters("g1")
    for tokens in (
        ['"'],
        ["AND"],
        ["OR", "NOT"],
        ["near(x"],
        ["it's"],
        ["a:b"],
        ["*"],
        ["^"],
        ["-"],
        ["|", "&", "!"],
        ["\\"],
        ["'"],
        ["()"],
        ["hello"],
    ):
        hits = await lexical_search(store.search, tokens=tokens, filters=f, k=5)
        assert _ids(hits) in ([], [cid])
    assert _ids(await lexical_search(store.search, tokens=["hello"], filters=f, k=5)) == [cid]


async def test_empty_tokens_return_nothing(store):
    await _add(store, [Doc("something")])
    f = SearchFilters("g1")
    assert await lexical_search(store.search, tokens=[], filters=f, k=5) == []
    assert await lexical_search(store.search, tokens=["", "  "], filters=f, k=5) == []


@pytest.mark.parametrize("k", [0, -1, 1001, 2.5, True, "3"])
async def test_k_out_of_bounds_is_invalid_input(store, k):
    f = SearchFilters("g1")
    with pytest.raises(InvalidInput, match="k must"):
        await vector_search(store.search, model=MODEL, query=_vec(0), filters=f, k=k)
    with pytest.raises(InvalidInput, match="k must"):
        await lexical_search(store.search, tokens=["x"], filters=f, k=k)


async def test_bad_inputs_are_invalid_input(store):
    f = SearchFilters("g1")
    with pytest.raises(InvalidInput, match="SearchFilters"):
        await lexical_search(store.search, tokens=["x"], filters="g1", k=5)
    with pytest.raises(InvalidInput, match="sequence of search tokens"):
        await lexical_search(store.search, tokens="天気", filters=f, k=5)
    with pytest.raises(InvalidInput, match="all zeros"):
        await vector_search(store.search, model=MODEL, query=np.zeros(DIMS, dtype=np.float32), filters=f, k=5)
    with pytest.raises(InvalidInput, match="NaN"):
        await vector_search(store.search, model=MODEL, query=np.full(DIMS, np.nan, dtype=np.float32), filters=f, k=5)
    with pytest.raises(InvalidInput, match="model"):
        await vector_search(store.search, model="", query=_vec(0), filters=f, k=5)
    with pytest.raises(InvalidInput, match="workspace_id"):
        SearchFilters("")
    with pytest.raises(InvalidInput, match="after until"):
        SearchFilters("g1", since=T0 + timedelta(days=1), until=T0)


async def test_query_size_must_match_the_stored_vectors(store):
    await _add(store, [Doc("x")])
    with pytest.raises(InvalidInput, match="8-dimensional"):
        await vector_search(store.search, model=MODEL, query=_vec(0, dims=4), filters=SearchFilters("g1"), k=5)


async def test_fetch_chunks_keeps_the_given_order(store):
    ids = await _add(store, [Doc(f"doc {i}") for i in range(3)])
    hits = await store.search.fetch_chunks([ids[2], 999_999, ids[0], ids[2]])
    assert _ids(hits) == [ids[2], ids[0]]
    assert all(h.score == 0.0 and h.rank == 0 for h in hits)
    assert await store.search.fetch_chunks([]) == []


async def test_new_embeddings_are_seen_by_the_next_search(store):
    first = await _add(store, [Doc("a", vector=_vec(1))])
    f = SearchFilters("g1")
    assert _ids(await vector_search(store.search, model=MODEL, query=_vec(2), filters=f, k=5)) == first
    second = await _add(store, [Doc("b", vector=_vec(2))])
    hits = await vector_search(store.search, model=MODEL, query=_vec(2), filters=f, k=5)
    assert _ids(hits) == [second[0], first[0]]
    # replacing a vector is seen too
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(chunk_id=first[0], vector=_vec(2))]
    )
    hits = await vector_search(store.search, model=MODEL, query=_vec(2), filters=f, k=5)
    assert [round(h.score, 2) for h in hits] == [1.0, 1.0]


async def test_lexical_tokenizer_is_recorded_when_chunks_are_written(store):
    assert await store.search.lexical_tokenizer() is None
    await store.knowledge.add_source(SourceDraft(workspace_id="g1", type="document", title="empty"), [])
    assert await store.search.lexical_tokenizer() is None
    await _add(store, [Doc("hello")])
    assert await store.search.lexical_tokenizer() == search_tokenizer_name()
