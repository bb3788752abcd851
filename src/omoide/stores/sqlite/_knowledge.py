"""Knowledge operations (long-term memory) as plain synchronous functions on one connection.

Like :mod:`~omoide.stores.sqlite._sessions`, each function is one whole store operation
that :class:`~omoide.stores.sqlite.knowledge.SqliteKnowledge` runs in the thread owning the
connection, with arguments the contract (:class:`~omoide.stores.knowledge.KnowledgeStore`) checked.
Writers run inside ``BEGIN IMMEDIATE`` (opened by the caller), so a function that reads
and then writes sees no other writer in between; that is what makes
:func:`archive_session`'s version check and :func:`claim_sources` atomic, in this process
and against other processes using the same file.

Why no message is ever lost or archived twice: an append bumps the session's ``version``
and takes ``seq = last_seq + 1``. The archive transaction checks the version the archiver
read; if an append slipped in, the plan is refused (:class:`~omoide.errors.VersionConflict`)
and the archiver re-reads. Otherwise ``last_seq`` is exactly what the archiver saw, the
watermark moves to ``upto_seq``, and only messages with ``seq <= upto_seq`` (and not among
the newest ``keep_newest``) are deleted. A message appended after the commit gets a larger
``seq`` and stays unarchived until the next run.

Vectors are float32 little-endian BLOBs (``4 * dimensions`` bytes); lexical search uses
the FTS5 table ``knowledge_chunks_fts``, filled by the triggers of migration 1.

Retrieval units (migration 10, :mod:`omoide.stores.units`): ``knowledge_chunks.unit_lexical``
is a JSON array of token strings, one per line record; ``chunk_embeddings.unit_vectors`` the
unit vectors of that row's model (``lines x dimensions``) and ``chunk_embeddings.reader_vectors``
(migration 14) the line reader's vectors of the same lines (``lines x READER_DIMENSIONS``), both
int8 with a scale per line (:mod:`omoide.stores.sqlite._units`).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.models import Session, SessionStatus
from omoide.stores._erasure_common import content_hash, stale_rows
from omoide.stores._knowledge_checks import CheckedLines, CheckedVector
from omoide.stores._knowledge_common import (
    check_archive_range,
    prune_through,
    session_not_found,
    source_members,
    source_not_found,
    status_from_rows,
    to_json,
    version_conflict,
)
from omoide.stores.knowledge import (
    ArchivePlan,
    ArchivePlanner,
    ArchiveResult,
    ChunkDraft,
    ChunkId,
    ChunkText,
    KnowledgeChunk,
    KnowledgeSource,
    KnowledgeStatus,
    SourceDraft,
    SourceId,
    SourceStatus,
    UnitLexicalRow,
)
from omoide.stores.sqlite._conn import format_ts, parse_ts
from omoide.stores.sqlite._rows import SESSION_COLUMNS, session_from_row
from omoide.stores.sqlite._search import record_tokenizer
from omoide.stores.sqlite._sessions import get_session_by_id
from omoide.stores.sqlite._sessions import messages as session_messages
from omoide.stores.sqlite._units import (
    CHUNK_TEXT,
    HAS_LINES,
    chunk_text,
    chunks_missing_units,
    embeddings_missing_units,
    reader_blob,
    unit_lexical_json,
    units_blob,
)
from omoide.text import search_tokenizer_name

VECTOR_DTYPE = np.dtype("<f4")

SOURCE_COLUMNS = (
    "s.id, s.workspace_id, s.type, s.title, s.uri, s.status, s.metadata, s.error, s.attempts, s.created_at, "
    "s.updated_at, (SELECT count(*) FROM knowledge_chunks c WHERE c.source_id = s.id), s.private, s.members"
)
CHUNK_COLUMNS = (
    "id, source_id, workspace_id, chunk_index, content, lexical, token_count, location, channel_id, thread_id, "
    "author_ids, started_at, ended_at, created_at"
)

_INSERT_SOURCE = """
INSERT INTO knowledge_sources (workspace_id, type, title, uri, status, metadata, attempts, created_at, updated_at,
                               private, members)
VALUES (?, ?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?)
"""
_INSERT_CHUNK = """
INSERT INTO knowledge_chunks (source_id, workspace_id, channel_id, thread_id, chunk_index, content, lexical,
                              location, author_ids, token_count, started_at, ended_at, created_at, private, members,
                              unit_lexical)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
