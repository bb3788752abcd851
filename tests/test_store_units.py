"""Retrieval units in the stores (issue 16), on every backend (SQLite file, SQLite ``:memory:``,
PostgreSQL): per-line unit tokens on chunks (``unit_lexical``), unit vectors with a chunk's
vector (``unit_vectors``), ``fetch_units``, the ``reindex --units`` queries and writes, the
erasure and lexical-reindex rewrites, status counts, bad input, and an SQLite v9 file.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from old_databases import sqlite_file_at
from omoide.errors import InvalidInput
from omoide.search.lexical_index import rebuild_lexical_index
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash, join_lines, line_spans, spans_json
from omoide.stores.knowledge import ChunkDraft, ChunkId, EmbeddingRow, LineVectorsRow, SourceDraft, UnitLexicalRow
from omoide.stores.search import SearchFilters
from omoide.stores.units import READER_DIMENSIONS, chunk_lines, unit_lexical_of
from stored_vectors import exact

WS = "g-units"
MODEL = "test-units-model"
DIMS = 8


def _line(minute: int, name: str, text: str) -> str:
    return f"[2026-01-19 10:{minute:02d}] **{name} (User)**: {text}"


def _chat(lines: Sequence[tuple[str, str, str]]) -> tuple[str, dict[str, Any]]:
    """``(author_id, name, text)`` lines → a chunk's content and its location with line records."""
    content, spans = join_lines(
        [(_line(i, name, text), author, f"m{i}") for i, (author, name, text) in enumerate(lines)], "\n"
    )
    return content, {"lines": spans_json(spans), "message_ids": [f"m{i}" for i in range(len(lines))]}


CHAT_A = [
    ("alice", "Alice", "明日の会議は何時からですか"),
    ("bob", "Bob", "午後三時からです"),
    ("alice", "Alice", "ありがとう、資料を準備します"),
]
CHAT_B = [("bob", "Bob", "ramen tonight?"), ("carol", "Carol", "sure, at the station")]


def _draft(lines: Sequence[tuple[str, str, str]], *, units: bool = True) -> ChunkDraft:
    content, location = _chat(lines)
    return ChunkDraft(
        content=content,
        lexical=content,
        token_count=len(content),
        location=location,
        channel_id="c1",
        author_ids=sorted({a for a, _, _ in lines}),
        unit_lexical=unit_lexical_of(content, location) if units else None,
    )


def _document(text: str = "a plain document without line records") -> ChunkDraft:
    return ChunkDraft(content=text, lexical=text, token_count=len(text), location={"page": 1})


async def _add(store: Any, *drafts: ChunkDraft, workspace: str = WS) -> list[ChunkId]:
    _, ids = await store.knowledge.add_source(
        SourceDraft(workspace_id=workspace, type="discord_channel", title="units"), list(drafts)
    )
    return list(ids)


def _matrix(lines: int, seed: int) -> npt.NDArray[np.float32]:
    """Values every stored form holds exactly (:func:`stored_vectors.exact`)."""
    return exact((lines, DIMS), seed)


def _vector(seed: int) -> npt.NDArray[np.float32]:
    return _matrix(1, seed)[0]


async def _content(store: Any, chunk_id: int) -> tuple[str, dict[str, Any]]:
    (hit,) = await store.search.fetch_chunks([chunk_id])
    return hit.content, dict(hit.location)


# ---------------------------------------------------------------------------- chunk units


async def test_draft_unit_lexical_round_trips_through_fetch_units(store: Any) -> None:
    a, b, doc = await _add(store, _draft(CHAT_A), _draft(CHAT_B), _document())
    units = await store.search.fetch_units([a, b, doc, 999_999, a], model=None)
    assert set(units) == {a, b, doc}  # unknown ids left out, repeats once
    content, location = _chat(CHAT_A)
    expected = unit_lexical_of(content, location)
    assert expected is not None and len(expected) == 3
    assert units[a].lexical == expected
    assert units[b].lexical == unit_lexical_of(*_chat(CHAT_B))
    assert "午後" in units[a].lexical[1] or "三時" in units[a].lexical[1]  # the line's own words
    assert units[doc].lexical is None  # no line records, no units
    assert all(u.vectors is None for u in units.values())  # no model asked
    assert await store.search.fetch_units([], model=MODEL) == {}
    assert await store.search.fetch_units([999_999], model=MODEL) == {}


