"""The line reader's vectors in the stores (``chunk_embeddings.reader_vectors``), on every store mode
(SQLite file, SQLite ``:memory:``, PostgreSQL; ``tests/citus/test_citus_reader_vectors.py`` runs them on
Citus): written with a chunk's vector (``put_embeddings``) or added to it (``put_unit_vectors``, keeping
the stored ones when a row has none), read by ``fetch_units`` / ``fetch_chunks_with_units``, looked for
by ``embeddings_missing_units(reader=True)`` and counted by ``knowledge_status``; bad matrices refused;
gone with their row when an erasure rewrites the chunk; the migrations that add the column (an SQLite
v13 file, a PostgreSQL v14 database) and the SQLite query plans.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from old_databases import postgres_at, sqlite_file_at
from omoide.errors import InvalidInput
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft, ChunkId, EmbeddingRow, SourceDraft
from omoide.stores.unit_codec import MAGIC
from omoide.stores.units import (
    READER_DIMENSIONS,
    ChunkUnits,
    decode_reader_vectors,
    encode_reader_vectors,
    unit_lexical_of,
)
from stored_vectors import exact

WS = "g-reader"
MODEL = "test-reader-model"
DIMS = 8

CHAT_A = [
    ("alice", "Alice", "明日の会議は何時からですか"),
    ("bob", "Bob", "午後三時からです"),
    ("alice", "Alice", "ありがとう、資料を準備します"),
]
CHAT_B = [("bob", "Bob", "ramen tonight?"), ("carol", "Carol", "sure, at the station")]


def _chat(lines: Sequence[tuple[str, str, str]]) -> tuple[str, dict[str, Any]]:
    content, spans = join_lines(
        [
            (f"[2026-01-19 10:{i:02d}] **{name} (User)**: {text}", author, f"m{i}")
            for i, (author, name, text) in enumerate(lines)
        ],
        "\n",
    )
    return content, {"lines": spans_json(spans)}


def _draft(lines: Sequence[tuple[str, str, str]]) -> ChunkDraft:
    content, location = _chat(lines)
    return ChunkDraft(
        content=content,
        lexical=content,
        token_count=len(content),
        location=location,
        author_ids=sorted({a for a, _, _ in lines}),
        unit_lexical=unit_lexical_of(content, location),
    )


def _document() -> ChunkDraft:
    text = "a plain document without line records"
    return ChunkDraft(content=text, lexical=text, token_count=len(text), location={"page": 1})


async def _add(store: Any, *drafts: ChunkDraft, workspace: str = WS) -> list[ChunkId]:
    _, ids = await store.knowledge.add_source(
        SourceDraft(workspace_id=workspace, type="discord_channel", title="reader"), list(drafts)
    )
    return list(ids)


def _half(shape: tuple[int, ...], seed: int) -> npt.NDArray[np.float32]:
    """Values every stored form holds exactly (:func:`stored_vectors.exact`)."""
    return exact(shape, seed)


def _units(lines: int, seed: int) -> npt.NDArray[np.float32]:
    return _half((lines, DIMS), seed)


def _reader(lines: int, seed: int) -> npt.NDArray[np.float32]:
    return _half((lines, READER_DIMENSIONS), seed + 1000)


def _vector(seed: int) -> npt.NDArray[np.float32]:
    return _half((DIMS,), seed + 2000)


async def _hash(store: Any, chunk_id: int) -> str:
    (hit,) = await store.search.fetch_chunks([chunk_id])
    return content_hash(hit.content)


def _same(got: npt.NDArray[np.float32] | None, want: npt.NDArray[np.float32]) -> None:
    assert got is not None
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------- the pure parts


def test_chunk_units_keep_their_two_field_form() -> None:
    lexical = ("a", "b")
    old = ChunkUnits(lexical, None)  # what search and its tests build
    assert old.reader is None and old == ChunkUnits(lexical, None, None)
    reader = _reader(2, 0)
    assert ChunkUnits(lexical, None, reader).reader is reader


def test_reader_vectors_encode_as_int8_rows_with_a_scale_each() -> None:
    reader = _reader(3, 1)
    data = encode_reader_vectors(reader)
    assert data is not None and len(data) == 12 + 3 * (4 + READER_DIMENSIONS)  # header, scales, int8
    assert data[:4] == MAGIC
    _same(decode_reader_vectors(data), reader)
    padded = encode_reader_vectors(reader, multiple=2 * READER_DIMENSIONS)  # SQLite's CHECK
    assert padded is not None and len(padded) % (2 * READER_DIMENSIONS) == 0 and padded.startswith(data)
    _same(decode_reader_vectors(padded), reader)
    assert encode_reader_vectors(None) is None and decode_reader_vectors(None) is None
    assert decode_reader_vectors(b"") is None
    assert decode_reader_vectors(data[:-1]) is None  # cut short
    decoded = decode_reader_vectors(data)
    assert decoded is not None
    decoded[0, 0] = 99.0  # a writable copy
    _same(decode_reader_vectors(data), reader)


def test_reader_vectors_stored_before_the_int8_form_are_read_as_float16_rows() -> None:
    reader = _reader(3, 1)
    legacy = reader.astype("<f2").tobytes()  # little-endian float16, row-major
    _same(decode_reader_vectors(legacy), reader)
    assert decode_reader_vectors(legacy[:-2]) is None  # not a whole number of rows


def test_backups_carry_reader_vectors_exactly_between_backends() -> None:
    from omoide.ops._codec import decoder, encoder
    from omoide.ops.tables import BY_NAME, Kind
    from omoide.stores.sqlite import _units as sqlite_units

    assert BY_NAME["chunk_embeddings"].columns["reader_vectors"] is Kind.HALF
    stored = encode_reader_vectors(_reader(2, 3))
    for source in ("sqlite", "postgresql"):
        (logical,) = decoder(source, [Kind.HALF], ["r"])((stored,)).values()
        assert np.frombuffer(base64.b64decode(logical), dtype="<f4").shape == (2 * READER_DIMENSIONS,)
        for target in ("sqlite", "postgresql"):
            (restored,) = encoder(target, [Kind.HALF], ["r"])({"r": logical})
            assert restored == (stored if target == "postgresql" else sqlite_units.reader_blob(_reader(2, 3)))
            _same(decode_reader_vectors(restored), _reader(2, 3))
            assert encoder(target, [Kind.HALF], ["r"])({}) == (None,)  # a backup made before the column


# ---------------------------------------------------------------------------- writes and reads


async def test_put_embeddings_writes_reader_vectors_and_fetch_reads_them(store: Any) -> None:
    a, b, doc = await _add(store, _draft(CHAT_A), _draft(CHAT_B), _document())
    units_a, reader_a, reader_b = _units(3, 1), _reader(3, 1), _reader(2, 2)
    written = await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(a, _vector(1), await _hash(store, a), unit_vectors=units_a, reader_vectors=reader_a),
            EmbeddingRow(b, _vector(2), reader_vectors=reader_b),  # a reader without unit vectors: allowed
            EmbeddingRow(doc, _vector(3)),
        ],
    )
    assert written == 3
    got = await store.search.fetch_units([a, b, doc], model=MODEL)
    _same(got[a].vectors, units_a)
    _same(got[a].reader, reader_a)
    assert got[b].vectors is None
    _same(got[b].reader, reader_b)
    assert got[doc].vectors is None and got[doc].reader is None
    # another model's row, or no model: no reader (the reader is stored with a model's row)
    assert (await store.search.fetch_units([a], model="another-model"))[a].reader is None
    assert (await store.search.fetch_units([a], model=None))[a] == ChunkUnits(got[a].lexical, None, None)

    ids = [doc, a, 999_999, b]
    for model in (MODEL, "another-model", None):
        hits, units = await store.search.fetch_chunks_with_units(ids, model=model)
        assert [h.chunk_id for h in hits] == [doc, a, b]
        alone = await store.search.fetch_units(ids, model=model)
        for chunk_id in (a, b, doc):
            if alone[chunk_id].reader is None:
                assert units[chunk_id].reader is None
            else:
                _same(units[chunk_id].reader, alone[chunk_id].reader)  # type: ignore[arg-type]
    _, routed = await store.search.fetch_chunks_with_units(ids, model=MODEL, workspace_id=WS)
    _same(routed[a].reader, reader_a)
    assert (await store.search.fetch_chunks_with_units([a], model=None))[1][a].reader is None
    # a search that will not use the reader does not read it: the rest is the same
    hits, without = await store.search.fetch_chunks_with_units(ids, model=MODEL, reader=False)
    assert [h.chunk_id for h in hits] == [doc, a, b]
    assert without[a].reader is None and without[b].reader is None
    _same(without[a].vectors, routed[a].vectors)  # type: ignore[arg-type]
    assert without[a].lexical == routed[a].lexical

    # an upsert replaces the whole row: with another reader, then without any
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[EmbeddingRow(a, _vector(4), unit_vectors=units_a, reader_vectors=reader_b[:1].repeat(3, 0))],
    )
    _same((await store.search.fetch_units([a], model=MODEL))[a].reader, reader_b[:1].repeat(3, 0))
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(5))])
    again = (await store.search.fetch_units([a], model=MODEL))[a]
    assert again.vectors is None and again.reader is None


async def test_put_unit_vectors_writes_both_and_keeps_a_stored_reader(store: Any) -> None:
    a, b = await _add(store, _draft(CHAT_A), _draft(CHAT_B))
    hashes = {c: await _hash(store, c) for c in (a, b)}
    await store.knowledge.put_embeddings(
        model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(c, _vector(c), hashes[c]) for c in (a, b)]
    )
    put = store.knowledge.put_unit_vectors
    units_a, reader_a = _units(3, 5), _reader(3, 5)
    # a backfill that computed both writes both; one without a reader writes the unit vectors only
    rows = [
        EmbeddingRow(a, _vector(0), hashes[a], units_a, reader_a),
        EmbeddingRow(b, _vector(0), hashes[b], _units(2, 6)),
    ]
    assert await put(model=MODEL, dimensions=DIMS, rows=rows) == 2
    got = await store.search.fetch_units([a, b], model=MODEL)
    _same(got[a].vectors, units_a)
    _same(got[a].reader, reader_a)
    _same(got[b].vectors, _units(2, 6))
    assert got[b].reader is None

    # again without a reader: the unit vectors change, the stored reader stays
    assert await put(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), hashes[a], _units(3, 7))]) == 1
    got = await store.search.fetch_units([a], model=MODEL)
    _same(got[a].vectors, _units(3, 7))
    _same(got[a].reader, reader_a)
    # with another reader: replaced
    new_reader = _reader(3, 8)
    assert (
        await put(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), hashes[a], units_a, new_reader)]) == 1
    )
    _same((await store.search.fetch_units([a], model=MODEL))[a].reader, new_reader)
    # a reader-only row (an old chunk given the reader's vectors): the stored unit vectors stay
    only = _reader(3, 10)
    assert await put(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), hashes[a], None, only)]) == 1
    got = await store.search.fetch_units([a], model=MODEL)
    _same(got[a].vectors, units_a)
    _same(got[a].reader, only)
    # a stale hash (the chunk was rewritten meanwhile) writes neither
    stale = EmbeddingRow(b, _vector(0), "b2:stale", _units(2, 9), _reader(2, 9))
    assert await put(model=MODEL, dimensions=DIMS, rows=[stale]) == 0
    got = await store.search.fetch_units([b], model=MODEL)
    _same(got[b].vectors, _units(2, 6))
    assert got[b].reader is None
    # row.vector is ignored: the chunk keeps its own vector
    stored = await store.knowledge.get_embedding(a, MODEL)
    assert stored is not None
    np.testing.assert_allclose(stored, _vector(a), atol=1e-3)


# ---------------------------------------------------------------------------- bad input


_ZEROS = np.zeros((2, READER_DIMENSIONS), dtype=np.float32)


@pytest.mark.parametrize(
    ("reader", "message"),
    [
        (np.zeros((2, READER_DIMENSIONS - 1), dtype=np.float32), r"shape \(2, 511\), expected \(lines, 512\)"),
        (np.zeros((2, DIMS), dtype=np.float32), r"shape \(2, 8\), expected \(lines, 512\)"),
        (np.zeros(READER_DIMENSIONS, dtype=np.float32), r"shape \(512,\)"),  # one-dimensional
        (np.zeros((0, READER_DIMENSIONS), dtype=np.float32), "at least one line"),
        (np.zeros((3, READER_DIMENSIONS), dtype=np.float32), "3 line.* but the unit vectors 2"),  # row count
        (np.where(np.eye(2, READER_DIMENSIONS) > 0, np.nan, _ZEROS), "NaN, an infinity"),
        (np.where(np.eye(2, READER_DIMENSIONS) > 0, np.inf, _ZEROS), "NaN, an infinity"),
        (np.where(np.eye(2, READER_DIMENSIONS) > 0, -np.inf, _ZEROS), "NaN, an infinity"),
        (np.full((2, READER_DIMENSIONS), 70000.0, dtype=np.float32), "beyond ±65504"),  # float16's range
        ([["a"] * READER_DIMENSIONS] * 2, "not numeric"),
    ],
)
async def test_bad_reader_vectors_are_refused_and_nothing_is_written(store: Any, reader: Any, message: str) -> None:
    (a,) = await _add(store, _draft(CHAT_B))
    digest = await _hash(store, a)
    row = EmbeddingRow(a, _vector(0), digest, unit_vectors=_units(2, 0), reader_vectors=reader)
    with pytest.raises(InvalidInput, match=f"chunk {a}: .*{message}") as refused:
        await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[row])
    assert "reader vectors" in str(refused.value)
    assert await store.knowledge.get_embedding(a, MODEL) is None
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), digest)])
    with pytest.raises(InvalidInput, match=f"chunk {a}: .*{message}"):
        await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=[row])
    units = (await store.search.fetch_units([a], model=MODEL))[a]
    assert units.vectors is None and units.reader is None


async def test_reader_vectors_at_the_edge_of_float16_are_stored(store: Any) -> None:
    (a,) = await _add(store, _draft(CHAT_B))
    edge = np.full((2, READER_DIMENSIONS), 65504.0, dtype=np.float32)
    edge[1] = -65504.0
    assert (
        await store.knowledge.put_embeddings(
            model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(0), reader_vectors=edge)]
        )
        == 1
    )
    _same((await store.search.fetch_units([a], model=MODEL))[a].reader, edge)


# ---------------------------------------------------------------------------- reindex --units, status


async def test_embeddings_missing_units_with_and_without_the_reader(store: Any) -> None:
    both, units_only, neither, doc, unembedded = await _add(
        store, _draft(CHAT_A), _draft(CHAT_B), _draft(CHAT_B), _document(), _draft(CHAT_A)
    )
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(both, _vector(1), unit_vectors=_units(3, 1), reader_vectors=_reader(3, 1)),
            EmbeddingRow(units_only, _vector(2), unit_vectors=_units(2, 2)),
            EmbeddingRow(neither, _vector(3)),
            EmbeddingRow(doc, _vector(4)),  # no line records: never missing anything
        ],
    )
    await store.knowledge.put_embeddings(
        model="other-model", dimensions=DIMS, rows=[EmbeddingRow(both, _vector(5), unit_vectors=_units(3, 3))]
    )
    missing = store.knowledge.embeddings_missing_units
    assert [c.id for c in await missing(model=MODEL)] == [neither]  # unit vectors only, as before
    assert [c.id for c in await missing(model=MODEL, reader=False)] == [neither]
    found = await missing(model=MODEL, reader=True)
    assert [c.id for c in found] == [units_only, neither]  # by id
    assert found[0].location == _chat(CHAT_B)[1] and found[0].workspace_id == WS
    assert [c.id for c in await missing(model=MODEL, reader=True, after_id=units_only)] == [neither]
    assert [c.id for c in await missing(model=MODEL, reader=True, limit=1)] == [units_only]
    assert await missing(model=MODEL, reader=True, after_id=neither) == []
    assert [c.id for c in await missing(model="other-model", reader=True)] == [both]
    assert [c.id for c in await missing(model="other-model")] == []
    assert unembedded not in {c.id for c in await missing(model=MODEL, reader=True)}
    with pytest.raises(InvalidInput, match="reader must be a bool"):
        await missing(model=MODEL, reader="yes")

    # the reindex fills them: nothing left either way
    rows = [
        EmbeddingRow(c.id, _vector(0), content_hash(c.content), _units(n, 4), _reader(n, 4))
        for c, n in zip(found, (2, 2), strict=True)
    ]
    assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=rows) == 2
    assert await missing(model=MODEL, reader=True) == []
    assert await missing(model=MODEL) == []


async def test_many_pages_of_missing_readers_come_in_id_order(store: Any) -> None:
    ids = await _add(store, *[_draft(CHAT_B) for _ in range(12)])
    rows = [
        EmbeddingRow(c, _vector(i), unit_vectors=None if i % 3 == 0 else _units(2, i), reader_vectors=None)
        for i, c in enumerate(ids)
    ]
    rows[4] = EmbeddingRow(ids[4], _vector(4), unit_vectors=_units(2, 4), reader_vectors=_reader(2, 4))
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
    seen: list[int] = []
    after = 0
    while page := await store.knowledge.embeddings_missing_units(model=MODEL, after_id=after, limit=5, reader=True):
        seen += [c.id for c in page]
        after = page[-1].id
    assert seen == [c for i, c in enumerate(ids) if i != 4]


async def test_knowledge_status_counts_missing_reader_vectors_per_model_and_workspace(store: Any) -> None:
    a, b, doc = await _add(store, _draft(CHAT_A), _draft(CHAT_B), _document())
    (other,) = await _add(store, _draft(CHAT_B), workspace="g-other")
    await store.knowledge.put_embeddings(
        model=MODEL,
        dimensions=DIMS,
        rows=[
            EmbeddingRow(a, _vector(1), unit_vectors=_units(3, 1), reader_vectors=_reader(3, 1)),
            EmbeddingRow(b, _vector(2), unit_vectors=_units(2, 2)),
            EmbeddingRow(doc, _vector(3)),
            EmbeddingRow(other, _vector(4)),
        ],
    )
    await store.knowledge.put_embeddings(
        model="m2", dimensions=DIMS, rows=[EmbeddingRow(a, _vector(5), reader_vectors=_reader(3, 5))]
    )
    everywhere = await store.knowledge.knowledge_status()
    assert everywhere.reader_vectors_missing == {MODEL: 2}  # b and other; the document never counts
    assert everywhere.unit_vectors_missing == {MODEL: 1, "m2": 1}  # unchanged by the reader's column
    here = await store.knowledge.knowledge_status(workspace_id=WS)
    assert here.reader_vectors_missing == {MODEL: 1} and here.unit_vectors_missing == {"m2": 1}
    assert (await store.knowledge.knowledge_status(workspace_id="g-other")).reader_vectors_missing == {MODEL: 1}
    assert (await store.knowledge.knowledge_status(workspace_id="g-none")).reader_vectors_missing == {}
    await store.knowledge.put_unit_vectors(
        model=MODEL,
        dimensions=DIMS,
        rows=[EmbeddingRow(b, _vector(0), await _hash(store, b), _units(2, 6), _reader(2, 6))],
    )
    assert (await store.knowledge.knowledge_status()).reader_vectors_missing == {MODEL: 1}


# ---------------------------------------------------------------------------- erasure


async def test_an_erasure_leaves_no_reader_vectors_of_the_erased_lines(store: Any) -> None:
    rewritten, untouched = await _add(store, _draft([*CHAT_A, ("bob", "Bob", "了解です")]), _draft(CHAT_B))
    for model in (MODEL, "m2"):
        await store.knowledge.put_embeddings(
            model=model,
            dimensions=DIMS,
            rows=[
                EmbeddingRow(rewritten, _vector(1), await _hash(store, rewritten), _units(4, 1), _reader(4, 1)),
                EmbeddingRow(untouched, _vector(2), await _hash(store, untouched), _units(2, 2), _reader(2, 2)),
            ],
        )
    report = await store.memories.forget_user(WS, "alice")
    assert report.chunks_rewritten == 1
    for model in (MODEL, "m2"):
        # the rewritten chunk's rows are gone (vector, unit vectors and reader vectors: they read alice's lines)
        assert await store.knowledge.get_embedding(rewritten, model) is None
        units = await store.search.fetch_units([rewritten, untouched], model=model)
        assert units[rewritten].vectors is None and units[rewritten].reader is None
        _, fetched = await store.search.fetch_chunks_with_units([rewritten], model=model)
        assert fetched[rewritten].reader is None
        _same(units[untouched].reader, _reader(2, 2))  # another chunk keeps its own
    # embedded again later (the chunk is missing its vector, not its reader)
    assert [c.id for c in await store.knowledge.chunks_missing_embedding(model=MODEL)] == [rewritten]
    assert await store.knowledge.embeddings_missing_units(model=MODEL, reader=True) == []


# ---------------------------------------------------------------------------- SQLite


def _v13_file(path: Path) -> None:
    """An SQLite database at migration 13 with one chat chunk and its vector with unit vectors."""
    content, location = _chat(CHAT_A)
    chunk = {
        "content": content,
        "lexical": content,
        "location": json.dumps(location),
        "author_ids": "[]",
        "token_count": 10,
        "unit_lexical": json.dumps(list(unit_lexical_of(content, location) or ())),
    }
    embedding = {
        "model": MODEL,
        "dimensions": DIMS,
        "embedding": _vector(7).astype("<f4").tobytes(),
        "content_hash": content_hash(content),
        "unit_vectors": _units(3, 7).astype("<f4").tobytes(),
    }
    sqlite_file_at(path, 13, WS, chunk=chunk, embedding=embedding)


async def test_a_v13_sqlite_file_migrates_and_its_vectors_wait_for_the_reader(tmp_path: Path) -> None:
    from omoide.stores import open_store
    from omoide.stores.sqlite.migrations import LATEST_VERSION, MIGRATIONS

    db = tmp_path / "v13.db"
    _v13_file(db)
    settings = Settings(database_url=f"sqlite:///{db}", transcripts_dir=tmp_path / "t")
    async with open_store(settings=settings) as store:
        assert [m.version for m in await store.pending_migrations()] == []
        assert await store.schema_version() == LATEST_VERSION >= 14
        assert "reader_vectors" in MIGRATIONS[13].name and MIGRATIONS[13].version == 14
        got = (await store.search.fetch_units([1], model=MODEL))[ChunkId(1)]
        _same(got.vectors, _units(3, 7))
        assert got.reader is None
        status = await store.knowledge.knowledge_status()
        assert status.unit_vectors_missing == {} and status.reader_vectors_missing == {MODEL: 1}
        assert await store.knowledge.embeddings_missing_units(model=MODEL) == []
        (waiting,) = await store.knowledge.embeddings_missing_units(model=MODEL, reader=True)
        row = EmbeddingRow(waiting.id, _vector(0), content_hash(waiting.content), _units(3, 7), _reader(3, 7))
        assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=[row]) == 1
        _same((await store.search.fetch_units([1], model=MODEL))[ChunkId(1)].reader, _reader(3, 7))
        assert (await store.knowledge.knowledge_status()).reader_vectors_missing == {}
    with sqlite3.connect(db) as conn:
        columns = {r[1]: r[2] for r in conn.execute("PRAGMA table_info(chunk_embeddings)")}
        assert columns["reader_vectors"] == "BLOB"
        (index,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'chunk_embeddings_reader_missing_idx'"
        ).fetchone()
        assert "WHERE reader_vectors IS NULL" in index and "(model, chunk_id)" in index
        stored = conn.execute("SELECT length(reader_vectors) FROM chunk_embeddings").fetchone()[0]
        assert stored == 4 * READER_DIMENSIONS  # int8: 1,560 bytes padded to whole float16 rows of 512
        # the CHECK refuses what is not whole float16 rows of 512
        for bad in (b"", b"\x00" * (READER_DIMENSIONS * 2 + 2), b"\x00" * READER_DIMENSIONS * 4 * 3 + b"\x00"):
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute("UPDATE chunk_embeddings SET reader_vectors = ?", (bad,))


async def test_sqlite_reader_queries_walk_the_partial_indexes(tmp_path: Path) -> None:
    """``embeddings_missing_units(reader=True)`` walks both partial indexes in id order (no scan of the
    vectors, no sort of every missing row); the status counts read the reader's index."""
    from omoide.stores import open_store
    from omoide.stores.sqlite import _knowledge
    from omoide.stores.sqlite import _units as sqlite_units

    path = tmp_path / "plans.db"
    async with open_store(f"sqlite:///{path}") as store:
        ids = await _add(store, *[_draft(CHAT_B) for _ in range(40)])
        await store.knowledge.put_embeddings(
            model=MODEL,
            dimensions=DIMS,
            rows=[
                EmbeddingRow(c, _vector(i), unit_vectors=_units(2, i), reader_vectors=_reader(2, i) if i % 2 else None)
                for i, c in enumerate(ids)
            ],
        )
    conn = sqlite3.connect(path)
    try:
        conn.execute("ANALYZE")

        def plan(sql: str, params: Any) -> str:
            return " | ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))

        missing = plan(sqlite_units._EMBEDDINGS_MISSING_UNITS_OR_READER, {"model": MODEL, "after": 0, "limit": 5})
        assert "SEARCH e USING INDEX chunk_embeddings_reader_missing_idx (model=? AND chunk_id>?)" in missing, missing
        assert "SEARCH e USING INDEX chunk_embeddings_units_missing_idx (model=? AND chunk_id>?)" in missing, missing
        assert "SCAN e" not in missing and "SCAN chunk_embeddings" not in missing, missing
        for sql, params in ((_knowledge.STATUS_SQL, ()), (_knowledge.WORKSPACE_STATUS_SQL, {"ws": WS})):
            assert "USING INDEX chunk_embeddings_reader_missing_idx" in plan(sql, params)
        found = sqlite_units.embeddings_missing_units(conn, MODEL, 0, 500, reader=True)
        assert [c.id for c in found] == ids[0::2]
    finally:
        conn.close()


