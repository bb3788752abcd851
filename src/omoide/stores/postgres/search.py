"""The PostgreSQL search role: HNSW or exact vector rankings and BM25 (the SQL in :mod:`._search`
and :mod:`._bm25`)."""

from __future__ import annotations

import asyncio
import logging
import math

import asyncpg
import numpy as np
import numpy.typing as npt

from omoide.stores.knowledge import ChunkId
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres import _units as uops
from omoide.stores.postgres import citus
from omoide.stores.postgres._bm25 import LexemeStats, lexeme_stats
from omoide.stores.postgres._db import PostgresDb, Reused
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, SearchStore
from omoide.stores.units import ChunkUnits

logger = logging.getLogger(__name__)

LEXEME_STATS_TTL = 300.0
"""Seconds the chunks' lexeme statistics are reused (ANALYZE refreshes them far less often);
after that a search still uses them while a task reads them again."""
STATS_REFRESH = "omoide-lexeme-stats-refresh"
"""The name of the task that reads the statistics again (one at a time per store)."""
TOKENIZER_TTL = 10.0
"""Seconds the name of the lexical index's tokenizer is reused (one query fewer per search)."""
INDEXED_ROWS_TTL = 300.0
"""Seconds the planner's row count of ``chunk_embeddings`` is reused (it sizes the bitmap filter)."""


class PostgresSearch(SearchStore):
    """Vector rankings with the ``hnsw_ef_search`` setting (at least ``k``; a pooled connection
    already runs with the pipeline's, ``db.session_ef_search``), filtered ones ranked exactly,
    through a bitmap or joined by the size of the filter against the index
    (:func:`~omoide.stores.postgres._search.filter_limits`); lexical rankings with the
    chunks' lexeme statistics (``db.stats``, reused for :data:`LEXEME_STATS_TTL` seconds)."""

    def __init__(self, db: PostgresDb) -> None:
        self._db = db
        self._indexed_rows: Reused[float] = Reused()  # pg_class.reltuples of chunk_embeddings
        self._shard_rows: Reused[dict[int, float]] = Reused()  # Citus: the same per shard
        self._shard_of: dict[str, int] = {}  # Citus: each workspace's chunk_embeddings shard

    async def _vector_ranking(
        self, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        async with self._db.acquire() as conn:
            exact_limit, bitmap_limit = (
                sops.filter_limits(k, await self._rows(conn, filters.workspace_id))
                if filters.narrows
                else (sops.EXACT_LIMIT, 0)
            )
            return await sops.vector_ranking(
                conn,
                model,
                query,
                filters,
                k,
                ef_search=self._db.settings.hnsw_ef_search,
                schema=self._db.vector_schema,
                exact_limit=exact_limit,
                bitmap_limit=bitmap_limit,
                session_ef_search=self._db.session_ef_search,
                citus=self._db.citus,
            )

    async def _rows(self, conn: asyncpg.Connection, workspace_id: str) -> float:
        """The planner's estimate of the vectors in the index the search scans (``pg_class.reltuples``;
        ≤ 0 when unknown, e.g. never analysed), reused for :data:`INDEXED_ROWS_TTL` seconds. On Citus
        that index is the workspace's shard's (the coordinator's own table is an empty shell)."""
        if not self._db.citus:
            if not self._indexed_rows.fresh(INDEXED_ROWS_TTL):
                rows = await conn.fetchval("SELECT reltuples FROM pg_class WHERE oid = 'chunk_embeddings'::regclass")
                self._indexed_rows.keep(float(rows or 0))
            return self._indexed_rows.value or 0.0
        if not self._shard_rows.fresh(INDEXED_ROWS_TTL):
            self._shard_rows.keep(await citus.shard_rows(conn))
            self._shard_of.clear()  # a shard split gives a workspace a new shard
        shard = self._shard_of.get(workspace_id)
        if shard is None:
            shard = self._shard_of[workspace_id] = await citus.shard_of(conn, workspace_id)
        return (self._shard_rows.value or {}).get(shard, 0.0)

    async def _lexical_ranking(self, terms: list[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        async with self._db.acquire() as conn:
            return await sops.lexical_ranking(conn, terms, filters, k, await self._lexeme_stats(conn))

    async def _lexeme_stats(self, conn: asyncpg.Connection) -> LexemeStats | None:
        """The statistics: read on this search's connection the first time (or once forgotten);
        when they are older than :data:`LEXEME_STATS_TTL`, served as they are while one task reads
        them again — on Citus the read asks every node (~0.3 s), which a search should not wait for."""
        stats = self._db.stats
        if stats.read_at == -math.inf:
            stats.keep(await lexeme_stats(conn, "knowledge_chunks", citus=self._db.citus))
        elif not stats.fresh(LEXEME_STATS_TTL) and not any(t.get_name() == STATS_REFRESH for t in self._db.background):
            task = asyncio.create_task(self._refresh_stats(), name=STATS_REFRESH)
            self._db.background.add(task)
            task.add_done_callback(self._db.background.discard)
        return stats.value

    async def _refresh_stats(self) -> None:
        """Read the statistics again on a pooled connection; a failure keeps the old ones (and
        the next search past the TTL tries again)."""
        try:
            async with self._db.acquire() as conn:
                self._db.stats.keep(await lexeme_stats(conn, "knowledge_chunks", citus=self._db.citus))
        except Exception as exc:  # never surfaces in a search: the stale statistics stay usable
            logger.warning("lexeme_stats_refresh_failed", extra={"error": str(exc)})

    async def _fetch_chunks(self, ids: list[int]) -> list[ChunkHit]:
        async with self._db.acquire() as conn:
            return await sops.fetch_chunks(conn, ids)

    async def _fetch_units(self, ids: list[int], model: str | None) -> dict[ChunkId, ChunkUnits]:
        """One query by primary keys; unit vectors decoded from float16."""
        async with self._db.acquire() as conn:
            return await uops.fetch_units(conn, ids, model)

    async def _fetch_chunks_with_units(
        self, ids: list[int], model: str | None, workspace_id: str | None, reader: bool
    ) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
        """One query by primary keys: the chunks with their sources, units and unit vectors (with
        the workspace: routed to its shard on Citus)."""
        async with self._db.acquire() as conn:
            return await sops.fetch_chunks_with_units(conn, ids, model, workspace_id=workspace_id, reader=reader)

    async def _lexical_tokenizer(self) -> str | None:
        """Reused for :data:`TOKENIZER_TTL` seconds (``db.tokenizer``); chunk writes and reindexes forget it."""
        if not self._db.tokenizer.fresh(TOKENIZER_TTL):
            async with self._db.acquire() as conn:
                self._db.tokenizer.keep(await sops.lexical_tokenizer(conn))
        return self._db.tokenizer.value


__all__ = ["INDEXED_ROWS_TTL", "LEXEME_STATS_TTL", "TOKENIZER_TTL", "PostgresSearch"]
