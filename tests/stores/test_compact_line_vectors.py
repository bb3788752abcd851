"""``compact_line_vectors``: line vectors stored before the int8 form are rewritten in it
(``omoide reindex --units``), on a real SQLite file and a real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import pytest

from omoide.errors import InvalidInput
from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores._erasure_common import content_hash, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft, ChunkId, EmbeddingRow, SourceDraft
from omoide.stores.unit_codec import MAGIC
from omoide.stores.units import READER_DIMENSIONS, unit_lexical_of
from stored_vectors import exact

WS = "g-compact"
MODEL = "test-compact-model"
DIMS = 8
LINES = 3


def _draft(n: int) -> ChunkDraft:
    content, spans = join_lines(
        [(f"[2026-01-19 10:0{i}] **Ann (User)**: line {i} of chunk {n}", "ann", f"m{n}-{i}") for i in range(LINES)],
        "\n",
    )
    location = {"lines": spans_json(spans)}
    return ChunkDraft(
        content=content,
        lexical=content,
        token_count=len(content),
        location=location,
        unit_lexical=unit_lexical_of(content, location),
    )


class Raw:
    """The store's database seen directly, to write rows as an older omoide did."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = url.startswith("postgresql")

    async def set_legacy(self, chunk_id: int, units: np.ndarray, reader: np.ndarray) -> None:
        """Store ``units`` / ``reader`` in the forms written before int8 (SQLite float32 / float16,
        PostgreSQL float16 / float16)."""
        unit_bytes = units.astype("<f2" if self.postgres else "<f4").tobytes()
        reader_bytes = reader.astype("<f2").tobytes()
        sql = "UPDATE chunk_embeddings SET unit_vectors = {0}, reader_vectors = {1} WHERE chunk_id = {2}"
        if self.postgres:
            conn = await asyncpg.connect(self.url)
            try:
                await conn.execute(sql.format("$1", "$2", "$3"), unit_bytes, reader_bytes, chunk_id)
            finally:
                await conn.close()
        else:
            with sqlite3.connect(self.url.removeprefix("sqlite:///")) as conn:
                conn.execute(sql.format("?", "?", "?"), (unit_bytes, reader_bytes, chunk_id))

    async def stored(self, chunk_id: int) -> tuple[bytes, bytes]:
        sql = "SELECT unit_vectors, reader_vectors FROM chunk_embeddings WHERE chunk_id = "
        if self.postgres:
            conn = await asyncpg.connect(self.url)
            try:
                row = await conn.fetchrow(sql + "$1", chunk_id)
            finally:
                await conn.close()
            return bytes(row[0]), bytes(row[1])
        with sqlite3.connect(self.url.removeprefix("sqlite:///")) as conn:
            units, reader = conn.execute(sql + "?", (chunk_id,)).fetchone()
        return units, reader


@pytest.fixture(params=["sqlite", "postgres"])
async def opened(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Any, Raw]]:
    url = f"sqlite:///{tmp_path / 'omoide.db'}" if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))
    settings = Settings(database_url=url, transcripts_dir=tmp_path / "t")
    async with open_store(settings=settings) as store:
        yield store, Raw(url)


def _units(n: int) -> np.ndarray:
    return exact((LINES, DIMS), n)


def _reader(n: int) -> np.ndarray:
    return exact((LINES, READER_DIMENSIONS), 1000 + n)


async def _embedded(store: Any, count: int) -> list[ChunkId]:
    _, ids = await store.knowledge.add_source(
        SourceDraft(workspace_id=WS, type="session", title="t"), [_draft(n) for n in range(count)]
    )
    rows = []
    for n, chunk_id in enumerate(ids):
        (hit,) = await store.search.fetch_chunks([chunk_id])
        rows.append(EmbeddingRow(chunk_id, exact((DIMS,), 500 + n), content_hash(hit.content), _units(n), _reader(n)))
    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
    return list(ids)


async def _compact_all(store: Any, limit: int) -> tuple[int, int]:
    """Pages until done: (vectors rewritten, pages read)."""
    after: int | None = 0
    rewritten = pages = 0
    while after is not None:
        page = await store.knowledge.compact_line_vectors(after_id=after, limit=limit)
        rewritten += page.rewritten
        pages += 1
        assert pages < 50
        after = page.after_id
    return rewritten, pages


async def test_vectors_written_now_are_int8_and_left_alone(opened: tuple[Any, Raw]) -> None:
    store, raw = opened
    ids = await _embedded(store, 2)
    units, reader = await raw.stored(ids[0])
    assert units[:4] == MAGIC and reader[:4] == MAGIC
    page = await store.knowledge.compact_line_vectors()
    assert (page.after_id, page.rewritten, page.last_chunk_id) == (None, 0, ids[-1])


