"""Explicit memories on SQLite, one function per store operation (run in the store's threads).

Every statement carries ``workspace_id = ? AND user_id = ?``. Recall works on one user's
memories only: an exact numpy scan over their float32 vectors (per model) and BM25 over an
inverted index of their memories' tokens, both cached per user and rebuilt when the user's
row in ``memory_generations`` moved (triggers bump it on any change to their memories or
vectors, from any connection or process). So a recall costs the same whether the database
holds one user or a million. (The FTS5 table ``memories_fts`` is kept in sync for ad-hoc
queries; recall does not need it.)
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.memories.models import ForgetReport, MemoryChanges, MemoryDraft, MemoryId, MemoryRecord
from omoide.stores._knowledge_common import to_json
from omoide.stores._memory_common import memory_not_found
from omoide.stores.sqlite._conn import format_ts, parse_ts
from omoide.stores.sqlite._knowledge import vector_blob

COLUMNS = "m.id, m.workspace_id, m.user_id, m.content, m.category, m.tags, m.metadata, m.created_at, m.updated_at"
MAX_CACHED_USERS = 256


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


def insert_memory(
    conn: sqlite3.Connection, draft: MemoryDraft, model: str, vector: npt.NDArray[np.float32] | None, now: datetime
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
    return stored


def delete_memory(conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int) -> None:
    cursor = conn.execute(
        "DELETE FROM memories WHERE id = ? AND workspace_id = ? AND user_id = ?", (memory_id, workspace_id, user_id)
    )
    if cursor.rowcount == 0:
        raise memory_not_found(memory_id)


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


@dataclass(frozen=True, slots=True)
class LexicalIndex:
    """An inverted index of one user's memories (their ``lexical`` tokens), for BM25."""

    ids: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float32]
    postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]

    @classmethod
    def build(cls, rows: Sequence[tuple[int, str]]) -> LexicalIndex:
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        lengths = np.zeros(len(rows), dtype=np.float32)
        collected: dict[str, dict[int, int]] = {}
        for i, (_, text) in enumerate(rows):
            tokens = text.split()
            lengths[i] = len(tokens)
            for token in tokens:
                counts = collected.setdefault(token, {})
                counts[i] = counts.get(i, 0) + 1
        postings = {
            token: (np.fromiter(c.keys(), dtype=np.int64, count=len(c)), np.fromiter(c.values(), dtype=np.float32))
            for token, c in collected.items()
        }
        return cls(ids, lengths, postings)

    def scores(self, tokens: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> npt.NDArray[np.float32]:
        """BM25 of every memory for the query tokens (0 where none matches)."""
        n = self.ids.shape[0]
        out = np.zeros(n, dtype=np.float32)
        if n == 0:
            return out
        norm = k1 * (1 - b + b * self.lengths / max(float(self.lengths.mean()), 1.0))
        for token in dict.fromkeys(tokens):
            posting = self.postings.get(token)
            if posting is None:
                continue
            docs, tf = posting
            idf = np.log(1.0 + (n - docs.shape[0] + 0.5) / (docs.shape[0] + 0.5))
            out[docs] += idf * tf * (k1 + 1) / (tf + norm[docs])
        return out


class MemoryRecallCache:
    """Per user: the normalised vectors (per model) and a lexical index of their memories.

    Both are rebuilt when the user's row in ``memory_generations`` moved (triggers bump it on
    any change to their memories' text or vectors, from any connection or process), so a
    recall reads only that user's rows and never scans other users' postings.
    """

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, ...], tuple[int, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, key: tuple[str, ...], generation: int) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == generation:
                self._entries.move_to_end(key)
                return entry[1]
        return None

    def _put(self, key: tuple[str, ...], generation: int, value: Any) -> None:
        with self._lock:
            self._entries[key] = (generation, value)
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_CACHED_USERS:
                self._entries.popitem(last=False)

    @staticmethod
    def generation(conn: sqlite3.Connection, workspace_id: str, user_id: str) -> int:
        row = conn.execute(
            "SELECT generation FROM memory_generations WHERE workspace_id = ? AND user_id = ?", (workspace_id, user_id)
        ).fetchone()
        return -1 if row is None else int(row[0])

    def matrix(
        self, conn: sqlite3.Connection, workspace_id: str, user_id: str, model: str
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        key = ("vectors", workspace_id, user_id, model)
        generation = self.generation(conn, workspace_id, user_id)
        cached = self._get(key, generation)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        rows = conn.execute(
            "SELECT memory_id, embedding FROM memory_embeddings WHERE workspace_id = ? AND user_id = ? AND model = ? "
            "ORDER BY memory_id",
            (workspace_id, user_id, model),
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            sizes = {len(r[1]) for r in rows}
            if len(sizes) > 1:
                raise InvalidInput(
                    f"model {model!r} has memory vectors of several sizes for this user; re-embed with one configuration"
                )
            vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1).astype(np.float32)
            norms = np.linalg.norm(vectors, axis=1)
            norms[norms == 0.0] = 1.0
            vectors /= norms[:, None]
        else:
            vectors = np.empty((0, 0), dtype=np.float32)
        self._put(key, generation, (ids, vectors))
        return ids, vectors

    def lexical(self, conn: sqlite3.Connection, workspace_id: str, user_id: str) -> LexicalIndex:
        key = ("lexical", workspace_id, user_id)
        generation = self.generation(conn, workspace_id, user_id)
        cached = self._get(key, generation)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        rows = conn.execute(
            "SELECT id, lexical FROM memories WHERE workspace_id = ? AND user_id = ? ORDER BY id",
            (workspace_id, user_id),
        ).fetchall()
        index = LexicalIndex.build([(int(r[0]), r[1]) for r in rows])
        self._put(key, generation, index)
        return index


def _ranked_records(
    conn: sqlite3.Connection,
    workspace_id: str,
    user_id: str,
    ids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float32],
    k: int,
    category: str | None,
    tags: Sequence[str],
    *,
    minimum: float | None = None,
) -> list[tuple[MemoryRecord, float]]:
    """The ``k`` best-scored memories that pass the filters, best first (ties: lower id)."""
    if minimum is not None:
        keep = scores > minimum
        ids, scores = ids[keep], scores[keep]
    if ids.shape[0] == 0:
        return []
    filtered = category is not None or bool(tags)
    take = min(ids.shape[0], k if not filtered else max(k * 8, 64))
    extra, params = _filters(category, tags)
    while True:
        top = np.argpartition(-scores, take - 1)[:take] if take < scores.shape[0] else np.arange(scores.shape[0])
        order = top[np.lexsort((ids[top], -scores[top]))]
        rows = conn.execute(
            # "+" keeps the planner on primary-key probes instead of walking the user's index
            f"SELECT {COLUMNS} FROM memories m WHERE +m.workspace_id = ? AND +m.user_id = ?{extra} "
            "AND m.id IN (SELECT value FROM json_each(?))",
            [workspace_id, user_id, *params, json.dumps([int(ids[i]) for i in order])],
        ).fetchall()
        found = {int(r[0]): record_from_row(r) for r in rows}
        out = [(found[int(ids[i])], float(scores[i])) for i in order if int(ids[i]) in found]
        if len(out) >= k or take >= scores.shape[0]:
            return out[:k]
        take = min(scores.shape[0], take * 4)


