"""Search on SQLite: a numpy vector scan and FTS5 BM25, both scoped and filtered in SQL.

Vector search (no ANN index: ``sqlite-vec`` cannot load in every Python build, and a scan of
100k × 384 float32 vectors takes ~10–17 ms, bound by memory bandwidth):

* :class:`VectorCache` keeps, per ``(workspace, model)``, one L2-normalised float32
  matrix and the sorted chunk ids of its rows. It is stamped with the workspace's
  *generation* from ``search_generations`` (migration 4), a counter that triggers on
  ``chunk_embeddings`` bump on every insert, update and delete, including cascades from
  deleted chunks and writes by other connections or processes. Each search reads the
  generation (one indexed row) and rebuilds the matrix only when it moved.
* Filters beyond the workspace become one SQL query for the matching chunk ids; the
  matrix rows are restricted to those ids *before* the dot product, so a selective
  filter still returns ``k`` rows when ``k`` rows match.
* Score = cosine similarity (``1 - cosine distance``, as on PostgreSQL).
* A workspace of at least ``sqlite_vector_prefilter_rows`` vectors is ranked through a
  64-dimension projection first and a pool of its best rows scored exactly
  (:mod:`._prefilter`); a narrower filter, and every search when the setting is 0, scans
  exactly.

Visibility (a ``viewer`` or ``public_only``) is one more ``WHERE`` condition on the
chunk's own ``private`` / ``members`` columns. Without other filters, the vector scan
masks out the private chunks the viewer may not see (:func:`hidden_ids`, from a partial
index) instead of listing every visible chunk.

Lexical search: ``knowledge_chunks_fts MATCH '"t1" OR "t2" …'`` over omoide's own
tokens (each token a quoted FTS5 string, so no token can be read as query syntax),
ranked by ``bm25()``; score = ``-bm25`` (higher is better).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.stores.knowledge import ChunkId, SourceId
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters
from omoide.stores.sqlite._conn import format_ts, parse_ts
from omoide.stores.sqlite._prefilter import Projection, candidates, pool_size, project

TOKENIZER_KEY = "lexical_tokenizer"
MIXED_TOKENIZERS = "mixed"
_GATHER_FRACTION = 0.25  # below this share of rows, gather them; above, score all and mask
MATCHING_CACHE = 256  # filtered id lists remembered per store (see VectorCache.matching)
MAX_CACHE_BYTES = 1 << 30  # matrices kept per store; the oldest built are dropped beyond this
PREFILTER_ROWS = 20_000  # the default of Settings.sqlite_vector_prefilter_rows

HIT_COLUMNS = (
    "c.id, c.source_id, c.content, c.location, c.channel_id, c.thread_id, c.author_ids, c.started_at, c.ended_at, "
    "s.type, s.title, s.uri"
)
FROM_CHUNKS = "knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id"
_RECORD_TOKENIZER = f"""
INSERT INTO store_meta (key, value, updated_at) VALUES ('{TOKENIZER_KEY}', ?1, ?2)
ON CONFLICT (key) DO UPDATE SET value = '{MIXED_TOKENIZERS}', updated_at = ?2
WHERE store_meta.value <> excluded.value AND store_meta.value <> '{MIXED_TOKENIZERS}'
"""


# ---------------------------------------------------------------------------- filters


def filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    """The ``WHERE`` condition (over ``c`` chunks and ``s`` sources) and its parameters."""
    where = ["c.workspace_id = ?"]
    params: list[Any] = [filters.workspace_id]
    if filters.channel_ids:
        where.append("c.channel_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(filters.channel_ids))
    if filters.thread_ids:
        where.append("c.thread_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(filters.thread_ids))
    if filters.source_types:
        where.append("s.type IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(filters.source_types))
    if filters.author_ids:
        where.append(
            "EXISTS (SELECT 1 FROM json_each(c.author_ids) a WHERE a.value IN (SELECT value FROM json_each(?)))"
        )
        params.append(json.dumps(filters.author_ids))
    if filters.since is not None:
        where.append("coalesce(c.ended_at, c.started_at) >= ?")
        params.append(format_ts(filters.since))
    if filters.until is not None:
        where.append("coalesce(c.started_at, c.ended_at) <= ?")
        params.append(format_ts(filters.until))
    if filters.public_only:
        where.append("c.private = 0")
    elif filters.viewer is not None:
        where.append("(c.private = 0 OR EXISTS (SELECT 1 FROM json_each(c.members) m WHERE m.value = ?))")
        params.append(filters.viewer)
    return " AND ".join(where), params


_DECODE = json.JSONDecoder().raw_decode  # stored JSON is compact: no surrounding whitespace to strip


def _json(text: str, empty: Any) -> Any:
    """Parse stored JSON; the common empty values skip the parser (hit assembly dominates k=200 searches)."""
    return empty if text in ("{}", "[]") else _DECODE(text)[0]


def _ts(text: str | None) -> datetime | None:
    return None if text is None else parse_ts(text)


def hit_from_row(row: Sequence[Any], *, score: float, rank: int) -> ChunkHit:
    return ChunkHit(
        chunk_id=ChunkId(row[0]),
        source_id=SourceId(row[1]),
        score=score,
        rank=rank,
        content=row[2],
        location=_json(row[3], {}),
        channel_id=row[4],
        thread_id=row[5],
        author_ids=tuple(_json(row[6], ())),
        started_at=_ts(row[7]),
        ended_at=_ts(row[8]),
        source_type=row[9],
        source_title=row[10] or "",
        source_uri=row[11],
    )


def _rows_by_id(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, Sequence[Any]]:
    rows = conn.execute(
        f"SELECT {HIT_COLUMNS} FROM {FROM_CHUNKS} WHERE c.id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ).fetchall()
    return {int(r[0]): r for r in rows}


def fetch_chunks(conn: sqlite3.Connection, ids: Sequence[int]) -> list[ChunkHit]:
    """Chunks by id in the order given (missing ids skipped), with ``score=0.0, rank=0``."""
    rows = _rows_by_id(conn, ids)
    return [hit_from_row(rows[i], score=0.0, rank=0) for i in ids if i in rows]


# ----------------------------------------------------------------------------- vectors


@dataclass(frozen=True, slots=True)
class _Matrix:
    generation: int
    ids: npt.NDArray[np.int64]  # ascending
    vectors: npt.NDArray[np.float32]  # (n, dims), rows L2-normalised
    projection: Projection | None = None  # large matrices: the prefilter's rows (see ._prefilter)

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes) + (0 if self.projection is None else self.projection.nbytes)


class VectorCache:
    """Per-(workspace, model) normalised matrices, rebuilt when the workspace's generation moves.

    Shared by the reader threads of one store; a lock keeps two threads from building the
    same matrix at once. A built entry is immutable, so readers use it without the lock.
    Beyond ``MAX_CACHE_BYTES`` (1 GiB, ~700k × 384 vectors) the matrices built longest ago
    are dropped (a bot in many guilds keeps only the busy ones).
    """

    def __init__(self, *, prefilter_rows: int = PREFILTER_ROWS) -> None:
        self.prefilter_rows = prefilter_rows
        """Matrices with at least this many rows get a prefilter projection (0: none, scans stay exact)."""
        self._entries: dict[tuple[str, str], _Matrix] = {}
        self._lock = threading.Lock()
        self._matching: OrderedDict[tuple[SearchFilters, int], npt.NDArray[np.int64]] = OrderedDict()

    def matching(self, conn: sqlite3.Connection, filters: SearchFilters, generation: int) -> npt.NDArray[np.int64]:
        """:func:`matching_ids`, remembered per workspace generation (the ``MATCHING_CACHE``
        most recent filters): a bot searching one channel again and again lists its chunks
        once until the workspace changes."""
        key = (filters, generation)
        with self._lock:
            found = self._matching.get(key)
            if found is not None:
                self._matching.move_to_end(key)
                return found
        ids = matching_ids(conn, filters)
        with self._lock:
            self._matching[key] = ids
            while len(self._matching) > MATCHING_CACHE:
                self._matching.popitem(last=False)
        return ids

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._matching.clear()

    def matrix(self, conn: sqlite3.Connection, workspace_id: str, model: str) -> _Matrix:
        key = (workspace_id, model)
        generation = _generation(conn, workspace_id)
        entry = self._entries.get(key)
        if entry is not None and entry.generation == generation:
            return entry
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.generation == generation:
                return entry
            entry = _load_matrix(conn, workspace_id, model, self.prefilter_rows)
            self._entries.pop(key, None)
            self._entries[key] = entry
            total = sum(e.nbytes for e in self._entries.values())
            for old in list(self._entries):  # oldest built first
                if total <= MAX_CACHE_BYTES or old == key:
                    break
                total -= self._entries.pop(old).nbytes
            return entry


def _generation(conn: sqlite3.Connection, workspace_id: str) -> int:
    row = conn.execute("SELECT generation FROM search_generations WHERE workspace_id = ?", (workspace_id,)).fetchone()
    return -1 if row is None else int(row[0])


def _load_matrix(conn: sqlite3.Connection, workspace_id: str, model: str, prefilter_rows: int) -> _Matrix:
    """Read the generation and the vectors in one snapshot and normalise the rows.

    Raises:
        InvalidInput: the model's vectors in this workspace have different sizes.
    """
    conn.execute("BEGIN")
    try:
        generation = _generation(conn, workspace_id)
        rows = conn.execute(
            "SELECT chunk_id, dimensions, embedding FROM chunk_embeddings WHERE workspace_id = ? AND model = ? "
            "ORDER BY chunk_id",
            (workspace_id, model),
        ).fetchall()
    finally:
        conn.execute("COMMIT")
    if not rows:
        return _Matrix(generation, np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32))
    dims = {int(r[1]) for r in rows}
    if len(dims) > 1:
        raise InvalidInput(
            f"model {model!r} has vectors of several sizes {sorted(dims)} in workspace {workspace_id!r}; "
            "re-embed the workspace with one model configuration"
        )
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), dims.pop())
    matrix = matrix.astype(np.float32)  # a writable, native-order copy
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0.0] = 1.0  # a zero vector scores 0 against anything
    matrix /= norms[:, None]
    return _Matrix(generation, ids, matrix, project(matrix, prefilter_rows))


def matching_ids(conn: sqlite3.Connection, filters: SearchFilters) -> npt.NDArray[np.int64]:
    """Ids of the chunks that pass ``filters``, ascending.

    Sources are joined only when a source type is filtered: joining every chunk to its
    source reads each (wide) chunk row, where the filter's index alone holds the ids.
    """
    where, params = filter_sql(filters)
    table = FROM_CHUNKS if filters.source_types else "knowledge_chunks c"
    rows = conn.execute(f"SELECT c.id FROM {table} WHERE {where} ORDER BY c.id", params).fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))


def hidden_ids(conn: sqlite3.Connection, filters: SearchFilters) -> npt.NDArray[np.int64]:
    """Ids of the workspace's private chunks that ``filters`` hide from its viewer, ascending.

    Reads only the partial index ``knowledge_chunks_private_idx`` and the private rows:
    a workspace's private chunks are usually few, so masking them out of the matrix is
    cheaper than listing every visible chunk.
    """
    sql = "SELECT id FROM knowledge_chunks WHERE workspace_id = ? AND private = 1"
    params: list[Any] = [filters.workspace_id]
    if not filters.public_only and filters.viewer is not None:
        sql += " AND NOT EXISTS (SELECT 1 FROM json_each(members) m WHERE m.value = ?)"
        params.append(filters.viewer)
    rows = conn.execute(sql + " ORDER BY id", params).fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))


def _positions(ids: npt.NDArray[np.int64], wanted: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """The positions in ``ids`` of the ``wanted`` ids it holds (both ascending: O(m log n))."""
    pos = np.minimum(np.searchsorted(ids, wanted), ids.shape[0] - 1)
    present: npt.NDArray[np.intp] = pos[ids[pos] == wanted]
    return present


def _dot(matrix: npt.NDArray[np.float32], q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's dot product with ``q``, on the calling thread: numpy's own SIMD loop
    (``vecdot``), not BLAS. The scan is bound by memory bandwidth, so BLAS's second thread
    barely shortens it; it does take the core the lexical list runs on at the same time
    (measured at 100k chunks: the same wall time for half the CPU)."""
    scores: npt.NDArray[np.float32] = np.vecdot(matrix, q)
    return scores


