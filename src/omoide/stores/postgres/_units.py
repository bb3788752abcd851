"""Retrieval units on PostgreSQL (:mod:`omoide.stores.units`): the SQL and the encodings.

* ``knowledge_chunks.unit_lexical`` is ``jsonb``: ``NULL`` or an array of strings, the
  search tokens of each line record (space-joined).
* ``chunk_embeddings.unit_vectors`` is ``bytea``: ``NULL`` or the row's unit vectors,
  ``lines × dimensions`` (the row's ``dimensions``), int8 with a scale per line
  (:mod:`omoide.stores.unit_codec`); rows written before that form hold little-endian float16,
  row-major, and are still read. They are read back as float32.
* ``chunk_embeddings.reader_vectors`` (migration 15) is ``bytea`` too: ``NULL`` or the line
  reader's vectors of the same lines, stored the same way (``lines × READER_DIMENSIONS``).

A chunk "has line records" when ``location->'lines'`` is a non-empty JSON array
(:data:`HAS_LINES`): only those get units; a chunk without (an imported document) keeps
``NULL`` and is never counted as missing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from omoide.stores._erasure_common import content_hash
from omoide.stores._knowledge_checks import CheckedLines
from omoide.stores.knowledge import ChunkId, ChunkText, SourceId, UnitLexicalRow
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


def has_lines(alias: str = "c") -> str:
    """The condition "the chunk ``alias`` has line records" (never raises on odd JSON)."""
    lines = f"{alias}.location->'lines'"
    return f"(CASE WHEN jsonb_typeof({lines}) = 'array' THEN jsonb_array_length({lines}) > 0 ELSE false END)"


HAS_LINES = has_lines()


def encode_unit_vectors(matrix: npt.NDArray[np.float32] | None) -> bytes | None:
    """A checked ``(lines, dimensions)`` matrix as the ``bytea`` stored (``None`` stays ``None``);
    the reader's vectors are stored the same way (:func:`~omoide.stores.units.encode_reader_vectors`)."""
    return encode_matrix(matrix)


def decode_unit_vectors(data: bytes | None, dimensions: int | None) -> npt.NDArray[np.float32] | None:
    """The float32 ``(lines, dimensions)`` matrix of a stored ``bytea`` (``None`` when absent or
    not a whole matrix, which only a hand-edited row could be)."""
    return decode_matrix(data, dimensions, legacy=HALF_DTYPE)


def unit_lexical_json(tokens: Sequence[str] | None) -> str | None:
    """``unit_lexical`` as the JSON text bound to a ``::jsonb`` parameter."""
    return None if tokens is None else json.dumps(list(tokens), ensure_ascii=False)


def chunk_unit_lexical(content: str, location: Mapping[str, Any]) -> str | None:
    """The ``unit_lexical`` JSON of a chunk as stored now (:func:`unit_lexical_of`)."""
    return unit_lexical_json(unit_lexical_of(content, location))


def _chunk_text(row: Mapping[str, Any]) -> ChunkText:
    return ChunkText(
        id=ChunkId(int(row["id"])),
        source_id=SourceId(int(row["source_id"])),
        workspace_id=row["workspace_id"],
        content=row["content"],
        location=json.loads(row["location"]),
    )


