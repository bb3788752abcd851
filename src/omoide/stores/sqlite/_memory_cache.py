"""The per-user recall indexes of SQLite memories, cached in process (:class:`MemoryRecallCache`).

Recall works on one user's memories only: an exact numpy scan over their float32 vectors
(per model, :class:`VectorIndex`) and BM25 over an inverted index of their memories' tokens
(:class:`LexicalIndex`), both tied to the user's row in ``memory_generations`` (triggers bump
it on any change to their memories or vectors, from any connection or process). The store's
own writes update the indexes in place after they commit (:meth:`MemoryRecallCache.apply`);
any other change moves the generation past the cache, and the next recall rebuilds.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput

MAX_CACHED_USERS = 256
MAX_CACHED_BYTES = 1 << 30
"""The recall cache keeps at most this many users (two entries each) and about this many bytes."""

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
        with snapshot(conn):
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
        with snapshot(conn):
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
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
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


__all__ = ["LexicalIndex", "MemoryChange", "MemoryRecallCache", "VectorIndex", "snapshot"]
