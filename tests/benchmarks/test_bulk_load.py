"""benchmarks/_bulk_load.py writes, by COPY, the rows the store's own write paths write.

The scale benchmark (benchmarks/scale.py) measures search on data loaded by binary COPY; these
tests hold it to the store: the same data written once through ``add_source`` +
``put_embeddings`` and once by ``bulk_load`` give equal rows in every column the store writes
(generated tsvector / length included), the same secondary indexes, and a store that goes on
writing after the load.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

pytestmark = pytest.mark.postgres

TOTAL = 1_500  # two sources: a full block and a partial one

_COMPARED = {
    "knowledge_sources": "SELECT id, workspace_id, type, title, uri, metadata, error, attempts, private, members "
    "FROM knowledge_sources ORDER BY id",
    "knowledge_chunks": "SELECT id, source_id, workspace_id, channel_id, thread_id, chunk_index, content, lexical, "
    "lexical_tsv::text AS tsv, lexical_len, location, author_ids, token_count, started_at, ended_at, private, "
    "members, unit_lexical FROM knowledge_chunks ORDER BY id",
    "chunk_embeddings": "SELECT chunk_id, workspace_id, model, dimensions, embedding::text AS embedding, "
    "content_hash, unit_vectors FROM chunk_embeddings ORDER BY chunk_id",
}
_INDEXES = (
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('knowledge_chunks', 'chunk_embeddings') "
    "ORDER BY indexname"
)


def _settings(url: str, tmp_path: Path) -> Any:
    from omoide.settings import Settings

    return Settings(database_url=url, transcripts_dir=tmp_path / "t", embedder="hashing")


async def _through_the_store(url: str, tmp_path: Path) -> None:
    """The same blocks written by the store's own paths, sources finished as ``ready``."""
    from _bulk_load import PER_SOURCE, ScaleData

    from omoide.stores import open_store
    from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
    from omoide.stores.postgres._units import decode_unit_vectors

    data = ScaleData(units=True)
    async with open_store(settings=_settings(url, tmp_path)) as store:
        for _ in range((TOTAL + PER_SOURCE - 1) // PER_SOURCE):
            block = data.block(TOTAL)
            drafts = [
                ChunkDraft(
                    content=c[6],
                    lexical=c[7],
                    token_count=c[10],
                    location=json.loads(c[8]),
                    channel_id=c[3],
                    author_ids=tuple(json.loads(c[9])),
                    started_at=c[11],
                    ended_at=c[12],
                    unit_lexical=tuple(json.loads(c[15])),
                )
                for c in block.chunks
            ]
            source_id, ids = await store.knowledge.add_source(
                SourceDraft(workspace_id=block.workspace, type=block.source[2], title=block.source[3]), drafts
            )
            dims = block.embeddings[0][3]
            rows = [
                EmbeddingRow(
                    chunk_id=cid,
                    vector=np.frombuffer(e[4][4:], dtype=">f2").astype(np.float32),
                    unit_vectors=decode_unit_vectors(e[6], dims),  # as stored: the store writes the same bytes
                )
                for cid, e in zip(ids, block.embeddings, strict=True)
            ]
            await store.knowledge.put_embeddings(model=block.embeddings[0][2], dimensions=dims, rows=rows)
            await store.knowledge.finish_source(source_id, status="ready")


async def _rows(url: str) -> dict[str, Any]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        out: dict[str, Any] = {t: [dict(r) for r in await conn.fetch(sql)] for t, sql in _COMPARED.items()}
        out["statuses"] = [r[0] for r in await conn.fetch("SELECT status FROM knowledge_sources ORDER BY id")]
        out["indexes"] = [tuple(r) for r in await conn.fetch(_INDEXES)]
        out["meta"] = [tuple(r) for r in await conn.fetch("SELECT key, value FROM store_meta ORDER BY key")]
        return out
    finally:
        await conn.close()


async def test_bulk_load_writes_the_rows_the_store_writes(pg_server: Any, tmp_path: Path) -> None:
    from _bulk_load import Target, bulk_load

    from omoide.stores import open_store

    by_store, by_copy = pg_server.new_database(), pg_server.new_database()
    await _through_the_store(by_store, tmp_path)
    async with open_store(settings=_settings(by_copy, tmp_path)):  # migrated, empty
        pass
    report = await bulk_load([Target("copy", by_copy)], TOTAL, units=True)
    assert report["copy"]["chunks"] == TOTAL
    assert report["copy"]["indexes"]  # the deferred indexes are back

    expected, got = await _rows(by_store), await _rows(by_copy)
    assert got["statuses"] == expected["statuses"] == ["ready", "ready"]
    for table in _COMPARED:
        assert len(got[table]) == len(expected[table]), table
        for want, have in zip(expected[table], got[table], strict=True):
            assert have == want, table
    assert got["indexes"] == expected["indexes"]
    assert got["meta"] == expected["meta"]


async def test_a_store_goes_on_writing_after_a_bulk_load(pg_url: str, tmp_path: Path) -> None:
    from _bulk_load import Target, bulk_load

    from omoide.stores import open_store
    from omoide.stores.knowledge import ChunkDraft, SourceDraft

    async with open_store(settings=_settings(pg_url, tmp_path)):
        pass
    await bulk_load([Target("copy", pg_url, frozenset({"w01"}))], TOTAL, units=False)
    async with open_store(settings=_settings(pg_url, tmp_path)) as store:
        source_id, ids = await store.knowledge.add_source(
            SourceDraft(workspace_id="w01", type="discord_channel", title="#after"),
            [ChunkDraft(content="after the load", lexical="after load", token_count=3)],
        )
        assert source_id > 2 and ids[0] > TOTAL  # the identity sequences moved past the loaded ids
    rows = await _rows(pg_url)
    assert {r["workspace_id"] for r in rows["knowledge_chunks"]} == {"w01"}
    assert all(r["unit_lexical"] is None for r in rows["knowledge_chunks"][:-1])
    assert all(r["unit_vectors"] is None for r in rows["chunk_embeddings"])