async def test_chunks_missing_embedding_carry_the_line_records(store: Any) -> None:
    (a,) = await _add(store, _draft(CHAT_A))
    (missing,) = await store.knowledge.chunks_missing_embedding(model=MODEL)
    assert missing.id == a
    assert missing.location == _chat(CHAT_A)[1]
    lines = chunk_lines(missing.content, missing.location)
    assert lines is not None and [x.speaker for x in lines] == ["Alice", "Bob", "Alice"]


# ---------------------------------------------------------------------------- unit vectors


async def test_put_embeddings_with_and_without_unit_vectors(store: Any) -> None:
    a, b, doc = await _add(store, _draft(CHAT_A), _draft(CHAT_B), _document())
    units_a = _matrix(3, seed=1)
    written = await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(a, _vector(10), content_hash((await _content(store, a))[0]), unit_vectors=units_a),
            EmbeddingRow(b, _vector(11)),
            EmbeddingRow(doc, _vector(12)),
        ],
    )
    assert written == 3
    got = await store.search.fetch_units([a, b, doc], model=MODEL)
    vectors = got[a].vectors
    assert vectors is not None and vectors.dtype == np.float32 and vectors.shape == (3, DIMS)
    np.testing.assert_array_equal(vectors, units_a)
    assert got[a].lexical is not None and len(got[a].lexical) == vectors.shape[0]  # one vector per line
    assert got[b].vectors is None and got[b].lexical is not None
    assert got[doc].vectors is None and got[doc].lexical is None
    # another model, or none: no vectors
    assert (await store.search.fetch_units([a], model="another-model"))[a].vectors is None
    assert (await store.search.fetch_units([a], model=None))[a].vectors is None
    # the chunk's own vector is untouched by its units
    stored = await store.knowledge.get_embedding(a, MODEL)
    assert stored is not None
    np.testing.assert_allclose(stored, _vector(10), atol=1e-3)
    # re-embedding without units clears them (the new vector's units are not known)
    assert await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(13))]) == 1
    assert (await store.search.fetch_units([a], model=MODEL))[a].vectors is None


async def test_unit_vectors_are_returned_as_a_writable_float32_matrix(store: Any) -> None:
    (a,) = await _add(store, _draft(CHAT_B))
    units = _matrix(2, seed=3)
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(1), unit_vectors=units)]
    )
    vectors = (await store.search.fetch_units([a], model=MODEL))[a].vectors
    assert vectors is not None
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # the pipeline may normalise in place
    again = (await store.search.fetch_units([a], model=MODEL))[a].vectors
    np.testing.assert_array_equal(again, units)  # …without touching what the store returns next


async def test_fetch_chunks_with_units_reads_both_in_one_call(store: Any) -> None:
    a, b, doc = await _add(store, _draft(CHAT_A), _draft(CHAT_B), _document())
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[EmbeddingRow(a, _vector(1), unit_vectors=_matrix(3, seed=4)), EmbeddingRow(doc, _vector(2))],
    )
    ids = [doc, 999_999, a, b, a]  # a missing id is left out, a repeated one read once
    for model in (MODEL, "another-model", None):
        hits, units = await store.search.fetch_chunks_with_units(ids, model=model)
        assert hits == await store.search.fetch_chunks(ids)  # the same chunks, in the order asked
        alone = await store.search.fetch_units(ids, model=model)
        assert set(units) == set(alone) == {a, b, doc}
        for chunk_id, got in units.items():
            assert got.lexical == alone[chunk_id].lexical
            if alone[chunk_id].vectors is None:
                assert got.vectors is None
            else:
                np.testing.assert_array_equal(got.vectors, alone[chunk_id].vectors)
    assert (await store.search.fetch_chunks_with_units(ids, model=MODEL))[1][a].vectors is not None
    # the workspace the ids were ranked in (a routing hint on Citus) reads the same chunks
    routed, routed_units = await store.search.fetch_chunks_with_units(ids, model=MODEL, workspace_id=WS)
    assert routed == await store.search.fetch_chunks(ids) and set(routed_units) == {a, b, doc}
    assert await store.search.fetch_chunks_with_units([], model=MODEL) == ([], {})
    with pytest.raises(InvalidInput):
        await store.search.fetch_chunks_with_units(["x"], model=None)
    with pytest.raises(InvalidInput):
        await store.search.fetch_chunks_with_units([a], model="")


