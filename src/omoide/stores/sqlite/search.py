"""The SQLite search role: rankings and chunk reads on the reader threads (the SQL in :mod:`._search`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from omoide.stores.knowledge import ChunkId
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, SearchStore
from omoide.stores.sqlite import _search as sops
from omoide.stores.sqlite import _units as uops
from omoide.stores.sqlite._db import SqliteDb
from omoide.stores.units import ChunkUnits


class SqliteSearch(SearchStore):
    """Vector scans over the store's cached matrices (``db.vector_cache``) and FTS5 BM25."""

    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _vector_ranking(
        self, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        return await self._db.read(
            "vector_ranking", sops.vector_ranking, self._db.vector_cache, model, query, filters, k
        )

    async def _lexical_ranking(self, terms: list[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        return await self._db.read("lexical_ranking", sops.lexical_ranking, terms, filters, k)

    async def _fetch_chunks(self, ids: list[int]) -> list[ChunkHit]:
        return await self._db.read("fetch_chunks", sops.fetch_chunks, ids)

    async def _fetch_units(self, ids: list[int], model: str | None) -> dict[ChunkId, ChunkUnits]:
        return await self._db.read("fetch_units", uops.fetch_units, ids, model)

    async def _fetch_chunks_with_units(
        self, ids: list[int], model: str | None, workspace_id: str | None, reader: bool
    ) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
        """One query by ids (one file: ``workspace_id``, a routing hint, is not needed)."""
        return await self._db.read("fetch_chunks_with_units", uops.fetch_chunks_with_units, ids, model, reader)

    async def _lexical_tokenizer(self) -> str | None:
        return await self._db.read("lexical_tokenizer", sops.lexical_tokenizer)


__all__ = ["SqliteSearch"]