SESSIONS_TO_ARCHIVE_SQL = f"""
SELECT {SESSION_COLUMNS} FROM sessions
WHERE last_seq > archived_seq
  AND (last_active_at < ? OR last_seq - archived_seq >= ?)
ORDER BY last_active_at, id
LIMIT ?
"""
CLAIM_SQL = """
UPDATE knowledge_sources
SET status = 'processing', claimed_at = ?1, attempts = attempts + 1, updated_at = ?1
WHERE id IN (
    SELECT id FROM knowledge_sources INDEXED BY knowledge_sources_claimable_idx  -- walk ids in order, stop at LIMIT
    WHERE status IN ('pending', 'processing')
      AND (status = 'pending' OR claimed_at < ?2)
    ORDER BY id
    LIMIT ?3
)
RETURNING id
"""
_PUT_EMBEDDING = """
INSERT INTO chunk_embeddings (chunk_id, workspace_id, model, dimensions, embedding, content_hash, embedded_at,
                              unit_vectors, reader_vectors)
SELECT id, workspace_id, ?, ?, ?, ?, ?, ?, ? FROM knowledge_chunks WHERE id = ?
ON CONFLICT (chunk_id, model) DO UPDATE
SET dimensions = excluded.dimensions, embedding = excluded.embedding,
    content_hash = excluded.content_hash, embedded_at = excluded.embedded_at, unit_vectors = excluded.unit_vectors,
    reader_vectors = excluded.reader_vectors
"""
_PUT_UNIT_LEXICAL = "UPDATE knowledge_chunks SET unit_lexical = ? WHERE id = ? AND content = ? AND unit_lexical IS NULL"
_PUT_UNIT_VECTORS = """
UPDATE chunk_embeddings SET unit_vectors = coalesce(?, unit_vectors), reader_vectors = coalesce(?, reader_vectors)
WHERE chunk_id = ? AND model = ? AND dimensions = ? AND (content_hash IS NULL OR content_hash = ?)
"""
# the unit counts walk the partial indexes of migrations 10 and 14 (small once `reindex --units`
# ran), never every chunk of the workspace
STATUS_SQL = """
SELECT 'session', status, count(*) FROM sessions GROUP BY status
UNION ALL SELECT 'unarchived', '', coalesce(sum(last_seq - archived_seq), 0) FROM sessions
UNION ALL SELECT 'source', status, count(*) FROM knowledge_sources GROUP BY status
UNION ALL SELECT 'chunks', '', count(*) FROM knowledge_chunks
UNION ALL SELECT 'embedded', model, count(*) FROM chunk_embeddings GROUP BY model
UNION ALL SELECT 'units_missing', '', count(*) FROM knowledge_chunks c INDEXED BY knowledge_chunks_units_missing_idx
    WHERE c.unit_lexical IS NULL AND {has_lines}
UNION ALL SELECT 'unit_vectors_missing', e.model, count(*) FROM chunk_embeddings e INDEXED BY chunk_embeddings_units_missing_idx
    JOIN knowledge_chunks c ON c.id = e.chunk_id
    WHERE e.unit_vectors IS NULL AND {has_lines} GROUP BY e.model
UNION ALL SELECT 'reader_vectors_missing', e.model, count(*) FROM chunk_embeddings e INDEXED BY chunk_embeddings_reader_missing_idx
    JOIN knowledge_chunks c ON c.id = e.chunk_id
    WHERE e.reader_vectors IS NULL AND {has_lines} GROUP BY e.model
""".format(has_lines=HAS_LINES.format(c="c"))