# ----------------------------------------------------------------- reindex --units: tokens


async def test_chunks_missing_units_and_put_unit_lexical(store: Any) -> None:
    old_a, old_b, done, doc = await _add(
        store, _draft(CHAT_A, units=False), _draft(CHAT_B, units=False), _draft(CHAT_A), _document()
    )
    missing = await store.knowledge.chunks_missing_units()
    assert [c.id for c in missing] == [old_a, old_b]  # with line records and no units; by id
    assert missing[0].location == _chat(CHAT_A)[1] and missing[0].workspace_id == WS
    assert [c.id for c in await store.knowledge.chunks_missing_units(after_id=old_a)] == [old_b]
    assert [c.id for c in await store.knowledge.chunks_missing_units(limit=1)] == [old_a]
    assert (await store.knowledge.knowledge_status()).units_missing == 2

    rows = [UnitLexicalRow(c.id, c.content, unit_lexical_of(c.content, c.location) or ()) for c in missing]
    changed = UnitLexicalRow(old_b, "content an erasure rewrote meanwhile", ("x",))
    assert await store.knowledge.put_unit_lexical([rows[0], changed]) == 1  # the changed chunk is skipped
    assert await store.knowledge.put_unit_lexical([UnitLexicalRow(ChunkId(999_999), "gone", ("x",))]) == 0
    assert [c.id for c in await store.knowledge.chunks_missing_units()] == [old_b]
    assert await store.knowledge.put_unit_lexical([rows[1]]) == 1
    assert await store.knowledge.put_unit_lexical([rows[0]]) == 0  # already built: left alone
    assert await store.knowledge.chunks_missing_units() == []
    assert (await store.knowledge.knowledge_status()).units_missing == 0

    units = await store.search.fetch_units([old_a, old_b, done, doc], model=None)
    assert units[old_a].lexical == units[done].lexical == rows[0].unit_lexical
    assert units[old_b].lexical == rows[1].unit_lexical
    assert units[doc].lexical is None


async def test_put_unit_lexical_with_no_tokens_marks_the_chunk_done(store: Any) -> None:
    """Line records that ``unit_lexical_of`` cannot read: an empty list, so the reindex finishes."""
    bad = ChunkDraft(content="short", lexical="short", token_count=1, location={"lines": [[0, 99, "a", 1]]})
    (chunk,) = await _add(store, bad)
    (missing,) = await store.knowledge.chunks_missing_units()
    assert missing.id == chunk and unit_lexical_of(missing.content, missing.location) is None
    assert await store.knowledge.put_unit_lexical([UnitLexicalRow(chunk, missing.content, ())]) == 1
    assert await store.knowledge.chunks_missing_units() == []
    assert (await store.search.fetch_units([chunk], model=None))[chunk].lexical == ()


# ---------------------------------------------------------------- reindex --units: vectors


