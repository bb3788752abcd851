"""Knowledge operations (long-term memory) on PostgreSQL + pgvector, one function per operation.

Each function takes a pooled asyncpg connection (its driver errors translated) from
:class:`~omoide.stores.postgres.knowledge.PostgresKnowledge`, with arguments the contract
(:class:`~omoide.stores.knowledge.KnowledgeStore`) checked.

How :func:`archive_session` stays exactly-once with appends running at the same time:

* It runs in one REPEATABLE READ transaction whose first statement locks the session
  row (``SELECT … FOR NO KEY UPDATE``), the lock an append's ``UPDATE sessions`` also
  takes. An append that committed before the snapshot shows up as a different
  ``version`` → :class:`~omoide.errors.VersionConflict`. An append that commits while the
  archive waits for the lock makes PostgreSQL refuse the lock with a serialization failure
  (SQLSTATE 40001) → also :class:`~omoide.errors.VersionConflict`: the archiver re-reads.
* Once locked, no append can run until COMMIT, so ``last_seq`` is the one the archiver
  planned against; appends queued on the lock get larger ``seq`` values and are neither
  deleted (only ``seq <= upto_seq`` is) nor skipped (the watermark is ``upto_seq``).
* The source and all its chunks are one ``INSERT … SELECT FROM unnest(…)`` statement; the
  prune, the watermark, the status and the version bump are one more. Either all of it
  commits or none of it.

Claims (:func:`claim_sources`) lock candidate rows with ``FOR UPDATE SKIP LOCKED``, so two
workers never claim one source and neither waits for the other. Vectors are ``halfvec``
(:class:`pgvector.HalfVector`), one row per ``(chunk_id, model)``; each model gets a
partial HNSW index (:func:`ensure_vector_index`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt
from pgvector import HalfVector
from tenacity import AsyncRetrying, retry_if_result, wait_fixed

from omoide.models import Session, SessionStatus, ensure_utc
from omoide.stores._erasure_common import stale_rows
from omoide.stores._knowledge_checks import CheckedVector
from omoide.stores._knowledge_common import (
    check_archive_range,
    prune_through,
    session_not_found,
    source_members,
    sql_literal,
    status_from_rows,
    to_json,
    vector_index_name,
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
)
from omoide.stores.postgres._claims import (
    CLAIM_IN_WORKSPACE_SQL,
    CLAIM_SQL,
    CLAIMABLE_WORKSPACES_SQL,
    claim_sources,
    finish_source,
    release_sources,
    renew_claims,
)
from omoide.stores.postgres._rows import MESSAGE_COLUMNS, SESSION_COLUMNS, row_to_message, row_to_session
from omoide.stores.postgres._search import record_tokenizer
from omoide.stores.postgres._units import (
    chunk_workspaces,
    encode_unit_vectors,
    share_chunks,
    unit_lexical_json,
    units_status_sql,
)
from omoide.stores.units import encode_reader_vectors
from omoide.text import search_tokenizer_name

SOURCE_COLUMNS = (
    "s.id, s.workspace_id, s.type, s.title, s.uri, s.status, s.metadata, s.error, s.attempts, s.created_at, "
    "s.updated_at, (SELECT count(*) FROM knowledge_chunks c WHERE c.source_id = s.id AND c.workspace_id = s.workspace_id) "
    "AS chunk_count, "
    "s.private, s.members"
)
CHUNK_COLUMNS = (
    "id, source_id, workspace_id, chunk_index, content, lexical, token_count, location, channel_id, thread_id, "
    "author_ids, started_at, ended_at, created_at"
)

_INSERT_SOURCE = """
INSERT INTO knowledge_sources (workspace_id, type, title, uri, metadata, private, members)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb)
RETURNING id
"""
_INSERT_SOURCE_WITH_CHUNKS = """
WITH s AS (
    INSERT INTO knowledge_sources (workspace_id, type, title, uri, metadata, private, members)
    VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb)
    RETURNING id, workspace_id, private, members
)
INSERT INTO knowledge_chunks (source_id, workspace_id, channel_id, thread_id, chunk_index, content, lexical,
                              location, author_ids, token_count, started_at, ended_at, private, members,
                              unit_lexical)
