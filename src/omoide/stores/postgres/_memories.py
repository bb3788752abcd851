"""Explicit memories on PostgreSQL, one function per store operation (pooled asyncpg connection).

Every statement carries ``workspace_id = $… AND user_id = $…``. Vector recall ranks the
user's ``halfvec`` rows exactly by cosine distance (``<=>``), walking the
``(workspace_id, user_id, model)`` index: a user has at most thousands of memories, where an
exact scan is fast and needs no approximate index. Lexical recall uses ``lexical_tsv`` with
BM25 (:mod:`omoide.stores.postgres._bm25`), like knowledge chunks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt
from pgvector import HalfVector

from omoide.errors import InvalidInput
from omoide.models import ensure_utc
from omoide.stores._knowledge_common import to_json
from omoide.stores._memory_ranking import fuse_memory_ids, memory_hits
from omoide.stores.memories import (
    DEFAULT_ACTOR,
    MemoryChanges,
    MemoryDraft,
    MemoryEvent,
    MemoryHit,
    MemoryId,
    MemoryQuery,
    MemoryRecord,
    memory_not_found,
)
from omoide.stores.postgres._bm25 import bm25_sql, scored_terms
from omoide.stores.postgres._search import vector_type

COLUMNS = "m.id, m.workspace_id, m.user_id, m.content, m.category, m.tags, m.metadata, m.created_at, m.updated_at"


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def record_from_row(row: Mapping[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=MemoryId(int(row["id"])),
        workspace_id=row["workspace_id"],
        user_id=row["user_id"],
        content=row["content"],
        category=row["category"],
        tags=tuple(_json(row["tags"])),
        metadata=_json(row["metadata"]),
        created_at=ensure_utc(row["created_at"]),
        updated_at=ensure_utc(row["updated_at"]),
    )


def _filters(category: str | None, tags: Sequence[str], args: list[Any]) -> str:
    where = ""
    if category is not None:
        args.append(category)
        where += f" AND m.category = ${len(args)}"
    if tags:
        args.append(json.dumps(list(tags)))
        where += f" AND m.tags @> ${len(args)}::jsonb"
    return where


async def _get(conn: asyncpg.Connection, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
    row = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM memories m WHERE m.id = $1 AND m.workspace_id = $2 AND m.user_id = $3",
        memory_id,
        workspace_id,
        user_id,
    )
    return None if row is None else record_from_row(row)


async def _put_vector(
    conn: asyncpg.Connection,
    memory_id: int,
    workspace_id: str,
    user_id: str,
    model: str,
    vector: npt.NDArray[np.float32],
) -> None:
    await conn.execute(
        "INSERT INTO memory_embeddings (memory_id, workspace_id, user_id, model, dimensions, embedding) "
        # the constraint by name and EXCLUDED's time: the same on Citus, where the key gains workspace_id
        # and ON CONFLICT ... DO UPDATE may not call now()
        "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT ON CONSTRAINT memory_embeddings_pkey DO UPDATE "
        "SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions, embedded_at = EXCLUDED.embedded_at",
        memory_id,
        workspace_id,
        user_id,
        model,
        int(vector.shape[0]),
        HalfVector(vector),
    )


async def _record_event(
    conn: asyncpg.Connection,
    scope: tuple[str, str],
    memory_id: int,
    action: str,
    actor: str,
    content: str | None,
) -> None:
    """One row of the memory's history, in the caller's (the change's) transaction."""
    await conn.execute(
        "INSERT INTO memory_events (workspace_id, user_id, memory_id, action, actor, content) "
        "VALUES ($1, $2, $3, $4, $5, $6)",
        *scope,
        memory_id,
        action,
        actor,
        content,
    )


async def memory_history(
    conn: asyncpg.Connection, workspace_id: str, user_id: str, memory_id: int, limit: int
) -> list[MemoryEvent]:
    """The memory's newest ``limit`` events, oldest first."""
    rows = await conn.fetch(
        "SELECT id, workspace_id, user_id, memory_id, action, actor, content, created_at FROM memory_events "
        "WHERE workspace_id = $1 AND user_id = $2 AND memory_id = $3 ORDER BY id DESC LIMIT $4",
        workspace_id,
        user_id,
        memory_id,
        limit,
    )
    return [
        MemoryEvent(
            int(r["id"]),
            r["workspace_id"],
            r["user_id"],
            int(r["memory_id"]),
            r["action"],
            r["actor"],
            r["content"],
            ensure_utc(r["created_at"]),
        )
        for r in reversed(rows)
    ]


async def insert_memory(
    conn: asyncpg.Connection,
    draft: MemoryDraft,
    model: str,
    vector: npt.NDArray[np.float32] | None,
    actor: str = DEFAULT_ACTOR,
) -> MemoryRecord:
    async with conn.transaction():
        row = await conn.fetchrow(
            "INSERT INTO memories (workspace_id, user_id, content, lexical, category, tags, metadata) "
            f"VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb) RETURNING {COLUMNS.replace('m.', '')}",
            draft.workspace_id,
            draft.user_id,
            draft.content,
            draft.lexical,
            draft.category,
            to_json(list(draft.tags), what="tags"),
            to_json(dict(draft.metadata), what="metadata"),
        )
        if vector is not None:
            await _put_vector(conn, int(row["id"]), draft.workspace_id, draft.user_id, model, vector)
        await _record_event(conn, (draft.workspace_id, draft.user_id), int(row["id"]), "created", actor, draft.content)
    return record_from_row(row)


async def get_memory(conn: asyncpg.Connection, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
    return await _get(conn, workspace_id, user_id, memory_id)


async def update_memory(
    conn: asyncpg.Connection,
    workspace_id: str,
    user_id: str,
    memory_id: int,
    changes: MemoryChanges,
    model: str | None,
    vector: npt.NDArray[np.float32] | None,
    actor: str = DEFAULT_ACTOR,
    action: str = "updated",
) -> MemoryRecord:
    args: list[Any] = [memory_id, workspace_id, user_id]
    sets = ["updated_at = now()"]

    def put(column: str, value: Any, cast: str = "") -> None:
        args.append(value)
        sets.append(f"{column} = ${len(args)}{cast}")

    if changes.content is not None:
        put("content", changes.content)
        put("lexical", changes.lexical)
    if changes.category is not None:
        put("category", changes.category)
    if changes.tags is not None:
        put("tags", to_json(list(changes.tags), what="tags"), "::jsonb")
    if changes.metadata is not None:
        put("metadata", to_json(dict(changes.metadata), what="metadata"), "::jsonb")
    async with conn.transaction():
        row = await conn.fetchrow(
            f"UPDATE memories SET {', '.join(sets)} WHERE id = $1 AND workspace_id = $2 AND user_id = $3 "
            f"RETURNING {COLUMNS.replace('m.', '')}",
            *args,
        )
        if row is None:
            raise memory_not_found(memory_id)
        if changes.content is not None:  # the old vectors describe the old text
            await conn.execute(
                "DELETE FROM memory_embeddings WHERE memory_id = $1 AND workspace_id = $2", memory_id, workspace_id
            )
        if vector is not None and model is not None:
            await _put_vector(conn, memory_id, workspace_id, user_id, model, vector)
        await _record_event(conn, (workspace_id, user_id), memory_id, action, actor, row["content"])
    return record_from_row(row)


async def delete_memory(
    conn: asyncpg.Connection, workspace_id: str, user_id: str, memory_id: int, actor: str = DEFAULT_ACTOR
) -> None:
    async with conn.transaction():
        deleted = await conn.fetchval(
            "DELETE FROM memories WHERE id = $1 AND workspace_id = $2 AND user_id = $3 RETURNING id",
            memory_id,
            workspace_id,
            user_id,
        )
        if deleted is None:
            raise memory_not_found(memory_id)
        await _record_event(conn, (workspace_id, user_id), memory_id, "deleted", actor, None)


async def list_memories(
    conn: asyncpg.Connection,
    workspace_id: str,
    user_id: str,
    category: str | None,
    tags: Sequence[str],
    limit: int,
    offset: int,
) -> list[MemoryRecord]:
    args: list[Any] = [workspace_id, user_id]
    extra = _filters(category, tags, args)
    args += [limit, offset]
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM memories m WHERE m.workspace_id = $1 AND m.user_id = $2{extra} "
        f"ORDER BY m.created_at DESC, m.id DESC LIMIT ${len(args) - 1} OFFSET ${len(args)}",
        *args,
    )
    return [record_from_row(r) for r in rows]


async def _has_vectors_of_size(
    conn: asyncpg.Connection, workspace_id: str, user_id: str, model: str, dims: int
) -> bool:
    """Whether the user has vectors of ``model`` (``False``: none yet).

    Raises:
        InvalidInput: they are not ``dims``-dimensional (the query was embedded by another model).
    """
    stored = await conn.fetchval(
        "SELECT dimensions FROM memory_embeddings WHERE workspace_id = $1 AND user_id = $2 AND model = $3 LIMIT 1",
        workspace_id,
        user_id,
        model,
    )
    if stored is None:
        return False
    if int(stored) != dims:
        raise InvalidInput(
            f"the query vector has {dims} dimensions but model {model!r} stored {stored}-dimensional memory "
            "vectors: embed the query with the same model"
        )
    return True


async def memory_vector_search(
    conn: asyncpg.Connection, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32], schema: str | None
) -> list[tuple[MemoryRecord, float]]:
    rows = await _vector_rows(conn, COLUMNS, wanted, model, query, schema)
    return [(record_from_row(r), 1.0 - float(r["distance"])) for r in rows]