WORKSPACE_STATUS_SQL = """
SELECT 'session', status, count(*) FROM sessions WHERE workspace_id = :ws GROUP BY status
UNION ALL SELECT 'unarchived', '', coalesce(sum(last_seq - archived_seq), 0) FROM sessions WHERE workspace_id = :ws
UNION ALL SELECT 'source', status, count(*) FROM knowledge_sources WHERE workspace_id = :ws GROUP BY status
UNION ALL SELECT 'chunks', '', count(*) FROM knowledge_chunks WHERE workspace_id = :ws
UNION ALL SELECT 'embedded', model, count(*) FROM chunk_embeddings WHERE workspace_id = :ws GROUP BY model
UNION ALL SELECT 'units_missing', '', count(*) FROM knowledge_chunks c INDEXED BY knowledge_chunks_units_missing_idx
    WHERE c.unit_lexical IS NULL AND c.workspace_id = :ws AND {has_lines}
UNION ALL SELECT 'unit_vectors_missing', e.model, count(*) FROM chunk_embeddings e INDEXED BY chunk_embeddings_units_missing_idx
    JOIN knowledge_chunks c ON c.id = e.chunk_id
    WHERE e.unit_vectors IS NULL AND e.workspace_id = :ws AND {has_lines} GROUP BY e.model
UNION ALL SELECT 'reader_vectors_missing', e.model, count(*) FROM chunk_embeddings e INDEXED BY chunk_embeddings_reader_missing_idx
    JOIN knowledge_chunks c ON c.id = e.chunk_id
    WHERE e.reader_vectors IS NULL AND e.workspace_id = :ws AND {has_lines} GROUP BY e.model
""".format(has_lines=HAS_LINES.format(c="c"))


# ---------------------------------------------------------------------------- rows


def _ts(text: str | None) -> datetime | None:
    return None if text is None else parse_ts(text)


def _ts_text(value: datetime | None) -> str | None:
    return None if value is None else format_ts(value)


def source_from_row(row: Sequence[Any]) -> KnowledgeSource:
    return KnowledgeSource(
        id=SourceId(row[0]),
        workspace_id=row[1],
        type=row[2],
        title=row[3] or "",
        uri=row[4],
        status=SourceStatus(row[5]),
        metadata=json.loads(row[6]),
        error=row[7],
        attempts=row[8],
        chunk_count=row[11],
        created_at=parse_ts(row[9]),
        updated_at=parse_ts(row[10]),
        private=bool(row[12]),
        members=tuple(json.loads(row[13])),
    )


def chunk_from_row(row: Sequence[Any]) -> KnowledgeChunk:
    return KnowledgeChunk(
        id=ChunkId(row[0]),
        source_id=SourceId(row[1]),
        workspace_id=row[2],
        chunk_index=row[3],
        content=row[4],
        lexical=row[5],
        token_count=row[6],
        location=json.loads(row[7]),
        channel_id=row[8],
        thread_id=row[9],
        author_ids=tuple(json.loads(row[10])),
        started_at=_ts(row[11]),
        ended_at=_ts(row[12]),
        created_at=parse_ts(row[13]),
    )


def vector_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """The stored form of a vector: float32 little-endian bytes."""
    return np.ascontiguousarray(vector, dtype=VECTOR_DTYPE).tobytes()


def vector_from_blob(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)


# --------------------------------------------------------------------------- writes
# Each runs inside the caller's BEGIN IMMEDIATE transaction.


def insert_source(
    conn: sqlite3.Connection, source: SourceDraft, chunks: Sequence[ChunkDraft], now: datetime
) -> tuple[SourceId, list[ChunkId]]:
    """Insert a pending source and its chunks (``chunk_index`` 0, 1, …); return their ids."""
    stamp = format_ts(now)
    private, members = int(source.private), source_members(source)
    cursor = conn.execute(
        _INSERT_SOURCE,
        (
            source.workspace_id,
            source.type,
            source.title,
            source.uri,
            to_json(source.metadata, what="SourceDraft.metadata"),
            stamp,
            stamp,
            private,
            members,
        ),
    )
    source_id = cursor.lastrowid
    assert source_id is not None
    if not chunks:
        return SourceId(source_id), []
    record_tokenizer(conn, search_tokenizer_name(), now)  # the index's tokenizer, for search
    conn.executemany(
        _INSERT_CHUNK,
        [
            (
                source_id,
                source.workspace_id,
                chunk.channel_id,
                chunk.thread_id,
                index,
                chunk.content,
                chunk.lexical,
                to_json(chunk.location, what=f"chunk {index}: location"),
                to_json(list(chunk.author_ids), what=f"chunk {index}: author_ids"),
                chunk.token_count,
                _ts_text(chunk.started_at),
                _ts_text(chunk.ended_at),
                stamp,
                private,
                members,
                unit_lexical_json(chunk.unit_lexical),
            )
            for index, chunk in enumerate(chunks)
        ],
    )
    rows = conn.execute("SELECT id FROM knowledge_chunks WHERE source_id = ? ORDER BY chunk_index", (source_id,))
    return SourceId(source_id), [ChunkId(r[0]) for r in rows]


