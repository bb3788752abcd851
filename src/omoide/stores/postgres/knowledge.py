"""The PostgreSQL knowledge role: :class:`PostgresKnowledge` (the SQL is in ``_knowledge.py``)."""

from __future__ import annotations

from datetime import datetime

import asyncpg
import numpy as np
import numpy.typing as npt

from omoide.models import Session
from omoide.stores._erasure_common import ErasureState
from omoide.stores._knowledge_checks import CheckedLines, CheckedVector
from omoide.stores._knowledge_common import session_not_found, source_not_found
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
from omoide.stores.postgres import _erasure as erasure
from omoide.stores.postgres import _knowledge as kops
from omoide.stores.postgres import _source_reads as source_reads
from omoide.stores.postgres import _units as uops
from omoide.stores.postgres._db import PostgresDb


class PostgresKnowledge(KnowledgeStore):
    """Long-term memory in PostgreSQL + pgvector: archives in REPEATABLE READ, vectors as ``halfvec``."""

    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _session_ws(self, conn: asyncpg.Connection, session_id: int) -> str:
        ws = await self._db.workspaces.lookup(conn, "sessions", session_id)
        if ws is None:
            raise session_not_found(session_id)
        return ws

    async def _archive_session(self, plan: ArchivePlan) -> ArchiveResult:
        async with self._db.acquire() as conn:
            return await kops.archive_session(conn, plan, await self._session_ws(conn, plan.session_id))

    async def _archive_session_locked(
        self, session_id: int, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """The planner runs in a worker thread while the session row is locked."""
        async with self._db.acquire() as conn:
            return await kops.archive_session_locked(
                conn, session_id, await self._session_ws(conn, session_id), planner
            )

    async def _sessions_to_archive(self, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        async with self._db.acquire() as conn:
            found = await kops.sessions_to_archive(conn, idle_before, min_unarchived, limit)
        for session in found:
            self._db.workspaces.remember("sessions", session.id, session.workspace_id)
        return found

    async def _add_source(
        self, source: SourceDraft, chunks: list[ChunkDraft], erasure_generation: int | None
    ) -> tuple[SourceId, list[ChunkId]]:
        """One statement; forgets the reused tokenizer name, which the insert may have changed."""
        try:
            async with self._db.acquire() as conn, conn.transaction():
                await erasure.check_erasure_generation(conn, source.workspace_id, erasure_generation)
                return await kops.insert_source(conn, source, chunks)
        finally:
            self._db.tokenizer.forget()  # the insert recorded the tokenizer that wrote these chunks

    async def _claim_sources(self, limit: int, lease_seconds: float) -> list[SourceId]:
        """``FOR UPDATE SKIP LOCKED``: concurrent claimers neither share nor wait (on Citus, per workspace)."""
        async with self._db.acquire() as conn:
            claimed = await kops.claim_sources(conn, limit, lease_seconds, citus=self._db.citus)
        for source_id, ws in claimed:
            self._db.workspaces.remember("knowledge_sources", source_id, ws)
        return [source_id for source_id, _ in claimed]

    async def _chunks_missing_embedding(
        self, model: str, source_ids: list[int] | None, after_id: int, limit: int, settled_only: bool
    ) -> list[ChunkText]:
        async with self._db.acquire() as conn:
            by_source = None
            if self._db.citus and source_ids is not None:  # routed per workspace (claimed sources: cached)
                by_source = await self._db.workspaces.lookup_many(conn, "knowledge_sources", list(source_ids))
            return await kops.chunks_missing_embedding(
                conn, model, source_ids, after_id, limit, source_workspaces=by_source, settled_only=settled_only
            )

    async def _put_embeddings(self, model: str, dimensions: int, rows: list[CheckedVector]) -> int:
        async with self._db.acquire() as conn:
            return await kops.put_embeddings(
                conn, model, dimensions, rows, self._db.vector_schema, citus=self._db.citus
            )

    async def _release_sources(self, source_ids: list[int]) -> int:
        async with self._db.acquire() as conn:
            return await kops.release_sources(conn, source_ids)

    async def _renew_claims(self, source_ids: list[int]) -> int:
        async with self._db.acquire() as conn:
            return await kops.renew_claims(conn, source_ids)

    async def _finish_source(self, source_id: int, status: SourceStatus, error: str | None) -> None:
        async with self._db.acquire() as conn:
            ws = await self._db.workspaces.lookup(conn, "knowledge_sources", source_id)
            if ws is None:
                raise source_not_found(source_id)
            await kops.finish_source(conn, source_id, ws, status, error)

    async def _ensure_vector_index(self, model: str, dimensions: int) -> bool:
        """The partial HNSW index, built concurrently with ``m`` / ``ef_construction`` from settings."""
        async with self._db.acquire() as conn:
            return await kops.ensure_vector_index(
                conn,
                model,
                dimensions,
                m=self._db.settings.hnsw_m,
                ef_construction=self._db.settings.hnsw_ef_construction,
                schema=self._db.vector_schema,
            )

    async def _chunks_missing_units(self, after_id: int, limit: int) -> list[ChunkText]:
        async with self._db.acquire() as conn:
            return await uops.chunks_missing_units(conn, after_id, limit)

    async def _put_unit_lexical(self, rows: list[UnitLexicalRow]) -> int:
        """One ``UPDATE``, only where the chunk still holds the content read and has no units."""
        async with self._db.acquire() as conn:
            return await uops.put_unit_lexical(conn, rows)

    async def _embeddings_missing_units(self, model: str, after_id: int, limit: int, reader: bool) -> list[ChunkText]:
        async with self._db.acquire() as conn:
            return await uops.embeddings_missing_units(conn, model, after_id, limit, reader=reader)

    async def _put_unit_vectors(self, model: str, dimensions: int, rows: list[CheckedLines]) -> int:
        """float16 ``bytea`` where the stored content hash is the row's."""
        async with self._db.acquire() as conn:
            return await uops.put_unit_vectors(conn, model, dimensions, rows, citus=self._db.citus)

    async def _compact_line_vectors(self, after_id: int, limit: int) -> CompactedPage:
        async with self._db.acquire() as conn:
            return await uops.compact_line_vectors(conn, after_id, limit)

    async def _list_sources(
        self, workspace_id: str | None, origin_session_id: int | None, limit: int, offset: int
    ) -> list[KnowledgeSource]:
        async with self._db.acquire() as conn:
            return await source_reads.list_sources(conn, workspace_id, origin_session_id, limit, offset)

    async def _knowledge_status(self, workspace_id: str | None) -> KnowledgeStatus:
        async with self._db.acquire() as conn:
            return await kops.knowledge_status(conn, workspace_id)

    async def _get_source(self, source_id: int) -> KnowledgeSource | None:
        async with self._db.acquire() as conn:
            return await source_reads.get_source(conn, source_id)

    async def _chunks_of_source(self, source_id: int) -> list[KnowledgeChunk]:
        async with self._db.acquire() as conn:
            return await source_reads.chunks_of_source(conn, source_id)

    async def _get_embedding(self, chunk_id: int, model: str) -> npt.NDArray[np.float32] | None:
        async with self._db.acquire() as conn:
            return await kops.get_embedding(conn, chunk_id, model)

    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        async with self._db.acquire() as conn, conn.transaction():
            return ErasureState(
                await erasure.erasure_generation(conn, workspace_id), await erasure.erased_users(conn, workspace_id)
            )


__all__ = ["PostgresKnowledge"]
