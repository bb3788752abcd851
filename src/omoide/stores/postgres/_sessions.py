"""Sessions on PostgreSQL, one function per store operation (pooled asyncpg connection).

How they stay correct with many writers is in :mod:`omoide.stores.postgres.sessions`.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import asyncpg

from omoide.errors import InvalidInput, InvalidSessionKey, SessionNotFound, StoreError, VersionConflict
from omoide.keys import parse_session_key
from omoide.models import Message, Session, SessionId, SessionKey, SessionStatus, utcnow
from omoide.stores.postgres._rows import MESSAGE_COLUMNS, SESSION_COLUMNS, row_to_message, row_to_session
from omoide.stores.sessions import SessionFilter

RETRIES = 3  # a row that vanishes between two statements (concurrent delete) is retried this often
DEADLOCK_BACKOFF_SECONDS = 0.05
"""Pause before re-running an append that Citus cancelled as part of a distributed deadlock (times the attempt)."""

_SELECT_SESSION_BY_KEY = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_key = $1 AND workspace_id = $2"
_SELECT_SESSION_BY_ID = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1 AND workspace_id = $2"
_INSERT_SESSION = f"""
INSERT INTO sessions (session_key, policy, platform, workspace_id, channel_id, thread_id, user_id, agent_id,
                      last_active_at, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT ON CONSTRAINT sessions_session_key_key DO NOTHING
RETURNING {SESSION_COLUMNS}
"""
_SET_VISIBILITY = f"""
UPDATE sessions SET private = $2, members = $3::jsonb, version = version + 1 WHERE id = $1 AND workspace_id = $4
RETURNING {SESSION_COLUMNS}
"""
_APPEND = """
WITH dup AS (
    SELECT 1 FROM session_messages m
    WHERE $8::text IS NOT NULL AND m.platform_message_id = $8::text AND m.workspace_id = $10
), s AS (
    UPDATE sessions
    SET last_seq = last_seq + 1, version = version + 1, status = 'active',
        last_active_at = GREATEST(last_active_at, $2)
    WHERE id = $1 AND workspace_id = $10 AND NOT EXISTS (SELECT 1 FROM dup)
    RETURNING id, workspace_id, last_seq
)
INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, author_name, is_bot,
                              platform_message_id, created_at, token_count)
SELECT s.id, s.workspace_id, s.last_seq, $3, $4::jsonb, $5, $6, $7, $8::text, $2, $9 FROM s
RETURNING id, seq
"""
BUMP_SEQ = """
UPDATE sessions
SET last_seq = last_seq + 1, version = version + 1, status = 'active', last_active_at = GREATEST(last_active_at, $2)
WHERE id = $1 AND workspace_id = $3
RETURNING last_seq
"""
INSERT_MESSAGE = """
INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, author_name, is_bot,
                              platform_message_id, created_at, token_count)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11)
RETURNING id, seq
"""
"""Citus: the append as two routed statements in one transaction (see :func:`append_message_routed`)."""
_PLATFORM_ID_INDEX = "session_messages_platform_id"
_SELECT_BY_PLATFORM_ID = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE workspace_id = $1 AND platform_message_id = $2
"""
_HISTORY = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = $1 AND workspace_id = $3
  AND seq > (SELECT window_start_seq FROM sessions WHERE id = $1 AND workspace_id = $3)