async def test_embeddings_missing_units_and_put_unit_vectors(store: Any) -> None:
    a, b, doc, unembedded = await _add(store, _draft(CHAT_A), _draft(CHAT_B), _document(), _draft(CHAT_B))
    hashes = {c: content_hash((await _content(store, c))[0]) for c in (a, b, doc)}
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(c, _vector(c), hashes[c]) for c in (a, b, doc)]
    )
    missing = await store.knowledge.embeddings_missing_units(model=MODEL)
    assert [c.id for c in missing] == [a, b]  # embedded, with line records, no unit vectors
    assert missing[0].location == _chat(CHAT_A)[1]
    assert [c.id for c in await store.knowledge.embeddings_missing_units(model=MODEL, after_id=a)] == [b]
    assert [c.id for c in await store.knowledge.embeddings_missing_units(model=MODEL, limit=1)] == [a]
    assert await store.knowledge.embeddings_missing_units(model="another-model") == []
    assert (await store.knowledge.knowledge_status()).unit_vectors_missing == {MODEL: 2}

    units_a, units_b = _matrix(3, seed=5), _matrix(2, seed=6)
    put = store.knowledge.put_unit_vectors
    # a stale hash (the chunk was rewritten since it was read) and a chunk without a vector: skipped
    assert await put(model=MODEL, dimensions=DIMS, rows=[LineVectorsRow(a, "b2:stale", units_a)]) == 0
    unembedded_hash = content_hash((await _content(store, unembedded))[0])
    assert await put(model=MODEL, dimensions=DIMS, rows=[LineVectorsRow(unembedded, unembedded_hash, units_b)]) == 0
    assert await put(model="another-model", dimensions=DIMS, rows=[LineVectorsRow(a, hashes[a], units_a)]) == 0
    # unit vectors of another size than the stored vector (the model was reconfigured): skipped
    wide = np.zeros((3, DIMS * 2), dtype=np.float32)
    assert await put(model=MODEL, dimensions=DIMS * 2, rows=[LineVectorsRow(a, hashes[a], wide)]) == 0
    assert (await store.search.fetch_units([a], model=MODEL))[a].vectors is None
    # an EmbeddingRow is taken too (its chunk vector is not read: b keeps its own)
    rows = [LineVectorsRow(a, hashes[a], units_a), EmbeddingRow(b, _vector(0), hashes[b], units_b)]
    assert await put(model=MODEL, dimensions=DIMS, rows=rows) == 2
    assert await store.knowledge.embeddings_missing_units(model=MODEL) == []
    assert (await store.knowledge.knowledge_status()).unit_vectors_missing == {}  # models with some missing only
    got = await store.search.fetch_units([a, b], model=MODEL)
    np.testing.assert_array_equal(got[a].vectors, units_a)
    np.testing.assert_array_equal(got[b].vectors, units_b)
    for chunk in (a, b):  # the chunks keep their own vectors
        stored = await store.knowledge.get_embedding(chunk, MODEL)
        assert stored is not None
        np.testing.assert_allclose(stored, _vector(chunk), atol=1e-3)


async def test_put_unit_vectors_needs_units_and_a_hash(store: Any) -> None:
    (a,) = await _add(store, _draft(CHAT_B))
    put = store.knowledge.put_unit_vectors
    with pytest.raises(InvalidInput, match="content_hash and unit_vectors or reader_vectors"):
        await put(model=MODEL, dimensions=DIMS, rows=[LineVectorsRow(a, "b2:x")])
    with pytest.raises(InvalidInput, match="content_hash and unit_vectors or reader_vectors"):
        await put(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), None, _matrix(2, 0))])
    with pytest.raises(InvalidInput, match="row 0 must be a LineVectorsRow, got dict"):
        await put(model=MODEL, dimensions=DIMS, rows=[{"chunk_id": a}])
    with pytest.raises(InvalidInput, match="appears twice in one put_unit_vectors call"):
        await put(model=MODEL, dimensions=DIMS, rows=[LineVectorsRow(a, "b2:x", _matrix(2, 0))] * 2)
    reader = np.zeros((3, READER_DIMENSIONS), dtype=np.float32)
    with pytest.raises(InvalidInput, match="reader vectors have 3 line"):
        await put(model=MODEL, dimensions=DIMS, rows=[LineVectorsRow(a, "b2:x", _matrix(2, 0), reader)])
    assert await put(model=MODEL, dimensions=DIMS, rows=[]) == 0


# --------------------------------------------------------------------------- rewrites


async def test_erasure_rewrites_unit_lexical_aligned_with_the_kept_lines(store: Any) -> None:
    (a,) = await _add(store, _draft([*CHAT_A, ("bob", "Bob", "了解です")]))
    content, _ = await _content(store, a)
    reader = np.ones((4, READER_DIMENSIONS), dtype=np.float32)  # the line reader's vectors, stored with the row
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(1), content_hash(content), _matrix(4, 1), reader)]
    )
    assert (await store.search.fetch_units([a], model=MODEL))[a].reader is not None
    report = await store.memories.forget_user(WS, "alice")
    assert report.chunks_rewritten == 1
    new_content, location = await _content(store, a)
    assert "Alice" not in new_content and "資料" not in new_content
    spans = line_spans(location, new_content)
    assert spans is not None and [s.author_id for s in spans] == ["bob", "bob"]
    units = (await store.search.fetch_units([a], model=MODEL))[a]
    assert units.lexical == unit_lexical_of(new_content, location)
    assert units.lexical is not None and len(units.lexical) == len(spans)  # one unit per kept line
    assert not any("alice" in t.lower() or "資料" in t for t in units.lexical)
    assert units.vectors is None  # its vector (and units) embedded erased text: gone, embedded again later
    assert units.reader is None  # and the reader's vectors of its lines, with the row
    assert await store.knowledge.get_embedding(a, MODEL) is None
    assert await store.knowledge.chunks_missing_units() == []


