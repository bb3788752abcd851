"""The SQLite knowledge role: :class:`SqliteKnowledge` (the operations are in ``_knowledge.py``)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import numpy as np
import numpy.typing as npt

from omoide.models import Session, utcnow
from omoide.stores._erasure_common import ErasureState
from omoide.stores._knowledge_checks import CheckedLines, CheckedVector
from omoide.stores.knowledge import (
    ArchivePlan,
    ArchivePlanner,
    ArchiveResult,
    ChunkDraft,
    ChunkId,
    ChunkText,
    CompactedPage,
    KnowledgeChunk,
    KnowledgeSource,
    KnowledgeStatus,
    KnowledgeStore,
    SourceDraft,
    SourceId,
    SourceStatus,
    UnitLexicalRow,
)
from omoide.stores.sqlite import _erasure as erasure
from omoide.stores.sqlite import _knowledge as kops
from omoide.stores.sqlite import _units as uops
from omoide.stores.sqlite._db import SqliteDb


class SqliteKnowledge(KnowledgeStore):
    """Long-term memory in the SQLite file: writes in ``BEGIN IMMEDIATE`` on the writer thread."""

    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _archive_session(self, plan: ArchivePlan) -> ArchiveResult:
        return await self._db.write("archive_session", kops.archive_session, plan, utcnow())

    async def _archive_session_locked(
        self, session_id: int, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """The planner runs in the writer thread."""
        return await self._db.write(
            "archive_session_locked", kops.archive_session_locked, session_id, planner, utcnow()
        )

    async def _sessions_to_archive(self, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        return await self._db.read("sessions_to_archive", kops.sessions_to_archive, idle_before, min_unarchived, limit)

    async def _add_source(
        self, source: SourceDraft, chunks: list[ChunkDraft], erasure_generation: int | None
    ) -> tuple[SourceId, list[ChunkId]]:
        return await self._db.write("add_source", _add_source, source, chunks, utcnow(), erasure_generation)

    async def _claim_sources(self, limit: int, lease_seconds: float) -> list[SourceId]:
        return await self._db.write("claim_sources", kops.claim_sources, limit, lease_seconds, utcnow())

    async def _chunks_missing_embedding(
        self, model: str, source_ids: list[int] | None, after_id: int, limit: int, settled_only: bool
    ) -> list[ChunkText]:
        return await self._db.read(
            "chunks_missing_embedding", kops.chunks_missing_embedding, model, source_ids, after_id, limit, settled_only
        )

    async def _put_embeddings(self, model: str, dimensions: int, rows: list[CheckedVector]) -> int:
        return await self._db.write("put_embeddings", kops.put_embeddings, model, dimensions, rows, utcnow())

    async def _release_sources(self, source_ids: list[int]) -> int:
        return await self._db.write("release_sources", kops.release_sources, source_ids, utcnow())

    async def _renew_claims(self, source_ids: list[int]) -> int:
        return await self._db.write("renew_claims", kops.renew_claims, source_ids, utcnow())

    async def _finish_source(self, source_id: int, status: SourceStatus, error: str | None) -> None:
        await self._db.write("finish_source", kops.finish_source, source_id, status, error, utcnow())

    async def _ensure_vector_index(self, model: str, dimensions: int) -> bool:
        """SQLite has no ANN index (vectors are scanned): always ``False``."""
        return False

    async def _chunks_missing_units(self, after_id: int, limit: int) -> list[ChunkText]:
        return await self._db.read("chunks_missing_units", kops.chunks_missing_units, after_id, limit)

    async def _put_unit_lexical(self, rows: list[UnitLexicalRow]) -> int:
        return await self._db.write("put_unit_lexical", kops.put_unit_lexical, rows)

    async def _embeddings_missing_units(self, model: str, after_id: int, limit: int, reader: bool) -> list[ChunkText]:
        return await self._db.read(
            "embeddings_missing_units", kops.embeddings_missing_units, model, after_id, limit, reader
        )

    async def _put_unit_vectors(self, model: str, dimensions: int, rows: list[CheckedLines]) -> int:
        return await self._db.write("put_unit_vectors", kops.put_unit_vectors, model, dimensions, rows)

    async def _compact_line_vectors(self, after_id: int, limit: int) -> CompactedPage:
        return await self._db.write("compact_line_vectors", uops.compact_line_vectors, after_id, limit)

    async def _list_sources(
        self, workspace_id: str | None, origin_session_id: int | None, limit: int, offset: int
    ) -> list[KnowledgeSource]:
        return await self._db.read("list_sources", kops.list_sources, workspace_id, origin_session_id, limit, offset)

    async def _knowledge_status(self, workspace_id: str | None) -> KnowledgeStatus:
        return await self._db.read("knowledge_status", kops.knowledge_status, workspace_id)

    async def _get_source(self, source_id: int) -> KnowledgeSource | None:
        return await self._db.read("get_source", kops.get_source, source_id)

    async def _chunks_of_source(self, source_id: int) -> list[KnowledgeChunk]:
        return await self._db.read("chunks_of_source", kops.chunks_of_source, source_id)

    async def _get_embedding(self, chunk_id: int, model: str) -> npt.NDArray[np.float32] | None:
        return await self._db.read("get_embedding", kops.get_embedding, chunk_id, model)

    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        return await self._db.read("erasure_state", _erasure_state, workspace_id)


def _add_source(
    conn: sqlite3.Connection, source: SourceDraft, chunks: list[ChunkDraft], now: datetime, generation: int | None
) -> tuple[SourceId, list[ChunkId]]:
    erasure.check_erasure_generation(conn, source.workspace_id, generation)
    return kops.insert_source(conn, source, chunks, now)


def _erasure_state(conn: sqlite3.Connection, workspace_id: str) -> ErasureState:
    return ErasureState(erasure.erasure_generation(conn, workspace_id), erasure.erased_users(conn, workspace_id))


__all__ = ["SqliteKnowledge"]
