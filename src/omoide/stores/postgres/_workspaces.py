"""Which workspace a session or source id belongs to, so by-id statements can name it.

On Citus (:mod:`omoide.stores.postgres.citus`) a statement is routed to one shard only when
it says ``workspace_id = $n``; the store contract addresses sessions and sources by id alone.
A row never changes workspace, so the answer is read once (an index lookup; a fan-out to
every shard on Citus) and kept: rows the store itself returns (a session it created or read)
are remembered for free. A wrong entry cannot arise — ids are never reused — and a stale one
(the row was deleted) only makes the routed statement find nothing, which is the "not
found" the caller would have got anyway. On single-node PostgreSQL the extra
``workspace_id`` condition costs nothing measurable and keeps one SQL text for both.
"""

from __future__ import annotations

from typing import Literal

import asyncpg

Table = Literal["sessions", "knowledge_sources"]
MAX_ENTRIES = 200_000
"""Entries kept per table; the cache is simply emptied when full (a miss is one lookup)."""


class WorkspaceOf:
    """``(table, id) → workspace_id`` for the lifetime of one store."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._max = max_entries
        self._known: dict[Table, dict[int, str]] = {"sessions": {}, "knowledge_sources": {}}

    def remember(self, table: Table, row_id: int, workspace_id: str) -> None:
        known = self._known[table]
        if len(known) >= self._max:
            known.clear()
        known[int(row_id)] = workspace_id

    async def lookup(self, conn: asyncpg.Connection, table: Table, row_id: int) -> str | None:
        """The workspace of the row, ``None`` when there is no such row."""
        found = self._known[table].get(int(row_id))
        if found is not None:
            return found
        value = await conn.fetchval(f"SELECT workspace_id FROM {table} WHERE id = $1", int(row_id))
        if value is None:
            return None
        self.remember(table, row_id, str(value))
        return str(value)

    async def lookup_many(self, conn: asyncpg.Connection, table: Table, ids: list[int]) -> dict[int, str]:
        """The workspaces of those rows that exist (one query for the ids not known yet)."""
        known = self._known[table]
        out = {i: known[i] for i in ids if i in known}
        missing = [i for i in ids if i not in out]
        if missing:
            rows = await conn.fetch(f"SELECT id, workspace_id FROM {table} WHERE id = ANY($1::bigint[])", missing)
            for r in rows:
                out[int(r["id"])] = str(r["workspace_id"])
                self.remember(table, int(r["id"]), str(r["workspace_id"]))
        return out


__all__ = ["MAX_ENTRIES", "Table", "WorkspaceOf"]