ORDER BY seq DESC LIMIT $2
"""
_MESSAGES = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = $1 AND workspace_id = $4 AND seq > $2 ORDER BY seq LIMIT $3
"""
_UPDATE_SESSION = f"""
UPDATE sessions
SET version = version + 1, status = COALESCE($3, status), window_start_seq = COALESCE($4, window_start_seq)
WHERE id = $1 AND workspace_id = $5 AND version = $2
RETURNING {SESSION_COLUMNS}
"""
_RESET_WINDOW = f"""
UPDATE sessions SET window_start_seq = last_seq, version = version + 1 WHERE id = $1 AND workspace_id = $2
RETURNING {SESSION_COLUMNS}
"""
_SAVE_CONTEXT_SUMMARY = f"""
UPDATE sessions SET context_summary = $2, context_summary_seq = $3, version = version + 1
WHERE id = $1 AND workspace_id = $4 AND context_summary_seq < $3 AND $3 <= last_seq
RETURNING {SESSION_COLUMNS}
"""
_EXPIRE_IDLE = """
WITH claimed AS (
    SELECT id FROM sessions
    WHERE status = 'active' AND last_active_at < $1 {scope}
    ORDER BY last_active_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), expired AS (
    UPDATE sessions s SET status = 'expired', version = s.version + 1
    FROM claimed
    WHERE s.id = claimed.id AND s.status = 'active' AND s.last_active_at < $1 {scope_s}
    RETURNING 1
)
SELECT count(*) FROM expired
"""
_EXPIRE_IDLE_ALL = _EXPIRE_IDLE.format(scope="", scope_s="")
_EXPIRE_IDLE_IN_WORKSPACE = _EXPIRE_IDLE.format(scope="AND workspace_id = $3", scope_s="AND s.workspace_id = $3")
IDLE_WORKSPACES_SQL = """
SELECT workspace_id FROM sessions WHERE status = 'active' AND last_active_at < $1
GROUP BY workspace_id ORDER BY min(last_active_at) LIMIT $2
"""
"""Citus: the workspaces with idle sessions, those idle longest first (a read, so it may fan out)."""


def _not_found(session_id: int) -> SessionNotFound:
    return SessionNotFound(f"no session with id {session_id}", session_id=session_id)


def _platform_id_conflict(exc: asyncpg.UniqueViolationError) -> bool:
    """Whether the violation is of the platform-id index: on Citus it is the shard's index
    (``<name>_<shard id>``), and an error relayed from a worker may carry the name only in its text."""
    name = exc.constraint_name or ""
    return name.startswith(_PLATFORM_ID_INDEX) if name else _PLATFORM_ID_INDEX in str(exc)


def key_workspace(key: str) -> str | None:
    """The workspace named in a session key's string form (``None`` for a key omoide did not make)."""
    try:
        return parse_session_key(key).workspace
    except InvalidSessionKey:
        return None


async def get_or_create_session(conn: asyncpg.Connection, key: SessionKey) -> Session:
    for _ in range(RETRIES):
        row = await conn.fetchrow(_SELECT_SESSION_BY_KEY, key.value, key.workspace)
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
    workspace = key_workspace(key)
    if workspace is None:
        return None  # every stored key is one omoide made (get_or_create_session takes a SessionKey)
    row = await conn.fetchrow(_SELECT_SESSION_BY_KEY, key, workspace)
    return None if row is None else row_to_session(row)


async def get_session_by_id(conn: asyncpg.Connection, session_id: int, ws: str) -> Session | None:
    row = await conn.fetchrow(_SELECT_SESSION_BY_ID, session_id, ws)
    return None if row is None else row_to_session(row)


async def set_session_visibility(
    conn: asyncpg.Connection, session_id: int, ws: str, private: bool, members: list[str]
) -> Session:
    row = await conn.fetchrow(_SET_VISIBILITY, session_id, private, json.dumps(members), ws)
    if row is None:
        raise _not_found(session_id)
    return row_to_session(row)


async def _exists(conn: asyncpg.Connection, session_id: int, ws: str) -> bool:
    return bool(
        await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND workspace_id = $2)", session_id, ws
        )
    )


async def append_message(
    conn: asyncpg.Connection, session_id: int, ws: str, message: Message, content: str, tokens: int | None
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
                ws,
            )
        except asyncpg.UniqueViolationError as exc:
            if not _platform_id_conflict(exc):
                raise
            row = None  # a concurrent append stored this platform id first
        if row is not None:
            return message.with_stored(id=row["id"], session_id=SessionId(session_id), seq=int(row["seq"])), True
        if message.message_id is not None:
            stored = await conn.fetchrow(_SELECT_BY_PLATFORM_ID, ws, message.message_id)
            if stored is not None:
                return row_to_message(stored), False
        if not await _exists(conn, session_id, ws):
            raise _not_found(session_id)
        # the duplicate was deleted between the two statements: append again
    raise StoreError(f"append to session {session_id} kept racing with deletes of message {message.message_id!r}")


