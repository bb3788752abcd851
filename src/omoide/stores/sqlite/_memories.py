"""Explicit memories on SQLite, one function per store operation (run in the store's threads).

Every statement carries ``workspace_id = ? AND user_id = ?``. Recall works on one user's
memories only: an exact numpy scan over their float32 vectors (per model) and BM25 over an
inverted index of their memories' tokens, both cached per user (:class:`MemoryRecallCache`)
and tied to the user's row in ``memory_generations`` (triggers bump it on any change to
their memories or vectors, from any connection or process). This store's own writes update
the cached indexes in place after they commit (:func:`tracked_write`); any other change
moves the generation past the cache, and the next recall rebuilds. So a recall costs the
same whether the database holds one user or a million, and a user's own writes never make
the next recall slow. (The FTS5 table ``memories_fts`` is kept in sync for ad-hoc queries;
recall does not need it.)
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import utcnow
from omoide.stores._knowledge_common import to_json
from omoide.stores._memory_common import memory_not_found
from omoide.stores._memory_ranking import fuse_memory_hits
from omoide.stores.memories import ForgetReport, MemoryChanges, MemoryDraft, MemoryHit, MemoryId, MemoryRecord
from omoide.stores.sqlite._conn import format_ts, in_write_transaction, parse_ts
from omoide.stores.sqlite._erasure import Prepared, erase_user
from omoide.stores.sqlite._knowledge import vector_blob

COLUMNS = "m.id, m.workspace_id, m.user_id, m.content, m.category, m.tags, m.metadata, m.created_at, m.updated_at"
MAX_CACHED_USERS = 256
MAX_CACHED_BYTES = 1 << 30
"""The recall cache keeps at most this many users (two entries each) and about this many bytes."""

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


SCAN_ELEMENTS = 393_216
"""Largest block (rows × dimensions) scored by one matrix-vector product. OpenBLAS runs a
product up to about this size on the calling thread and splits larger ones across its
thread pool; on a shared 2-core machine waiting for the second core made a 10k × 384 scan
take 5–20 ms instead of 0.5–1 ms (measured), so the scan goes block by block."""

K1 = 1.2
B = 0.75


def _grow(array: npt.NDArray[Any], size: int, axis: int = 0) -> npt.NDArray[Any]:
    """``array`` with room for ``size`` entries along ``axis`` (amortised: at least 1.5×)."""
    have = array.shape[axis]
    if size <= have:
        return array
    shape = list(array.shape)
    shape[axis] = max(size, have + have // 2, 64)
    grown = np.zeros(shape, dtype=array.dtype)
    if axis == 0:
        grown[:have] = array
    else:
        grown[:, :have] = array
    return grown


class VectorIndex:
    """One user's normalised vectors for one model, stored transposed (dimensions × capacity).

    Rows are appended in place (capacity grows by half when full) and removed by moving the
    last row into the hole, so inserts and deletes cost O(dimensions), not a rebuild. The
    scan multiplies block by block (see :data:`SCAN_ELEMENTS`) into one output array.
    """

    def __init__(self, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32], generation: int) -> None:
        n = int(ids.shape[0])
        self.generation = generation
        self.lock = threading.Lock()
        self.dims = int(vectors.shape[1]) if n else 0
        cap = n + max(64, n // 8)
        self.ids = np.zeros(cap, dtype=np.int64)
        self.ids[:n] = ids
        self.matrix = np.zeros((self.dims, cap), dtype=np.float32)
        if n:
            self.matrix[:, :n] = vectors.T
        self.n = n
        self.row_of = {int(i): r for r, i in enumerate(ids.tolist())}

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.ids.nbytes) + 64 * len(self.row_of)

    @staticmethod
    def _normalised(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        norm = float(np.linalg.norm(vector))
        return (vector / (norm if norm > 0 else 1.0)).astype(np.float32)

    def put(self, memory_id: int, vector: npt.NDArray[np.float32]) -> bool:
        """Add or replace one memory's vector; ``False`` when its size does not fit (rebuild instead)."""
        if self.n and vector.shape[0] != self.dims:
            return False
        if not self.n and self.dims != vector.shape[0]:
            self.dims = int(vector.shape[0])
            self.matrix = np.zeros((self.dims, self.ids.shape[0]), dtype=np.float32)
        row = self.row_of.get(memory_id)
        if row is None:
            row = self.n
            self.ids = _grow(self.ids, row + 1)
            self.matrix = _grow(self.matrix, row + 1, axis=1)
            self.ids[row] = memory_id
            self.row_of[memory_id] = row
            self.n += 1
        self.matrix[:, row] = self._normalised(vector)
        return True

    def remove(self, memory_id: int) -> None:
        row = self.row_of.pop(memory_id, None)
        if row is None:
            return
        last = self.n - 1
        if row != last:
            moved = int(self.ids[last])
            self.ids[row] = moved
            self.matrix[:, row] = self.matrix[:, last]
            self.row_of[moved] = row
        self.n = last

    def scores(self, query: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Cosine similarity of every memory to ``query`` (ids copied: safe after the lock is released)."""
        n = self.n
        if n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        q = self._normalised(query)
        out = np.empty(n, dtype=np.float32)
        step = max(1, SCAN_ELEMENTS // max(self.dims, 1))
        for start in range(0, n, step):
            stop = min(n, start + step)
            np.matmul(q, self.matrix[:, start:stop], out=out[start:stop])
        return self.ids[:n].copy(), out


class LexicalIndex:
    """BM25 over one user's memories (their ``lexical`` tokens): postings in CSR form plus a delta.

    ``offsets``/``rows``/``tfs`` hold the postings as built (token id → its rows, sorted);
    rows added since sit in ``delta`` (token id → rows, term frequencies). A removed memory's
    row is only marked dead. Document frequency, the number of documents and the average
    length count live rows only, so scores equal those of a fresh build; when the delta or
    the dead rows grow past a quarter of the index, it is compacted in memory (numpy sort).
    """

    def __init__(self, rows: Sequence[tuple[int, str]], generation: int) -> None:
        self.generation = generation
        self.lock = threading.Lock()
        self.vocab: dict[str, int] = {}
        n = len(rows)
        lengths: list[int] = []
        flat: list[str] = []
        for _, text in rows:
            tokens = text.split()
            lengths.append(len(tokens))
            flat.extend(tokens)
        vocab = self.vocab
        token_ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in flat), dtype=np.int64, count=len(flat))
        docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
        self.ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        self.lengths = np.asarray(lengths, dtype=np.float32)
        self.live = np.ones(n, dtype=bool)
        self.n = n
        self.n_live = n
        self.total_length = float(self.lengths.sum())
        self.row_of = {int(i): r for r, i in enumerate(self.ids.tolist())}
        self.delta: dict[int, tuple[list[int], list[int]]] = {}
        self.delta_size = 0
        self._set_postings(token_ids, docs)

    def _set_postings(self, token_ids: npt.NDArray[np.int64], docs: npt.NDArray[np.int64], tf: Any = None) -> None:
        """Postings from (token, row[, tf]) pairs; pairs without ``tf`` are counted."""
        width = max(self.n, 1)
        if tf is None:
            keys, counts = np.unique(token_ids * width + docs, return_counts=True)
        else:
            order = np.argsort(token_ids * width + docs, kind="stable")
            keys, counts = (token_ids * width + docs)[order], np.asarray(tf)[order]
        tokens = keys // width
        self.rows = (keys % width).astype(np.int32)
        self.tfs = counts.astype(np.float32)
        self.offsets = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(tokens, minlength=len(self.vocab)), out=self.offsets[1:])
        self.delta = {}
        self.delta_size = 0

    @property
    def nbytes(self) -> int:
        arrays = self.rows.nbytes + self.tfs.nbytes + self.offsets.nbytes + self.ids.nbytes + self.lengths.nbytes
        return int(arrays) + 100 * (len(self.vocab) + len(self.row_of)) + 60 * self.delta_size

    def put(self, memory_id: int, text: str) -> None:
        """Add a memory's tokens, or replace them (its old row dies)."""
        self.remove(memory_id)
        tokens = text.split()
        counts: dict[int, int] = {}
        for token in tokens:
            tid = self.vocab.setdefault(token, len(self.vocab))
            counts[tid] = counts.get(tid, 0) + 1
        row = self.n
        self.ids = _grow(self.ids, row + 1)
        self.lengths = _grow(self.lengths, row + 1)
        self.live = _grow(self.live, row + 1)
        self.ids[row], self.lengths[row], self.live[row] = memory_id, len(tokens), True
        self.row_of[memory_id] = row
        self.n += 1
        self.n_live += 1
        self.total_length += len(tokens)
        for tid, count in counts.items():
            rows, tfs = self.delta.setdefault(tid, ([], []))
            rows.append(row)
            tfs.append(count)
        self.delta_size += len(counts)
        self._maybe_compact()

    def remove(self, memory_id: int) -> None:
        row = self.row_of.pop(memory_id, None)
        if row is None:
            return
        self.live[row] = False
        self.n_live -= 1
        self.total_length -= float(self.lengths[row])
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        dead = self.n - self.n_live
        if self.delta_size > max(1024, self.rows.shape[0] // 4) or dead > max(256, self.n // 4):
            self.compact()

    def compact(self) -> None:
        """Fold the delta into the postings and drop dead rows (renumbering the live ones)."""
        base_tokens = np.repeat(np.arange(self.offsets.shape[0] - 1, dtype=np.int64), np.diff(self.offsets))
        delta_tokens = [np.full(len(r), t, dtype=np.int64) for t, (r, _) in self.delta.items()]
        tokens = np.concatenate([base_tokens, *delta_tokens])
        rows = np.concatenate(
            [self.rows.astype(np.int64), *[np.asarray(r, dtype=np.int64) for r, _ in self.delta.values()]]
        )
        tfs = np.concatenate([self.tfs, *[np.asarray(f, dtype=np.float32) for _, f in self.delta.values()]])
        live = self.live[: self.n]
        keep = live[rows]
        renumber = np.cumsum(live) - 1
        self.ids = self.ids[: self.n][live].copy()
        self.lengths = self.lengths[: self.n][live].copy()
        self.n = self.n_live
        self.live = np.ones(self.n, dtype=bool)
        self.row_of = {int(i): r for r, i in enumerate(self.ids.tolist())}
        self._set_postings(tokens[keep], renumber[rows[keep]], tfs[keep])

    def scores(
        self, tokens: Sequence[str], *, k1: float = K1, b: float = B
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """BM25 of the memories matching any of ``tokens`` (only those), with their ids."""
        if self.n_live == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        n_docs = self.n_live
        average = max(self.total_length / n_docs, 1.0)
        dead = self.n_live != self.n
        acc: npt.NDArray[np.float32] | None = None
        matched: list[npt.NDArray[np.int64]] = []
        for token in dict.fromkeys(tokens):
            tid = self.vocab.get(token)
            if tid is None:
                continue
            docs: npt.NDArray[Any] = (
                self.rows[self.offsets[tid] : self.offsets[tid + 1]]
                if tid + 1 < self.offsets.shape[0]
                else self.rows[:0]
            )
            tf: npt.NDArray[Any] = (
                self.tfs[self.offsets[tid] : self.offsets[tid + 1]] if tid + 1 < self.offsets.shape[0] else self.tfs[:0]
            )
            extra = self.delta.get(tid)
            if extra is not None:
                docs = np.concatenate([docs, np.asarray(extra[0], dtype=np.int32)])
                tf = np.concatenate([tf, np.asarray(extra[1], dtype=np.float32)])
            if dead:
                alive = self.live[docs]
                docs, tf = docs[alive], tf[alive]
            df = docs.shape[0]
            if df == 0:
                continue
            idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            norm = k1 * (1 - b + b * self.lengths[docs] / average)
            if acc is None:
                acc = np.zeros(self.n, dtype=np.float32)
            acc[docs] += idf * tf * (k1 + 1) / (tf + norm)
            matched.append(docs.astype(np.int64))
        if acc is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        rows = np.unique(np.concatenate(matched)) if len(matched) > 1 else matched[0]
        return self.ids[rows], acc[rows]


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """What one committed write did to one user's memories, for the recall cache.

    ``before``/``after`` are the user's ``memory_generations`` value read inside the write
    transaction; a cached index at ``before`` reflects the database just before this write,
    so applying the change brings it to ``after`` exactly.
    """

    workspace_id: str
    user_id: str
    memory_id: int
    before: int
    after: int
    removed: bool = False
    lexical: str | None = None
    model: str | None = None
    vector: npt.NDArray[np.float32] | None = None
    vectors_dropped: bool = False
    forgotten: bool = False


class MemoryRecallCache:
    """Per user: a :class:`VectorIndex` per model and a :class:`LexicalIndex`.

    An index is valid for the user's generation (row in ``memory_generations``) it was built
    or last updated at. This process's own writes update the indexes in place
    (:meth:`apply`, after commit); a write from anywhere else (another store, another
    process, a bulk load) moves the generation without that, and the next recall rebuilds.
    At most :data:`MAX_CACHED_USERS` users' worth of entries and :data:`MAX_CACHED_BYTES`
    are kept (least recently used first out).
    """

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, ...], VectorIndex | LexicalIndex] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, key: tuple[str, ...], generation: int) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.generation == generation:
                self._entries.move_to_end(key)
                return entry
        return None

    def _put(self, key: tuple[str, ...], entry: VectorIndex | LexicalIndex) -> None:
        with self._lock:
            old = self._entries.get(key)
            if old is not None and old.generation > entry.generation:
                return  # built from an older snapshot than what is cached
            self._entries[key] = entry
            self._entries.move_to_end(key)
            total = sum(e.nbytes for e in self._entries.values())
            while len(self._entries) > 1 and (len(self._entries) > 2 * MAX_CACHED_USERS or total > MAX_CACHED_BYTES):
                _, dropped = self._entries.popitem(last=False)
                total -= dropped.nbytes

    @staticmethod
    def generation(conn: sqlite3.Connection, workspace_id: str, user_id: str) -> int:
        row = conn.execute(
            "SELECT generation FROM memory_generations WHERE workspace_id = ? AND user_id = ?", (workspace_id, user_id)
        ).fetchone()
        return -1 if row is None else int(row[0])

    def vectors(
        self, conn: sqlite3.Connection, workspace_id: str, user_id: str, model: str, generation: int
    ) -> VectorIndex:
        key = ("vectors", workspace_id, user_id, model)
        cached = self._get(key, generation)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        with _snapshot(conn):
            generation = self.generation(conn, workspace_id, user_id)
            rows = conn.execute(
                # no ORDER BY: sorting 10k blobs took a temporary B-tree (ties are broken by id later anyway)
                "SELECT memory_id, embedding FROM memory_embeddings WHERE workspace_id = ? AND user_id = ? "
                "AND model = ?",
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
        index = VectorIndex(ids, vectors, generation)
        self._put(key, index)
        return index

    def lexical(self, conn: sqlite3.Connection, workspace_id: str, user_id: str, generation: int) -> LexicalIndex:
        key = ("lexical", workspace_id, user_id)
        cached = self._get(key, generation)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        with _snapshot(conn):
            generation = self.generation(conn, workspace_id, user_id)
            rows = conn.execute(
                "SELECT id, lexical FROM memories WHERE workspace_id = ? AND user_id = ?",
                (workspace_id, user_id),
            ).fetchall()
        index = LexicalIndex(rows, generation)
        self._put(key, index)
        return index

    def apply(self, change: MemoryChange) -> None:
        """Bring the user's cached indexes from ``change.before`` to ``change.after`` (after commit)."""
        with self._lock:
            mine = [
                (key, entry)
                for key, entry in self._entries.items()
                if key[1] == change.workspace_id and key[2] == change.user_id
            ]
            if change.forgotten:
                for key, _ in mine:
                    del self._entries[key]
                return
        if change.before == change.after:
            return
        for key, entry in mine:
            with entry.lock:
                if entry.generation != change.before:
                    continue  # already stale: rebuilt on the next recall
                if isinstance(entry, LexicalIndex):
                    if change.removed:
                        entry.remove(change.memory_id)
                    elif change.lexical is not None:
                        entry.put(change.memory_id, change.lexical)
                elif change.removed:
                    entry.remove(change.memory_id)
                elif change.vector is not None and key[3] == change.model:
                    if not entry.put(change.memory_id, change.vector):
                        continue  # another size: left stale, the next recall rebuilds
                elif change.vectors_dropped:
                    entry.remove(change.memory_id)
                entry.generation = change.after


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, so a generation and the rows read with it agree."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


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
    conn: sqlite3.Connection,
    workspace_id: str,
    user_id: str,
    ids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float32],
    k: int,
    category: str | None,
    tags: Sequence[str],
) -> list[tuple[int, float]]:
    """The ``k`` best-scored memory ids that pass the filters, best first (ties: lower id).

    Without filters no row is read: the ids come from the user's own cached index. With a
    category or tags, candidates are checked in SQL, widening until ``k`` pass.
    """
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
                [workspace_id, user_id, *params, json.dumps([i for i, _ in ranked])],
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
    workspace_id: str,
    user_id: str,
    model: str,
    query: npt.NDArray[np.float32],
    k: int,
    category: str | None,
    tags: Sequence[str],
) -> list[tuple[int, float]]:
    index = cache.vectors(conn, workspace_id, user_id, model, generation)
    with index.lock:
        if index.n and index.dims != query.shape[0]:
            raise InvalidInput(
                f"the query vector has {query.shape[0]} dimensions but model {model!r} stored "
                f"{index.dims}-dimensional memory vectors: embed the query with the same model"
            )
        ids, scores = index.scores(query)
    return _rank(conn, workspace_id, user_id, ids, scores, k, category, tags)