_MISSING_UNITS = f"""
SELECT c.id, c.source_id, c.workspace_id, c.content, c.location FROM knowledge_chunks c
WHERE c.id > $1 AND c.unit_lexical IS NULL AND {HAS_LINES}
ORDER BY c.id
LIMIT $2
"""
_PUT_UNIT_LEXICAL = """
UPDATE knowledge_chunks c SET unit_lexical = u.unit_lexical::jsonb
FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, content, unit_lexical)
WHERE c.id = u.id AND c.content = u.content AND c.unit_lexical IS NULL
"""
_EMBEDDINGS_MISSING = f"""
SELECT c.id, c.source_id, c.workspace_id, c.content, c.location
FROM chunk_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id AND c.workspace_id = e.workspace_id
WHERE e.model = $1 AND e.chunk_id > $2 AND {{missing}} AND {HAS_LINES}
ORDER BY e.chunk_id
LIMIT $3
"""
_EMBEDDINGS_MISSING_UNITS = _EMBEDDINGS_MISSING.format(missing="e.unit_vectors IS NULL")
_EMBEDDINGS_MISSING_UNITS_OR_READER = _EMBEDDINGS_MISSING.format(
    missing="(e.unit_vectors IS NULL OR e.reader_vectors IS NULL)"
)
_SHARE_CHUNKS = "SELECT id, content FROM knowledge_chunks WHERE id = ANY($1::bigint[]) ORDER BY id FOR SHARE"
_SHARE_CHUNKS_IN_WORKSPACE = (
    "SELECT id, content FROM knowledge_chunks WHERE workspace_id = $2 AND id = ANY($1::bigint[]) ORDER BY id FOR SHARE"
)
_CHUNK_WORKSPACES = (
    "SELECT workspace_id, array_agg(id ORDER BY id) AS ids FROM knowledge_chunks WHERE id = ANY($1::bigint[]) "
    "GROUP BY workspace_id ORDER BY workspace_id"
)


async def chunk_workspaces(conn: asyncpg.Connection, ids: Sequence[int]) -> dict[str, list[int]]:
    """The existing chunks among ``ids`` grouped by workspace (workspaces and ids ascending)."""
    return {str(g["workspace_id"]): [int(i) for i in g["ids"]] for g in await conn.fetch(_CHUNK_WORKSPACES, list(ids))}


async def share_chunks(conn: asyncpg.Connection, ids: Sequence[int], *, citus: bool = False) -> list[asyncpg.Record]:
    """``id`` and ``content`` of the chunks among ``ids``, locked ``FOR SHARE`` (inside the caller's transaction).

    Citus refuses row locks in a statement that spans shards, so there the ids are first
    grouped by workspace (a plain read) and each group is locked by a routed statement.
    """
    if not citus:
        return list(await conn.fetch(_SHARE_CHUNKS, list(ids)))
    found: list[asyncpg.Record] = []
    for ws, group in (await chunk_workspaces(conn, ids)).items():
        found += await conn.fetch(_SHARE_CHUNKS_IN_WORKSPACE, group, ws)
    return found


_PUT_UNIT_VECTORS = """
UPDATE chunk_embeddings e
SET unit_vectors = coalesce(u.unit_vectors, e.unit_vectors), reader_vectors = coalesce(u.reader_vectors, e.reader_vectors)
FROM unnest($2::bigint[], $3::text[], $4::bytea[], $6::bytea[])
    AS u(chunk_id, content_hash, unit_vectors, reader_vectors)
WHERE e.model = $1 AND e.chunk_id = u.chunk_id AND e.dimensions = $5
  AND (e.content_hash IS NULL OR e.content_hash = u.content_hash)
"""
_FETCH_UNITS = """
SELECT c.id, c.unit_lexical::text AS unit_lexical, e.dimensions, e.unit_vectors, e.reader_vectors
FROM knowledge_chunks c
LEFT JOIN chunk_embeddings e
    ON e.chunk_id = c.id AND e.workspace_id = c.workspace_id AND e.model = $2 AND e.chunk_id = ANY($1::bigint[])
WHERE c.id = ANY($1::bigint[])
"""
_FETCH_UNIT_LEXICAL = """
SELECT c.id, c.unit_lexical::text AS unit_lexical FROM knowledge_chunks c WHERE c.id = ANY($1::bigint[])
"""


_LEGACY_LINE_VECTORS = """
SELECT chunk_id, model, dimensions, unit_vectors, reader_vectors FROM chunk_embeddings
WHERE chunk_id > $1 AND (substring(unit_vectors from 1 for 4) <> $3 OR substring(reader_vectors from 1 for 4) <> $3)
ORDER BY chunk_id, model LIMIT $2
"""
_COMPACT_LINE_VECTORS = """
UPDATE chunk_embeddings e
SET unit_vectors = coalesce(v.unit_vectors, e.unit_vectors), reader_vectors = coalesce(v.reader_vectors, e.reader_vectors)
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[])
    AS v(chunk_id, model, unit_md5, reader_md5, unit_vectors, reader_vectors)
WHERE e.chunk_id = v.chunk_id AND e.model = v.model
  AND md5(e.unit_vectors) IS NOT DISTINCT FROM v.unit_md5 AND md5(e.reader_vectors) IS NOT DISTINCT FROM v.reader_md5
"""