async def append_message_routed(
    conn: asyncpg.Connection, session_id: int, ws: str, message: Message, content: str, tokens: int | None
) -> tuple[Message, bool]:
    """:func:`append_message` on Citus: a transaction of routed statements instead of one CTE.

    Citus runs the one-statement append (a modifying CTE feeding an ``INSERT … SELECT``) by
    pulling the CTE's rows to the coordinator; as plain statements each goes to the one shard
    of the workspace, and the transaction commits on that one worker. Same guarantees: the
    ``UPDATE`` takes the session's row lock, so concurrent appends queue on it; a duplicate
    platform id found first returns the stored copy; one inserted concurrently hits the
    unique index and rolls the whole transaction back (no ``seq`` consumed), then is found.
    """
    attempt = 0
    for _ in range(RETRIES * 2):
        try:
            async with conn.transaction():
                if message.message_id is not None:
                    stored = await conn.fetchrow(_SELECT_BY_PLATFORM_ID, ws, message.message_id)
                    if stored is not None:
                        return row_to_message(stored), False
                seq = await conn.fetchval(BUMP_SEQ, session_id, message.created_at, ws)
                if seq is None:
                    raise _not_found(session_id)
                row = await conn.fetchrow(
                    INSERT_MESSAGE,
                    session_id,
                    ws,
                    seq,
                    message.role,
                    content,
                    message.author_id,
                    message.author_name,
                    message.is_bot,
                    message.message_id,
                    message.created_at,
                    tokens,
                )
                return message.with_stored(id=row["id"], session_id=SessionId(session_id), seq=int(row["seq"])), True
        except asyncpg.UniqueViolationError as exc:
            if not _platform_id_conflict(exc):
                raise
            # a concurrent append stored this platform id first: the next attempt finds it
        except asyncpg.DeadlockDetectedError:
            # Citus' distributed deadlock detector cancelled us (seen while a shard moves: the move's
            # switch-over takes the shard's locks). The whole transaction rolled back, nothing was
            # stored and no seq consumed, so appending again is safe; back off a little first.
            attempt += 1
            if attempt >= RETRIES:
                raise
            await asyncio.sleep(DEADLOCK_BACKOFF_SECONDS * attempt)
    raise StoreError(f"append to session {session_id} kept racing with deletes of message {message.message_id!r}")


async def history(conn: asyncpg.Connection, session_id: int, ws: str, window: int) -> list[Message]:
    rows = await conn.fetch(_HISTORY, session_id, window, ws)
    return [row_to_message(r) for r in reversed(rows)]


async def messages(
    conn: asyncpg.Connection, session_id: int, ws: str, after_seq: int, limit: int | None
) -> list[Message]:
    rows = await conn.fetch(_MESSAGES, session_id, after_seq, limit, ws)
    return [row_to_message(r) for r in rows]


def list_sessions_query(where: SessionFilter, limit: int, offset: int) -> tuple[str, list[object]]:
    """The SQL and arguments of :func:`list_sessions` (each filter an equality the indexes serve)."""
    conditions = where.conditions()
    tests = [f"{column} = ${n}" for n, (column, _) in enumerate(conditions, start=1)]
    n = len(conditions)
    sql = (
        f"SELECT {SESSION_COLUMNS} FROM sessions"
        + (" WHERE " + " AND ".join(tests) if tests else "")
        + f" ORDER BY last_active_at DESC, id DESC LIMIT ${n + 1} OFFSET ${n + 2}"
    )
    return sql, [*(value for _, value in conditions), limit, offset]