def _rows_of(matrix: npt.NDArray[np.float32], rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
    """The rows of ``matrix`` at ``rows``, copied: ``np.take`` copies whole rows, ~30 % less CPU
    than the general fancy-indexing path of ``matrix[rows]`` (5,000 × 384 rows: ~1.05 vs ~1.45 ms)."""
    out: npt.NDArray[np.float32] = np.take(matrix, rows, axis=0)
    return out


def _prefiltered(
    entry: _Matrix, q: npt.NDArray[np.float32], k: int, hidden: npt.NDArray[np.intp] | None
) -> list[RankedChunk] | None:
    """The ranking through the prefilter (:mod:`._prefilter`), or ``None`` when the matrix has
    no projection or the pool holds fewer than ``k`` rows the viewer may see (scan exactly)."""
    if entry.projection is None:
        return None
    rows = candidates(entry.projection, q, pool_size(entry.ids.shape[0], k))
    if hidden is not None and hidden.shape[0]:
        rows = np.setdiff1d(rows, hidden, assume_unique=True)
    if rows.shape[0] < min(k, entry.ids.shape[0] - (0 if hidden is None else hidden.shape[0])):
        return None
    return _top(entry.ids[rows], _dot(_rows_of(entry.vectors, rows), q), k)


def _top(ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], take: int) -> list[RankedChunk]:
    """The ``take`` best of ``scores`` as a ranking: best first, ties by lower id."""
    take = min(take, scores.shape[0])
    top = np.argpartition(-scores, take - 1)[:take] if take < scores.shape[0] else np.arange(scores.shape[0])
    order = top[np.lexsort((ids[top], -scores[top]))]
    # Python ints and floats in one call each (the same values as int() / float() per element)
    return [RankedChunk(ChunkId(i), s) for i, s in zip(ids[order].tolist(), scores[order].tolist(), strict=True)]