async def memory_lexical_search(
    conn: asyncpg.Connection, wanted: MemoryQuery, tokens: Sequence[str]
) -> list[tuple[MemoryRecord, float]]:
    rows = await _lexical_rows(conn, COLUMNS, wanted, tokens)
    return [(record_from_row(r), float(r["score"])) for r in rows]


async def _vector_rows(
    conn: asyncpg.Connection,
    columns: str | None,
    wanted: MemoryQuery,
    model: str,
    query: npt.NDArray[np.float32],
    schema: str | None,
) -> list[asyncpg.Record]:
    """``memory_id``, ``distance`` and ``columns`` (of ``memories m``) of the user's ``k`` nearest memories.

    With ``columns=None`` (ids only), ``memories`` is joined only to filter.
    """
    workspace_id, user_id = wanted.workspace_id, wanted.user_id
    dims = int(query.shape[0])
    if not await _has_vectors_of_size(conn, workspace_id, user_id, model, dims):
        return []
    halfvec = f"{vector_type(schema)}({dims})"
    args: list[Any] = [HalfVector(query), workspace_id, user_id, model]
    extra = _filters(wanted.category, wanted.tags, args)
    join = (
        f" JOIN memories m ON m.id = e.memory_id AND m.workspace_id = $2 AND m.user_id = $3{extra}"
        if extra or columns is not None
        else ""
    )
    selected = "e.memory_id" if columns is None else f"e.memory_id, {columns}"
    args.append(wanted.k)
    return list(
        await conn.fetch(
            f"SELECT {selected}, (e.embedding::{halfvec}) <=> $1::{halfvec} AS distance FROM memory_embeddings e{join} "
            f"WHERE e.workspace_id = $2 AND e.user_id = $3 AND e.model = $4 AND e.dimensions = {dims} "
            f"ORDER BY distance, e.memory_id LIMIT ${len(args)}",
            *args,
        )
    )