async def test_sqlite_reader_vectors_do_not_invalidate_the_search_matrix(tmp_path: Path) -> None:
    from omoide.stores import open_store

    db = tmp_path / "omoide.db"

    def generation() -> int:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT generation FROM search_generations WHERE workspace_id = ?", (WS,)).fetchone()
            return int(row[0])

    async with open_store(f"sqlite:///{db}") as store:
        (a,) = await _add(store, _draft(CHAT_B))
        await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[EmbeddingRow(a, _vector(1))])
        before = generation()
        row = EmbeddingRow(a, _vector(0), await _hash(store, a), _units(2, 1), _reader(2, 1))
        assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=[row]) == 1
        assert generation() == before


# ---------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
async def test_a_postgres_v14_database_migrates_and_its_vectors_wait_for_the_reader(
    pg_url: str, tmp_path: Path
) -> None:
    import asyncpg

    from omoide.stores import open_store
    from omoide.stores.postgres.migrations import LATEST_VERSION, MIGRATIONS

    content, location = _chat(CHAT_A)
    chunk = await postgres_at(
        pg_url,
        14,
        WS,
        chunk={
            "content": content,
            "lexical": content,
            "location": location,
            "author_ids": [],
            "token_count": 9,
            "unit_lexical": list(unit_lexical_of(content, location) or ()),
        },
        embedding={
            "model": MODEL,
            "dimensions": DIMS,
            "embedding": _vector(7),
            "content_hash": content_hash(content),
            "unit_vectors": _units(3, 7).astype("<f2").tobytes(),
        },
    )
    settings = Settings(database_url=pg_url, transcripts_dir=tmp_path / "t", db_pool_max=4)
    async with open_store(settings=settings) as store:
        assert await store.schema_version() == LATEST_VERSION >= 15
        got = (await store.search.fetch_units([chunk], model=MODEL))[chunk]
        _same(got.vectors, _units(3, 7))
        assert got.reader is None
        assert (await store.knowledge.knowledge_status()).reader_vectors_missing == {MODEL: 1}
        (waiting,) = await store.knowledge.embeddings_missing_units(model=MODEL, reader=True)
        row = EmbeddingRow(waiting.id, _vector(0), content_hash(waiting.content), _units(3, 7), _reader(3, 7))
        assert await store.knowledge.put_unit_vectors(model=MODEL, dimensions=DIMS, rows=[row]) == 1
        _same((await store.search.fetch_units([chunk], model=MODEL))[chunk].reader, _reader(3, 7))
    conn = await asyncpg.connect(pg_url)
    try:
        kind = await conn.fetchval(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_name = 'chunk_embeddings' AND column_name = 'reader_vectors'"
        )
        assert kind == "bytea"
        index = await conn.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embeddings_reader_missing_idx'"
        )
        assert index is not None and "(model, chunk_id)" in index and "reader_vectors IS NULL" in index
        stored = await conn.fetchval("SELECT reader_vectors FROM chunk_embeddings WHERE chunk_id = $1", chunk)
        assert stored == encode_reader_vectors(_reader(3, 7))  # int8, unpadded on PostgreSQL
        # the migration's statements can run again (an interrupted run, a hand-applied one): nothing changes
        (migration,) = [m for m in MIGRATIONS if m.version == 15]
        for statement in migration.sql:
            await conn.execute(statement)
    finally:
        await conn.close()