async def test_older_forms_are_rewritten_page_by_page_and_read_back_the_same(opened: tuple[Any, Raw]) -> None:
    store, raw = opened
    ids = await _embedded(store, 5)
    for n, chunk_id in enumerate(ids[:4]):  # the fifth stays as written now
        await raw.set_legacy(chunk_id, _units(n), _reader(n))
    assert (await raw.stored(ids[0]))[0][:4] != MAGIC

    rewritten, pages = await _compact_all(store, limit=2)

    assert rewritten == 4 and pages >= 3
    got = await store.search.fetch_units(ids, model=MODEL)
    for n, chunk_id in enumerate(ids):
        np.testing.assert_array_equal(got[chunk_id].vectors, _units(n))
        np.testing.assert_array_equal(got[chunk_id].reader, _reader(n))
        units, reader = await raw.stored(chunk_id)
        assert units[:4] == MAGIC and reader[:4] == MAGIC
        if not raw.postgres:  # whole float32 / float16 rows, as the columns' CHECKs ask
            assert len(units) % (4 * DIMS) == 0 and len(reader) % (2 * READER_DIMENSIONS) == 0
    assert await _compact_all(store, limit=2) == (0, 1)  # a rerun finds nothing left


async def test_one_column_in_an_older_form_is_rewritten_alone(opened: tuple[Any, Raw]) -> None:
    store, raw = opened
    (chunk_id,) = await _embedded(store, 1)
    _, reader_now = await raw.stored(chunk_id)
    await raw.set_legacy(chunk_id, _units(0), _reader(0))
    if raw.postgres:
        conn = await asyncpg.connect(raw.url)
        try:
            await conn.execute("UPDATE chunk_embeddings SET reader_vectors = $1", reader_now)
        finally:
            await conn.close()
    else:
        with sqlite3.connect(raw.url.removeprefix("sqlite:///")) as conn:
            conn.execute("UPDATE chunk_embeddings SET reader_vectors = ?", (reader_now,))
    assert await _compact_all(store, limit=10) == (1, 1)
    units, reader = await raw.stored(chunk_id)
    assert units[:4] == MAGIC and reader == reader_now


async def test_a_vector_re_embedded_meanwhile_is_not_overwritten(pg_url: str, tmp_path: Path) -> None:
    """PostgreSQL reads a page and writes it in two statements: the write only lands where both
    stored values still hash to what was read."""
    from omoide.stores.postgres import _units as uops

    settings = Settings(database_url=pg_url, transcripts_dir=tmp_path / "t")
    async with open_store(settings=settings) as store:
        raw = Raw(pg_url)
        ids = await _embedded(store, 2)
        for n, chunk_id in enumerate(ids):
            await raw.set_legacy(chunk_id, _units(n), _reader(n))
        conn = await asyncpg.connect(pg_url)
        try:
            read = await uops.legacy_line_vectors(conn, 0, 10)
            (hit,) = await store.search.fetch_chunks([ids[0]])
            again = EmbeddingRow(ids[0], exact((DIMS,), 9), content_hash(hit.content), _units(7), _reader(7))
            await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=[again])
            assert await uops.write_compacted(conn, read) == 1  # the second chunk only
        finally:
            await conn.close()
        got = await store.search.fetch_units(ids, model=MODEL)
        np.testing.assert_array_equal(got[ids[0]].vectors, _units(7))  # the new embedding stands
        np.testing.assert_array_equal(got[ids[0]].reader, _reader(7))
        np.testing.assert_array_equal(got[ids[1]].vectors, _units(1))
        assert (await raw.stored(ids[1]))[0][:4] == MAGIC


async def test_bad_arguments_are_refused(opened: tuple[Any, Raw]) -> None:
    store, _ = opened
    with pytest.raises(InvalidInput, match="after_id"):
        await store.knowledge.compact_line_vectors(after_id=-1)
    with pytest.raises(InvalidInput, match="limit"):
        await store.knowledge.compact_line_vectors(limit=0)


async def test_the_job_pages_with_progress_and_stops_when_asked(opened: tuple[Any, Raw]) -> None:
    import asyncio

    from omoide.knowledge.line_vector_compaction import compact_line_vectors

    store, raw = opened
    ids = await _embedded(store, 5)
    for n, chunk_id in enumerate(ids):
        await raw.set_legacy(chunk_id, _units(n), _reader(n))
    stopped = asyncio.Event()
    stopped.set()
    report = await compact_line_vectors(store.knowledge, stop=stopped)
    assert (report.rewritten, report.stopped) == (0, True)

    progress: list[tuple[int, int]] = []
    report = await compact_line_vectors(store.knowledge, batch=2, on_progress=lambda *p: progress.append(p))
    assert (report.rewritten, report.stopped) == (5, False)
    assert progress[-1] == (ids[-1], ids[-1]) and len(progress) >= 3
    assert all(done <= last for done, last in progress)
