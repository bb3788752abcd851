"""Sessions on PostgreSQL, one function per store operation (pooled asyncpg connection).

How they stay correct with many writers is in :mod:`omoide.stores.postgres.sessions`.
"""

from __future__ import annotations

import json
from datetime import datetime

import asyncpg

from omoide.errors import InvalidInput, SessionNotFound, StoreError, VersionConflict
from omoide.models import Message, Session, SessionId, SessionKey, SessionStatus, utcnow
from omoide.stores.postgres._rows import MESSAGE_COLUMNS, SESSION_COLUMNS, row_to_message, row_to_session

RETRIES = 3  # a row that vanishes between two statements (concurrent delete) is retried this often

_SELECT_SESSION_BY_KEY = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_key = $1"
_SELECT_SESSION_BY_ID = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"
_INSERT_SESSION = f"""
INSERT INTO sessions (session_key, policy, platform, workspace_id, channel_id, thread_id, user_id, agent_id,
                      last_active_at, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT (session_key) DO NOTHING
RETURNING {SESSION_COLUMNS}
"""
_SET_VISIBILITY = f"""
UPDATE sessions SET private = $2, members = $3::jsonb, version = version + 1 WHERE id = $1
RETURNING {SESSION_COLUMNS}
"""
_APPEND = """
WITH dup AS (
    SELECT 1 FROM session_messages m
    WHERE $8::text IS NOT NULL AND m.platform_message_id = $8::text
      AND m.workspace_id = (SELECT workspace_id FROM sessions WHERE id = $1)
), s AS (
    UPDATE sessions
    SET last_seq = last_seq + 1, version = version + 1, status = 'active',
        last_active_at = GREATEST(last_active_at, $2)
    WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM dup)
    RETURNING id, workspace_id, last_seq
)
INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, author_name, is_bot,
                              platform_message_id, created_at, token_count)
SELECT s.id, s.workspace_id, s.last_seq, $3, $4::jsonb, $5, $6, $7, $8::text, $2, $9 FROM s
RETURNING id, seq
"""
_PLATFORM_ID_INDEX = "session_messages_platform_id"
_SELECT_BY_PLATFORM_ID = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE workspace_id = (SELECT workspace_id FROM sessions WHERE id = $1) AND platform_message_id = $2
"""
_HISTORY = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = $1 AND seq > (SELECT window_start_seq FROM sessions WHERE id = $1)
ORDER BY seq DESC LIMIT $2
"""
_MESSAGES = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""
_UPDATE_SESSION = f"""
UPDATE sessions
SET version = version + 1, status = COALESCE($3, status), window_start_seq = COALESCE($4, window_start_seq)
WHERE id = $1 AND version = $2
RETURNING {SESSION_COLUMNS}
"""
_RESET_WINDOW = f"""
UPDATE sessions SET window_start_seq = last_seq, version = version + 1 WHERE id = $1
RETURNING {SESSION_COLUMNS}
"""
_SAVE_CONTEXT_SUMMARY = f"""
UPDATE sessions SET context_summary = $2, context_summary_seq = $3, version = version + 1
WHERE id = $1 AND context_summary_seq < $3 AND $3 <= last_seq
RETURNING {SESSION_COLUMNS}
"""
_EXPIRE_IDLE = """
WITH claimed AS (
    SELECT id FROM sessions
    WHERE status = 'active' AND last_active_at < $1
    ORDER BY last_active_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), expired AS (
    UPDATE sessions s SET status = 'expired', version = s.version + 1
    FROM claimed
    WHERE s.id = claimed.id AND s.status = 'active' AND s.last_active_at < $1
    RETURNING 1
)
SELECT count(*) FROM expired
"""


def _not_found(session_id: int) -> SessionNotFound:
    return SessionNotFound(f"no session with id {session_id}", session_id=session_id)


async def get_or_create_session(conn: asyncpg.Connection, key: SessionKey) -> Session:
    for _ in range(RETRIES):
        row = await conn.fetchrow(_SELECT_SESSION_BY_KEY, key.value)
        if row is None:
            row = await conn.fetchrow(
                _INSERT_SESSION,
                key.value,
                key.policy.value,
                key.platform,
                key.workspace,
                key.channel,
                key.thread,
                key.user,
                key.agent,
                utcnow(),
            )
        if row is not None:  # else: created and deleted by others between our two statements
            return row_to_session(row)
    raise StoreError(f"session {key.value!r} was deleted while being created {RETRIES} times; try again")


async def get_session(conn: asyncpg.Connection, key: str) -> Session | None:
    row = await conn.fetchrow(_SELECT_SESSION_BY_KEY, key)
    return None if row is None else row_to_session(row)


async def get_session_by_id(conn: asyncpg.Connection, session_id: int) -> Session | None:
    row = await conn.fetchrow(_SELECT_SESSION_BY_ID, session_id)
    return None if row is None else row_to_session(row)


async def set_session_visibility(
    conn: asyncpg.Connection, session_id: int, private: bool, members: list[str]
) -> Session:
    row = await conn.fetchrow(_SET_VISIBILITY, session_id, private, json.dumps(members))
    if row is None:
        raise _not_found(session_id)
    return row_to_session(row)


