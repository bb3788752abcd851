"""Summaries on PostgreSQL, one function per store operation (pooled asyncpg connection)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import asyncpg

from omoide.models import Message, ensure_utc
from omoide.stores._knowledge_common import to_json
from omoide.stores.postgres._erasure import check_erasure_generation
from omoide.stores.postgres._rows import MESSAGE_COLUMNS, row_to_message
from omoide.stores.summaries import Summary, SummaryDraft, SummaryKind, SummaryScope, check_expected_version

COLUMNS = (
    "id, workspace_id, scope, scope_id, kind, version, content, source_message_count, source_latest_message_at, "
    "metadata, created_at"
)
SAVE_ATTEMPTS = 5


def summary_from_row(row: Mapping[str, Any]) -> Summary:
    metadata = row["metadata"]
    return Summary(
        id=int(row["id"]),
        workspace_id=row["workspace_id"],
        scope=SummaryScope(row["scope"]),
        scope_id=row["scope_id"],
        kind=SummaryKind(row["kind"]),
        version=int(row["version"]),
        content=row["content"],
        source_message_count=int(row["source_message_count"]),
        source_latest_message_at=None
        if row["source_latest_message_at"] is None
        else ensure_utc(row["source_latest_message_at"]),
        metadata=json.loads(metadata) if isinstance(metadata, str) else metadata,
        created_at=ensure_utc(row["created_at"]),
    )


async def latest_summary(
    conn: asyncpg.Connection, workspace_id: str, scope: str, scope_id: str, kind: str
) -> Summary | None:
    row = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM summaries WHERE workspace_id = $1 AND scope = $2 AND scope_id = $3 AND kind = $4 "
        "ORDER BY version DESC LIMIT 1",
        workspace_id,
        scope,
        scope_id,
        kind,
    )
    return None if row is None else summary_from_row(row)


async def summary_history(
    conn: asyncpg.Connection, workspace_id: str, scope: str, scope_id: str, kind: str, limit: int
) -> list[Summary]:
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM summaries WHERE workspace_id = $1 AND scope = $2 AND scope_id = $3 AND kind = $4 "
        "ORDER BY version DESC LIMIT $5",
        workspace_id,
        scope,
        scope_id,
        kind,
        limit,
    )
    return [summary_from_row(r) for r in rows]


async def latest_summaries(
    conn: asyncpg.Connection, workspace_id: str, scope: str, kind: str, after: str | None, limit: int | None
) -> list[Summary]:
    rows = await conn.fetch(
        f"SELECT DISTINCT ON (scope_id) {COLUMNS} FROM summaries WHERE workspace_id = $1 AND scope = $2 AND kind = $3 "
        "AND ($4::text IS NULL OR scope_id > $4::text) ORDER BY scope_id, version DESC LIMIT $5",
        workspace_id,
        scope,
        kind,
        after,
        limit,
    )
    return [summary_from_row(r) for r in rows]


async def save_summary(conn: asyncpg.Connection, draft: SummaryDraft, new_version: bool) -> Summary:
    """Next version (a concurrent writer that took the number first makes this retry) or overwrite."""
    key = (draft.workspace_id, draft.scope.value, draft.scope_id, draft.kind.value)
    metadata = to_json(dict(draft.metadata), what="metadata")
    for attempt in range(SAVE_ATTEMPTS):
        try:
            async with conn.transaction():
                await check_erasure_generation(conn, draft.workspace_id, draft.erasure_generation)
                # Serialise writers of one (workspace, scope, id, kind): FOR UPDATE alone lets a waiter
                # re-read the old latest row and collide; the unique constraint + retry stays as backstop.
                await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "\x1f".join(key))
                latest = await conn.fetchrow(
                    "SELECT id, version FROM summaries WHERE workspace_id = $1 AND scope = $2 AND scope_id = $3 "
                    "AND kind = $4 ORDER BY version DESC LIMIT 1 FOR UPDATE",
                    *key,
                )
                check_expected_version(draft, None if latest is None else int(latest["version"]))
                if latest is not None and not new_version:
                    row = await conn.fetchrow(
                        "UPDATE summaries SET content = $2, source_message_count = $3, source_latest_message_at = $4, "
                        f"metadata = $5::jsonb, created_at = now() WHERE id = $1 RETURNING {COLUMNS}",
                        latest["id"],
                        draft.content,
                        draft.source_message_count,
                        draft.source_latest_message_at,
                        metadata,
                    )
                else:
                    row = await conn.fetchrow(
                        "INSERT INTO summaries (workspace_id, scope, scope_id, kind, version, content, "
                        "source_message_count, source_latest_message_at, metadata) "
                        f"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb) RETURNING {COLUMNS}",
                        *key,
                        1 if latest is None else int(latest["version"]) + 1,
                        draft.content,
                        draft.source_message_count,
                        draft.source_latest_message_at,
                        metadata,
                    )
            return summary_from_row(row)
        except asyncpg.UniqueViolationError:
            if attempt == SAVE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


_SCOPE_FILTER = {
    # channel and thread summaries (and the workspace summary merged from them) read public
    # conversations only: a DM or private channel must not surface in what everyone sees
    SummaryScope.CHANNEL: "m.session_id IN (SELECT id FROM sessions WHERE workspace_id = $1 AND channel_id = $2 AND NOT private)",
    SummaryScope.THREAD: "m.session_id IN (SELECT id FROM sessions WHERE workspace_id = $1 AND thread_id = $2 AND NOT private)",
    SummaryScope.USER: "m.workspace_id = $1 AND m.author_id = $2",
}


async def scope_messages(
    conn: asyncpg.Connection, workspace_id: str, scope: SummaryScope, scope_id: str, since: datetime, limit: int
) -> list[Message]:
    columns = ", ".join(f"m.{c.strip()}" for c in MESSAGE_COLUMNS.split(","))
    rows = await conn.fetch(
        f"SELECT {columns} FROM session_messages m WHERE {_SCOPE_FILTER[scope]} AND m.created_at >= $3 "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT $4",
        workspace_id,
        scope_id,
        since,
        limit,
    )
    return [row_to_message(r) for r in reversed(rows)]


async def active_scopes(conn: asyncpg.Connection, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
    if scope is SummaryScope.USER:
        sql = (
            "SELECT DISTINCT workspace_id, author_id AS id FROM session_messages WHERE created_at >= $1 "
            "AND author_id IS NOT NULL AND NOT is_bot ORDER BY 1, 2"
        )
    else:
        column = "channel_id" if scope is SummaryScope.CHANNEL else "thread_id"
        sql = (
            f"SELECT DISTINCT workspace_id, {column} AS id FROM sessions WHERE last_active_at >= $1 "
            f"AND {column} IS NOT NULL AND NOT private ORDER BY 1, 2"
        )
    return [(r["workspace_id"], r["id"]) for r in await conn.fetch(sql, since)]


__all__ = [
    "active_scopes",
    "latest_summaries",
    "latest_summary",
    "save_summary",
    "scope_messages",
    "summary_history",
]