async def _lexical_rows(
    conn: asyncpg.Connection, columns: str, wanted: MemoryQuery, tokens: Sequence[str]
) -> list[asyncpg.Record]:
    """``columns`` and ``score`` of the user's memories matching any token, BM25-ranked (:mod:`._bm25`)."""
    if not tokens:
        return []
    args: list[Any] = [wanted.workspace_id, wanted.user_id]
    extra = _filters(wanted.category, wanted.tags, args)
    sql = bm25_sql(
        from_="memories m",
        table="memories",
        alias="m",
        columns=columns,
        where=f"m.workspace_id = $1 AND m.user_id = $2{extra}",
        args=args,
        terms=scored_terms(tokens),
        k=wanted.k,
    )
    return list(await conn.fetch(sql, *args))


async def memory_recall(
    conn: asyncpg.Connection,
    wanted: MemoryQuery,
    model: str,
    query: npt.NDArray[np.float32],
    tokens: Sequence[str],
    limit: int,
    schema: str | None,
) -> list[MemoryHit]:
    """Both rankings (ids only) on one connection, RRF, then the ``limit`` fused rows."""
    by_vector = [int(r["memory_id"]) for r in await _vector_rows(conn, None, wanted, model, query, schema)]
    by_text = [int(r["id"]) for r in await _lexical_rows(conn, "m.id", wanted, tokens)]
    workspace_id, user_id = wanted.workspace_id, wanted.user_id
    fused = fuse_memory_ids(by_vector, by_text, limit)
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM memories m WHERE m.id = ANY($1::bigint[]) AND m.workspace_id = $2 AND m.user_id = $3",
        [int(f.key) for f in fused],
        workspace_id,
        user_id,
    )
    return memory_hits(fused, {int(r["id"]): record_from_row(r) for r in rows})


__all__ = [
    "delete_memory",
    "get_memory",
    "insert_memory",
    "list_memories",
    "memory_history",
    "memory_lexical_search",
    "memory_recall",
    "memory_vector_search",
    "update_memory",
]