SELECT s.id, s.workspace_id, u.channel_id, u.thread_id, (u.ord - 1)::integer, u.content, u.lexical,
       u.location::jsonb, u.author_ids::jsonb, u.token_count, u.started_at, u.ended_at, s.private, s.members,
       u.unit_lexical::jsonb
FROM s, unnest($8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::integer[],
               $15::timestamptz[], $16::timestamptz[], $17::text[])
        WITH ORDINALITY AS u(channel_id, thread_id, content, lexical, location, author_ids, token_count,
                             started_at, ended_at, unit_lexical, ord)
RETURNING source_id, chunk_index, id
"""
_LOCK_SESSION = (
    "SELECT version, archived_seq, last_seq, workspace_id FROM sessions WHERE id = $1 AND workspace_id = $2 "
    "FOR NO KEY UPDATE"
)
_LOCK_SESSION_ROW = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1 AND workspace_id = $2 FOR NO KEY UPDATE"
_STORED_MESSAGES = (
    f"SELECT {MESSAGE_COLUMNS} FROM session_messages WHERE session_id = $1 AND workspace_id = $2 ORDER BY seq"
)
_FINISH_ARCHIVE = """
WITH pruned AS (DELETE FROM session_messages WHERE session_id = $1 AND workspace_id = $5 AND seq <= $3 RETURNING 1)
UPDATE sessions SET archived_seq = $2, status = $4, version = version + 1 WHERE id = $1 AND workspace_id = $5
RETURNING version, (SELECT count(*) FROM pruned) AS pruned
"""
SESSIONS_TO_ARCHIVE_SQL = f"""
SELECT {SESSION_COLUMNS} FROM sessions
WHERE last_seq > archived_seq
  AND (last_active_at < $1 OR last_seq - archived_seq >= $2)
ORDER BY last_active_at, id
LIMIT $3
"""
_MISSING = """
SELECT c.id, c.source_id, c.workspace_id, c.content, c.location FROM knowledge_chunks c
WHERE c.id > $2 {sources}
  AND NOT EXISTS (
      SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id AND e.workspace_id = c.workspace_id AND e.model = $1
  )
ORDER BY c.id
LIMIT $3
"""
_MISSING_ALL = _MISSING.format(sources="")
_MISSING_SETTLED = _MISSING.format(
    sources="AND EXISTS (SELECT 1 FROM knowledge_sources s WHERE s.id = c.source_id "
    "AND s.workspace_id = c.workspace_id AND s.status IN ('ready', 'failed'))"
)
"""Chunks whose source no claim will embed (a worker's catch-up pass; the join keeps to the
workspace so Citus runs it shard by shard)."""
_MISSING_OF_SOURCES = _MISSING.format(sources="AND c.source_id = ANY($4::bigint[])")
_MISSING_OF_SOURCES_IN_WORKSPACE = _MISSING.format(
    sources="AND c.workspace_id = $5 AND c.source_id = ANY($4::bigint[])"
)
_PUT_EMBEDDINGS = """
INSERT INTO chunk_embeddings (chunk_id, workspace_id, model, dimensions, embedding, content_hash, unit_vectors,
                              reader_vectors)
SELECT c.id, c.workspace_id, $1, $2, u.embedding, u.content_hash, u.unit_vectors, u.reader_vectors
FROM unnest($3::bigint[], $4::{halfvec}[], $5::text[], $6::bytea[], $7::bytea[])
    AS u(chunk_id, embedding, content_hash, unit_vectors, reader_vectors)
JOIN knowledge_chunks c ON c.id = u.chunk_id{scope}
ON CONFLICT ON CONSTRAINT chunk_embeddings_pkey DO UPDATE
SET dimensions = EXCLUDED.dimensions, embedding = EXCLUDED.embedding,
    content_hash = EXCLUDED.content_hash, unit_vectors = EXCLUDED.unit_vectors,
    reader_vectors = EXCLUDED.reader_vectors, embedded_at = EXCLUDED.embedded_at
