"""Sessions on PostgreSQL: :class:`PostgresSessions` runs the statements of :mod:`._sessions`
on pooled connections.

How the session operations stay correct with many writers:

* ``append_message`` is one statement (so one round trip and its own transaction)::

      WITH dup AS (SELECT ... platform id already stored in this workspace ...),
           s AS (UPDATE sessions SET last_seq = last_seq + 1, version = version + 1, ...
                 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM dup) RETURNING id, workspace_id, last_seq)
      INSERT INTO session_messages (...) SELECT ... s.last_seq ... FROM s RETURNING id, seq

  The ``UPDATE`` takes the session's row lock, so concurrent appends to one session queue
  on it and each gets the next ``seq`` (READ COMMITTED re-reads the locked row; nothing is
  lost). Two concurrent appends of one platform message id both pass ``dup``; the second
  INSERT then hits the partial UNIQUE index, the whole statement rolls back (no ``seq`` or
  ``version`` is consumed) and the stored copy is returned with ``created=False``.
* ``update_session`` is one version-guarded statement, ``UPDATE ... WHERE id = $1 AND
  version = $2``. If an append holds the row, the UPDATE waits and then re-checks the guard
  against the committed row (READ COMMITTED re-evaluation), so a stale version matches
  nothing and becomes a :class:`~omoide.errors.VersionConflict`; the caller re-reads. No
  transaction here reads and then writes, so none needs REPEATABLE READ (which would only
  add BEGIN and COMMIT round trips and widen the window in which appends cause conflicts).
* ``expire_idle`` claims rows with ``FOR UPDATE SKIP LOCKED`` (a session that is being
  appended to is skipped) and re-checks the predicate on the locked row.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from omoide.errors import SessionNotFound
from omoide.models import Message, Session, SessionKey, SessionStatus
from omoide.stores.postgres import _sessions as ops
from omoide.stores.postgres._db import PostgresDb
from omoide.stores.sessions import SessionFilter, SessionStore


class PostgresSessions(SessionStore):
    """Sessions by id name their workspace too (``_db.workspaces``): one routed shard on Citus."""

    def __init__(self, db: PostgresDb) -> None:
        super().__init__(max_message_bytes=db.settings.max_message_bytes)
        self._db = db

    def _seen(self, session: Session) -> Session:
        self._db.workspaces.remember("sessions", session.id, session.workspace_id)
        return session

    async def _ws(self, conn: asyncpg.Connection, session_id: int) -> str:
        ws = await self._db.workspaces.lookup(conn, "sessions", session_id)
        if ws is None:
            raise SessionNotFound(f"no session with id {session_id}", session_id=session_id)
        return ws

    async def _get_or_create_session(self, key: SessionKey) -> Session:
        async with self._db.acquire() as conn:
            return self._seen(await ops.get_or_create_session(conn, key))

    async def _get_session(self, key: str) -> Session | None:
        async with self._db.acquire() as conn:
            found = await ops.get_session(conn, key)
        return None if found is None else self._seen(found)

    async def _get_session_by_id(self, session_id: int) -> Session | None:
        async with self._db.acquire() as conn:
            ws = await self._db.workspaces.lookup(conn, "sessions", session_id)
            return None if ws is None else await ops.get_session_by_id(conn, session_id, ws)

    async def _set_session_visibility(self, session_id: int, private: bool, members: list[str]) -> Session:
        async with self._db.acquire() as conn:
            return await ops.set_session_visibility(
                conn, session_id, await self._ws(conn, session_id), private, members
            )

    async def _append_message(
        self, session_id: int, message: Message, content: str, tokens: int | None
    ) -> tuple[Message, bool]:
        async with self._db.acquire() as conn:
            ws = await self._ws(conn, session_id)
            append = ops.append_message_routed if self._db.citus else ops.append_message
            return await append(conn, session_id, ws, message, content, tokens)

    async def _history(self, session_id: int, window: int) -> list[Message]:
        async with self._db.acquire() as conn:
            ws = await self._db.workspaces.lookup(conn, "sessions", session_id)
            return [] if ws is None else await ops.history(conn, session_id, ws, window)

    async def _messages(self, session_id: int, after_seq: int, limit: int | None) -> list[Message]:
        async with self._db.acquire() as conn:
            ws = await self._db.workspaces.lookup(conn, "sessions", session_id)
            return [] if ws is None else await ops.messages(conn, session_id, ws, after_seq, limit)

    async def _list_sessions(self, where: SessionFilter, limit: int, offset: int) -> list[Session]:
        async with self._db.acquire() as conn:
            return await ops.list_sessions(conn, where, limit, offset)

    async def _list_workspaces(self, limit: int, offset: int) -> list[str]:
        async with self._db.acquire() as conn:
            return await ops.list_workspaces(conn, limit, offset)

    async def _update_session(
        self, session_id: int, expected_version: int, status: SessionStatus | None, window_start_seq: int | None
    ) -> Session:
        async with self._db.acquire() as conn:
            ws = await self._ws(conn, session_id)
            return await ops.update_session(conn, session_id, ws, expected_version, status, window_start_seq)

    async def _reset_window(self, session_id: int) -> Session:
        async with self._db.acquire() as conn:
            return await ops.reset_window(conn, session_id, await self._ws(conn, session_id))

    async def _save_context_summary(self, session_id: int, summary: str, through_seq: int) -> Session | None:
        async with self._db.acquire() as conn:
            ws = await self._ws(conn, session_id)
            return await ops.save_context_summary(conn, session_id, ws, summary, through_seq)

    async def _expire_idle(self, idle_before: datetime, batch_size: int) -> int:
        async with self._db.acquire() as conn:
            if self._db.citus:
                return await ops.expire_idle_per_workspace(conn, idle_before, batch_size)
            return await ops.expire_idle(conn, idle_before, batch_size)

    async def _delete_session(self, session_id: int) -> bool:
        async with self._db.acquire() as conn:
            ws = await self._db.workspaces.lookup(conn, "sessions", session_id)
            return False if ws is None else await ops.delete_session(conn, session_id, ws)


__all__ = ["PostgresSessions"]
