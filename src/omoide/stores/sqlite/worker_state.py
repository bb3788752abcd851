"""Worker state on SQLite: :class:`SqliteWorkerState` keeps the ``worker_state`` rows (migration 13).

A write is one short ``BEGIN IMMEDIATE`` transaction on the store's writer thread; it queues
behind the job's own writes in this process and waits for other processes' like any write
(the callers in :mod:`omoide.workers` never wait for it). Timestamps are this host's clock: an
SQLite file is written by one host.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from omoide.models import utcnow
from omoide.stores.sqlite._conn import format_ts, parse_ts
from omoide.stores.sqlite._db import SqliteDb
from omoide.stores.worker_state import StateKind, WorkerStateRow, WorkerStateStore, decode_payload


def _put(conn: sqlite3.Connection, kind: str, key: str, payload: str, now: datetime) -> None:
    conn.execute(
        "INSERT INTO worker_state (kind, key, payload, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (kind, key) DO UPDATE SET payload = excluded.payload, updated_at = excluded.updated_at",
        (kind, key, payload, format_ts(now)),
    )


def _rows(conn: sqlite3.Connection, kind: StateKind, limit: int) -> list[WorkerStateRow]:
    try:
        found = conn.execute(
            "SELECT key, payload, updated_at FROM worker_state WHERE kind = ? ORDER BY updated_at DESC, key LIMIT ?",
            (kind, limit),
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # a database not migrated to 13 yet: nothing reported
            return []
        raise
    now = utcnow()
    out: list[WorkerStateRow] = []
    for key, payload, updated in found:
        at = parse_ts(updated)
        out.append(WorkerStateRow(kind, str(key), decode_payload(payload), at, (now - at).total_seconds()))
    return out


def _prune(conn: sqlite3.Connection, kind: str, before: datetime | None, keep: int | None) -> int:
    deleted = 0
    if before is not None:
        deleted += conn.execute(
            "DELETE FROM worker_state WHERE kind = ? AND updated_at < ?", (kind, format_ts(before))
        ).rowcount
    if keep is not None:
        deleted += conn.execute(
            "DELETE FROM worker_state WHERE kind = ? AND key NOT IN "
            "(SELECT key FROM worker_state WHERE kind = ? ORDER BY updated_at DESC, key LIMIT ?)",
            (kind, kind, keep),
        ).rowcount
    return deleted


class SqliteWorkerState(WorkerStateStore):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _put(self, kind: StateKind, key: str, payload: str) -> None:
        await self._db.write("put_worker_state", _put, kind, key, payload, utcnow())

    async def _rows(self, kind: StateKind, limit: int) -> list[WorkerStateRow]:
        return await self._db.read("worker_state_rows", _rows, kind, limit)

    async def _prune(self, kind: StateKind, older_than: float | None, keep: int | None) -> int:
        before = None if older_than is None else utcnow() - timedelta(seconds=older_than)
        return await self._db.write("prune_worker_state", _prune, kind, before, keep)


__all__ = ["SqliteWorkerState"]