"""
_UNIT_KINDS = frozenset({"units_missing", "unit_vectors_missing", "reader_vectors_missing"})
STATUS_SQL = """
SELECT 'session' AS kind, status AS key, count(*) AS n FROM sessions GROUP BY status
UNION ALL SELECT 'unarchived', '', coalesce(sum(last_seq - archived_seq), 0) FROM sessions
UNION ALL SELECT 'source', status, count(*) FROM knowledge_sources GROUP BY status
UNION ALL SELECT 'embedded', model, count(*) FROM chunk_embeddings GROUP BY model
UNION ALL """ + units_status_sql(None)

WORKSPACE_STATUS_SQL = """
SELECT 'session' AS kind, status AS key, count(*) AS n FROM sessions WHERE workspace_id = $1 GROUP BY status
UNION ALL SELECT 'unarchived', '', coalesce(sum(last_seq - archived_seq), 0) FROM sessions WHERE workspace_id = $1
UNION ALL SELECT 'source', status, count(*) FROM knowledge_sources WHERE workspace_id = $1 GROUP BY status
UNION ALL SELECT 'embedded', model, count(*) FROM chunk_embeddings WHERE workspace_id = $1 GROUP BY model
UNION ALL """ + units_status_sql("$1")


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def vector_type(schema: str | None, name: str = "halfvec") -> str:
    """A pgvector type or operator class, qualified with the extension's schema when known."""
    return name if schema is None else f"{quote_ident(schema)}.{name}"


# ---------------------------------------------------------------------------- rows


def _ts(value: datetime | None) -> datetime | None:
    return None if value is None else ensure_utc(value)


def source_from_row(row: Mapping[str, Any]) -> KnowledgeSource:
    return KnowledgeSource(
        id=SourceId(int(row["id"])),
        workspace_id=row["workspace_id"],
        type=row["type"],
        title=row["title"] or "",
        uri=row["uri"],
        status=SourceStatus(row["status"]),
        metadata=json.loads(row["metadata"]),
        error=row["error"],
        attempts=int(row["attempts"]),
        chunk_count=int(row["chunk_count"]),
        created_at=ensure_utc(row["created_at"]),
        updated_at=ensure_utc(row["updated_at"]),
        private=bool(row["private"]),
        members=tuple(json.loads(row["members"])),
    )


def chunk_from_row(row: Mapping[str, Any]) -> KnowledgeChunk:
    return KnowledgeChunk(
        id=ChunkId(int(row["id"])),
        source_id=SourceId(int(row["source_id"])),
        workspace_id=row["workspace_id"],
        chunk_index=int(row["chunk_index"]),
        content=row["content"],
        lexical=row["lexical"],
        token_count=int(row["token_count"]),
        location=json.loads(row["location"]),
        channel_id=row["channel_id"],
        thread_id=row["thread_id"],
        author_ids=tuple(json.loads(row["author_ids"])),
        started_at=_ts(row["started_at"]),
        ended_at=_ts(row["ended_at"]),
        created_at=ensure_utc(row["created_at"]),
    )


# --------------------------------------------------------------------------- writes


async def insert_source(
    conn: asyncpg.Connection, source: SourceDraft, chunks: Sequence[ChunkDraft]
) -> tuple[SourceId, list[ChunkId]]:
    """Insert a pending source and its chunks in one statement; return their ids."""
    head = (
        source.workspace_id,
        source.type,
        source.title,
        source.uri,
        to_json(source.metadata, what="SourceDraft.metadata"),
        source.private,
        source_members(source),
    )
    if not chunks:
        return SourceId(int(await conn.fetchval(_INSERT_SOURCE, *head))), []
    await record_tokenizer(conn, search_tokenizer_name())  # the index's tokenizer, for search
    rows = await conn.fetch(
        _INSERT_SOURCE_WITH_CHUNKS,
        *head,
        [c.channel_id for c in chunks],
        [c.thread_id for c in chunks],
        [c.content for c in chunks],
        [c.lexical for c in chunks],
        [to_json(c.location, what=f"chunk {i}: location") for i, c in enumerate(chunks)],
        [to_json(list(c.author_ids), what=f"chunk {i}: author_ids") for i, c in enumerate(chunks)],
        [c.token_count for c in chunks],
        [_ts(c.started_at) for c in chunks],
        [_ts(c.ended_at) for c in chunks],
        [unit_lexical_json(c.unit_lexical) for c in chunks],
    )
    ordered = sorted(rows, key=lambda r: r["chunk_index"])
    return SourceId(int(ordered[0]["source_id"])), [ChunkId(int(r["id"])) for r in ordered]