def archive_session(conn: sqlite3.Connection, plan: ArchivePlan, now: datetime) -> ArchiveResult:
    """Apply ``plan`` (see :meth:`omoide.stores.knowledge.KnowledgeStore.archive_session`).

    Raises:
        SessionNotFound: the session is gone.
        VersionConflict: its version is not ``plan.expected_version``.
        InvalidInput: ``upto_seq`` does not fit, or the source is of another workspace.
    """
    sid = plan.session_id
    row = conn.execute(
        "SELECT version, archived_seq, last_seq, workspace_id FROM sessions WHERE id = ?", (sid,)
    ).fetchone()
    if row is None:
        raise session_not_found(sid)
    version, archived_seq, last_seq, workspace_id = row
    if version != plan.expected_version:
        raise version_conflict(sid, plan.expected_version, version)
    return _apply_archive(conn, plan, archived_seq=archived_seq, last_seq=last_seq, workspace_id=workspace_id, now=now)


def archive_session_locked(
    conn: sqlite3.Connection, session_id: int, planner: ArchivePlanner, now: datetime
) -> tuple[ArchivePlan, ArchiveResult] | None:
    """Read, plan and apply in one ``BEGIN IMMEDIATE`` transaction (no writer can come between).

    The planner gets the session and every message it still stores (unarchived + overlap).

    Raises:
        SessionNotFound: the session is gone.
        InvalidInput: the plan does not fit the session (the contract's planner checks the rest).
    """
    session = get_session_by_id(conn, session_id)
    if session is None:
        raise session_not_found(session_id)
    plan = planner(session, session_messages(conn, session_id, 0, None))  # all stored: unarchived + kept overlap
    if plan is None:
        return None
    result = _apply_archive(
        conn,
        plan,
        archived_seq=session.archived_seq,
        last_seq=session.last_seq,
        workspace_id=session.workspace_id,
        now=now,
    )
    return plan, result


def _apply_archive(
    conn: sqlite3.Connection, plan: ArchivePlan, *, archived_seq: int, last_seq: int, workspace_id: str, now: datetime
) -> ArchiveResult:
    """The writes of an archive, once the session is known to be as planned."""
    sid = plan.session_id
    check_archive_range(plan, archived_seq=archived_seq, last_seq=last_seq, workspace_id=workspace_id)
    source_id: SourceId | None = None
    chunk_ids: list[ChunkId] = []
    if plan.source is not None:
        source_id, chunk_ids = insert_source(conn, plan.source, plan.chunks, now)
    cut = prune_through(plan, last_seq)
    pruned = 0
    if cut > 0:
        pruned = conn.execute("DELETE FROM session_messages WHERE session_id = ? AND seq <= ?", (sid, cut)).rowcount
    new_version = conn.execute(
        "UPDATE sessions SET archived_seq = ?, status = ?, version = version + 1 WHERE id = ? RETURNING version",
        (plan.upto_seq, SessionStatus(plan.status).value, sid),
    ).fetchone()[0]
    return ArchiveResult(source_id=source_id, chunk_ids=tuple(chunk_ids), pruned=pruned, session_version=new_version)


def claim_sources(conn: sqlite3.Connection, limit: int, lease_seconds: float, now: datetime) -> list[SourceId]:
    """Claim pending sources and those whose lease expired, oldest first (one UPDATE … RETURNING)."""
    expired_before = format_ts(now - timedelta(seconds=lease_seconds))
    rows = conn.execute(CLAIM_SQL, (format_ts(now), expired_before, limit)).fetchall()
    return sorted(SourceId(r[0]) for r in rows)


