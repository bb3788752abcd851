"""Retrieval units on SQLite (migration 10; the contract is in :mod:`omoide.stores.units`).

* ``knowledge_chunks.unit_lexical``: a JSON array of strings, one per line record (each
  line's search tokens, space-joined), or ``NULL`` (written before units existed, or a chunk
  without line records).
* ``chunk_embeddings.unit_vectors``: the unit vectors of that row's model, int8 with a scale
  per line (:mod:`omoide.stores.unit_codec`), padded to a multiple of ``4 × dimensions``
  bytes (the column's ``CHECK``, written for the float32 rows before that form, which are
  still read), or ``NULL``.
* ``chunk_embeddings.reader_vectors`` (migration 14): the line reader's vectors of the same
  lines, stored the same way and padded to a multiple of ``2 × READER_DIMENSIONS`` bytes (rows
  before: float16), or ``NULL`` (:func:`~omoide.stores.units.encode_reader_vectors`).

:func:`fetch_units` is on search's hot path (30–60 chunk ids per search): one query by
rowid, a JSON parse and a ``frombuffer`` per chunk.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.stores.knowledge import ChunkId, ChunkText, SourceId
from omoide.stores.search import ChunkHit, chunks_with_units
from omoide.stores.sqlite._search import FROM_CHUNKS, HIT_COLUMNS, hit_from_row
from omoide.stores.unit_codec import MAGIC, decode_matrix, encode_matrix, next_page, reencode
from omoide.stores.units import (
    HALF_DTYPE,
    READER_DIMENSIONS,
    ChunkUnits,
    CompactedPage,
    decode_reader_vectors,
    encode_reader_vectors,
    unit_lexical_of,
)

UNITS_DTYPE = np.dtype("<f4")
"""How unit vectors were stored before the int8 form (such rows are still read)."""
READER_MULTIPLE = 2 * READER_DIMENSIONS
"""Reader vectors are padded to a multiple of this many bytes (the ``CHECK`` of migration 14)."""

HAS_LINES = "json_array_length({c}.location, '$.lines') > 0"
"""SQL: the chunk ``{c}`` has line records (``location->'lines'`` is a non-empty array; 0 otherwise)."""

_DECODE = json.JSONDecoder().raw_decode  # stored JSON is compact: no surrounding whitespace

_UNITS_WITH_MODEL = """
SELECT c.id, c.unit_lexical, e.dimensions, e.unit_vectors, e.reader_vectors
FROM knowledge_chunks c LEFT JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.model = ?
WHERE c.id IN (SELECT value FROM json_each(?))
"""
_UNITS = "SELECT id, unit_lexical FROM knowledge_chunks WHERE id IN (SELECT value FROM json_each(?))"
_HIT_WIDTH = HIT_COLUMNS.count(",") + 1  # the chunk's columns, then its units'
_CHUNKS_WITH_UNITS = f"""
SELECT {HIT_COLUMNS}, c.unit_lexical, e.dimensions, e.unit_vectors, e.reader_vectors
FROM {FROM_CHUNKS} LEFT JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.model = ?
WHERE c.id IN (SELECT value FROM json_each(?))
"""
_CHUNKS_WITH_UNITS_NO_READER = _CHUNKS_WITH_UNITS.replace("e.reader_vectors", "NULL AS reader_vectors")


_LEGACY_LINE_VECTORS = """
SELECT chunk_id, model, dimensions, unit_vectors, reader_vectors FROM chunk_embeddings
WHERE chunk_id > ? AND (substr(unit_vectors, 1, 4) != ? OR substr(reader_vectors, 1, 4) != ?)
ORDER BY chunk_id, model LIMIT ?
"""
_COMPACT_LINE_VECTORS = """
UPDATE chunk_embeddings SET unit_vectors = coalesce(?, unit_vectors), reader_vectors = coalesce(?, reader_vectors)
WHERE chunk_id = ? AND model = ?
"""


def compact_line_vectors(conn: sqlite3.Connection, after_id: int, limit: int) -> CompactedPage:
    """:meth:`~omoide.stores.knowledge.KnowledgeStore.compact_line_vectors`, read and written in
    the caller's write transaction (nothing else writes meanwhile)."""
    rows = conn.execute(_LEGACY_LINE_VECTORS, (after_id, MAGIC, MAGIC, limit)).fetchall()
    writes = []
    for chunk_id, model, dimensions, units, reader in rows:
        new_units = reencode(units, dimensions, legacy=UNITS_DTYPE, multiple=UNITS_DTYPE.itemsize * dimensions)
        new_reader = reencode(reader, READER_DIMENSIONS, legacy=HALF_DTYPE, multiple=READER_MULTIPLE)
        if new_units is not None or new_reader is not None:
            writes.append((new_units, new_reader, chunk_id, model))
    conn.executemany(_COMPACT_LINE_VECTORS, writes)
    last = conn.execute("SELECT coalesce(max(chunk_id), 0) FROM chunk_embeddings").fetchone()[0]
    return CompactedPage(next_page(rows, limit), len(writes), int(last))