def vector_ranking(
    conn: sqlite3.Connection,
    cache: VectorCache,
    model: str,
    query: npt.NDArray[np.float32],
    filters: SearchFilters,
    k: int,
) -> list[RankedChunk]:
    """Ids and cosine similarities of the ``k`` chunks most similar to ``query`` among those
    passing ``filters``, best first (ties by lower id); no chunk row is read.

    Raises:
        InvalidInput: the query's size differs from the stored vectors of ``model``.
    """
    entry = cache.matrix(conn, filters.workspace_id, model)
    n = entry.ids.shape[0]
    if n == 0:
        return []
    if entry.vectors.shape[1] != query.shape[0]:
        raise InvalidInput(
            f"the query vector has {query.shape[0]} dimensions but model {model!r} stores "
            f"{entry.vectors.shape[1]}-dimensional vectors: embed the query with the same model"
        )
    q = (query / np.linalg.norm(query)).astype(np.float32)
    hidden_count = 0
    if filters.narrows:
        rows = _positions(entry.ids, cache.matching(conn, filters, entry.generation))
        if rows.shape[0] == 0:
            return []
        scores = (
            _dot(_rows_of(entry.vectors, rows), q)
            if rows.shape[0] < _GATHER_FRACTION * n
            else _dot(entry.vectors, q)[rows]
        )
        ids = entry.ids[rows]
    else:
        hidden = _positions(entry.ids, hidden_ids(conn, filters)) if filters.restricts_visibility else None
        found = _prefiltered(entry, q, k, hidden)
        if found is not None:
            return found
        scores = _dot(entry.vectors, q)
        ids = entry.ids
        if hidden is not None:
            scores[hidden] = -np.inf  # a fresh array: never ranked while k <= the visible rows
            hidden_count = hidden.shape[0]
    take = min(k, scores.shape[0] - hidden_count)
    if take <= 0:
        return []
    return _top(ids, scores, take)