def _lexical_ranking(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    generation: int,
    workspace_id: str,
    user_id: str,
    tokens: Sequence[str],
    k: int,
    category: str | None,
    tags: Sequence[str],
) -> list[tuple[int, float]]:
    if not tokens:
        return []
    index = cache.lexical(conn, workspace_id, user_id, generation)
    with index.lock:
        ids, scores = index.scores(tokens)
    return _rank(conn, workspace_id, user_id, ids, scores, k, category, tags)


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
    generation = cache.generation(conn, workspace_id, user_id)
    ranked = _vector_ranking(conn, cache, generation, workspace_id, user_id, model, query, k, category, tags)
    return _with_records(conn, workspace_id, user_id, ranked)


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
    generation = cache.generation(conn, workspace_id, user_id)
    ranked = _lexical_ranking(conn, cache, generation, workspace_id, user_id, tokens, k, category, tags)
    return _with_records(conn, workspace_id, user_id, ranked)


def memory_recall(
    conn: sqlite3.Connection,
    cache: MemoryRecallCache,
    workspace_id: str,
    user_id: str,
    model: str,
    query: npt.NDArray[np.float32],
    tokens: Sequence[str],
    k: int,
    limit: int,
    category: str | None,
    tags: Sequence[str],
) -> list[MemoryHit]:
    """Hybrid recall in one call: both rankings (ids only), RRF, then the ``limit`` fused rows."""
    generation = cache.generation(conn, workspace_id, user_id)
    by_vector = _vector_ranking(conn, cache, generation, workspace_id, user_id, model, query, k, category, tags)
    by_text = _lexical_ranking(conn, cache, generation, workspace_id, user_id, tokens, k, category, tags)
    return fuse_memory_hits(
        [i for i, _ in by_vector],
        [i for i, _ in by_text],
        limit,
        lambda ids: _records(conn, workspace_id, user_id, ids),
    )