async def archive_session(conn: asyncpg.Connection, plan: ArchivePlan, ws: str) -> ArchiveResult:
    """Apply ``plan`` in one REPEATABLE READ transaction (see the module docstring).

    Raises:
        SessionNotFound: the session is gone.
        VersionConflict: the session changed since it was read, before or during this call.
        InvalidInput: ``upto_seq`` does not fit, or the source is of another workspace.
    """
    sid = plan.session_id
    try:
        async with conn.transaction(isolation="repeatable_read"):
            row = await conn.fetchrow(_LOCK_SESSION, sid, ws)
            if row is None:
                raise session_not_found(sid)
            if int(row["version"]) != plan.expected_version:
                raise version_conflict(sid, plan.expected_version, int(row["version"]))
            return await _apply_archive(
                conn,
                plan,
                archived_seq=int(row["archived_seq"]),
                last_seq=int(row["last_seq"]),
                workspace_id=row["workspace_id"],
            )
    except asyncpg.exceptions.SerializationError as exc:  # an append or delete committed while we waited
        raise await _conflict(conn, sid, ws, plan.expected_version) from exc


async def archive_session_locked(
    conn: asyncpg.Connection, session_id: int, ws: str, planner: ArchivePlanner
) -> tuple[ArchivePlan, ArchiveResult] | None:
    """Lock the session row, read it and its unarchived messages, plan and apply: one REPEATABLE READ transaction.

    The lock is the transaction's first statement, so nothing can change the session between
    the read and the commit. The planner runs in a worker thread while the lock is held
    (appends to this session wait for it).

    Raises:
        SessionNotFound: the session is gone.
        VersionConflict: an append was committing just as the lock was taken (40001); retry.
        InvalidInput: the plan does not fit the session (the contract's planner checks the rest).
    """
    try:
        async with conn.transaction(isolation="repeatable_read"):
            row = await conn.fetchrow(_LOCK_SESSION_ROW, session_id, ws)
            if row is None:
                raise session_not_found(session_id)
            session = row_to_session(row)
            rows = await conn.fetch(
                _STORED_MESSAGES, session_id, ws
            )  # unarchived + the overlap kept below the watermark
            messages = [row_to_message(r) for r in rows]
            plan = await asyncio.to_thread(planner, session, messages)
            if plan is None:
                return None
            result = await _apply_archive(
                conn,
                plan,
                archived_seq=session.archived_seq,
                last_seq=session.last_seq,
                workspace_id=session.workspace_id,
            )
            return plan, result
    except asyncpg.exceptions.SerializationError as exc:
        raise await _conflict(conn, session_id, ws, None) from exc


async def _conflict(conn: asyncpg.Connection, session_id: int, ws: str, expected: int | None) -> Exception:
    current = await conn.fetchval("SELECT version FROM sessions WHERE id = $1 AND workspace_id = $2", session_id, ws)
    if current is None:
        return session_not_found(session_id)
    return version_conflict(session_id, expected, int(current))


