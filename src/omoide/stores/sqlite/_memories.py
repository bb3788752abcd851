"""Explicit memories on SQLite, one function per store operation (run in the store's threads).

Every statement carries ``workspace_id = ? AND user_id = ?``. Recall works on one user's
memories only, over their indexes cached per user (:mod:`._memory_cache`). This store's own
writes update the cached indexes in place after they commit (:func:`tracked_write`); any
other change moves the user's generation past the cache, and the next recall rebuilds. So a
recall costs the same whether the database holds one user or a million, and a user's own
writes never make the next recall slow. (The FTS5 table ``memories_fts`` is kept in sync by
triggers for ad-hoc queries; recall does not read it.)
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import utcnow
from omoide.stores._knowledge_common import to_json
from omoide.stores._memory_ranking import fuse_memory_hits
from omoide.stores.memories import (
    DEFAULT_ACTOR,
    ForgetReport,
    MemoryChanges,
    MemoryDraft,
    MemoryEvent,
    MemoryHit,
    MemoryId,
    MemoryQuery,
    MemoryRecord,
    memory_not_found,
)
from omoide.stores.sqlite._conn import format_ts, in_write_transaction, parse_ts
from omoide.stores.sqlite._erasure import Prepared, erase_user
from omoide.stores.sqlite._knowledge import vector_blob
from omoide.stores.sqlite._memory_cache import MemoryChange, MemoryRecallCache

COLUMNS = "m.id, m.workspace_id, m.user_id, m.content, m.category, m.tags, m.metadata, m.created_at, m.updated_at"

T = TypeVar("T")


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=MemoryId(int(row[0])),
        workspace_id=row[1],
        user_id=row[2],
        content=row[3],
        category=row[4],
        tags=tuple(json.loads(row[5])),
        metadata=json.loads(row[6]),
        created_at=parse_ts(row[7]),
        updated_at=parse_ts(row[8]),
    )


def _filters(category: str | None, tags: Sequence[str]) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if category is not None:
        where.append("m.category = ?")
        params.append(category)
    for tag in tags:
        where.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)")
        params.append(tag)
    return "".join(f" AND {w}" for w in where), params


def _get(conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
    row = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.id = ? AND m.workspace_id = ? AND m.user_id = ?",
        (memory_id, workspace_id, user_id),
    ).fetchone()
    return None if row is None else record_from_row(row)


def _put_vector(
    conn: sqlite3.Connection,
    memory_id: int,
    draft_scope: tuple[str, str],
    model: str,
    vector: npt.NDArray[np.float32],
    now: str,
) -> None:
    workspace_id, user_id = draft_scope
    conn.execute(
        "INSERT OR REPLACE INTO memory_embeddings (memory_id, workspace_id, user_id, model, dimensions, embedding, "
        "embedded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (memory_id, workspace_id, user_id, model, int(vector.shape[0]), vector_blob(vector), now),
    )


def _record_event(
    conn: sqlite3.Connection,
    scope: tuple[str, str],
    memory_id: int,
    action: str,
    actor: str,
    content: str | None,
    stamp: str,
) -> None:
    """One row of the memory's history, in the caller's (the change's) transaction."""
    conn.execute(
        "INSERT INTO memory_events (workspace_id, user_id, memory_id, action, actor, content, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (*scope, memory_id, action, actor, content, stamp),
    )


def memory_history(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int, limit: int
) -> list[MemoryEvent]:
    """The memory's newest ``limit`` events, oldest first."""
    rows = conn.execute(
        "SELECT id, workspace_id, user_id, memory_id, action, actor, content, created_at FROM memory_events "
        "WHERE workspace_id = ? AND user_id = ? AND memory_id = ? ORDER BY id DESC LIMIT ?",
        (workspace_id, user_id, memory_id, limit),
    ).fetchall()
    return [MemoryEvent(int(r[0]), r[1], r[2], int(r[3]), r[4], r[5], r[6], parse_ts(r[7])) for r in reversed(rows)]


def insert_memory(
    conn: sqlite3.Connection,
    draft: MemoryDraft,
    model: str,
    vector: npt.NDArray[np.float32] | None,
    now: datetime,
    actor: str = DEFAULT_ACTOR,
) -> MemoryRecord:
    stamp = format_ts(now)
    memory_id = conn.execute(
        "INSERT INTO memories (workspace_id, user_id, content, lexical, category, tags, metadata, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            draft.workspace_id,
            draft.user_id,
            draft.content,
            draft.lexical,
            draft.category,
            to_json(list(draft.tags), what="tags"),
            to_json(dict(draft.metadata), what="metadata"),
            stamp,
            stamp,
        ),
    ).fetchone()[0]
    if vector is not None:
        _put_vector(conn, memory_id, (draft.workspace_id, draft.user_id), model, vector, stamp)
    _record_event(conn, (draft.workspace_id, draft.user_id), memory_id, "created", actor, draft.content, stamp)
    stored = _get(conn, draft.workspace_id, draft.user_id, memory_id)
    assert stored is not None
    return stored