async def test_lexical_reindex_rewrites_unit_lexical(store: Any) -> None:
    stale, old, doc = await _add(
        store,
        dataclasses.replace(_draft(CHAT_A), unit_lexical=("stale", "tokens", "here")),
        _draft(CHAT_B, units=False),
        _document(),
    )
    await rebuild_lexical_index(store.search, store.lexical_index)
    units = await store.search.fetch_units([stale, old, doc], model=None)
    assert units[stale].lexical == unit_lexical_of(*_chat(CHAT_A))
    assert units[old].lexical == unit_lexical_of(*_chat(CHAT_B))  # built on the way
    assert units[doc].lexical is None
    assert await store.knowledge.chunks_missing_units() == []


# ----------------------------------------------------------------------------- status


async def test_knowledge_status_counts_missing_units_per_workspace(store: Any) -> None:
    a, _, _ = await _add(store, _draft(CHAT_A, units=False), _draft(CHAT_B), _document())
    (other,) = await _add(store, _draft(CHAT_B, units=False), workspace="g-other")
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(1)), EmbeddingRow(other, _vector(2))]
    )
    await store.knowledge.put_embeddings(model="m2", dimensions=DIMS, rows=[EmbeddingRow(other, _vector(3))])
    everywhere = await store.knowledge.knowledge_status()
    assert everywhere.units_missing == 2
    assert everywhere.unit_vectors_missing == {MODEL: 2, "m2": 1}
    here = await store.knowledge.knowledge_status(workspace_id=WS)
    assert here.units_missing == 1 and here.unit_vectors_missing == {MODEL: 1}
    assert here.chunks == 3 and here.embedded == {MODEL: 1}
    empty = await store.knowledge.knowledge_status(workspace_id="g-none")
    assert empty.units_missing == 0 and empty.unit_vectors_missing == {}


# -------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "units",
    [
        np.zeros((2, DIMS + 1), dtype=np.float32),  # wrong dimensions
        np.zeros(DIMS, dtype=np.float32),  # one-dimensional
        np.zeros((0, DIMS), dtype=np.float32),  # no line
        np.full((2, DIMS), np.nan, dtype=np.float32),
        np.full((2, DIMS), np.inf, dtype=np.float32),
        np.full((2, DIMS), 70000.0, dtype=np.float32),  # beyond half precision
        [["a"] * DIMS],  # not numeric
    ],
)
async def test_bad_unit_vectors_are_refused_and_nothing_is_written(store: Any, units: Any) -> None:
    (a,) = await _add(store, _draft(CHAT_B))
    content, _ = await _content(store, a)
    with pytest.raises(InvalidInput):
        await store.knowledge.put_embeddings(
            model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), unit_vectors=units)]
        )
    assert await store.knowledge.get_embedding(a, MODEL) is None
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0))])
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_vectors(
            model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), content_hash(content), units)]
        )
    assert (await store.search.fetch_units([a], model=MODEL))[a].vectors is None


