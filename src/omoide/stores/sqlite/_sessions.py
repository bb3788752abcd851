"""Session and message operations as plain synchronous functions on one connection.

Each function is one whole store operation: :class:`~omoide.stores.sqlite.sessions.SqliteSessions`
runs it in the thread that owns the connection, so an operation costs one thread hop
however many statements it runs (see ``docs/bench-notes/sqlite-driver.md``). Writers
run inside ``BEGIN IMMEDIATE`` (the caller opens it with
:func:`~omoide.stores.sqlite._conn.in_write_transaction`); readers are single
statements, so each sees one consistent snapshot.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from omoide.errors import InvalidInput, SessionNotFound, VersionConflict
from omoide.models import KeyPolicy, Message, MessageId, Session, SessionId, SessionKey, SessionStatus
from omoide.stores.sessions import SessionFilter
from omoide.stores.sqlite._conn import format_ts
from omoide.stores.sqlite._rows import MESSAGE_COLUMNS, SESSION_COLUMNS, message_from_row, session_from_row

# ----------------------------------------------------------------------------- reads


def get_session(conn: sqlite3.Connection, key: str) -> Session | None:
    row = conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_key = ?", (key,)).fetchone()
    return session_from_row(row) if row is not None else None


def get_session_by_id(conn: sqlite3.Connection, session_id: int) -> Session | None:
    row = conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return session_from_row(row) if row is not None else None


HISTORY_SQL = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = ?1
  AND seq > (SELECT window_start_seq FROM sessions WHERE id = ?1)
ORDER BY seq DESC
LIMIT ?2
"""


def history(conn: sqlite3.Connection, session_id: int, window: int) -> list[Message]:
    """The newest ``window`` messages after the session's ``window_start_seq``, oldest first.

    One statement (one snapshot); walks the ``UNIQUE (session_id, seq)`` index backwards.
    """
    rows = conn.execute(HISTORY_SQL, (session_id, window)).fetchall()
    rows.reverse()
    return [message_from_row(row) for row in rows]


def messages(conn: sqlite3.Connection, session_id: int, after_seq: int, limit: int | None) -> list[Message]:
    rows = conn.execute(
        f"""
        SELECT {MESSAGE_COLUMNS} FROM session_messages
        WHERE session_id = ? AND seq > ?
        ORDER BY seq
        LIMIT ?
        """,
        (session_id, after_seq, -1 if limit is None else limit),
    ).fetchall()
    return [message_from_row(row) for row in rows]


def list_sessions(conn: sqlite3.Connection, where: SessionFilter, limit: int, offset: int) -> list[Session]:
    conditions = where.conditions()
    clause = "WHERE " + " AND ".join(f"{column} = ?" for column, _ in conditions) if conditions else ""
    rows = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions {clause} ORDER BY last_active_at DESC, id DESC LIMIT ? OFFSET ?",
        (*(value for _, value in conditions), limit, offset),
    ).fetchall()
    return [session_from_row(row) for row in rows]


def list_workspaces(conn: sqlite3.Connection, limit: int, offset: int) -> list[str]:
    rows = conn.execute(
        "SELECT DISTINCT workspace_id FROM sessions ORDER BY workspace_id LIMIT ? OFFSET ?", (limit, offset)
    ).fetchall()
    return [str(row[0]) for row in rows]


# ---------------------------------------------------------------------------- writes
# Each runs inside the caller's BEGIN IMMEDIATE transaction.


def get_or_create_session(conn: sqlite3.Connection, key: SessionKey, now: datetime) -> Session:
    """Insert the session unless its key exists, then read it back (race-free: one UNIQUE key)."""
    stamp = format_ts(now)
    conn.execute(
        """
        INSERT INTO sessions (session_key, policy, platform, workspace_id, channel_id, thread_id, user_id,
                              agent_id, status, version, last_seq, archived_seq, window_start_seq,
                              last_active_at, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', 1, 0, 0, 0, ?, ?)
        ON CONFLICT (session_key) DO NOTHING
        """,
        (
            key.value,
            KeyPolicy(key.policy).value,
            key.platform,
            key.workspace,
            key.channel,
            key.thread,
            key.user,
            key.agent,
            stamp,
            stamp,
        ),
    )
    session = get_session(conn, key.value)
    assert session is not None  # inserted or already there, inside this write transaction
    return session


def set_session_visibility(conn: sqlite3.Connection, session_id: int, private: bool, members: list[str]) -> Session:
    """Set the session's visibility; bumps the version, so an archive planned with the old one retries.

    Raises:
        SessionNotFound: no session has this id.
    """
    row = conn.execute(
        f"UPDATE sessions SET private = ?, members = ?, version = version + 1 WHERE id = ? RETURNING {SESSION_COLUMNS}",
        (int(private), json.dumps(members), session_id),
    ).fetchone()
    if row is None:
        raise SessionNotFound(f"no session with id {session_id}", session_id=session_id)
    return session_from_row(row)