def units_blob(vectors: npt.NDArray[np.float32] | None) -> bytes | None:
    """The stored form of a ``(lines, dimensions)`` matrix of unit vectors (see the module docstring)."""
    return None if vectors is None else encode_matrix(vectors, multiple=UNITS_DTYPE.itemsize * vectors.shape[1])


def units_from_blob(blob: bytes | None, dimensions: int) -> npt.NDArray[np.float32] | None:
    """Unit vectors read back: a float32 ``(lines, dimensions)`` matrix (a writable copy), or ``None``
    (absent, or not a whole matrix)."""
    return decode_matrix(blob, dimensions, legacy=UNITS_DTYPE)


def reader_blob(vectors: npt.NDArray[np.float32] | None) -> bytes | None:
    """The stored form of the line reader's vectors (see the module docstring)."""
    return encode_reader_vectors(vectors, multiple=READER_MULTIPLE)


def unit_lexical_json(tokens: Sequence[str] | None) -> str | None:
    """The stored form of a chunk's unit tokens: a compact JSON array of strings, or ``None`` (NULL)."""
    return None if tokens is None else json.dumps(list(tokens), ensure_ascii=False, separators=(",", ":"))


def _tokens(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(_DECODE(text)[0])


def fetch_units(conn: sqlite3.Connection, ids: Sequence[int], model: str | None) -> dict[ChunkId, ChunkUnits]:
    """The units of the chunks of ``ids`` that exist (see :meth:`SearchStore.fetch_units`)."""
    if model is None:
        rows = conn.execute(_UNITS, (json.dumps(list(ids)),)).fetchall()
        return {ChunkId(r[0]): ChunkUnits(_tokens(r[1]), None) for r in rows}
    rows = conn.execute(_UNITS_WITH_MODEL, (model, json.dumps(list(ids)))).fetchall()
    return {
        ChunkId(r[0]): ChunkUnits(_tokens(r[1]), units_from_blob(r[3], r[2]), decode_reader_vectors(r[4])) for r in rows
    }


def fetch_chunks_with_units(
    conn: sqlite3.Connection, ids: Sequence[int], model: str | None, reader: bool = True
) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
    """The chunks of ``ids`` in that order and their units, in one query (``model`` ``None``:
    the join matches no vector row; ``reader=False``: the line reader's vectors unread)."""
    sql = _CHUNKS_WITH_UNITS if reader else _CHUNKS_WITH_UNITS_NO_READER
    rows = {int(r[0]): r for r in conn.execute(sql, (model, json.dumps(list(ids)))).fetchall()}
    return chunks_with_units(ids, rows, lambda r: hit_from_row(r, score=0.0, rank=0), _row_units)


def _row_units(row: Sequence[Any]) -> ChunkUnits:
    lexical, dimensions, blob, reader = row[_HIT_WIDTH:]
    return ChunkUnits(_tokens(lexical), units_from_blob(blob, dimensions), decode_reader_vectors(reader))


CHUNK_TEXT = "c.id, c.source_id, c.workspace_id, c.content, c.location"
"""The columns of a :class:`ChunkText` (of the chunk ``c``)."""


def chunk_text(row: Sequence[Any]) -> ChunkText:
    """A :class:`ChunkText` from the columns of :data:`CHUNK_TEXT`."""
    return ChunkText(
        id=ChunkId(row[0]), source_id=SourceId(row[1]), workspace_id=row[2], content=row[3], location=json.loads(row[4])
    )


# ------------------------------------------------------------ omoide reindex --units


def chunks_missing_units(conn: sqlite3.Connection, after_id: int, limit: int) -> list[ChunkText]:
    """Chunks with line records and no unit tokens, by id (the partial index of migration 10)."""
    rows = conn.execute(
        f"SELECT {CHUNK_TEXT} FROM knowledge_chunks c INDEXED BY knowledge_chunks_units_missing_idx "
        f"WHERE c.unit_lexical IS NULL AND c.id > ? AND {HAS_LINES.format(c='c')} ORDER BY c.id LIMIT ?",
        (after_id, limit),
    ).fetchall()
    return [chunk_text(r) for r in rows]


_EMBEDDINGS_MISSING_UNITS = (
    f"SELECT {CHUNK_TEXT} FROM chunk_embeddings e INDEXED BY chunk_embeddings_units_missing_idx "
    "JOIN knowledge_chunks c ON c.id = e.chunk_id "
    f"WHERE e.unit_vectors IS NULL AND e.model = :model AND e.chunk_id > :after AND {HAS_LINES.format(c='c')} "
    "ORDER BY e.chunk_id LIMIT :limit"
)


def _missing_ids(column: str) -> str:
    """The first ``:limit`` ids of chunks with line records whose ``:model`` row has ``column``
    NULL, past ``:after``: a walk of the column's partial index (``chunk_embeddings_units_missing_idx``,
    ``chunk_embeddings_reader_missing_idx``) in id order that stops at the limit. The planner picks the
    index by itself (no ``INDEXED BY``: ``tests/stores/test_store_reader_vectors.py`` checks the plan)."""
    return (
        "SELECT e.chunk_id FROM chunk_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id "
        f"WHERE e.{column} IS NULL AND e.model = :model AND e.chunk_id > :after AND {HAS_LINES.format(c='c')} "
        "ORDER BY e.chunk_id LIMIT :limit"
    )


_EMBEDDINGS_MISSING_UNITS_OR_READER = (
    f"SELECT {CHUNK_TEXT} FROM knowledge_chunks c WHERE c.id IN ("
    f"SELECT chunk_id FROM ({_missing_ids('unit_vectors')}) UNION SELECT chunk_id FROM ({_missing_ids('reader_vectors')})"
    ") ORDER BY c.id LIMIT :limit"
)
"""Either column missing: each partial index walked in id order up to the limit, the two lists merged
(``… OR …`` on one walk would read every missing row past ``:after`` and sort them, on every page)."""


def embeddings_missing_units(
    conn: sqlite3.Connection, model: str, after_id: int, limit: int, reader: bool = False
) -> list[ChunkText]:
    """Chunks with line records whose ``model`` vector has no unit vectors (with ``reader``: or
    no reader vectors), by id."""
    sql = _EMBEDDINGS_MISSING_UNITS_OR_READER if reader else _EMBEDDINGS_MISSING_UNITS
    rows = conn.execute(sql, {"model": model, "after": after_id, "limit": limit}).fetchall()
    return [chunk_text(r) for r in rows]


def unit_lexical_rewrites(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[int, str, str]]:
    """For a lexical reindex (on a reader, outside the write lock): ``(id, content, unit tokens
    as JSON)`` of the chunks of ``ids`` whose stored unit tokens differ from what the current
    tokenizer makes of their line records (chunks without line records are left out)."""
    out: list[tuple[int, str, str]] = []
    for chunk_id, content, location, stored in conn.execute(
        "SELECT id, content, location, unit_lexical FROM knowledge_chunks WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ):
        made = unit_lexical_json(unit_lexical_of(content, json.loads(location)))
        if made is not None and made != stored:
            out.append((int(chunk_id), content, made))
    return out


def write_unit_lexical_rewrites(conn: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Write :func:`unit_lexical_rewrites` where the chunk still holds the content they were made from."""
    conn.executemany("UPDATE knowledge_chunks SET unit_lexical = ?3 WHERE id = ?1 AND content = ?2", rows)


__all__ = [
    "CHUNK_TEXT",
    "HAS_LINES",
    "chunk_text",
    "chunks_missing_units",
    "compact_line_vectors",
    "embeddings_missing_units",
    "fetch_chunks_with_units",
    "fetch_units",
    "reader_blob",
    "unit_lexical_json",
    "unit_lexical_rewrites",
    "units_blob",
    "units_from_blob",
    "write_unit_lexical_rewrites",
]
