"""Summaries on PostgreSQL: :class:`PostgresSummaries` (the SQL is in :mod:`._summaries`)."""

from __future__ import annotations

from datetime import datetime

from omoide.models import Message
from omoide.stores._erasure_common import ErasureState
from omoide.stores.postgres import _erasure as erasure
from omoide.stores.postgres import _summaries as sumops
from omoide.stores.postgres._db import PostgresDb
from omoide.stores.summaries import Summary, SummaryDraft, SummaryScope, SummaryStore


class PostgresSummaries(SummaryStore):
    """A new version takes ``latest + 1``; a concurrent writer that took the number first makes it retry."""

    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _latest_summary(self, workspace_id: str, scope: str, scope_id: str, kind: str) -> Summary | None:
        async with self._db.acquire() as conn:
            return await sumops.latest_summary(conn, workspace_id, scope, scope_id, kind)

    async def _summary_history(
        self, workspace_id: str, scope: str, scope_id: str, kind: str, limit: int
    ) -> list[Summary]:
        async with self._db.acquire() as conn:
            return await sumops.summary_history(conn, workspace_id, scope, scope_id, kind, limit)

    async def _latest_summaries(
        self, workspace_id: str, scope: str, kind: str, after: str | None, limit: int | None
    ) -> list[Summary]:
        async with self._db.acquire() as conn:
            return await sumops.latest_summaries(conn, workspace_id, scope, kind, after, limit)

    async def _save_summary(self, draft: SummaryDraft, new_version: bool) -> Summary:
        async with self._db.acquire() as conn:
            return await sumops.save_summary(conn, draft, new_version)

    async def _scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, since: datetime, limit: int
    ) -> list[Message]:
        async with self._db.acquire() as conn:
            return await sumops.scope_messages(conn, workspace_id, scope, scope_id, since, limit)

    async def _active_scopes(self, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
        async with self._db.acquire() as conn:
            return await sumops.active_scopes(conn, since, scope)

    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        async with self._db.acquire() as conn:
            return await erasure.read_erasure_state(conn, workspace_id)


__all__ = ["PostgresSummaries"]
