"""Search on PostgreSQL + pgvector: HNSW cosine search with filters inside, and ``tsvector`` ranking.

Vector search fixes seed 004's query (``ORDER BY embedding <-> q`` — L2, which a cosine
index cannot serve — with the guild filter applied after the index scan, so it could
return fewer rows than asked)::

    SELECT … , (e.embedding::halfvec(D)) <=> $1 AS distance
    FROM chunk_embeddings e JOIN knowledge_chunks c … JOIN knowledge_sources s …
    WHERE e.model = '<model>' AND e.workspace_id = $2 AND <filters>
    ORDER BY (e.embedding::halfvec(D)) <=> $1
    LIMIT k

* The model is an SQL *literal* (safely quoted) and the expression repeats the index's,
  so the planner can use the model's partial HNSW index (``ensure_vector_index``).
* It runs with ``hnsw.iterative_scan = relaxed_order`` (pgvector ≥ 0.8) and
  ``hnsw.ef_search`` from settings (at least ``k``): when the filters reject most index
  candidates, the scan continues until ``k`` rows pass (up to ``hnsw.max_scan_tuples``).
  Pooled connections start with both for the pipeline's k (:func:`set_hnsw_session`), so
  its search is one statement; another k sets its own in a read-only transaction
  (``SET LOCAL``). Relaxed order may return neighbours slightly out of order; the rows are
  re-sorted by distance before ranking.
* A filter that keeps only a few thousand chunks (a channel, an author) is served by an
  exact ranking of just those chunks (:data:`EXACT_LIMIT`): their ids are read first, then
  their vectors by primary key (:func:`exact_vector_sql`). Measured at 100k chunks, the
  iterative scan for a 5 % filter and k=200 took ~170 ms, the exact ranking 14 ms.
* A filter keeping more than that but a small share of the index (one channel of a big guild:
  40k of 1M chunks) stays on the HNSW scan, which must walk about ``k / share`` candidates
  (~4,000 for k 200 at 5 %) — too many to join each to its chunk row: at 1M chunks that join
  was 40 % of the search. The chunks passing the filter are read first (their ids, from an
  index), sent back as a bitmap, and each candidate is tested against it on its own row
  (:func:`bitmap_vector_sql`, :data:`BITMAP_LIMIT`); no join.
* Score = ``1 - distance`` (cosine similarity).
* Visibility (``viewer`` / ``public_only``) is a condition on the chunk row the scan joins
  anyway (``NOT c.private OR c.members ? viewer``): the iterative scan skips hidden chunks
  and keeps going until ``k`` visible ones pass, like any other filter.

Lexical search: ``lexical_tsv @@ to_tsquery('simple', $1)`` where ``$1`` is every token as a
quoted tsquery lexeme (quotes doubled, backslashes escaped) joined by ``|`` (OR), so no token
is read as an operator. ``simple`` only lower-cases: the Japanese splitting happened in
omoide before indexing, with the same function as for the query.

The matches are ranked by BM25, as SQLite's FTS5 ranks them, not by ``ts_rank_cd``, which has
no inverse document frequency (:mod:`omoide.stores.postgres._bm25`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt
from pgvector import HalfVector

from omoide.errors import InvalidInput
from omoide.models import ensure_utc
from omoide.stores._knowledge_common import sql_literal
from omoide.stores.knowledge import ChunkId, SourceId
from omoide.stores.postgres._bm25 import LexemeStats, bm25_sql, common_terms, scored_terms, tsquery_text
from omoide.stores.postgres._units import decode_unit_vectors, unit_tokens
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, chunks_with_units
from omoide.stores.units import ChunkUnits, decode_reader_vectors

EXACT_LIMIT = 5000
"""A filtered vector search ranks exactly (no HNSW) when at most this many chunks pass the filters."""
BITMAP_LIMIT = 100_000
"""At most this many chunks passing a filter are ever sent as a bitmap (see :func:`filter_limits`)."""
EXACT_COST_RATIO = 3
"""An HNSW candidate (walking the graph, reading its row, testing the bitmap) costs about this many
exact distances read by primary key (measured at 1M chunks: ~18 µs against ~6 µs of CPU)."""
BITMAP_COST_RATIO = 20
"""The join a bitmap saves costs about this many chunk ids read and sent as a bitmap (measured at 1M
chunks: ~6.5 µs a candidate against ~0.3 µs an id)."""
MAX_BITMAP_BYTES = 8 << 20
"""A bitmap spans the ids from the smallest to the largest passing id: past 8 MB (64M ids apart) the
join is used instead."""
TOKENIZER_KEY = "lexical_tokenizer"
MIXED_TOKENIZERS = "mixed"

HIT_COLUMNS = (
    "c.id, c.source_id, c.content, c.location, c.channel_id, c.thread_id, c.author_ids, c.started_at, c.ended_at, "
    "s.type AS source_type, s.title AS source_title, s.uri AS source_uri"
)
FROM_CHUNKS = "knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id AND s.workspace_id = c.workspace_id"


_FETCH_CHUNKS_WITH_UNITS = f"""
SELECT {HIT_COLUMNS}, c.unit_lexical::text AS unit_lexical, e.dimensions, e.unit_vectors, e.reader_vectors
FROM {FROM_CHUNKS}
LEFT JOIN chunk_embeddings e
    ON e.chunk_id = c.id AND e.workspace_id = c.workspace_id AND e.model = $2 AND e.chunk_id = ANY($1::bigint[])
