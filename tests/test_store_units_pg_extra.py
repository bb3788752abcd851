"""Retrieval units on every store mode (mostly for PostgreSQL): unit tokens with chunks, unit
vectors with embeddings, fetch_units, the reindex queries, erasure and status."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from old_databases import postgres_at
from omoide.errors import InvalidInput
from omoide.search.lexical_index import rebuild_lexical_index
from omoide.stores._erasure_common import content_hash, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft, ChunkId, EmbeddingRow, SourceDraft, UnitLexicalRow
from omoide.stores.units import chunk_lines, unit_lexical_of
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import chunk_lexical_text
from stored_vectors import exact

WS = "g1"
MODEL = "m8"
DIMS = 8


def _chat(lines: list[tuple[str, str, str]], *, at: str = "2026-01-19 10:0") -> tuple[str, dict[str, Any]]:
    texts = [
        (f"[{at}{i}] **{name} (User)**: {text}", author, f"msg-{author}-{i}")
        for i, (author, name, text) in enumerate(lines)
    ]
    content, spans = join_lines(texts, "\n")
    return content, {"session_id": 1, "lines": spans_json(spans)}


def _draft(lines: list[tuple[str, str, str]], *, units: bool = True) -> ChunkDraft:
    content, location = _chat(lines)
    return ChunkDraft(
        content=content,
        lexical=content.lower(),
        token_count=len(content.split()),
        location=location,
        author_ids=sorted({a for a, _, _ in lines}),
        unit_lexical=unit_lexical_of(content, location) if units else None,
    )


THREE = [("alice", "Alice", "apples are red"), ("bob", "Bob", "bananas are yellow"), ("alice", "Alice", "cherries")]
TWO = [("carol", "Carol", "grapes"), ("bob", "Bob", "melons")]


async def _add(store: Any, drafts: list[ChunkDraft]) -> list[ChunkId]:
    _, ids = await store.knowledge.add_source(SourceDraft(workspace_id=WS, type="session", title="t"), drafts)
    return list(ids)


def _units(lines: int, seed: int = 0) -> np.ndarray:
    return exact((lines, DIMS), seed)


def _vec(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 100).standard_normal(DIMS).astype(np.float32)


async def _chunk(store: Any, chunk_id: int) -> Any:
    (hit,) = await store.search.fetch_chunks([chunk_id])
    return hit


async def test_unit_lexical_round_trips_and_missing_ids_are_left_out(store: Any) -> None:
    a, b, doc = await _add(
        store,
        [
            _draft(THREE),
            _draft(TWO, units=False),
            ChunkDraft(content="a document", lexical="a document", token_count=2),
        ],
    )
    got = await store.search.fetch_units([a, b, doc, 999_999], model=None)
    assert set(got) == {a, b, doc}
    hit = await _chunk(store, a)
    assert got[a].lexical == unit_lexical_of(hit.content, hit.location)
    assert got[a].lexical is not None and len(got[a].lexical) == 3 and "appl" in got[a].lexical[0]
    assert got[a].vectors is None
    assert got[b].lexical is None and got[doc].lexical is None
    assert await store.search.fetch_units([], model=MODEL) == {}
    with pytest.raises(InvalidInput):
        await store.search.fetch_units([a], model="")


async def test_unit_vectors_with_embeddings_and_fetch_by_model(store: Any) -> None:
    a, b = await _add(store, [_draft(THREE), _draft(TWO)])
    hit_a, hit_b = await _chunk(store, a), await _chunk(store, b)
    ua = _units(3)
    written = await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(a, _vec(1), content_hash(hit_a.content), unit_vectors=ua),
            EmbeddingRow(b, _vec(2), content_hash(hit_b.content)),
        ],
    )
    assert written == 2
    got = await store.search.fetch_units([a, b], model=MODEL)
    assert got[a].vectors is not None and got[a].vectors.dtype == np.float32 and got[a].vectors.shape == (3, DIMS)
    np.testing.assert_array_equal(got[a].vectors, ua)
    assert got[b].vectors is None and got[b].lexical is not None
    assert (await store.search.fetch_units([a], model="other"))[a].vectors is None
    assert (await store.search.fetch_units([a], model=None))[a].vectors is None
    # re-embedding without unit vectors clears them
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vec(3), content_hash(hit_a.content))]
    )
    assert (await store.search.fetch_units([a], model=MODEL))[a].vectors is None
    missing = await store.knowledge.embeddings_missing_units(model=MODEL)
    assert [c.id for c in missing] == [a, b]
    assert chunk_lines(missing[0].content, missing[0].location) is not None


async def test_bad_unit_vectors_are_refused(store: Any) -> None:
    (a,) = await _add(store, [_draft(THREE)])
    for bad in (np.zeros((3, DIMS + 1), np.float32), np.zeros(DIMS, np.float32), np.full((3, DIMS), np.nan)):
        with pytest.raises(InvalidInput):
            await store.knowledge.put_embeddings(
                model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vec(), None, unit_vectors=bad)]
            )
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vec(), None)])
    assert await store.search.fetch_units([a], model=MODEL) == {a: (await store.search.fetch_units([a], model=None))[a]}


async def test_chunks_missing_units_and_put_unit_lexical(store: Any) -> None:
    a, b, c, doc = await _add(
        store,
        [
            _draft(THREE, units=False),
            _draft(TWO, units=False),
            _draft(TWO),
            ChunkDraft(content="doc", lexical="doc", token_count=1),
        ],
    )
    status = await store.knowledge.knowledge_status()
    assert status.units_missing == 2
    missing = await store.knowledge.chunks_missing_units()
    assert [m.id for m in missing] == [a, b]
    assert [m.id for m in await store.knowledge.chunks_missing_units(after_id=a, limit=5)] == [b]
    assert [m.id for m in await store.knowledge.chunks_missing_units(limit=1)] == [a]
    rows = [UnitLexicalRow(m.id, m.content, unit_lexical_of(m.content, m.location) or ()) for m in missing]
    stale = UnitLexicalRow(b, "not the content", ("x",))
    assert await store.knowledge.put_unit_lexical([rows[0], stale]) == 1
    assert await store.knowledge.put_unit_lexical([rows[0]]) == 0  # already has units
    assert await store.knowledge.put_unit_lexical([UnitLexicalRow(ChunkId(999_999), "x", ("x",))]) == 0
    assert [m.id for m in await store.knowledge.chunks_missing_units()] == [b]
    assert (await store.search.fetch_units([a], model=None))[a].lexical == rows[0].unit_lexical
    assert await store.knowledge.put_unit_lexical([rows[1]]) == 1
    assert await store.knowledge.chunks_missing_units() == []
    assert (await store.knowledge.knowledge_status()).units_missing == 0
    assert (await store.knowledge.knowledge_status(workspace_id="other")).units_missing == 0
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_lexical([rows[0], rows[0]])
    assert c and doc


async def test_put_unit_vectors_needs_the_same_content_hash(store: Any) -> None:
    a, b, doc = await _add(store, [_draft(THREE), _draft(TWO), ChunkDraft(content="doc", lexical="doc", token_count=1)])
    hit_a, hit_b = await _chunk(store, a), await _chunk(store, b)
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(a, _vec(1), content_hash(hit_a.content)),
            EmbeddingRow(b, _vec(2), content_hash(hit_b.content)),
            EmbeddingRow(doc, _vec(3), content_hash("doc")),
        ],
    )
    status = await store.knowledge.knowledge_status()
    assert status.unit_vectors_missing.get(MODEL) == 2
    assert [c.id for c in await store.knowledge.embeddings_missing_units(model=MODEL)] == [a, b]
    assert [c.id for c in await store.knowledge.embeddings_missing_units(model=MODEL, after_id=a)] == [b]
    assert await store.knowledge.embeddings_missing_units(model="other") == []
    written = await store.knowledge.put_unit_vectors(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(a, _vec(), content_hash(hit_a.content), unit_vectors=_units(3, 7)),
            EmbeddingRow(b, _vec(), content_hash("something else"), unit_vectors=_units(2)),
        ],
    )
    assert written == 1
    got = await store.search.fetch_units([a, b], model=MODEL)
    assert got[a].vectors is not None
    np.testing.assert_array_equal(got[a].vectors, _units(3, 7))
    assert got[b].vectors is None
    assert [c.id for c in await store.knowledge.embeddings_missing_units(model=MODEL)] == [b]
    assert (await store.knowledge.knowledge_status()).unit_vectors_missing.get(MODEL) == 1
    # no vector of that model: skipped
    assert (
        await store.knowledge.put_unit_vectors(
            model="other",
            dimensions=DIMS,
            rows=[EmbeddingRow(b, _vec(), content_hash(hit_b.content), unit_vectors=_units(2))],
        )
        == 0
    )


async def test_chunks_missing_embedding_carries_the_location(store: Any) -> None:
    (a,) = await _add(store, [_draft(THREE)])
    (text,) = await store.knowledge.chunks_missing_embedding(model=MODEL)
    assert text.id == a
    lines = chunk_lines(text.content, text.location)
    assert lines is not None and [x.speaker for x in lines] == ["Alice", "Bob", "Alice"]


async def test_erasure_rewrites_unit_lexical_aligned_with_the_lines(store: Any) -> None:
    a, b = await _add(store, [_draft(THREE), _draft(TWO, units=False)])
    hit = await _chunk(store, a)
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[EmbeddingRow(a, _vec(), content_hash(hit.content), unit_vectors=_units(3))],
    )
    await store.memories.forget_user(WS, "alice")
    hit = await _chunk(store, a)
    got = (await store.search.fetch_units([a, b], model=MODEL))[a]
    assert got.lexical == unit_lexical_of(hit.content, hit.location)
    assert got.lexical is not None and len(got.lexical) == 1 and "banana" in got.lexical[0]
    assert "appl" not in json.dumps(got.lexical)
    assert got.vectors is None  # the embedding went with the erased text
    # a chunk written without units gets them from the rewrite
    b_units = (await store.search.fetch_units([b], model=None))[b].lexical
    assert b_units is None  # alice was not in it: untouched


async def test_lexical_reindex_rewrites_unit_lexical(store: Any) -> None:
    a, b = await _add(store, [_draft(THREE, units=False), _draft(TWO)])
    assert (await store.search.fetch_units([a], model=None))[a].lexical is None
    await rebuild_lexical_index(store.search, store.lexical_index)
    got = await store.search.fetch_units([a, b], model=None)
    for chunk_id in (a, b):
        hit = await _chunk(store, chunk_id)
        assert got[chunk_id].lexical == unit_lexical_of(hit.content, hit.location)
    assert await store.knowledge.chunks_missing_units() == []


async def test_put_unit_vectors_on_a_vector_without_hash_and_of_other_dimensions(store: Any) -> None:
    a, b = await _add(store, [_draft(THREE), _draft(TWO)])
    hit_a, hit_b = await _chunk(store, a), await _chunk(store, b)
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[EmbeddingRow(a, _vec(1)), EmbeddingRow(b, _vec(2), content_hash(hit_b.content))],
    )
    # stored without a hash: written when the chunk's content hashes to the row's
    rows = [EmbeddingRow(a, _vec(), content_hash(hit_a.content), unit_vectors=_units(3))]
    assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=rows) == 1
    wrong = [EmbeddingRow(b, _vec(), content_hash("other text"), unit_vectors=_units(2))]
    assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=wrong) == 0
    # other dimensions than the stored vector: skipped
    other = [
        EmbeddingRow(
            b,
            np.ones(DIMS * 2, np.float32),
            content_hash(hit_b.content),
            unit_vectors=np.ones((2, DIMS * 2), np.float32),
        )
    ]
    assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS * 2, rows=other) == 0
    got = await store.search.fetch_units([a, b], model=MODEL)
    assert got[a].vectors is not None and got[a].vectors.shape == (3, DIMS) and got[b].vectors is None


async def test_lexical_reindex_keeps_unit_vectors_and_chunks_without_lines(store: Any) -> None:
    a, doc = await _add(store, [_draft(THREE), ChunkDraft(content="a doc", lexical="wrong", token_count=2)])
    hit = await _chunk(store, a)
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vec(), content_hash(hit.content), unit_vectors=_units(3))]
    )
    before = await store.search.fetch_units([a, doc], model=MODEL)
    await rebuild_lexical_index(store.search, store.lexical_index)
    after = await store.search.fetch_units([a, doc], model=MODEL)
    assert after[a].lexical == before[a].lexical and after[doc].lexical is None
    assert after[a].vectors is not None and before[a].vectors is not None
    np.testing.assert_array_equal(after[a].vectors, before[a].vectors)


@pytest.mark.postgres
async def test_postgres_v8_database_upgrades_and_old_chunks_search_without_units(pg_url: str, tmp_path: Any) -> None:
    from omoide import Memory
    from omoide.settings import Settings
    from omoide.stores.postgres.migrations import LATEST_VERSION

    content, location = _chat(THREE)
    chunk = await postgres_at(
        pg_url,
        8,
        WS,
        chunk={
            "content": content,
            "lexical": lexical_text(tokenize_for_search(chunk_lexical_text(content))),
            "location": location,
            "author_ids": ["alice", "bob"],
            "token_count": 9,
        },
    )
    settings = Settings(database_url=pg_url, embedder="hashing", transcripts_dir=tmp_path, db_pool_max=4)
    async with Memory.open(settings) as mem:
        store = mem.store
        assert await store.schema_version() == LATEST_VERSION
        assert await store.search.fetch_units([chunk], model="hashing") == {
            chunk: (await store.search.fetch_units([chunk], model=None))[chunk]
        }
        got = (await store.search.fetch_units([chunk], model=None))[chunk]
        assert got.lexical is None and got.vectors is None
        assert (await store.knowledge.knowledge_status()).units_missing == 1
        result = await mem.search("bananas", workspace=WS, k=5, mode="lexical")
        assert [h.chunk.chunk_id for h in result.hits] == [chunk]
        (missing,) = await store.knowledge.chunks_missing_units()
        row = UnitLexicalRow(missing.id, missing.content, unit_lexical_of(missing.content, missing.location) or ())
        assert await store.knowledge.put_unit_lexical([row]) == 1
        assert (await store.search.fetch_units([chunk], model=None))[chunk].lexical == row.unit_lexical