# ---------------------------------------------------------------------------- omoide status


def test_omoide_status_shows_the_vectors_waiting_for_the_line_reader(tmp_path: Path) -> None:
    import asyncio

    from typer.testing import CliRunner

    from omoide.cli import app
    from omoide.providers.local.line_reader import model_path
    from omoide.stores import open_store

    url = f"sqlite:///{tmp_path / 'status.db'}"
    model = "hashing:v1@16"

    async def seed() -> None:
        async with open_store(url) as store:
            ids = await _add(store, _draft(CHAT_A), _draft(CHAT_B))
            wide = _half((5, 16), 3)  # the hashing embedder's 16 dimensions
            rows = [EmbeddingRow(ids[0], wide[0], unit_vectors=wide[:3], reader_vectors=_reader(3, 1))]
            rows.append(EmbeddingRow(ids[1], wide[0], unit_vectors=wide[3:]))  # units, no reader
            await store.knowledge.put_embeddings(model=model, dimensions=16, rows=rows)

    asyncio.run(seed())

    def status(*args: str, reader: str = "auto") -> str:
        env = {"OMOIDE_EMBEDDER": "hashing@16", "OMOIDE_LINE_READER": reader}
        result = CliRunner().invoke(app, ["status", "--db", url, *args], env=env)
        assert result.exit_code == 0, result.output
        return " ".join(result.stdout.split())

    data = json.loads(status("--json"))
    assert data["reader_vectors_missing"] == {model: 1} and data["unit_vectors_missing"] == {}
    assert "line_reader" not in data
    out = status()
    assert f"vectors without line reader, {model} (in use) │ 1" in out
    assert f"vectors without units, {model} (in use) │ 0" in out
    hint = "not been read by the line reader yet" in out and "omoide reindex --units" in out
    assert hint == (model_path() is not None)  # only where the reindex can add them
    out = status(reader="off")
    assert f"vectors without line reader, {model} (in use) │ 1" in out
    assert "omoide reindex --units" not in out