WHERE c.id = ANY($1::bigint[])
"""
_FETCH_CHUNKS_WITH_UNITS_NO_READER = _FETCH_CHUNKS_WITH_UNITS.replace(
    "e.reader_vectors", "NULL::bytea AS reader_vectors"
)
_FETCH_CHUNKS_WITHOUT_VECTORS = f"""
SELECT {HIT_COLUMNS}, c.unit_lexical::text AS unit_lexical, NULL::integer AS dimensions, NULL::bytea AS unit_vectors,
    NULL::bytea AS reader_vectors
FROM {FROM_CHUNKS}
WHERE c.id = ANY($1::bigint[])
"""
"""Without a model: no join at all (``e.model = NULL`` folds the join's condition away, and Citus
then refuses the join as not colocated)."""


def _from_chunks(filters: SearchFilters) -> str:
    """The chunks, joined to their sources only when a source type is filtered."""
    return FROM_CHUNKS if filters.source_types else "knowledge_chunks c"


_RECORD_TOKENIZER = f"""
INSERT INTO store_meta (key, value) VALUES ('{TOKENIZER_KEY}', $1)
ON CONFLICT (key) DO UPDATE SET value = '{MIXED_TOKENIZERS}', updated_at = EXCLUDED.updated_at
WHERE store_meta.value <> EXCLUDED.value AND store_meta.value <> '{MIXED_TOKENIZERS}'
"""


def vector_type(schema: str | None, name: str = "halfvec") -> str:
    """A pgvector type, qualified with the extension's schema when known (as in ``_knowledge``)."""
    return name if schema is None else '"' + schema.replace('"', '""') + '".' + name