async def _apply_archive(
    conn: asyncpg.Connection, plan: ArchivePlan, *, archived_seq: int, last_seq: int, workspace_id: str
) -> ArchiveResult:
    """The writes of an archive, inside the caller's transaction, once the session is as planned."""
    check_archive_range(plan, archived_seq=archived_seq, last_seq=last_seq, workspace_id=workspace_id)
    source_id: SourceId | None = None
    chunk_ids: list[ChunkId] = []
    if plan.source is not None:
        source_id, chunk_ids = await insert_source(conn, plan.source, plan.chunks)
    done = await conn.fetchrow(
        _FINISH_ARCHIVE,
        plan.session_id,
        plan.upto_seq,
        prune_through(plan, last_seq),
        SessionStatus(plan.status).value,
        workspace_id,
    )
    return ArchiveResult(
        source_id=source_id,
        chunk_ids=tuple(chunk_ids),
        pruned=int(done["pruned"]),
        session_version=int(done["version"]),
    )


async def put_embeddings(
    conn: asyncpg.Connection,
    model: str,
    dimensions: int,
    rows: Sequence[CheckedVector],
    schema: str | None,
    *,
    citus: bool = False,
) -> int:
    """Upsert ``halfvec`` vectors; rows whose chunk is gone, or now holds other text, are skipped.

    The chunks are read ``FOR SHARE`` in the writing transaction: an erasure rewriting one of
    them commits first (and this sees its text) or waits for this to commit (and then drops
    the vector with the text).
    """
    async with conn.transaction():
        hashes = [(row.chunk_id, row.content_hash) for row in rows if row.content_hash is not None]
        if hashes:
            found = await share_chunks(conn, [c for c, _ in hashes], citus=citus)
            stale = stale_rows({int(r["id"]): r["content"] for r in found}, hashes)
            rows = [r for r in rows if r[0] not in stale]
            if not rows:
                return 0
        if not citus:
            groups: list[tuple[str | None, Sequence[CheckedVector]]] = [(None, rows)]
        else:  # one INSERT … SELECT per workspace, each routed to the shard holding its chunks
            of = await chunk_workspaces(conn, [r[0] for r in rows])
            groups = [(ws, [r for r in rows if r[0] in set(ids)]) for ws, ids in of.items()]
        stored = 0
        for ws, group in groups:
            args: list[Any] = [
                model,
                dimensions,
                [row.chunk_id for row in group],
                [HalfVector(row.vector) for row in group],
                [row.content_hash for row in group],
                [encode_unit_vectors(row.units) for row in group],
                [encode_reader_vectors(row.reader) for row in group],
            ]
            scope = "" if ws is None else " AND c.workspace_id = $8"
            if ws is not None:
                args.append(ws)
            status = await conn.execute(_PUT_EMBEDDINGS.format(halfvec=vector_type(schema), scope=scope), *args)
            stored += int(status.rsplit(" ", 1)[-1])  # "INSERT 0 <count>"
    return stored


_INDEX_LOCK_POLL_S = 0.05


async def ensure_vector_index(
    conn: asyncpg.Connection, model: str, dimensions: int, *, m: int, ef_construction: int, schema: str | None
) -> bool:
    """Create the partial HNSW index of ``model`` unless it exists; ``True`` if created now.

    The index is built with ``CREATE INDEX CONCURRENTLY``: embedders keep inserting vectors
    and searches keep running while it builds (a plain ``CREATE INDEX`` would block every
    insert into ``chunk_embeddings`` for as long as the build takes, about a minute per
    100k vectors). A session-level advisory lock on the index name serialises concurrent
    callers (waiting client-side, see below); an invalid index left by an interrupted build is
    dropped and built again.
    """
    name = vector_index_name(model, dimensions)
    key = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)
    ddl = (
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON chunk_embeddings "
        f"USING hnsw ((embedding::{vector_type(schema)}({int(dimensions)})) {vector_type(schema, 'halfvec_cosine_ops')}) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)}) "
        f"WHERE model = {sql_literal(model)}"
    )

    # wait for the lock client-side: a caller blocked inside pg_advisory_lock() is an open
    # transaction, which CREATE INDEX CONCURRENTLY (run by the holder) would wait for — a deadlock
    async def try_lock() -> bool:
        return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", key))

    poll = AsyncRetrying(retry=retry_if_result(lambda locked: not locked), wait=wait_fixed(_INDEX_LOCK_POLL_S))
    await poll(try_lock)
    try:
        valid = await conn.fetchval("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)", name)
        if valid:
            return False
        if valid is False:  # an interrupted concurrent build leaves an invalid index behind
            await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        await conn.execute(ddl)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", key)
    return True