def _md5(data: bytes | None) -> str | None:
    return None if data is None else hashlib.md5(data, usedforsecurity=False).hexdigest()


async def legacy_line_vectors(conn: asyncpg.Connection, after_id: int, limit: int) -> list[asyncpg.Record]:
    """A page of stored vectors, by chunk id ``> after_id``, whose line vectors are in an older form."""
    return list(await conn.fetch(_LEGACY_LINE_VECTORS, after_id, limit, MAGIC))


async def write_compacted(conn: asyncpg.Connection, rows: Sequence[asyncpg.Record]) -> int:
    """Rewrite the line vectors of ``rows`` (read by :func:`legacy_line_vectors`) in the int8 form,
    in one ``UPDATE`` where both stored values still hash to what was read (``md5``: a vector
    re-embedded, given its reader's vectors or erased meanwhile is left as it now is)."""
    writes = []
    for r in rows:
        units = reencode(r["unit_vectors"], r["dimensions"], legacy=HALF_DTYPE)
        reader = reencode(r["reader_vectors"], READER_DIMENSIONS, legacy=HALF_DTYPE)
        if units is not None or reader is not None:
            writes.append((r, units, reader))
    if not writes:
        return 0
    status = await conn.execute(
        _COMPACT_LINE_VECTORS,
        [r["chunk_id"] for r, _, _ in writes],
        [r["model"] for r, _, _ in writes],
        [_md5(r["unit_vectors"]) for r, _, _ in writes],
        [_md5(r["reader_vectors"]) for r, _, _ in writes],
        [units for _, units, _ in writes],
        [reader for _, _, reader in writes],
    )
    return _count(status)


async def compact_line_vectors(conn: asyncpg.Connection, after_id: int, limit: int) -> CompactedPage:
    """:meth:`~omoide.stores.knowledge.KnowledgeStore.compact_line_vectors`: a page read, then written
    where unchanged (:func:`write_compacted`)."""
    rows = await legacy_line_vectors(conn, after_id, limit)
    rewritten = await write_compacted(conn, rows)
    last = await conn.fetchval("SELECT coalesce(max(chunk_id), 0) FROM chunk_embeddings")
    return CompactedPage(next_page([(r["chunk_id"],) for r in rows], limit), rewritten, int(last))


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])  # "UPDATE <count>"


async def chunks_missing_units(conn: asyncpg.Connection, after_id: int, limit: int) -> list[ChunkText]:
    return [_chunk_text(r) for r in await conn.fetch(_MISSING_UNITS, after_id, limit)]


async def put_unit_lexical(conn: asyncpg.Connection, rows: Sequence[UnitLexicalRow]) -> int:
    """One ``UPDATE``: only chunks still holding the content read and still without units."""
    status = await conn.execute(
        _PUT_UNIT_LEXICAL,
        [int(r.chunk_id) for r in rows],
        [r.content for r in rows],
        [unit_lexical_json(r.unit_lexical) for r in rows],
    )
    return _count(status)


async def embeddings_missing_units(
    conn: asyncpg.Connection, model: str, after_id: int, limit: int, *, reader: bool = False
) -> list[ChunkText]:
    """Chunks with line records whose ``model`` row has no unit vectors (with ``reader``: or no
    reader vectors), by id: a walk of the primary key ``(chunk_id, model)`` from ``after_id``."""
    sql = _EMBEDDINGS_MISSING_UNITS_OR_READER if reader else _EMBEDDINGS_MISSING_UNITS
    return [_chunk_text(r) for r in await conn.fetch(sql, model, after_id, limit)]