def get_memory(conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
    return _get(conn, workspace_id, user_id, memory_id)


def update_memory(
    conn: sqlite3.Connection,
    workspace_id: str,
    user_id: str,
    memory_id: int,
    changes: MemoryChanges,
    model: str | None,
    vector: npt.NDArray[np.float32] | None,
    now: datetime,
    actor: str = DEFAULT_ACTOR,
    action: str = "updated",
) -> MemoryRecord:
    stamp = format_ts(now)
    sets = ["updated_at = ?"]
    params: list[Any] = [stamp]
    if changes.content is not None:
        sets += ["content = ?", "lexical = ?"]
        params += [changes.content, changes.lexical]
    if changes.category is not None:
        sets.append("category = ?")
        params.append(changes.category)
    if changes.tags is not None:
        sets.append("tags = ?")
        params.append(to_json(list(changes.tags), what="tags"))
    if changes.metadata is not None:
        sets.append("metadata = ?")
        params.append(to_json(dict(changes.metadata), what="metadata"))
    cursor = conn.execute(
        f"UPDATE memories SET {', '.join(sets)} WHERE id = ? AND workspace_id = ? AND user_id = ?",
        [*params, memory_id, workspace_id, user_id],
    )
    if cursor.rowcount == 0:
        raise memory_not_found(memory_id)
    if changes.content is not None:  # the old vectors describe the old text
        conn.execute("DELETE FROM memory_embeddings WHERE memory_id = ?", (memory_id,))
    if vector is not None and model is not None:
        _put_vector(conn, memory_id, (workspace_id, user_id), model, vector, stamp)
    stored = _get(conn, workspace_id, user_id, memory_id)
    assert stored is not None
    _record_event(conn, (workspace_id, user_id), memory_id, action, actor, stored.content, stamp)
    return stored


def delete_memory(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int, actor: str = DEFAULT_ACTOR
) -> None:
    cursor = conn.execute(
        "DELETE FROM memories WHERE id = ? AND workspace_id = ? AND user_id = ?", (memory_id, workspace_id, user_id)
    )
    if cursor.rowcount == 0:
        raise memory_not_found(memory_id)
    _record_event(conn, (workspace_id, user_id), memory_id, "deleted", actor, None, format_ts(utcnow()))


def list_memories(
    conn: sqlite3.Connection,
    workspace_id: str,
    user_id: str,
    category: str | None,
    tags: Sequence[str],
    limit: int,
    offset: int,
) -> list[MemoryRecord]:
    extra, params = _filters(category, tags)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.workspace_id = ? AND m.user_id = ?{extra} "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
        [workspace_id, user_id, *params, limit, offset],
    ).fetchall()
    return [record_from_row(r) for r in rows]


def tracked_write(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    fn: Callable[..., tuple[T, MemoryChange | None]],
    *args: Any,
) -> T:
    """Run the write ``fn(conn, *args)`` in a transaction, then apply its change to the cache."""
    result, change = in_write_transaction(conn, lambda c: fn(c, *args))
    if change is not None:
        cache.apply(change)
    return result