def memory_vector_search(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    workspace_id: str,
    user_id: str,
    model: str,
    query: npt.NDArray[np.float32],
    k: int,
    category: str | None,
    tags: Sequence[str],
) -> list[tuple[MemoryRecord, float]]:
    ids, vectors = cache.matrix(conn, workspace_id, user_id, model)
    if ids.shape[0] == 0:
        return []
    if vectors.shape[1] != query.shape[0]:
        raise InvalidInput(
            f"the query vector has {query.shape[0]} dimensions but model {model!r} stored "
            f"{vectors.shape[1]}-dimensional memory vectors: embed the query with the same model"
        )
    norm = float(np.linalg.norm(query))
    scores = vectors @ (query / (norm if norm > 0 else 1.0)).astype(np.float32)
    return _ranked_records(conn, workspace_id, user_id, ids, scores, k, category, tags)


def memory_lexical_search(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    workspace_id: str,
    user_id: str,
    tokens: Sequence[str],
    k: int,
    category: str | None,
    tags: Sequence[str],
) -> list[tuple[MemoryRecord, float]]:
    """BM25 over the user's own memories (their cached inverted index), best first."""
    if not tokens:
        return []
    index = cache.lexical(conn, workspace_id, user_id)
    scores = index.scores(tokens)
    return _ranked_records(conn, workspace_id, user_id, index.ids, scores, k, category, tags, minimum=0.0)


def forget_user(conn: sqlite3.Connection, workspace_id: str, user_id: str) -> ForgetReport:
    memories = conn.execute(
        "DELETE FROM memories WHERE workspace_id = ? AND user_id = ?", (workspace_id, user_id)
    ).rowcount
    own_messages = conn.execute(
        "SELECT count(*) FROM session_messages WHERE session_id IN "
        "(SELECT id FROM sessions WHERE workspace_id = ? AND user_id = ?)",
        (workspace_id, user_id),
    ).fetchone()[0]
    sessions = conn.execute(
        "DELETE FROM sessions WHERE workspace_id = ? AND user_id = ?", (workspace_id, user_id)
    ).rowcount
    written = conn.execute(
        "DELETE FROM session_messages WHERE workspace_id = ? AND author_id = ?", (workspace_id, user_id)
    ).rowcount
    summaries = conn.execute(
        "DELETE FROM summaries WHERE workspace_id = ? AND scope = 'user' AND scope_id = ?", (workspace_id, user_id)
    ).rowcount
    return ForgetReport(
        memories=max(memories, 0),
        sessions=max(sessions, 0),
        messages=int(own_messages) + max(written, 0),
        summaries=max(summaries, 0),
    )


__all__ = [
    "LexicalIndex",
    "MemoryRecallCache",
    "delete_memory",
    "forget_user",
    "get_memory",
    "insert_memory",
    "list_memories",
    "memory_lexical_search",
    "memory_vector_search",
    "update_memory",
]
