"""Summaries on SQLite, one function per store operation (run in the store's threads)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from omoide.models import Message
from omoide.stores._knowledge_common import to_json
from omoide.stores.sqlite._conn import format_ts, parse_ts
from omoide.stores.sqlite._erasure import check_erasure_generation
from omoide.stores.sqlite._rows import MESSAGE_COLUMNS, message_from_row
from omoide.stores.summaries import Summary, SummaryDraft, SummaryKind, SummaryScope, check_expected_version

COLUMNS = (
    "id, workspace_id, scope, scope_id, kind, version, content, source_message_count, source_latest_message_at, "
    "metadata, created_at"
)


def summary_from_row(row: Sequence[Any]) -> Summary:
    return Summary(
        id=int(row[0]),
        workspace_id=row[1],
        scope=SummaryScope(row[2]),
        scope_id=row[3],
        kind=SummaryKind(row[4]),
        version=int(row[5]),
        content=row[6],
        source_message_count=int(row[7]),
        source_latest_message_at=None if row[8] is None else parse_ts(row[8]),
        metadata=json.loads(row[9]),
        created_at=parse_ts(row[10]),
    )


def latest_summary(conn: sqlite3.Connection, workspace_id: str, scope: str, scope_id: str, kind: str) -> Summary | None:
    row = conn.execute(
        f"SELECT {COLUMNS} FROM summaries WHERE workspace_id = ? AND scope = ? AND scope_id = ? AND kind = ? "
        "ORDER BY version DESC LIMIT 1",
        (workspace_id, scope, scope_id, kind),
    ).fetchone()
    return None if row is None else summary_from_row(row)


def summary_history(
    conn: sqlite3.Connection, workspace_id: str, scope: str, scope_id: str, kind: str, limit: int
) -> list[Summary]:
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM summaries WHERE workspace_id = ? AND scope = ? AND scope_id = ? AND kind = ? "
        "ORDER BY version DESC LIMIT ?",
        (workspace_id, scope, scope_id, kind, limit),
    ).fetchall()
    return [summary_from_row(r) for r in rows]


def latest_summaries(
    conn: sqlite3.Connection, workspace_id: str, scope: str, kind: str, after: str | None, limit: int | None
) -> list[Summary]:
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM summaries s WHERE workspace_id = ? AND scope = ? AND kind = ? "
        "AND (? IS NULL OR scope_id > ?) "
        "AND version = (SELECT max(version) FROM summaries t WHERE t.workspace_id = s.workspace_id "
        "AND t.scope = s.scope AND t.scope_id = s.scope_id AND t.kind = s.kind) ORDER BY scope_id LIMIT ?",
        (workspace_id, scope, kind, after, after, -1 if limit is None else limit),
    ).fetchall()
    return [summary_from_row(r) for r in rows]


def save_summary(conn: sqlite3.Connection, draft: SummaryDraft, new_version: bool, now: datetime) -> Summary:
    """Runs inside ``BEGIN IMMEDIATE``: reading the latest version and writing the next is atomic.

    Raises:
        ErasureConflict: a user of the workspace was erased since ``draft.erasure_generation``.
        VersionConflict: another version was saved since ``draft.expected_version``.
    """
    check_erasure_generation(conn, draft.workspace_id, draft.erasure_generation)
    key = (draft.workspace_id, draft.scope.value, draft.scope_id, draft.kind.value)
    latest = conn.execute(
        "SELECT id, version FROM summaries WHERE workspace_id = ? AND scope = ? AND scope_id = ? AND kind = ? "
        "ORDER BY version DESC LIMIT 1",
        key,
    ).fetchone()
    check_expected_version(draft, None if latest is None else int(latest[1]))
    latest_at = None if draft.source_latest_message_at is None else format_ts(draft.source_latest_message_at)
    metadata = to_json(dict(draft.metadata), what="metadata")
    if latest is not None and not new_version:
        conn.execute(
            "UPDATE summaries SET content = ?, source_message_count = ?, source_latest_message_at = ?, metadata = ?, "
            "created_at = ? WHERE id = ?",
            (draft.content, draft.source_message_count, latest_at, metadata, format_ts(now), latest[0]),
        )
        summary_id = latest[0]
    else:
        version = 1 if latest is None else int(latest[1]) + 1
        summary_id = conn.execute(
            "INSERT INTO summaries (workspace_id, scope, scope_id, kind, version, content, source_message_count, "
            "source_latest_message_at, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (*key, version, draft.content, draft.source_message_count, latest_at, metadata, format_ts(now)),
        ).fetchone()[0]
    row = conn.execute(f"SELECT {COLUMNS} FROM summaries WHERE id = ?", (summary_id,)).fetchone()
    return summary_from_row(row)


_SCOPE_FILTER = {
    # channel and thread summaries (and the workspace summary merged from them) read public
    # conversations only: a DM or private channel must not surface in what everyone sees
    SummaryScope.CHANNEL: "m.session_id IN (SELECT id FROM sessions WHERE workspace_id = ? AND channel_id = ? AND NOT private)",
    SummaryScope.THREAD: "m.session_id IN (SELECT id FROM sessions WHERE workspace_id = ? AND thread_id = ? AND NOT private)",
    SummaryScope.USER: "m.workspace_id = ? AND m.author_id = ?",
}


def scope_messages(
    conn: sqlite3.Connection, workspace_id: str, scope: SummaryScope, scope_id: str, since: datetime, limit: int
) -> list[Message]:
    columns = ", ".join(f"m.{c.strip()}" for c in MESSAGE_COLUMNS.split(","))
    rows = conn.execute(
        f"SELECT {columns} FROM session_messages m WHERE {_SCOPE_FILTER[scope]} AND m.created_at >= ? "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
        (workspace_id, scope_id, format_ts(since), limit),
    ).fetchall()
    rows.reverse()
    return [message_from_row(r) for r in rows]


def active_scopes(conn: sqlite3.Connection, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
    if scope is SummaryScope.USER:
        sql = (
            "SELECT DISTINCT workspace_id, author_id FROM session_messages WHERE created_at >= ? "
            "AND author_id IS NOT NULL AND NOT is_bot ORDER BY 1, 2"
        )
    else:
        column = "channel_id" if scope is SummaryScope.CHANNEL else "thread_id"
        sql = (
            f"SELECT DISTINCT workspace_id, {column} FROM sessions WHERE last_active_at >= ? "
            f"AND {column} IS NOT NULL AND NOT private ORDER BY 1, 2"
        )
    return [(r[0], r[1]) for r in conn.execute(sql, (format_ts(since),)).fetchall()]


__all__ = [
    "active_scopes",
    "latest_summaries",
    "latest_summary",
    "save_summary",
    "scope_messages",
    "summary_history",
]