async def list_sessions(conn: asyncpg.Connection, where: SessionFilter, limit: int, offset: int) -> list[Session]:
    sql, args = list_sessions_query(where, limit, offset)
    return [row_to_session(r) for r in await conn.fetch(sql, *args)]


async def list_workspaces(conn: asyncpg.Connection, limit: int, offset: int) -> list[str]:
    rows = await conn.fetch(
        "SELECT DISTINCT workspace_id FROM sessions ORDER BY workspace_id LIMIT $1 OFFSET $2", limit, offset
    )
    return [str(r[0]) for r in rows]


async def update_session(
    conn: asyncpg.Connection,
    session_id: int,
    ws: str,
    expected_version: int,
    status: SessionStatus | None,
    window_start_seq: int | None,
) -> Session:
    new_status = None if status is None else status.value
    try:
        row = await conn.fetchrow(_UPDATE_SESSION, session_id, expected_version, new_status, window_start_seq, ws)
    except asyncpg.CheckViolationError as exc:
        raise InvalidInput(
            f"window_start_seq {window_start_seq} is beyond the newest message of session {session_id}",
            session_id=session_id,
        ) from exc
    if row is not None:
        return row_to_session(row)
    current = await conn.fetchrow("SELECT version FROM sessions WHERE id = $1 AND workspace_id = $2", session_id, ws)
    if current is None:
        raise _not_found(session_id)
    raise VersionConflict(
        f"session {session_id} is at version {current['version']}, not {expected_version}: it changed since it "
        "was read; re-read it and retry",
        session_id=session_id,
        expected_version=expected_version,
        actual_version=int(current["version"]),
    )


async def reset_window(conn: asyncpg.Connection, session_id: int, ws: str) -> Session:
    row = await conn.fetchrow(_RESET_WINDOW, session_id, ws)
    if row is None:
        raise _not_found(session_id)
    return row_to_session(row)


async def save_context_summary(
    conn: asyncpg.Connection, session_id: int, ws: str, summary: str, through_seq: int
) -> Session | None:
    row = await conn.fetchrow(_SAVE_CONTEXT_SUMMARY, session_id, summary, through_seq, ws)
    if row is not None:
        return row_to_session(row)
    last = await conn.fetchval("SELECT last_seq FROM sessions WHERE id = $1 AND workspace_id = $2", session_id, ws)
    if last is None:
        raise _not_found(session_id)
    if through_seq > last:
        raise InvalidInput(f"through_seq {through_seq} is beyond the newest message of session {session_id} ({last})")
    return None


async def expire_idle(conn: asyncpg.Connection, idle_before: datetime, batch_size: int) -> int:
    """Expire up to ``batch_size`` idle sessions, across workspaces (single-node PostgreSQL)."""
    return int(await conn.fetchval(_EXPIRE_IDLE_ALL, idle_before, batch_size))


async def expire_idle_per_workspace(conn: asyncpg.Connection, idle_before: datetime, batch_size: int) -> int:
    """The same on Citus, one routed claim per workspace (``FOR UPDATE SKIP LOCKED`` needs one shard)."""
    done = 0
    for r in await conn.fetch(IDLE_WORKSPACES_SQL, idle_before, batch_size):
        if done >= batch_size:
            break
        done += int(await conn.fetchval(_EXPIRE_IDLE_IN_WORKSPACE, idle_before, batch_size - done, r["workspace_id"]))
    return done


async def delete_session(conn: asyncpg.Connection, session_id: int, ws: str) -> bool:
    deleted = await conn.fetchval(
        "DELETE FROM sessions WHERE id = $1 AND workspace_id = $2 RETURNING id", session_id, ws
    )
    return deleted is not None


__all__ = [
    "RETRIES",
    "append_message",
    "append_message_routed",
    "delete_session",
    "expire_idle",
    "expire_idle_per_workspace",
    "get_or_create_session",
    "get_session",
    "get_session_by_id",
    "history",
    "key_workspace",
    "list_sessions",
    "messages",
    "reset_window",
    "save_context_summary",
    "set_session_visibility",
    "update_session",
]