# ----------------------------------------------------------------------------- lexical


def fts_query(tokens: Sequence[str]) -> str:
    """An FTS5 query matching any token: each one a quoted string (``"`` doubled), joined by OR."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)


_FTS_RANKED = (
    "SELECT rowid, bm25(knowledge_chunks_fts) AS rank_ FROM knowledge_chunks_fts "
    "WHERE knowledge_chunks_fts MATCH ? ORDER BY rank_, rowid"
)
FIRST_BATCH = 1.25
"""The first batch of ranked matches tested against the filters, as a multiple of ``k`` (each
next batch twice the last): a workspace that holds most chunks fills ``k`` in one batch."""
RANKED_FIRST_SHARE = 0.5
"""A workspace holding at least this share of the chunks is searched ranked-first (see
:func:`lexical_ranking`); a smaller one, or a narrower filter, by the join."""
SHARE_TTL = 60.0
"""Seconds a workspace's share of the chunks is reused (it only picks a plan: never a result)."""
_SHARES: dict[tuple[int, str], tuple[float, float]] = {}  # (id(conn), workspace) -> (share, when)


def _workspace_share(conn: sqlite3.Connection, workspace_id: str) -> float:
    """The workspace's share of all chunks (counted from indexes), reused :data:`SHARE_TTL` s."""
    key = (id(conn), workspace_id)
    now = time.monotonic()
    found = _SHARES.get(key)
    if found is not None and now - found[1] < SHARE_TTL:
        return found[0]
    total = conn.execute("SELECT count(*) FROM knowledge_chunks").fetchone()[0]
    mine = conn.execute("SELECT count(*) FROM knowledge_chunks WHERE workspace_id = ?", (workspace_id,)).fetchone()[0]
    share = mine / total if total else 0.0
    if len(_SHARES) > 4096:
        _SHARES.clear()
    _SHARES[key] = (share, now)
    return share


