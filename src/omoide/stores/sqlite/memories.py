"""Explicit memories on SQLite: :class:`SqliteMemories` (the SQL is in :mod:`._memories`,
the per-user recall indexes in :mod:`._memory_cache`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from omoide.models import utcnow
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
from omoide.stores.sqlite import _erasure as erasure
from omoide.stores.sqlite import _memories as mops
from omoide.stores.sqlite._db import SqliteDb


class SqliteMemories(MemoryStore):
    """Writes run on the writer thread and then update the recall cache (``db.memory_cache``);
    reads and recalls run on a reader thread over that cache."""

    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _insert_memory(
        self, draft: MemoryDraft, model: str, vector: npt.NDArray[np.float32] | None, actor: str
    ) -> MemoryRecord:
        return await self._db.on_writer(
            "insert_memory",
            mops.tracked_write,
            self._db.memory_cache,
            mops.insert_memory_tracked,
            draft,
            model,
            vector,
            utcnow(),
            actor,
        )

    async def _get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        return await self._db.read("get_memory", mops.get_memory, workspace_id, user_id, memory_id)

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
        return await self._db.on_writer(
            "update_memory",
            mops.tracked_write,
            self._db.memory_cache,
            mops.update_memory_tracked,
            workspace_id,
            user_id,
            memory_id,
            changes,
            model,
            array,
            utcnow(),
            actor,
            action,
        )

    async def _delete_memory(self, workspace_id: str, user_id: str, memory_id: int, actor: str) -> None:
        await self._db.on_writer(
            "delete_memory",
            mops.tracked_write,
            self._db.memory_cache,
            mops.delete_memory_tracked,
            workspace_id,
            user_id,
            memory_id,
            actor,
        )

    async def _memory_history(self, workspace_id: str, user_id: str, memory_id: int, limit: int) -> list[MemoryEvent]:
        return await self._db.read("memory_history", mops.memory_history, workspace_id, user_id, memory_id, limit)

    async def _list_memories(
        self, workspace_id: str, user_id: str, category: str | None, tags: tuple[str, ...], limit: int, offset: int
    ) -> list[MemoryRecord]:
        return await self._db.read(
            "list_memories", mops.list_memories, workspace_id, user_id, category, tags, limit, offset
        )

    async def _memory_vector_search(
        self, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32]
    ) -> list[tuple[MemoryRecord, float]]:
        return await self._db.read(
            "memory_vector_search", mops.memory_vector_search, self._db.memory_cache, wanted, model, query
        )

    async def _memory_lexical_search(
        self, wanted: MemoryQuery, tokens: tuple[str, ...]
    ) -> list[tuple[MemoryRecord, float]]:
        return await self._db.read(
            "memory_lexical_search", mops.memory_lexical_search, self._db.memory_cache, wanted, tokens
        )

    async def _memory_recall(
        self, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32], tokens: tuple[str, ...], limit: int
    ) -> list[MemoryHit]:
        """Both rankings from the user's cached indexes, RRF, then only the ``limit`` fused rows, in one reader call."""
        return await self._db.read(
            "memory_recall", mops.memory_recall, self._db.memory_cache, wanted, model, query, tokens, limit
        )

    async def _forget_user(self, workspace_id: str, user_id: str) -> ForgetReport:
        """The slow part (tokenising and counting the rewritten chunks) runs on a reader before the write lock."""
        prepared = await self._db.read("prepare_erasure", erasure.prepare_rewrites, workspace_id, user_id)
        return await self._db.on_writer(
            "forget_user",
            mops.tracked_write,
            self._db.memory_cache,
            mops.forget_user_tracked,
            workspace_id,
            user_id,
            prepared,
        )

    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        return await self._db.read("erasure_state", erasure.read_erasure_state, workspace_id)


__all__ = ["SqliteMemories"]