async def append_message(
    conn: asyncpg.Connection, session_id: int, message: Message, content: str, tokens: int | None
) -> tuple[Message, bool]:
    """One statement per attempt; a duplicate platform id returns the stored copy."""
    for _ in range(RETRIES):
        try:
            row = await conn.fetchrow(
                _APPEND,
                session_id,
                message.created_at,
                message.role,
                content,
                message.author_id,
                message.author_name,
                message.is_bot,
                message.message_id,
                tokens,
            )
        except asyncpg.UniqueViolationError as exc:
            if exc.constraint_name != _PLATFORM_ID_INDEX:
                raise
            row = None  # a concurrent append stored this platform id first
        if row is not None:
            return message.with_stored(id=row["id"], session_id=SessionId(session_id), seq=int(row["seq"])), True
        if message.message_id is not None:
            stored = await conn.fetchrow(_SELECT_BY_PLATFORM_ID, session_id, message.message_id)
            if stored is not None:
                return row_to_message(stored), False
        if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)", session_id):
            raise _not_found(session_id)
        # the duplicate was deleted between the two statements: append again
    raise StoreError(f"append to session {session_id} kept racing with deletes of message {message.message_id!r}")


async def history(conn: asyncpg.Connection, session_id: int, window: int) -> list[Message]:
    rows = await conn.fetch(_HISTORY, session_id, window)
    return [row_to_message(r) for r in reversed(rows)]


async def messages(conn: asyncpg.Connection, session_id: int, after_seq: int, limit: int | None) -> list[Message]:
    rows = await conn.fetch(_MESSAGES, session_id, after_seq, limit)
    return [row_to_message(r) for r in rows]


async def list_sessions(
    conn: asyncpg.Connection, workspace_id: str | None, status: SessionStatus | None, limit: int, offset: int
) -> list[Session]:
    where: list[str] = []
    args: list[object] = []
    if workspace_id is not None:
        args.append(workspace_id)
        where.append(f"workspace_id = ${len(args)}")
    if status is not None:
        args.append(status.value)
        where.append(f"status = ${len(args)}")
    args += [limit, offset]
    sql = (
        f"SELECT {SESSION_COLUMNS} FROM sessions"
        + (" WHERE " + " AND ".join(where) if where else "")
        + f" ORDER BY last_active_at DESC, id DESC LIMIT ${len(args) - 1} OFFSET ${len(args)}"
    )
    rows = await conn.fetch(sql, *args)
    return [row_to_session(r) for r in rows]


async def update_session(
    conn: asyncpg.Connection,
    session_id: int,
    expected_version: int,
    status: SessionStatus | None,
    window_start_seq: int | None,
) -> Session:
    new_status = None if status is None else status.value
    try:
        row = await conn.fetchrow(_UPDATE_SESSION, session_id, expected_version, new_status, window_start_seq)
    except asyncpg.CheckViolationError as exc:
        raise InvalidInput(
            f"window_start_seq {window_start_seq} is beyond the newest message of session {session_id}",
            session_id=session_id,
        ) from exc
    if row is not None:
        return row_to_session(row)
    current = await conn.fetchrow("SELECT version FROM sessions WHERE id = $1", session_id)
    if current is None:
        raise _not_found(session_id)
    raise VersionConflict(
        f"session {session_id} is at version {current['version']}, not {expected_version}: it changed since it "
        "was read; re-read it and retry",
        session_id=session_id,
        expected_version=expected_version,
        actual_version=int(current["version"]),
    )


async def reset_window(conn: asyncpg.Connection, session_id: int) -> Session:
    row = await conn.fetchrow(_RESET_WINDOW, session_id)
    if row is None:
        raise _not_found(session_id)
    return row_to_session(row)


async def save_context_summary(
    conn: asyncpg.Connection, session_id: int, summary: str, through_seq: int
) -> Session | None:
    row = await conn.fetchrow(_SAVE_CONTEXT_SUMMARY, session_id, summary, through_seq)
    if row is not None:
        return row_to_session(row)
    last = await conn.fetchval("SELECT last_seq FROM sessions WHERE id = $1", session_id)
    if last is None:
        raise _not_found(session_id)
    if through_seq > last:
        raise InvalidInput(f"through_seq {through_seq} is beyond the newest message of session {session_id} ({last})")
    return None


async def expire_idle(conn: asyncpg.Connection, idle_before: datetime, batch_size: int) -> int:
    return int(await conn.fetchval(_EXPIRE_IDLE, idle_before, batch_size))


async def delete_session(conn: asyncpg.Connection, session_id: int) -> bool:
    return await conn.fetchval("DELETE FROM sessions WHERE id = $1 RETURNING id", session_id) is not None


__all__ = [
    "RETRIES",
    "append_message",
    "delete_session",
    "expire_idle",
    "get_or_create_session",
    "get_session",
    "get_session_by_id",
    "history",
    "list_sessions",
    "messages",
    "reset_window",
    "save_context_summary",
    "set_session_visibility",
    "update_session",
]
