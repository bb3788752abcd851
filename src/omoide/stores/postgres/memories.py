"""Explicit memories on PostgreSQL: :class:`PostgresMemories` (the SQL is in :mod:`._memories`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from omoide.stores._erasure_common import ErasureState
from omoide.stores.memories import (
    ForgetReport,
    MemoryChanges,
    MemoryDraft,
    MemoryEvent,
    MemoryHit,
    MemoryQuery,
    MemoryRecord,
    MemoryStore,
    MemoryVector,
)
from omoide.stores.postgres import _erasure as erasure
from omoide.stores.postgres import _memories as mops
from omoide.stores.postgres._db import PostgresDb


class PostgresMemories(MemoryStore):
    """Every operation runs on one pooled connection (a recall too: both rankings, RRF and the fetch)."""

    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _insert_memory(
        self, draft: MemoryDraft, model: str, vector: npt.NDArray[np.float32] | None, actor: str
    ) -> MemoryRecord:
        async with self._db.acquire() as conn:
            return await mops.insert_memory(conn, draft, model, vector, actor)

    async def _get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        async with self._db.acquire() as conn:
            return await mops.get_memory(conn, workspace_id, user_id, memory_id)

    async def _update_memory(
        self,
        workspace_id: str,
        user_id: str,
        memory_id: int,
        changes: MemoryChanges,
        vector: MemoryVector | None,
        actor: str,
        action: str,
    ) -> MemoryRecord:
        model, array = vector if vector is not None else (None, None)
        async with self._db.acquire() as conn:
            return await mops.update_memory(
                conn, workspace_id, user_id, memory_id, changes, model, array, actor, action
            )

    async def _delete_memory(self, workspace_id: str, user_id: str, memory_id: int, actor: str) -> None:
        async with self._db.acquire() as conn:
            await mops.delete_memory(conn, workspace_id, user_id, memory_id, actor)

    async def _memory_history(self, workspace_id: str, user_id: str, memory_id: int, limit: int) -> list[MemoryEvent]:
        async with self._db.acquire() as conn:
            return await mops.memory_history(conn, workspace_id, user_id, memory_id, limit)

    async def _list_memories(
        self, workspace_id: str, user_id: str, category: str | None, tags: tuple[str, ...], limit: int, offset: int
    ) -> list[MemoryRecord]:
        async with self._db.acquire() as conn:
            return await mops.list_memories(conn, workspace_id, user_id, category, tags, limit, offset)

    async def _memory_vector_search(
        self, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32]
    ) -> list[tuple[MemoryRecord, float]]:
        async with self._db.acquire() as conn:
            return await mops.memory_vector_search(conn, wanted, model, query, self._db.vector_schema)

    async def _memory_lexical_search(
        self, wanted: MemoryQuery, tokens: tuple[str, ...]
    ) -> list[tuple[MemoryRecord, float]]:
        async with self._db.acquire() as conn:
            return await mops.memory_lexical_search(conn, wanted, tokens)

    async def _memory_recall(
        self, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32], tokens: tuple[str, ...], limit: int
    ) -> list[MemoryHit]:
        async with self._db.acquire() as conn:
            return await mops.memory_recall(conn, wanted, model, query, tokens, limit, self._db.vector_schema)

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