def filter_sql(
    filters: SearchFilters,
    args: list[Any],
    *,
    workspace_column: str = "c.workspace_id",
) -> str:
    """The ``WHERE`` condition over ``c`` (chunks) and ``s`` (sources); appends its parameters to ``args``."""

    def param(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    where = [f"{workspace_column} = {param(filters.workspace_id)}"]
    if filters.channel_ids:
        where.append(f"c.channel_id = ANY({param(list(filters.channel_ids))}::text[])")
    if filters.thread_ids:
        where.append(f"c.thread_id = ANY({param(list(filters.thread_ids))}::text[])")
    if filters.source_types:
        where.append(f"s.type = ANY({param(list(filters.source_types))}::text[])")
    if filters.author_ids:
        where.append(f"c.author_ids ?| {param(list(filters.author_ids))}::text[]")
    if filters.since is not None:
        where.append(f"coalesce(c.ended_at, c.started_at) >= {param(filters.since)}")
    if filters.until is not None:
        where.append(f"coalesce(c.started_at, c.ended_at) <= {param(filters.until)}")
    if filters.public_only:
        where.append("NOT c.private")
    elif filters.viewer is not None:
        where.append(f"(NOT c.private OR c.members ? {param(filters.viewer)}::text)")
    return " AND ".join(where)


def hit_from_row(row: Mapping[str, Any], *, score: float, rank: int) -> ChunkHit:
    started, ended = row["started_at"], row["ended_at"]
    return ChunkHit(
        chunk_id=ChunkId(int(row["id"])),
        source_id=SourceId(int(row["source_id"])),
        score=score,
        rank=rank,
        content=row["content"],
        location=json.loads(row["location"]),
        channel_id=row["channel_id"],
        thread_id=row["thread_id"],
        author_ids=tuple(json.loads(row["author_ids"])),
        started_at=None if started is None else ensure_utc(started),
        ended_at=None if ended is None else ensure_utc(ended),
        source_type=row["source_type"],
        source_title=row["source_title"] or "",
        source_uri=row["source_uri"],
    )


def _distance(dimensions: int, schema: str | None) -> str:
    """The cosine distance of a stored vector (``e.embedding``) to the query vector (``$1``)."""
    vec = f"{vector_type(schema)}({int(dimensions)})"
    return f"(e.embedding::{vec}) <=> $1::{vec}"


def exact_vector_sql(model: str, dimensions: int, filters: SearchFilters, schema: str | None) -> tuple[str, list[Any]]:
    """The exact ranking of the chunks passing ``filters`` (``$1`` the query vector, the last
    parameter k): their ids first (the filter's B-tree indexes), then their vectors by primary
    key, ordered by an expression the HNSW index cannot serve (``(… <=> $1) + 0``)."""
    args: list[Any] = [None]
    where = filter_sql(filters, args)
    args.append(None)  # k
    distance = _distance(dimensions, schema)
    sql = (
        f"SELECT e.chunk_id AS id, {distance} AS distance FROM chunk_embeddings e "
        f"WHERE e.model = {sql_literal(model)} AND e.dimensions = {int(dimensions)} AND e.workspace_id = $2 "
        f"AND e.chunk_id = ANY(ARRAY(SELECT c.id FROM {_from_chunks(filters)} WHERE {where})) "
        f"ORDER BY ({distance}) + 0 LIMIT ${len(args)}"
    )
    return sql, args


def vector_sql(model: str, dimensions: int, filters: SearchFilters, schema: str | None) -> tuple[str, list[Any]]:
    """The vector ranking query through the HNSW index (``$1`` is the query vector; the model is a
    literal) and its other parameters; it returns ``id`` and ``distance`` of the nearest chunks.

    The chunks are joined only when a filter reads them (a channel, an author, a time range, the
    visibility, a source type). A search of the whole workspace reads the vectors alone: every
    vector row belongs to a chunk of its own workspace (a foreign key with ``ON DELETE CASCADE``;
    the row is written from its chunk), so the join could drop none. At 1M chunks its 200
    primary-key lookups touched ~800 buffers a search, and the ranking took 7.1 ms p50 without
    them against 8.1–8.5 ms with them (alternating rounds). The planner chooses between the
    HNSW index and an exact plan at the same workspace sizes either way (exact up to ~5k vectors)."""
    args: list[Any] = [None]
    where = filter_sql(filters, args, workspace_column="e.workspace_id")
    args.append(None)  # k
    distance = _distance(dimensions, schema)
    chunks = ""
    if filters.narrows or filters.restricts_visibility:
        chunks = " JOIN knowledge_chunks c ON c.id = e.chunk_id AND c.workspace_id = e.workspace_id"
        if filters.source_types:
            chunks += " JOIN knowledge_sources s ON s.id = c.source_id AND s.workspace_id = c.workspace_id"
    sql = (
        f"SELECT e.chunk_id AS id, {distance} AS distance FROM chunk_embeddings e{chunks} "
        f"WHERE e.model = {sql_literal(model)} AND e.dimensions = {int(dimensions)} AND {where} "
        f"ORDER BY {distance} LIMIT ${len(args)}"
    )
    return sql, args


def bitmap_vector_sql(model: str, dimensions: int, schema: str | None) -> str:
    """The HNSW ranking of the chunks in a bitmap, without a join: ``$1`` the query vector, ``$2``
    the workspace, ``$3`` / ``$4`` the smallest and largest id in the bitmap, ``$5`` the bitmap
    (bit ``i``: chunk ``$3 + i`` passes; :func:`id_bitmap`), ``$6`` k. The test is a ``CASE`` so
    that ``get_bit`` never reads outside the bitmap and no B-tree range plan replaces the HNSW
    scan."""
    distance = _distance(dimensions, schema)
    return (
        f"SELECT e.chunk_id AS id, {distance} AS distance FROM chunk_embeddings e "
        f"WHERE e.model = {sql_literal(model)} AND e.dimensions = {int(dimensions)} AND e.workspace_id = $2 "
        "AND CASE WHEN e.chunk_id BETWEEN $3 AND $4 THEN get_bit($5::bytea, (e.chunk_id - $3)::integer) = 1 "
        "ELSE false END "
        f"ORDER BY {distance} LIMIT $6"
    )


def id_bitmap(ids: Sequence[int]) -> tuple[int, int, bytes] | None:
    """``(smallest, largest, bitmap)`` of ``ids`` in ``get_bit``'s order (bit 0 the least significant
    of the first byte), or ``None`` when empty or wider than :data:`MAX_BITMAP_BYTES`."""
    if not ids:
        return None
    arr = np.asarray(ids, dtype=np.int64)
    lo, hi = int(arr.min()), int(arr.max())
    if (hi - lo) // 8 + 1 > MAX_BITMAP_BYTES:
        return None
    bits = np.zeros(hi - lo + 1, dtype=bool)
    bits[arr - lo] = True
    return lo, hi, np.packbits(bits, bitorder="little").tobytes()


def filter_limits(k: int, indexed_rows: float) -> tuple[int, int]:
    """``(exact_limit, bitmap_limit)`` of a filtered search for ``k`` rows over an index of
    ``indexed_rows`` vectors: rank exactly up to ``exact_limit`` passing chunks, test HNSW
    candidates against a bitmap up to ``bitmap_limit`` (0: never), join them beyond.

    A filter passing ``n`` chunks makes the HNSW scan walk about ``k × rows / n`` candidates,
    so exact wins while ``n² < EXACT_COST_RATIO × k × rows`` (at 1M vectors and k 200: 24k
    chunks), and the bitmap beats the join while ``n² < BITMAP_COST_RATIO × k × rows`` (63k),
    capped at :data:`BITMAP_LIMIT`. Unknown ``indexed_rows`` (≤ 0: never analysed, or a Citus
    coordinator's empty shell table): :data:`EXACT_LIMIT` and no bitmap, the planner choosing
    between the joined scan and an exact plan as before."""
    if indexed_rows <= 0:
        return EXACT_LIMIT, 0
    exact = max(EXACT_LIMIT, int((EXACT_COST_RATIO * k * indexed_rows) ** 0.5))
    bitmap = min(BITMAP_LIMIT, int((BITMAP_COST_RATIO * k * indexed_rows) ** 0.5))
    return exact, bitmap if bitmap > exact else 0


def hnsw_ef_search(ef_search: int, k: int) -> int:
    """The ``hnsw.ef_search`` a search for ``k`` rows runs with: at least ``k``, at most 1,000."""
    return min(max(ef_search, k), 1000)


CITUS_SET_LOCAL = (
    "SET LOCAL citus.propagate_set_commands TO 'local'; "
    "SET LOCAL hnsw.iterative_scan TO relaxed_order; SET LOCAL hnsw.ef_search TO {ef}"
)
"""Citus: the HNSW settings of one transaction, sent to the workers with the routed query.

A coordinator's session ``SET`` (or ``set_config()``) does not reach the workers, where the
scan runs: ``LIMIT 200`` then silently returns 40 rows (pgvector's default ``ef_search``).
``SET LOCAL`` *statements* are propagated when ``citus.propagate_set_commands = 'local'``."""


async def _set_hnsw(conn: asyncpg.Connection, ef_search: int, *, local: bool, citus: bool = False) -> None:
    """Iterative HNSW scans (``relaxed_order``: a filtered search still returns ``k`` rows) with
    ``ef_search``, for the current transaction (``local``) or the session (never on Citus)."""
    if citus:
        await conn.execute(CITUS_SET_LOCAL.format(ef=int(ef_search)))
        return
    flag = "true" if local else "false"
    await conn.execute(
        f"SELECT set_config('hnsw.iterative_scan', 'relaxed_order', {flag}), set_config('hnsw.ef_search', $1, {flag})",
        str(ef_search),
    )


async def set_hnsw_session(conn: asyncpg.Connection, ef_search: int) -> None:
    """Make a pooled connection's HNSW scans iterative with ``ef_search`` for the session, so
    that the searches asking for exactly this ``ef_search`` (the pipeline's) run in one round
    trip, without a transaction around ``SET LOCAL``. The store's pool runs this on every new
    connection."""
    await _set_hnsw(conn, ef_search, local=False)


def _vector_statement(
    model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int, schema: str | None, *, exact: bool
) -> tuple[str, list[Any]]:
    """The exact or the HNSW ranking query with its parameters bound."""
    sql, args = (exact_vector_sql if exact else vector_sql)(model, int(query.shape[0]), filters, schema)
    args[0] = HalfVector(query)
    args[-1] = k
    return sql, args


async def _matching_count(conn: asyncpg.Connection, filters: SearchFilters, limit: int) -> int:
    """How many chunks pass ``filters``, counted up to ``limit + 1`` (an index-only scan)."""
    args: list[Any] = []
    where = filter_sql(filters, args)
    return int(
        await conn.fetchval(
            f"SELECT count(*) FROM (SELECT 1 FROM {_from_chunks(filters)} WHERE {where} LIMIT {int(limit) + 1}) AS m",
            *args,
        )
    )


async def _bitmap_statement(
    conn: asyncpg.Connection,
    model: str,
    query: npt.NDArray[np.float32],
    filters: SearchFilters,
    k: int,
    schema: str | None,
) -> tuple[str, list[Any]] | None:
    """The bitmap ranking (:func:`bitmap_vector_sql`) of the chunks passing ``filters`` with its
    parameters, or ``None`` when their ids span too wide a range for a bitmap."""
    args: list[Any] = []
    where = filter_sql(filters, args)
    ids = await conn.fetchval(f"SELECT array_agg(c.id) FROM {_from_chunks(filters)} WHERE {where}", *args)
    found = id_bitmap(ids or [])
    if found is None:
        return None
    lo, hi, bitmap = found
    return bitmap_vector_sql(model, int(query.shape[0]), schema), [
        HalfVector(query),
        filters.workspace_id,
        lo,
        hi,
        bitmap,
        k,
    ]


async def _vector_rows_in_transaction(
    conn: asyncpg.Connection, sql: str, args: list[Any], *, exact: bool, ef: int, citus: bool = False
) -> list[asyncpg.Record]:
    """The ranking's rows, its settings local to one read-only transaction."""
    async with conn.transaction(readonly=True):
        if exact:
            await conn.execute(
                "SELECT set_config('max_parallel_workers_per_gather', '0', true), set_config('random_page_cost', '1.1', true)"
            )
        else:
            await _set_hnsw(conn, ef, local=True, citus=citus)
        return list(await conn.fetch(sql, *args))


async def vector_ranking(
    conn: asyncpg.Connection,
    model: str,
    query: npt.NDArray[np.float32],
    filters: SearchFilters,
    k: int,
    *,
    ef_search: int,
    schema: str | None,
    exact_limit: int = EXACT_LIMIT,
    bitmap_limit: int = 0,
    session_ef_search: int | None = None,
    citus: bool = False,
) -> list[RankedChunk]:
    """The ``k`` nearest chunks by cosine distance among those passing ``filters`` (see the module docstring).

    With filters beyond the workspace, the matching chunks are counted first (up to
    ``exact_limit + 1``, an index-only scan); when at most ``exact_limit`` match, just their
    vectors are ranked exactly (:func:`exact_vector_sql`, without parallel workers: at 100k
    chunks, a 4k-chunk channel took 14 ms against 25–29 ms for the vectors joined to their
    chunks in parallel), instead of walking the HNSW graph, where an iterative scan would
    visit and join thousands of rejected candidates.

    ``session_ef_search``: the ``ef_search`` the connection's session already runs HNSW scans
    with (:func:`set_hnsw_session`); a search needing just that one is a single statement,
    any other sets its own for one transaction (``SET LOCAL``: four round trips). ``citus``:
    always the latter, with the settings propagated to the workers (:data:`CITUS_SET_LOCAL`).
    """
    exact = False
    statement: tuple[str, list[Any]] | None = None
    if filters.narrows and max(exact_limit, bitmap_limit) > 0:
        matching = await _matching_count(conn, filters, max(exact_limit, bitmap_limit))
        exact = matching <= exact_limit
        if not exact and matching <= bitmap_limit:
            statement = await _bitmap_statement(conn, model, query, filters, k, schema)
    ef = hnsw_ef_search(ef_search, k)
    sql, args = statement or _vector_statement(model, query, filters, k, schema, exact=exact)
    if not exact and ef == session_ef_search:
        rows = await conn.fetch(sql, *args)  # the session's settings are the ones needed
    else:
        rows = await _vector_rows_in_transaction(conn, sql, args, exact=exact, ef=ef, citus=citus)
    if not rows:
        stored = await conn.fetchval(
            "SELECT dimensions FROM chunk_embeddings WHERE workspace_id = $1 AND model = $2 LIMIT 1",
            filters.workspace_id,
            model,
        )
        if stored is not None and int(stored) != query.shape[0]:
            raise InvalidInput(
                f"the query vector has {query.shape[0]} dimensions but model {model!r} stores "
                f"{int(stored)}-dimensional vectors: embed the query with the same model"
            )
    # (asyncpg decodes bigint to int and float8 to float: no conversions per row)
    return [RankedChunk(r["id"], 1.0 - r["distance"]) for r in sorted(rows, key=itemgetter("distance", "id"))]


def lexical_ranking_sql(
    tokens: Sequence[str], filters: SearchFilters, k: int, stats: LexemeStats | None = None
) -> tuple[str, list[Any]]:
    """The BM25 ranking query of :func:`lexical_ranking` and its parameters.

    Every pooled connection plans it afresh for its parameters (``plan_cache_mode =
    force_custom_plan``, set by ``_db.py``): a prepared statement's generic plan (PostgreSQL's
    choice after five runs) is costed for an average workspace's share of the rows, and when
    that share is small the plan intersects each word's matches with *all* of the workspace's
    rows from its B-tree index — right for a small workspace, ruinous for a big one. Measured at
    100k chunks (80k / 20k / 1k in three workspaces): once that plan was cached, the big
    workspace's ranking took 12.5–13.3 ms of backend CPU instead of 3.0–3.8 (an 80k-entry bitmap
    built per word); planned per execution, 3.95–5.15 ms for the big one and 0.65–1.0 ms for the
    1k-chunk one, whatever ran before on the connection."""
    terms = scored_terms(tokens)
    args: list[Any] = []
    where = filter_sql(filters, args)
    sql = bm25_sql(
        from_=_from_chunks(filters),
        table="knowledge_chunks",
        alias="c",
        columns="c.id",
        where=where,
        args=args,
        terms=terms,
        k=k,
        common=common_terms(terms, stats),
        length="c.lexical_len",
        docs=None if stats is None else stats.rows,
    )
    return sql, args


async def lexical_ranking(
    conn: asyncpg.Connection,
    tokens: Sequence[str],
    filters: SearchFilters,
    k: int,
    stats: LexemeStats | None = None,
) -> list[RankedChunk]:
    """Ids and BM25 scores of the ``k`` best matches of any of ``tokens`` among the chunks passing
    ``filters``, best first (ties by lower id). ``stats``: the lexeme statistics that let common
    words stop driving the candidates (:func:`~omoide.stores.postgres._bm25.common_terms`)."""
    sql, args = lexical_ranking_sql(tokens, filters, k, stats)
    rows = await conn.fetch(sql, *args)
    return [RankedChunk(r["id"], r["score"]) for r in rows]


async def _rows_by_id(conn: asyncpg.Connection, ids: Sequence[int]) -> dict[int, asyncpg.Record]:
    rows = await conn.fetch(f"SELECT {HIT_COLUMNS} FROM {FROM_CHUNKS} WHERE c.id = ANY($1::bigint[])", list(ids))
    return {int(r["id"]): r for r in rows}


async def fetch_chunks(conn: asyncpg.Connection, ids: Sequence[int]) -> list[ChunkHit]:
    """Chunks by id in the order given (missing ids skipped), with ``score=0.0, rank=0``."""
    by_id = await _rows_by_id(conn, ids)
    return [hit_from_row(by_id[i], score=0.0, rank=0) for i in ids if i in by_id]


async def fetch_chunks_with_units(
    conn: asyncpg.Connection,
    ids: Sequence[int],
    model: str | None,
    *,
    workspace_id: str | None = None,
    reader: bool = True,
) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
    """The chunks of ``ids`` in that order and their units, in one query by primary keys
    (``model`` ``None``: the join matches no vector row; ``reader=False``: the line reader's
    vectors are not read, nor their TOAST pages).

    ``workspace_id``: the workspace the ids were ranked in. On Citus a statement by id alone runs
    on every shard (32 by default) — at 100k chunks it cost the workers more CPU than the rest of
    the search (``benchmarks/scale.py``, ``fetch-with-units``); with the workspace it is routed
    to the one shard holding it. On one server it changes nothing but one more index condition."""
    args: list[Any] = [list(ids)] if model is None else [list(ids), model]
    if model is None:
        sql = _FETCH_CHUNKS_WITHOUT_VECTORS
    else:
        sql = _FETCH_CHUNKS_WITH_UNITS if reader else _FETCH_CHUNKS_WITH_UNITS_NO_READER
    if workspace_id is not None:
        args.append(workspace_id)
        sql += f" AND c.workspace_id = ${len(args)}"
    found = await conn.fetch(sql, *args)
    rows = {int(r["id"]): r for r in found}
    return chunks_with_units(ids, rows, lambda r: hit_from_row(r, score=0.0, rank=0), _row_units)


def _row_units(row: Mapping[str, Any]) -> ChunkUnits:
    return ChunkUnits(
        unit_tokens(row["unit_lexical"]),
        decode_unit_vectors(row["unit_vectors"], row["dimensions"]),
        decode_reader_vectors(row["reader_vectors"]),
    )


async def record_tokenizer(conn: asyncpg.Connection, name: str) -> None:
    """Record the lexical tokenizer that wrote the index (``mixed`` once two disagree).

    Read first, write only on a change: ``store_meta`` is a reference table on Citus (a copy on
    every node), so an unconditional upsert made every archive a two-phase commit over all nodes."""
    current = await conn.fetchval("SELECT value FROM store_meta WHERE key = $1", TOKENIZER_KEY)
    if current in (name, MIXED_TOKENIZERS):
        return
    await conn.execute(_RECORD_TOKENIZER, name)


async def lexical_tokenizer(conn: asyncpg.Connection) -> str | None:
    value = await conn.fetchval("SELECT value FROM store_meta WHERE key = $1", TOKENIZER_KEY)
    return None if value is None else str(value)


__all__ = [
    "BITMAP_LIMIT",
    "CITUS_SET_LOCAL",
    "MIXED_TOKENIZERS",
    "TOKENIZER_KEY",
    "bitmap_vector_sql",
    "exact_vector_sql",
    "fetch_chunks",
    "fetch_chunks_with_units",
    "filter_limits",
    "filter_sql",
    "hnsw_ef_search",
    "id_bitmap",
    "lexical_ranking",
    "lexical_ranking_sql",
    "lexical_tokenizer",
    "record_tokenizer",
    "set_hnsw_session",
    "tsquery_text",
    "vector_ranking",
    "vector_sql",
]