def forget_user(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, prepared: Prepared | None = None
) -> ForgetReport:
    """The erasure rule (``docs/privacy.md``), in the caller's transaction: see :mod:`._erasure`."""
    return erase_user(conn, workspace_id, user_id, utcnow(), prepared)


def _generation(conn: sqlite3.Connection, workspace_id: str, user_id: str) -> int:
    return MemoryRecallCache.generation(conn, workspace_id, user_id)


def insert_memory_tracked(
    conn: sqlite3.Connection, draft: MemoryDraft, model: str, vector: npt.NDArray[np.float32] | None, now: datetime
) -> tuple[MemoryRecord, MemoryChange]:
    """:func:`insert_memory`, and what it changed for the recall cache."""
    before = _generation(conn, draft.workspace_id, draft.user_id)
    stored = insert_memory(conn, draft, model, vector, now)
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
) -> tuple[MemoryRecord, MemoryChange]:
    """:func:`update_memory`, and what it changed for the recall cache."""
    before = _generation(conn, workspace_id, user_id)
    stored = update_memory(conn, workspace_id, user_id, memory_id, changes, model, vector, now)
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
    conn: sqlite3.Connection, workspace_id: str, user_id: str, memory_id: int
) -> tuple[None, MemoryChange]:
    """:func:`delete_memory`, and what it changed for the recall cache."""
    before = _generation(conn, workspace_id, user_id)
    delete_memory(conn, workspace_id, user_id, memory_id)
    after = _generation(conn, workspace_id, user_id)
    return None, MemoryChange(workspace_id, user_id, memory_id, before, after, removed=True)


def forget_user_tracked(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, prepared: Prepared | None = None
) -> tuple[ForgetReport, MemoryChange]:
    """:func:`forget_user`; the user's cached indexes are dropped after it commits."""
    report = forget_user(conn, workspace_id, user_id, prepared)
    return report, MemoryChange(workspace_id, user_id, 0, 0, 0, forgotten=True)


__all__ = [
    "LexicalIndex",
    "MemoryChange",
    "MemoryRecallCache",
    "VectorIndex",
    "delete_memory",
    "delete_memory_tracked",
    "forget_user",
    "forget_user_tracked",
    "get_memory",
    "insert_memory",
    "insert_memory_tracked",
    "list_memories",
    "memory_lexical_search",
    "memory_recall",
    "memory_vector_search",
    "tracked_write",
    "update_memory",
    "update_memory_tracked",
]