def _rank(
    conn: sqlite3.Connection, wanted: MemoryQuery, ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float32]
) -> list[tuple[int, float]]:
    """The ``k`` best-scored memory ids that pass the filters, best first (ties: lower id).

    Without filters no row is read: the ids come from the user's own cached index. With a
    category or tags, candidates are checked in SQL, widening until ``k`` pass.
    """
    k, category, tags = wanted.k, wanted.category, wanted.tags
    total = int(ids.shape[0])
    if total == 0:
        return []
    filtered = category is not None or bool(tags)
    take = min(total, k if not filtered else max(k * 8, 64))
    extra, params = _filters(category, tags)
    while True:
        top = np.argpartition(-scores, take - 1)[:take] if take < total else np.arange(total)
        order = top[np.lexsort((ids[top], -scores[top]))]
        ranked = list(zip(ids[order].tolist(), scores[order].tolist(), strict=True))
        if not filtered:
            return ranked[:k]
        passing = {
            int(r[0])
            for r in conn.execute(
                # "+" keeps the planner on primary-key probes instead of walking the user's index
                f"SELECT m.id FROM memories m WHERE +m.workspace_id = ? AND +m.user_id = ?{extra} "
                "AND m.id IN (SELECT value FROM json_each(?))",
                [wanted.workspace_id, wanted.user_id, *params, json.dumps([i for i, _ in ranked])],
            ).fetchall()
        }
        out = [(i, s) for i, s in ranked if i in passing]
        if len(out) >= k or take >= total:
            return out[:k]
        take = min(total, take * 4)


def _records(conn: sqlite3.Connection, workspace_id: str, user_id: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE +m.workspace_id = ? AND +m.user_id = ? "
        "AND m.id IN (SELECT value FROM json_each(?))",
        (workspace_id, user_id, json.dumps(list(ids))),
    ).fetchall()
    return {int(r[0]): record_from_row(r) for r in rows}


def _with_records(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, ranked: list[tuple[int, float]]
) -> list[tuple[MemoryRecord, float]]:
    found = _records(conn, workspace_id, user_id, [i for i, _ in ranked])
    return [(found[i], s) for i, s in ranked if i in found]


def _vector_ranking(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    generation: int,
    wanted: MemoryQuery,
    model: str,
    query: npt.NDArray[np.float32],
) -> list[tuple[int, float]]:
    index = cache.vectors(conn, wanted.workspace_id, wanted.user_id, model, generation)
    with index.lock:
        if index.n and index.dims != query.shape[0]:
            raise InvalidInput(
                f"the query vector has {query.shape[0]} dimensions but model {model!r} stored "
                f"{index.dims}-dimensional memory vectors: embed the query with the same model"
            )
        ids, scores = index.scores(query)
    return _rank(conn, wanted, ids, scores)


def _lexical_ranking(
    conn: sqlite3.Connection, cache: MemoryRecallCache, generation: int, wanted: MemoryQuery, tokens: Sequence[str]
) -> list[tuple[int, float]]:
    if not tokens:
        return []
    index = cache.lexical(conn, wanted.workspace_id, wanted.user_id, generation)
    with index.lock:
        ids, scores = index.scores(tokens)
    return _rank(conn, wanted, ids, scores)


def memory_vector_search(
    conn: sqlite3.Connection, cache: MemoryRecallCache, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32]
) -> list[tuple[MemoryRecord, float]]:
    generation = cache.generation(conn, wanted.workspace_id, wanted.user_id)
    ranked = _vector_ranking(conn, cache, generation, wanted, model, query)
    return _with_records(conn, wanted.workspace_id, wanted.user_id, ranked)


def memory_lexical_search(
    conn: sqlite3.Connection, cache: MemoryRecallCache, wanted: MemoryQuery, tokens: Sequence[str]
) -> list[tuple[MemoryRecord, float]]:
    """BM25 over the user's own memories (their cached inverted index), best first."""
    generation = cache.generation(conn, wanted.workspace_id, wanted.user_id)
    ranked = _lexical_ranking(conn, cache, generation, wanted, tokens)
    return _with_records(conn, wanted.workspace_id, wanted.user_id, ranked)