def append_message(
    conn: sqlite3.Connection, session_id: int, message: Message, content: str, tokens: int | None
) -> tuple[Message, bool]:
    """Store ``message`` as the session's next ``seq`` unless its platform id is already stored.

    ``content``: its JSON (``message.content_json()``); ``tokens``: its stored token count
    (:func:`~omoide.providers.tokens.stored_text_tokens`); both made before the write transaction.

    Raises:
        SessionNotFound: no session has this id.
    """
    if message.message_id is not None:
        row = conn.execute(
            f"""
            SELECT {MESSAGE_COLUMNS} FROM session_messages
            WHERE workspace_id = (SELECT workspace_id FROM sessions WHERE id = ?)
              AND platform_message_id = ?
            """,
            (session_id, message.message_id),
        ).fetchone()
        if row is not None:
            return message_from_row(row), False
    created_at = format_ts(message.created_at)
    bumped = conn.execute(
        """
        UPDATE sessions
        SET last_seq = last_seq + 1,
            version = version + 1,
            status = 'active',
            last_active_at = max(last_active_at, ?)
        WHERE id = ?
        RETURNING last_seq, workspace_id
        """,
        (created_at, session_id),
    ).fetchone()
    if bumped is None:
        raise SessionNotFound(f"no session with id {session_id}", session_id=session_id)
    seq, workspace_id = bumped
    cursor = conn.execute(
        """
        INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, author_name,
                                      is_bot, platform_message_id, created_at, token_count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (
            session_id,
            workspace_id,
            seq,
            message.role,
            content,
            message.author_id,
            message.author_name,
            1 if message.is_bot else 0,
            message.message_id,
            created_at,
            tokens,
        ),
    )
    message_id = cursor.lastrowid
    assert message_id is not None
    return message.with_stored(id=MessageId(message_id), session_id=SessionId(session_id), seq=seq), True


def update_session(
    conn: sqlite3.Connection,
    session_id: int,
    expected_version: int,
    status: SessionStatus | None,
    window_start_seq: int | None,
) -> Session:
    """Compare-and-set on ``version``.

    Raises:
        SessionNotFound: no session has this id.
        VersionConflict: the session's version is no longer ``expected_version``.
        InvalidInput: ``window_start_seq`` is beyond the session's ``last_seq``.
    """
    try:
        row = conn.execute(
            f"""
            UPDATE sessions
            SET status = coalesce(?, status),
                window_start_seq = coalesce(?, window_start_seq),
                version = version + 1
            WHERE id = ? AND version = ?
            RETURNING {SESSION_COLUMNS}
            """,
            (None if status is None else status.value, window_start_seq, session_id, expected_version),
        ).fetchone()
    except sqlite3.IntegrityError as exc:
        if "sessions_window_start_seq_range" not in str(exc):
            raise
        raise InvalidInput(
            f"window_start_seq {window_start_seq} is beyond the newest message of session {session_id}",
            session_id=session_id,
            window_start_seq=window_start_seq,
        ) from exc
    if row is not None:
        return session_from_row(row)
    current = conn.execute("SELECT version FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if current is None:
        raise SessionNotFound(f"no session with id {session_id}", session_id=session_id)
    raise VersionConflict(
        f"session {session_id} changed since it was read (version {current[0]}, expected {expected_version}); "
        "re-read it and retry",
        session_id=session_id,
        expected_version=expected_version,
        actual_version=current[0],
    )


def expire_idle(conn: sqlite3.Connection, idle_before: datetime, batch_size: int) -> int:
    """Expire the ``batch_size`` longest-idle active sessions idle since before ``idle_before``."""
    cursor = conn.execute(
        """
        UPDATE sessions
        SET status = 'expired', version = version + 1
        WHERE id IN (
            SELECT id FROM sessions
            WHERE status = 'active' AND last_active_at < ?
            ORDER BY last_active_at, id
            LIMIT ?
        )
        """,
        (format_ts(idle_before), batch_size),
    )
    return cursor.rowcount


def reset_window(conn: sqlite3.Connection, session_id: int) -> Session:
    """Move the window start to the newest message, atomically (no read-then-write)."""
    row = conn.execute(
        f"UPDATE sessions SET window_start_seq = last_seq, version = version + 1 WHERE id = ? RETURNING {SESSION_COLUMNS}",
        (session_id,),
    ).fetchone()
    if row is None:
        raise SessionNotFound(f"no session with id {session_id}", session_id=session_id)
    return session_from_row(row)


def save_context_summary(conn: sqlite3.Connection, session_id: int, summary: str, through_seq: int) -> Session | None:
    """Store a compaction summary unless a summary covering as much or more is already stored."""
    row = conn.execute(
        f"""
        UPDATE sessions
        SET context_summary = ?, context_summary_seq = ?, version = version + 1
        WHERE id = ? AND context_summary_seq < ? AND ? <= last_seq
        RETURNING {SESSION_COLUMNS}
        """,
        (summary, through_seq, session_id, through_seq, through_seq),
    ).fetchone()
    if row is not None:
        return session_from_row(row)
    current = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if current is None:
        raise SessionNotFound(f"no session with id {session_id}", session_id=session_id)
    if through_seq > current[0]:
        raise InvalidInput(
            f"through_seq {through_seq} is beyond the newest message of session {session_id} ({current[0]})",
            session_id=session_id,
        )
    return None


def delete_session(conn: sqlite3.Connection, session_id: int) -> bool:
    """Delete the session; its messages go with it (``ON DELETE CASCADE``)."""
    return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0


__all__ = [
    "HISTORY_SQL",
    "MESSAGE_COLUMNS",
    "SESSION_COLUMNS",
    "append_message",
    "delete_session",
    "expire_idle",
    "get_or_create_session",
    "get_session",
    "get_session_by_id",
    "history",
    "list_sessions",
    "message_from_row",
    "messages",
    "reset_window",
    "save_context_summary",
    "update_session",
]
