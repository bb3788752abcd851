"""SQLite search specifics: the vector matrix cache and its generation counter, tokenizer bookkeeping."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import numpy as np
import pytest

from omoide.errors import InvalidInput
from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.search import SearchFilters
from omoide.stores.sqlite import SqliteStore
from omoide.stores.sqlite import _search as sops
from omoide.stores.sqlite._conn import path_from_url
from search_helpers import vector_search

MODEL = "m"
DIMS = 4


@pytest.fixture
async def sq_store(sqlite_url, tmp_path):
    settings = Settings(database_url=sqlite_url, transcripts_dir=tmp_path / "t")
    async with SqliteStore(sqlite_url, settings=settings, migrate=True) as store:
        yield store


def _v(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


async def _add(store, workspace: str, vectors: list[np.ndarray]) -> tuple[int, list[int]]:
    drafts = [ChunkDraft(content=f"c{i}", lexical=f"c{i}", token_count=1) for i in range(len(vectors))]
    source_id, ids = await store.knowledge.add_source(
        SourceDraft(workspace_id=workspace, type="document", title="d"), drafts
    )
    rows = [EmbeddingRow(chunk_id=cid, vector=v) for cid, v in zip(ids, vectors, strict=True)]
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
    return source_id, list(ids)


def _generation(path: str, workspace: str) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT generation FROM search_generations WHERE workspace_id = ?", (workspace,)).fetchone()
    return -1 if row is None else int(row[0])


async def test_matrix_is_cached_until_the_workspace_changes(sq_store):
    await _add(sq_store, "g1", [_v(1, 0, 0, 0), _v(0, 1, 0, 0)])
    await _add(sq_store, "g2", [_v(1, 0, 0, 0)])
    f = SearchFilters("g1")
    await vector_search(sq_store.search, model=MODEL, query=_v(1, 0, 0, 0), filters=f, k=5)
    cache = sq_store._db.vector_cache
    first = cache._entries[("g1", MODEL)]
    await vector_search(sq_store.search, model=MODEL, query=_v(0, 1, 0, 0), filters=f, k=5)
    assert cache._entries[("g1", MODEL)] is first, "no write: the same matrix"
    await _add(sq_store, "g2", [_v(0, 0, 1, 0)])  # another workspace changed
    await vector_search(sq_store.search, model=MODEL, query=_v(0, 1, 0, 0), filters=f, k=5)
    assert cache._entries[("g1", MODEL)] is first
    await _add(sq_store, "g1", [_v(0, 0, 1, 0)])
    hits = await vector_search(sq_store.search, model=MODEL, query=_v(0, 0, 1, 0), filters=f, k=5)
    assert cache._entries[("g1", MODEL)] is not first
    assert len(hits) == 3 and hits[0].score == pytest.approx(1.0)


async def test_writes_from_another_connection_and_cascading_deletes_invalidate(sq_store):
    source_id, _ids = await _add(sq_store, "g1", [_v(1, 0, 0, 0), _v(0, 1, 0, 0)])
    f = SearchFilters("g1")
    assert len(await vector_search(sq_store.search, model=MODEL, query=_v(1, 0, 0, 0), filters=f, k=5)) == 2
    path = path_from_url(sq_store.url)
    before = _generation(path, "g1")
    with sqlite3.connect(path) as other:  # another process deletes the source: chunks and vectors cascade
        other.execute("PRAGMA foreign_keys = ON")
        other.execute("DELETE FROM knowledge_sources WHERE id = ?", (source_id,))
    assert _generation(path, "g1") == before + 2  # one bump per cascaded embedding row
    assert await vector_search(sq_store.search, model=MODEL, query=_v(1, 0, 0, 0), filters=f, k=5) == []


async def test_filters_restrict_rows_before_scoring(sq_store):
    drafts = [
        ChunkDraft(content=f"c{i}", lexical=f"c{i}", token_count=1, channel_id="rare" if i == 7 else "x")
        for i in range(40)
    ]
    _, ids = await sq_store.knowledge.add_source(SourceDraft(workspace_id="g1", type="document", title="d"), drafts)
    rng = np.random.default_rng(1)
    rows = [EmbeddingRow(chunk_id=c, vector=rng.standard_normal(DIMS).astype(np.float32)) for c in ids]
    await sq_store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
    hits = await vector_search(
        sq_store.search, model=MODEL, query=_v(1, 1, 1, 1), filters=SearchFilters("g1", channel_ids=("rare",)), k=10
    )
    assert [h.chunk_id for h in hits] == [ids[7]]
    # a filter keeping most rows takes the score-all-then-mask path and agrees with the unfiltered ranking
    broad = await vector_search(
        sq_store.search, model=MODEL, query=_v(1, 1, 1, 1), filters=SearchFilters("g1", channel_ids=("x",)), k=39
    )
    full = await vector_search(sq_store.search, model=MODEL, query=_v(1, 1, 1, 1), filters=SearchFilters("g1"), k=40)
    assert [h.chunk_id for h in broad] == [h.chunk_id for h in full if h.chunk_id != ids[7]]


async def test_query_size_must_match_the_stored_vectors(sq_store):
    await _add(sq_store, "g1", [_v(1, 0, 0, 0)])
    with pytest.raises(InvalidInput, match="4-dimensional"):
        await vector_search(sq_store.search, model=MODEL, query=_v(1, 0, 0), filters=SearchFilters("g1"), k=5)


async def test_tokenizer_becomes_mixed_when_writers_disagree(tmp_path):
    conn = sqlite3.connect(tmp_path / "meta.db")
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL)")
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert sops.lexical_tokenizer(conn) is None
    sops.record_tokenizer(conn, "sudachi-core:v1", now)
    sops.record_tokenizer(conn, "sudachi-core:v1", now)
    assert sops.lexical_tokenizer(conn) == "sudachi-core:v1"
    sops.record_tokenizer(conn, "ngram:v1", now)
    assert sops.lexical_tokenizer(conn) == sops.MIXED_TOKENIZERS
    sops.record_tokenizer(conn, "sudachi-core:v1", now)
    assert sops.lexical_tokenizer(conn) == sops.MIXED_TOKENIZERS
    conn.close()


def test_fts_query_quotes_every_token():
    assert sops.fts_query(["天気", 'say "hi"', "OR"]) == '"天気" OR "say ""hi""" OR "OR"'


async def test_cache_drops_the_oldest_matrices_beyond_its_budget(sq_store, monkeypatch):
    for ws in ("g1", "g2", "g3"):
        await _add(sq_store, ws, [_v(1, 0, 0, 0), _v(0, 1, 0, 0)])
    monkeypatch.setattr(sops, "MAX_CACHE_BYTES", 2 * 2 * DIMS * 4)  # room for two 2x4 matrices
    for ws in ("g1", "g2", "g3"):
        hits = await vector_search(sq_store.search, model=MODEL, query=_v(1, 0, 0, 0), filters=SearchFilters(ws), k=5)
        assert len(hits) == 2
    assert list(sq_store._db.vector_cache._entries) == [("g2", MODEL), ("g3", MODEL)]