def _contents(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """The current content of the chunks of ``ids`` that still exist."""
    return {
        int(r[0]): r[1]
        for r in conn.execute(
            "SELECT id, content FROM knowledge_chunks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        )
    }


def put_embeddings(
    conn: sqlite3.Connection, model: str, dimensions: int, rows: Sequence[CheckedVector], now: datetime
) -> int:
    """Upsert vectors (and their unit and reader vectors, or NULL); rows whose chunk no longer
    exists, or now holds other text, are skipped. Returns rows written."""
    stamp = format_ts(now)
    hashes = [(row.chunk_id, row.content_hash) for row in rows if row.content_hash is not None]
    if hashes:
        stale = stale_rows(_contents(conn, [c for c, _ in hashes]), hashes)
        rows = [r for r in rows if r[0] not in stale]
    cursor = conn.executemany(
        _PUT_EMBEDDING,
        [
            (
                model,
                dimensions,
                vector_blob(vector),
                digest,
                stamp,
                units_blob(units),
                reader_blob(reader),
                chunk_id,
            )
            for chunk_id, vector, digest, units, reader in rows
        ],
    )
    return max(cursor.rowcount, 0)


def put_unit_lexical(conn: sqlite3.Connection, rows: Sequence[UnitLexicalRow]) -> int:
    """Set the unit tokens of chunks that have none and still hold the content they were made
    from; returns rows written."""
    cursor = conn.executemany(
        _PUT_UNIT_LEXICAL, [(unit_lexical_json(r.unit_lexical), r.chunk_id, r.content) for r in rows]
    )
    return max(cursor.rowcount, 0)


def put_unit_vectors(conn: sqlite3.Connection, model: str, dimensions: int, rows: Sequence[CheckedLines]) -> int:
    """Set the unit vectors of existing ``model`` vectors of ``dimensions`` whose content hash
    is the row's (a vector stored without a hash: when the chunk's content hashes to it), and
    their reader vectors: each kind when the row has it (a row without keeps the stored ones);
    returns rows written."""
    current = _contents(conn, [r[0] for r in rows])
    writes = [
        (units_blob(units), reader_blob(reader), chunk_id, model, dimensions, digest)
        for chunk_id, digest, units, reader in rows
        if chunk_id in current and digest == content_hash(current[chunk_id])
    ]
    if not writes:
        return 0
    return max(conn.executemany(_PUT_UNIT_VECTORS, writes).rowcount, 0)


def release_sources(conn: sqlite3.Connection, source_ids: Sequence[int], now: datetime) -> int:
    """Claimed sources back to ``pending`` without counting the claim as an attempt; returns how many."""
    cursor = conn.execute(
        "UPDATE knowledge_sources SET status = 'pending', claimed_at = NULL, attempts = max(attempts - 1, 0), "
        "updated_at = ? WHERE status = 'processing' AND id IN (SELECT value FROM json_each(?))",
        (format_ts(now), json.dumps(list(source_ids))),
    )
    return max(cursor.rowcount, 0)


def renew_claims(conn: sqlite3.Connection, source_ids: Sequence[int], now: datetime) -> int:
    """Claimed sources still ``processing``: their lease starts again now; returns how many."""
    stamp = format_ts(now)
    cursor = conn.execute(
        "UPDATE knowledge_sources SET claimed_at = ?, updated_at = ? "
        "WHERE status = 'processing' AND id IN (SELECT value FROM json_each(?))",
        (stamp, stamp, json.dumps(list(source_ids))),
    )
    return max(cursor.rowcount, 0)


def finish_source(
    conn: sqlite3.Connection, source_id: int, status: SourceStatus, error: str | None, now: datetime
) -> None:
    """Set the status (and error) and drop the lease.

    Raises:
        NotFoundError: no source has this id.
    """
    cursor = conn.execute(
        "UPDATE knowledge_sources SET status = ?, error = ?, claimed_at = NULL, updated_at = ? WHERE id = ?",
        (status.value, error, format_ts(now), source_id),
    )
    if cursor.rowcount == 0:
        raise source_not_found(source_id)


# ---------------------------------------------------------------------------- reads


def sessions_to_archive(
    conn: sqlite3.Connection, idle_before: datetime, min_unarchived: int, limit: int
) -> list[Session]:
    rows = conn.execute(SESSIONS_TO_ARCHIVE_SQL, (format_ts(idle_before), min_unarchived, limit)).fetchall()
    return [session_from_row(r) for r in rows]


def chunks_missing_embedding(
    conn: sqlite3.Connection,
    model: str,
    source_ids: Sequence[int] | None,
    after_id: int,
    limit: int,
    settled_only: bool = False,
) -> list[ChunkText]:
    where = "c.id > ? AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id AND e.model = ?)"
    params: list[Any] = [after_id, model]
    if settled_only:
        where += f" AND {_SETTLED}"
    if source_ids is not None:
        where += " AND c.source_id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(source_ids)))
    rows = conn.execute(
        f"SELECT {CHUNK_TEXT} FROM knowledge_chunks c WHERE {where} ORDER BY c.id LIMIT ?", (*params, limit)
    ).fetchall()
    return [chunk_text(r) for r in rows]


_SETTLED = "EXISTS (SELECT 1 FROM knowledge_sources s WHERE s.id = c.source_id AND s.status IN ('ready', 'failed'))"
"""A chunk whose source no claim will embed (see ``KnowledgeStore.chunks_missing_embedding``)."""


def get_source(conn: sqlite3.Connection, source_id: int) -> KnowledgeSource | None:
    row = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM knowledge_sources s WHERE s.id = ?", (source_id,)).fetchone()
    return None if row is None else source_from_row(row)


def list_sources(
    conn: sqlite3.Connection, workspace_id: str | None, origin_session_id: int | None, limit: int, offset: int
) -> list[KnowledgeSource]:
    where: list[str] = []
    params: list[Any] = []
    if workspace_id is not None:
        where.append("s.workspace_id = ?")
        params.append(workspace_id)
    if origin_session_id is not None:
        # the expression of knowledge_sources_origin_session_idx, so the index serves it
        where.append("json_extract(s.metadata, '$.origin_session_id') = ?")
        params.append(origin_session_id)
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    sql = f"SELECT {SOURCE_COLUMNS} FROM knowledge_sources s {clause}ORDER BY s.id DESC LIMIT ? OFFSET ?"
    return [source_from_row(r) for r in conn.execute(sql, (*params, limit, offset)).fetchall()]


def chunks_of_source(conn: sqlite3.Connection, source_id: int) -> list[KnowledgeChunk]:
    rows = conn.execute(
        f"SELECT {CHUNK_COLUMNS} FROM knowledge_chunks WHERE source_id = ? ORDER BY chunk_index", (source_id,)
    ).fetchall()
    return [chunk_from_row(r) for r in rows]


def get_embedding(conn: sqlite3.Connection, chunk_id: int, model: str) -> npt.NDArray[np.float32] | None:
    row = conn.execute(
        "SELECT embedding FROM chunk_embeddings WHERE chunk_id = ? AND model = ?", (chunk_id, model)
    ).fetchone()
    return None if row is None else vector_from_blob(row[0])


def knowledge_status(conn: sqlite3.Connection, workspace_id: str | None = None) -> KnowledgeStatus:
    if workspace_id is None:
        rows = conn.execute(STATUS_SQL).fetchall()
    else:
        rows = conn.execute(WORKSPACE_STATUS_SQL, {"ws": workspace_id}).fetchall()
    status = status_from_rows(rows)
    units_missing = sum(int(r[2]) for r in rows if r[0] == "units_missing")
    vectors_missing = {r[1]: int(r[2]) for r in rows if r[0] == "unit_vectors_missing"}  # models with some missing
    reader_missing = {r[1]: int(r[2]) for r in rows if r[0] == "reader_vectors_missing"}
    return dataclasses.replace(
        status, units_missing=units_missing, unit_vectors_missing=vectors_missing, reader_vectors_missing=reader_missing
    )


__all__ = [
    "CHUNK_COLUMNS",
    "CLAIM_SQL",
    "SESSIONS_TO_ARCHIVE_SQL",
    "SOURCE_COLUMNS",
    "STATUS_SQL",
    "archive_session",
    "chunks_missing_embedding",
    "chunks_missing_units",
    "chunks_of_source",
    "claim_sources",
    "embeddings_missing_units",
    "finish_source",
    "get_embedding",
    "get_source",
    "insert_source",
    "knowledge_status",
    "list_sources",
    "put_embeddings",
    "put_unit_lexical",
    "put_unit_vectors",
    "release_sources",
    "renew_claims",
    "sessions_to_archive",
]