def memory_recall(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    wanted: MemoryQuery,
    model: str,
    query: npt.NDArray[np.float32],
    tokens: Sequence[str],
    limit: int,
) -> list[MemoryHit]:
    """Hybrid recall in one call: both rankings (ids only), RRF, then the ``limit`` fused rows."""
    generation = cache.generation(conn, wanted.workspace_id, wanted.user_id)
    by_vector = _vector_ranking(conn, cache, generation, wanted, model, query)
    by_text = _lexical_ranking(conn, cache, generation, wanted, tokens)
    return fuse_memory_hits(
        [i for i, _ in by_vector],
        [i for i, _ in by_text],
        limit,
        lambda ids: _records(conn, wanted.workspace_id, wanted.user_id, ids),
    )


def forget_user(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, prepared: Prepared | None = None
) -> ForgetReport:
    """The erasure rule (``docs/privacy.md``), in the caller's transaction: see :mod:`._erasure`."""
    return erase_user(conn, workspace_id, user_id, utcnow(), prepared)


def _generation(conn: sqlite3.Connection, workspace_id: str, user_id: str) -> int:
    return MemoryRecallCache.generation(conn, workspace_id, user_id)


def insert_memory_tracked(
    conn: sqlite3.Connection,
    draft: MemoryDraft,
    model: str,
    vector: npt.NDArray[np.float32] | None,
    now: datetime,
    actor: str = DEFAULT_ACTOR,
) -> tuple[MemoryRecord, MemoryChange]:
    """:func:`insert_memory`, and what it changed for the recall cache."""
    before = _generation(conn, draft.workspace_id, draft.user_id)
    stored = insert_memory(conn, draft, model, vector, now, actor)
    after = _generation(conn, draft.workspace_id, draft.user_id)
    change = MemoryChange(
        draft.workspace_id,
        draft.user_id,
        int(stored.id),
        before,
        after,
        lexical=draft.lexical,
        model=model if vector is not None else None,
        vector=vector,
    )
    return stored, change


def update_memory_tracked(
    conn: sqlite3.Connection,
    workspace_id: str,
    user_id: str,
    memory_id: int,
    changes: MemoryChanges,
    model: str | None,
    vector: npt.NDArray[np.float32] | None,
    now: datetime,
    actor: str = DEFAULT_ACTOR,
    action: str = "updated",
) -> tuple[MemoryRecord, MemoryChange]:
    """:func:`update_memory`, and what it changed for the recall cache."""
    before = _generation(conn, workspace_id, user_id)
    stored = update_memory(conn, workspace_id, user_id, memory_id, changes, model, vector, now, actor, action)
    after = _generation(conn, workspace_id, user_id)
    new_text = changes.content is not None
    change = MemoryChange(
        workspace_id,
        user_id,
        memory_id,
        before,
        after,
        lexical=changes.lexical if new_text else None,
        model=model if vector is not None else None,
        vector=vector if model is not None else None,
        vectors_dropped=new_text,
    )
    return stored, change


def delete_memory_tracked(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int, actor: str = DEFAULT_ACTOR
) -> tuple[None, MemoryChange]:
    """:func:`delete_memory`, and what it changed for the recall cache."""
    before = _generation(conn, workspace_id, user_id)
    delete_memory(conn, workspace_id, user_id, memory_id, actor)
    after = _generation(conn, workspace_id, user_id)
    return None, MemoryChange(workspace_id, user_id, memory_id, before, after, removed=True)


def forget_user_tracked(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, prepared: Prepared | None = None
) -> tuple[ForgetReport, MemoryChange]:
    """:func:`forget_user`; the user's cached indexes are dropped after it commits."""
    report = forget_user(conn, workspace_id, user_id, prepared)
    return report, MemoryChange(workspace_id, user_id, 0, 0, 0, forgotten=True)


__all__ = [
    "delete_memory",
    "delete_memory_tracked",
    "forget_user",
    "forget_user_tracked",
    "get_memory",
    "insert_memory",
    "insert_memory_tracked",
    "list_memories",
    "memory_history",
    "memory_lexical_search",
    "memory_recall",
    "memory_vector_search",
    "tracked_write",
    "update_memory",
    "update_memory_tracked",
]
