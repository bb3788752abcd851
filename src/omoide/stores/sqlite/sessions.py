"""Sessions on SQLite: :class:`SqliteSessions` runs the operations of :mod:`._sessions` on the
store's threads (reads on a reader connection, writes in ``BEGIN IMMEDIATE`` on the writer)."""

from __future__ import annotations

from datetime import datetime

from omoide.models import Message, Session, SessionKey, SessionStatus, utcnow
from omoide.stores.sessions import SessionFilter, SessionStore
from omoide.stores.sqlite import _sessions as ops
from omoide.stores.sqlite._db import SqliteDb


class SqliteSessions(SessionStore):
    def __init__(self, db: SqliteDb) -> None:
        super().__init__(max_message_bytes=db.settings.max_message_bytes)
        self._db = db

    async def _get_or_create_session(self, key: SessionKey) -> Session:
        """A read first: an existing session costs no write lock."""
        session = await self._db.read("get_or_create_session", ops.get_session, key.value)
        if session is not None:
            return session
        return await self._db.write("get_or_create_session", ops.get_or_create_session, key, utcnow())

    async def _get_session(self, key: str) -> Session | None:
        return await self._db.read("get_session", ops.get_session, key)

    async def _get_session_by_id(self, session_id: int) -> Session | None:
        return await self._db.read("get_session_by_id", ops.get_session_by_id, session_id)

    async def _set_session_visibility(self, session_id: int, private: bool, members: list[str]) -> Session:
        return await self._db.write("set_session_visibility", ops.set_session_visibility, session_id, private, members)

    async def _append_message(
        self, session_id: int, message: Message, content: str, tokens: int | None
    ) -> tuple[Message, bool]:
        return await self._db.write("append_message", ops.append_message, session_id, message, content, tokens)

    async def _history(self, session_id: int, window: int) -> list[Message]:
        return await self._db.read("history", ops.history, session_id, window)

    async def _messages(self, session_id: int, after_seq: int, limit: int | None) -> list[Message]:
        return await self._db.read("messages", ops.messages, session_id, after_seq, limit)

    async def _list_sessions(self, where: SessionFilter, limit: int, offset: int) -> list[Session]:
        return await self._db.read("list_sessions", ops.list_sessions, where, limit, offset)

    async def _list_workspaces(self, limit: int, offset: int) -> list[str]:
        return await self._db.read("list_workspaces", ops.list_workspaces, limit, offset)

    async def _update_session(
        self, session_id: int, expected_version: int, status: SessionStatus | None, window_start_seq: int | None
    ) -> Session:
        return await self._db.write(
            "update_session", ops.update_session, session_id, expected_version, status, window_start_seq
        )

    async def _reset_window(self, session_id: int) -> Session:
        return await self._db.write("reset_window", ops.reset_window, session_id)

    async def _save_context_summary(self, session_id: int, summary: str, through_seq: int) -> Session | None:
        return await self._db.write("save_context_summary", ops.save_context_summary, session_id, summary, through_seq)

    async def _expire_idle(self, idle_before: datetime, batch_size: int) -> int:
        return await self._db.write("expire_idle", ops.expire_idle, idle_before, batch_size)

    async def _delete_session(self, session_id: int) -> bool:
        return await self._db.write("delete_session", ops.delete_session, session_id)


__all__ = ["SqliteSessions"]
