"""Worker state on PostgreSQL: :class:`PostgresWorkerState` keeps the ``worker_state`` rows (migration 14).

Each operation is one autocommit statement on a pooled connection. ``updated_at`` is the
server's ``now()`` and a row's age is computed by the server (``now() - updated_at``), so
workers and readers on hosts with different clocks agree. On Citus the table is a plain
coordinator table (not distributed, not replicated): a heartbeat never leaves the coordinator.
"""

from __future__ import annotations

import asyncpg

from omoide.stores.postgres._db import PostgresDb
from omoide.stores.worker_state import StateKind, WorkerStateRow, WorkerStateStore, decode_payload

_PUT = """
INSERT INTO worker_state (kind, key, payload, updated_at) VALUES ($1, $2, $3::jsonb, now())
ON CONFLICT (kind, key) DO UPDATE SET payload = EXCLUDED.payload, updated_at = EXCLUDED.updated_at
"""

_ROWS = """
SELECT key, payload::text AS payload, updated_at, extract(epoch FROM now() - updated_at)::float8 AS age
FROM worker_state WHERE kind = $1 ORDER BY updated_at DESC, key LIMIT $2
"""

_PRUNE_OLD = "DELETE FROM worker_state WHERE kind = $1 AND updated_at < now() - make_interval(secs => $2)"

_PRUNE_KEEP = """
DELETE FROM worker_state WHERE kind = $1 AND key NOT IN
    (SELECT key FROM worker_state WHERE kind = $1 ORDER BY updated_at DESC, key LIMIT $2)
"""


def _count(status: str) -> int:
    """The row count of a ``DELETE n`` command tag."""
    return int(status.rsplit(" ", 1)[-1]) if status.startswith("DELETE") else 0


class PostgresWorkerState(WorkerStateStore):
    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _put(self, kind: StateKind, key: str, payload: str) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(_PUT, kind, key, payload)

    async def _rows(self, kind: StateKind, limit: int) -> list[WorkerStateRow]:
        async with self._db.acquire() as conn:
            try:
                found = await conn.fetch(_ROWS, kind, limit)
            except asyncpg.UndefinedTableError:  # a database not migrated to 14 yet: nothing reported
                return []
        return [
            WorkerStateRow(kind, str(r["key"]), decode_payload(r["payload"]), r["updated_at"], float(r["age"]))
            for r in found
        ]

    async def _prune(self, kind: StateKind, older_than: float | None, keep: int | None) -> int:
        deleted = 0
        async with self._db.acquire() as conn, conn.transaction():
            if older_than is not None:
                deleted += _count(await conn.execute(_PRUNE_OLD, kind, float(older_than)))
            if keep is not None:
                deleted += _count(await conn.execute(_PRUNE_KEEP, kind, keep))
        return deleted


__all__ = ["PostgresWorkerState"]