def lexical_ranking(
    conn: sqlite3.Connection, tokens: Sequence[str], filters: SearchFilters, k: int
) -> list[RankedChunk]:
    """Ids and ``-bm25`` scores of the ``k`` best matches of any of ``tokens`` among the
    chunks passing ``filters``, best first (ties by lower id).

    Two plans, the same ranking (same scores, same order): joining every match to its chunk row
    to test the filters reads each match's row — at 100k chat chunks a common word's 2,000
    matches, ~3 MB of pages per search — where ``k`` = 200 in a workspace holding most chunks
    needs ~250 of them. So when the filter is a workspace holding at least
    :data:`RANKED_FIRST_SHARE` of the chunks, the full-text index ranks all its matches first
    (BM25 needs only the index and its document lengths) and the filters are tested on the
    best ones, a batch at a time, until ``k`` pass (:func:`_ranked_first`); otherwise (a small
    workspace, a channel…), most of the best matches would fail the filters, and the join
    is cheaper."""
    if not filters.narrows and _workspace_share(conn, filters.workspace_id) >= RANKED_FIRST_SHARE:
        return _ranked_first(conn, tokens, filters, k)
    where, params = filter_sql(filters)
    rows = conn.execute(
        "SELECT c.id, bm25(knowledge_chunks_fts) AS rank_ FROM knowledge_chunks_fts "
        "JOIN knowledge_chunks c ON c.id = knowledge_chunks_fts.rowid JOIN knowledge_sources s ON s.id = c.source_id "
        f"WHERE knowledge_chunks_fts MATCH ? AND {where} ORDER BY rank_, c.id LIMIT ?",
        [fts_query(tokens), *params, k],
    ).fetchall()
    return [RankedChunk(ChunkId(int(r[0])), -float(r[1])) for r in rows]


def _ranked_first(conn: sqlite3.Connection, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
    """:func:`lexical_ranking` by the index's own ranking, the filters tested on its best
    matches in batches (by rowid) until ``k`` pass."""
    where, params = filter_sql(filters)
    # by rowid: the planner would otherwise walk the workspace's index and test the id list per entry
    table = "knowledge_chunks c NOT INDEXED" + (
        " JOIN knowledge_sources s ON s.id = c.source_id" if filters.source_types else ""
    )
    check = f"SELECT c.id FROM {table} WHERE c.id IN (SELECT value FROM json_each(?)) AND {where}"
    ranked = conn.execute(_FTS_RANKED, (fts_query(tokens),))
    out: list[RankedChunk] = []
    size = int(k * FIRST_BATCH) + 16
    try:
        while len(out) < k:
            batch = ranked.fetchmany(size)
            if not batch:
                break
            passing = {row[0] for row in conn.execute(check, [json.dumps([r[0] for r in batch]), *params])}
            for chunk_id, rank in batch:
                if chunk_id in passing:
                    out.append(RankedChunk(ChunkId(int(chunk_id)), -float(rank)))
                    if len(out) == k:
                        break
            size *= 2
    finally:
        ranked.close()
    return out


# ------------------------------------------------------------------------- store_meta


def record_tokenizer(conn: sqlite3.Connection, name: str, now: datetime) -> None:
    """Record the lexical tokenizer that wrote the index (``mixed`` once two disagree)."""
    conn.execute(_RECORD_TOKENIZER, (name, format_ts(now)))


def set_lexical_tokenizer(conn: sqlite3.Connection, name: str, now: datetime) -> None:
    conn.execute(
        "INSERT INTO store_meta (key, value, updated_at) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (TOKENIZER_KEY, name, format_ts(now)),
    )


def lexical_batch(conn: sqlite3.Connection, table: str, after_id: int, limit: int) -> list[tuple[int, str]]:
    rows = conn.execute(
        f"SELECT id, content FROM {table} WHERE id > ? ORDER BY id LIMIT ?",  # table: a LexicalTable value
        (after_id, limit),
    ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def rewrite_lexical(conn: sqlite3.Connection, table: str, rows: Sequence[tuple[int, str]]) -> None:
    conn.executemany(f"UPDATE {table} SET lexical = ?2 WHERE id = ?1 AND lexical <> ?2", rows)


def lexical_row_count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # table: a LexicalTable value


def lexical_tokenizer(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (TOKENIZER_KEY,)).fetchone()
    return None if row is None else str(row[0])


__all__ = [
    "MIXED_TOKENIZERS",
    "TOKENIZER_KEY",
    "VectorCache",
    "fetch_chunks",
    "filter_sql",
    "fts_query",
    "hidden_ids",
    "lexical_batch",
    "lexical_ranking",
    "lexical_row_count",
    "lexical_tokenizer",
    "matching_ids",
    "record_tokenizer",
    "rewrite_lexical",
    "set_lexical_tokenizer",
    "vector_ranking",
]