# ---------------------------------------------------------------------------- reads


async def sessions_to_archive(
    conn: asyncpg.Connection, idle_before: datetime, min_unarchived: int, limit: int
) -> list[Session]:
    rows = await conn.fetch(SESSIONS_TO_ARCHIVE_SQL, ensure_utc(idle_before), min_unarchived, limit)
    return [row_to_session(r) for r in rows]


async def chunks_missing_embedding(
    conn: asyncpg.Connection,
    model: str,
    source_ids: Sequence[int] | None,
    after_id: int,
    limit: int,
    *,
    source_workspaces: Mapping[int, str] | None = None,
    settled_only: bool = False,
) -> list[ChunkText]:
    """``source_workspaces`` (Citus): the workspace of each source id; then one routed query per
    workspace instead of one spanning every shard, merged in id order (the same rows).
    ``settled_only`` (with every source): chunks of ``ready`` / ``failed`` sources only."""
    if source_ids is None:
        rows = list(await conn.fetch(_MISSING_SETTLED if settled_only else _MISSING_ALL, model, after_id, limit))
    elif source_workspaces is None:
        rows = list(await conn.fetch(_MISSING_OF_SOURCES, model, after_id, limit, list(source_ids)))
    else:
        groups: dict[str, list[int]] = {}
        for source_id in source_ids:
            if source_id in source_workspaces:
                groups.setdefault(source_workspaces[source_id], []).append(source_id)
        rows = []
        for ws, ids in groups.items():
            rows += await conn.fetch(_MISSING_OF_SOURCES_IN_WORKSPACE, model, after_id, limit, ids, ws)
        rows = sorted(rows, key=lambda r: int(r["id"]))[:limit]
    return [
        ChunkText(
            id=ChunkId(int(r["id"])),
            source_id=SourceId(int(r["source_id"])),
            workspace_id=r["workspace_id"],
            content=r["content"],
            location=json.loads(r["location"]),
        )
        for r in rows
    ]


async def get_embedding(conn: asyncpg.Connection, chunk_id: int, model: str) -> npt.NDArray[np.float32] | None:
    value = await conn.fetchval(
        "SELECT embedding FROM chunk_embeddings WHERE chunk_id = $1 AND model = $2", chunk_id, model
    )
    if value is None:
        return None
    vector: npt.NDArray[np.float32] = value.to_numpy().astype(np.float32)
    return vector


async def knowledge_status(conn: asyncpg.Connection, workspace_id: str | None = None) -> KnowledgeStatus:
    rows = await (conn.fetch(STATUS_SQL) if workspace_id is None else conn.fetch(WORKSPACE_STATUS_SQL, workspace_id))
    status = status_from_rows([(r["kind"], r["key"], r["n"]) for r in rows])
    units = {(r["kind"], r["key"]): int(r["n"]) for r in rows if r["kind"] in _UNIT_KINDS}
    return replace(
        status,
        units_missing=units.get(("units_missing", ""), 0),
        unit_vectors_missing={key: n for (kind, key), n in units.items() if kind == "unit_vectors_missing"},
        reader_vectors_missing={key: n for (kind, key), n in units.items() if kind == "reader_vectors_missing"},
    )


__all__ = [
    "CLAIMABLE_WORKSPACES_SQL",
    "CLAIM_IN_WORKSPACE_SQL",
    "CLAIM_SQL",
    "SESSIONS_TO_ARCHIVE_SQL",
    "archive_session",
    "chunks_missing_embedding",
    "claim_sources",
    "ensure_vector_index",
    "finish_source",
    "get_embedding",
    "insert_source",
    "knowledge_status",
    "put_embeddings",
    "quote_ident",
    "release_sources",
    "renew_claims",
    "sessions_to_archive",
    "vector_index_name",
    "vector_type",
]