async def put_unit_vectors(
    conn: asyncpg.Connection, model: str, dimensions: int, rows: Sequence[CheckedLines], *, citus: bool = False
) -> int:
    """Set the unit vectors of existing ``model`` vectors of ``dimensions`` whose content hash
    is the row's (a vector stored without a hash: when the chunk's content hashes to it), and
    their reader vectors: each kind when the row has it (``coalesce``: a row without keeps the
    stored ones).

    The chunks are read ``FOR SHARE`` in the writing transaction, as by ``put_embeddings``: an
    erasure rewriting one commits first (its text no longer hashes to the row's, skipped) or
    waits for this to commit (and then drops the vector with its unit vectors).
    """
    async with conn.transaction():
        current = {r["id"]: r["content"] for r in await share_chunks(conn, [r.chunk_id for r in rows], citus=citus)}
        writes = [
            row for row in rows if row.chunk_id in current and row.content_hash == content_hash(current[row.chunk_id])
        ]
        if not writes:
            return 0
        status = await conn.execute(
            _PUT_UNIT_VECTORS,
            model,
            [row.chunk_id for row in writes],
            [row.content_hash for row in writes],
            [encode_unit_vectors(row.units) for row in writes],
            dimensions,
            [encode_reader_vectors(row.reader) for row in writes],
        )
    return _count(status)


async def fetch_units(conn: asyncpg.Connection, ids: Sequence[int], model: str | None) -> dict[ChunkId, ChunkUnits]:
    """One query by primary keys (the chunks, and with ``model`` their ``model`` rows)."""
    if model is None:
        rows = await conn.fetch(_FETCH_UNIT_LEXICAL, list(ids))
        return {ChunkId(r["id"]): ChunkUnits(unit_tokens(r["unit_lexical"]), None) for r in rows}
    rows = await conn.fetch(_FETCH_UNITS, list(ids), model)
    return {
        ChunkId(r["id"]): ChunkUnits(
            unit_tokens(r["unit_lexical"]),
            decode_unit_vectors(r["unit_vectors"], r["dimensions"]),
            decode_reader_vectors(r["reader_vectors"]),
        )
        for r in rows
    }


def unit_tokens(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    value = json.loads(text)
    return tuple(value) if isinstance(value, list) else None


def units_status_sql(workspace: str | None) -> str:
    """The status rows of units: ``chunks`` and ``units_missing`` from one scan of the chunks,
    ``unit_vectors_missing`` and ``reader_vectors_missing`` per model (a model only where some are
    missing) from one scan of the vectors (``workspace``: a parameter reference, or ``None`` for all)."""
    chunks_where = "" if workspace is None else f" WHERE c.workspace_id = {workspace}"
    embeddings_where = "" if workspace is None else f" AND e.workspace_id = {workspace}"
    return (
        "SELECT k.kind, '' AS key, k.n FROM (SELECT count(*) AS total, "
        f"count(*) FILTER (WHERE c.unit_lexical IS NULL AND {HAS_LINES}) AS missing "
        f"FROM knowledge_chunks c{chunks_where}) x, "
        "LATERAL (VALUES ('chunks', x.total), ('units_missing', x.missing)) AS k(kind, n) "
        "UNION ALL SELECT v.kind, m.model, v.n FROM (SELECT e.model, "
        "count(*) FILTER (WHERE e.unit_vectors IS NULL) AS units, "
        "count(*) FILTER (WHERE e.reader_vectors IS NULL) AS reader "
        "FROM chunk_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id AND c.workspace_id = e.workspace_id "
        f"WHERE (e.unit_vectors IS NULL OR e.reader_vectors IS NULL) AND {HAS_LINES}{embeddings_where} "
        "GROUP BY e.model) m, "
        "LATERAL (VALUES ('unit_vectors_missing', m.units), ('reader_vectors_missing', m.reader)) AS v(kind, n) "
        "WHERE v.n > 0"
    )


__all__ = [
    "HAS_LINES",
    "chunk_unit_lexical",
    "chunk_workspaces",
    "chunks_missing_units",
    "compact_line_vectors",
    "decode_unit_vectors",
    "embeddings_missing_units",
    "encode_unit_vectors",
    "fetch_units",
    "has_lines",
    "put_unit_lexical",
    "put_unit_vectors",
    "share_chunks",
    "unit_lexical_json",
    "unit_tokens",
    "units_status_sql",
]
