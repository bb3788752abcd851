"""Explicit memories on PostgreSQL: :class:`PostgresMemories` (the SQL is in :mod:`._memories`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from omoide.stores._erasure_common import ErasureState
from omoide.stores.memories import ForgetReport, MemoryChanges, MemoryDraft, MemoryHit, MemoryRecord, MemoryStore
from omoide.stores.postgres import _erasure as erasure
from omoide.stores.postgres import _memories as mops
from omoide.stores.postgres._db import PostgresDb


class PostgresMemories(MemoryStore):
    """Every operation runs on one pooled connection (a recall too: both rankings, RRF and the fetch)."""

    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _insert_memory(
        self, draft: MemoryDraft, model: str, vector: npt.NDArray[np.float32] | None
    ) -> MemoryRecord:
        async with self._db.acquire() as conn:
            return await mops.insert_memory(conn, draft, model, vector)

    async def _get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        async with self._db.acquire() as conn:
            return await mops.get_memory(conn, workspace_id, user_id, memory_id)

    async def _update_memory(
        self,
        workspace_id: str,
        user_id: str,
        memory_id: int,
        changes: MemoryChanges,
        model: str | None,
        vector: npt.NDArray[np.float32] | None,
    ) -> MemoryRecord:
        async with self._db.acquire() as conn:
            return await mops.update_memory(conn, workspace_id, user_id, memory_id, changes, model, vector)

    async def _delete_memory(self, workspace_id: str, user_id: str, memory_id: int) -> None:
        async with self._db.acquire() as conn:
            await mops.delete_memory(conn, workspace_id, user_id, memory_id)

    async def _list_memories(
        self, workspace_id: str, user_id: str, category: str | None, tags: tuple[str, ...], limit: int, offset: int
    ) -> list[MemoryRecord]:
        async with self._db.acquire() as conn:
            return await mops.list_memories(conn, workspace_id, user_id, category, tags, limit, offset)

    async def _memory_vector_search(
        self,
        workspace_id: str,
        user_id: str,
        model: str,
        query: npt.NDArray[np.float32],
        k: int,
        category: str | None,
        tags: tuple[str, ...],
    ) -> list[tuple[MemoryRecord, float]]:
        async with self._db.acquire() as conn:
            return await mops.memory_vector_search(
                conn, workspace_id, user_id, model, query, k, category, tags, self._db.vector_schema
            )

    async def _memory_lexical_search(
        self,
        workspace_id: str,
        user_id: str,
        tokens: tuple[str, ...],
        k: int,
        category: str | None,
        tags: tuple[str, ...],
    ) -> list[tuple[MemoryRecord, float]]:
        async with self._db.acquire() as conn:
            return await mops.memory_lexical_search(conn, workspace_id, user_id, tokens, k, category, tags)

    async def _memory_recall(
        self,
        workspace_id: str,
        user_id: str,
        model: str,
        query: npt.NDArray[np.float32],
        tokens: tuple[str, ...],
        k: int,
        limit: int,
        category: str | None,
        tags: tuple[str, ...],
    ) -> list[MemoryHit]:
        async with self._db.acquire() as conn:
            return await mops.memory_recall(
                conn, workspace_id, user_id, model, query, tokens, k, limit, category, tags, self._db.vector_schema
            )

    async def _forget_user(self, workspace_id: str, user_id: str) -> ForgetReport:
        """The reused tokenizer name is forgotten afterwards (the erasure may have emptied the lexical index)."""
        try:
            async with self._db.acquire() as conn:
                return await erasure.erase_user(conn, workspace_id, user_id)
        finally:
            self._db.tokenizer.forget()

    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        async with self._db.acquire() as conn:
            return await erasure.read_erasure_state(conn, workspace_id)


__all__ = ["PostgresMemories"]
