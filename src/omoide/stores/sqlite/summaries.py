"""Summaries on SQLite: :class:`SqliteSummaries` (the SQL is in :mod:`._summaries`)."""

from __future__ import annotations

from datetime import datetime

from omoide.models import Message, utcnow
from omoide.stores._erasure_common import ErasureState
from omoide.stores.sqlite import _erasure as erasure
from omoide.stores.sqlite import _summaries as sumops
from omoide.stores.sqlite._db import SqliteDb
from omoide.stores.summaries import Summary, SummaryDraft, SummaryScope, SummaryStore


class SqliteSummaries(SummaryStore):
    """A new version is numbered and written in one ``BEGIN IMMEDIATE`` transaction."""

    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _latest_summary(self, workspace_id: str, scope: str, scope_id: str, kind: str) -> Summary | None:
        return await self._db.read("latest_summary", sumops.latest_summary, workspace_id, scope, scope_id, kind)

    async def _summary_history(
        self, workspace_id: str, scope: str, scope_id: str, kind: str, limit: int
    ) -> list[Summary]:
        return await self._db.read(
            "summary_history", sumops.summary_history, workspace_id, scope, scope_id, kind, limit
        )

    async def _latest_summaries(
        self, workspace_id: str, scope: str, kind: str, after: str | None, limit: int | None
    ) -> list[Summary]:
        return await self._db.read("latest_summaries", sumops.latest_summaries, workspace_id, scope, kind, after, limit)

    async def _save_summary(self, draft: SummaryDraft, new_version: bool) -> Summary:
        return await self._db.write("save_summary", sumops.save_summary, draft, new_version, utcnow())

    async def _scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, since: datetime, limit: int
    ) -> list[Message]:
        return await self._db.read("scope_messages", sumops.scope_messages, workspace_id, scope, scope_id, since, limit)

    async def _active_scopes(self, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
        return await self._db.read("active_scopes", sumops.active_scopes, since, scope)

    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        return await self._db.read("erasure_state", erasure.read_erasure_state, workspace_id)


__all__ = ["SqliteSummaries"]