async def test_repeated_ids_and_bad_tokens_are_refused(store: Any) -> None:
    (a,) = await _add(store, _draft(CHAT_B, units=False))
    content, _ = await _content(store, a)
    row = UnitLexicalRow(a, content, ("x", "y"))
    with pytest.raises(InvalidInput, match="twice"):
        await store.knowledge.put_unit_lexical([row, row])
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_lexical([UnitLexicalRow(a, content, "x y")])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_lexical([UnitLexicalRow(a, content, ("x", 1))])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_lexical([UnitLexicalRow(a, content, ("nul\x00",))])
    with pytest.raises(InvalidInput):
        await store.knowledge.put_unit_lexical([(a, content, ("x",))])  # type: ignore[list-item]
    vector_row = EmbeddingRow(a, _vector(0), content_hash(content), _matrix(2, 0))
    with pytest.raises(InvalidInput, match="twice"):
        await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=[vector_row, vector_row])
    with pytest.raises(InvalidInput, match="twice"):
        await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[vector_row, vector_row])
    with pytest.raises(InvalidInput):
        await _add(store, dataclasses.replace(_draft(CHAT_B), unit_lexical="not a tuple"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        await store.search.fetch_units(["x"], model=None)
    with pytest.raises(InvalidInput):
        await store.search.fetch_units([a], model="")
    assert (await store.search.fetch_units([a], model=None))[a].lexical is None  # nothing written


# ------------------------------------------------------------------ SQLite: a v9 file


def _v9_file(path: Path) -> None:
    """An SQLite database at migration 9 with one chat chunk (line records) and its vector."""
    content, location = _chat(CHAT_A)
    chunk = {
        "channel_id": "c1",
        "content": content,
        "lexical": "会議 三時",
        "location": json.dumps(location),
        "author_ids": '["alice","bob"]',
        "token_count": 10,
    }
    embedding = {
        "model": MODEL,
        "dimensions": DIMS,
        "embedding": _vector(7).astype("<f4").tobytes(),
        "content_hash": None,
    }
    sqlite_file_at(path, 9, WS, chunk=chunk, embedding=embedding)


async def test_a_v9_sqlite_file_migrates_and_old_chunks_read_without_units(tmp_path: Path) -> None:
    from omoide.stores import open_store
    from omoide.stores.sqlite.migrations import LATEST_VERSION

    db = tmp_path / "v9.db"
    _v9_file(db)
    settings = Settings(database_url=f"sqlite:///{db}", transcripts_dir=tmp_path / "t")
    async with open_store(settings=settings) as store:
        assert await store.schema_version() == LATEST_VERSION  # every migration since v9 applied
        units = await store.search.fetch_units([1], model=MODEL)
        assert units[ChunkId(1)].lexical is None and units[ChunkId(1)].vectors is None
        (hit,) = await store.search.fetch_chunks([1])
        ranked = await store.search.vector_ranking(model=MODEL, query=_vector(7), filters=SearchFilters(WS), k=5)
        assert [r.chunk_id for r in ranked] == [1]
        assert [
            r.chunk_id for r in await store.search.lexical_ranking(tokens=["会議"], filters=SearchFilters(WS), k=5)
        ] == [1]
        status = await store.knowledge.knowledge_status()
        assert status.units_missing == 1 and status.unit_vectors_missing == {MODEL: 1}
        # the reindex path: tokens, then vectors (the old vector has no content hash: the chunk's content decides)
        (missing,) = await store.knowledge.chunks_missing_units()
        tokens = unit_lexical_of(missing.content, missing.location)
        assert tokens is not None
        assert await store.knowledge.put_unit_lexical([UnitLexicalRow(missing.id, missing.content, tokens)]) == 1
        (embedded,) = await store.knowledge.embeddings_missing_units(model=MODEL)
        digest = content_hash(embedded.content)
        assert digest == content_hash(hit.content)
        wrong = await store.knowledge.put_unit_vectors(
            model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(embedded.id, _vector(0), "b2:other", _matrix(3, 2))]
        )
        assert wrong == 0
        assert (
            await store.knowledge.put_unit_vectors(
                model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(embedded.id, _vector(0), digest, _matrix(3, 2))]
            )
            == 1
        )
        units = await store.search.fetch_units([1], model=MODEL)
        assert units[ChunkId(1)].lexical == tokens
        np.testing.assert_array_equal(units[ChunkId(1)].vectors, _matrix(3, 2))


async def test_sqlite_unit_vectors_do_not_invalidate_the_search_matrix(tmp_path: Path) -> None:
    """Adding unit vectors leaves the workspace's vector generation alone (the cached matrix stays
    valid); writing a vector moves it."""
    from omoide.stores import open_store

    db = tmp_path / "omoide.db"
    settings = Settings(database_url=f"sqlite:///{db}", transcripts_dir=tmp_path / "t")

    def generation() -> int:
        with sqlite3.connect(db) as conn:
            return int(
                conn.execute("SELECT generation FROM search_generations WHERE workspace_id = ?", (WS,)).fetchone()[0]
            )

    async with open_store(settings=settings) as store:
        (a,) = await _add(store, _draft(CHAT_B))
        content, _ = await _content(store, a)
        await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(1))])
        before = generation()
        assert (
            await store.knowledge.put_unit_vectors(
                model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), content_hash(content), _matrix(2, 1))]
            )
            == 1
        )
        assert generation() == before
        await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(2))])
        assert generation() > before
