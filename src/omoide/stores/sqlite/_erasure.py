"""Erasing a user on SQLite: one ``BEGIN IMMEDIATE`` transaction (see ``docs/privacy.md``).

SQLite has one writer at a time, so an archive, embedding, summary or import transaction
either committed before the erasure (whose statements then see and scrub what it wrote) or
starts after it (and sees the erasure: the bumped session versions, the rewritten chunks, the
new ``erasure_state.generation``). The jobs that read outside their writing transaction
re-check in it (see :func:`check_erasure_generation`, ``put_embeddings``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import datetime

from omoide.stores._erasure_common import (
    ChunkRewrite,
    ErasureState,
    check_generation,
    scrub_source,
    strip_user,
    user_hash,
)
from omoide.stores.memories import ForgetReport
from omoide.stores.sqlite._conn import format_ts, parse_ts
from omoide.stores.sqlite._units import unit_lexical_json

Scope = tuple[str | None, str | None]


def erasure_generation(conn: sqlite3.Connection, workspace_id: str) -> int:
    row = conn.execute("SELECT generation FROM erasure_state WHERE workspace_id = ?", (workspace_id,)).fetchone()
    return 0 if row is None else int(row[0])


def erased_users(conn: sqlite3.Connection, workspace_id: str) -> dict[str, datetime]:
    rows = conn.execute("SELECT user_hash, erased_at FROM erased_users WHERE workspace_id = ?", (workspace_id,))
    return {r[0]: parse_ts(r[1]) for r in rows}


def read_erasure_state(conn: sqlite3.Connection, workspace_id: str) -> ErasureState:
    return ErasureState(erasure_generation(conn, workspace_id), erased_users(conn, workspace_id))


def check_erasure_generation(conn: sqlite3.Connection, workspace_id: str, expected: int | None) -> None:
    """Inside a writing transaction: raise :class:`ErasureConflict` if the workspace erased a user since ``expected``."""
    if expected is None:
        return
    current = erasure_generation(conn, workspace_id)
    check_generation(workspace_id, expected, current)


Prepared = Mapping[int, tuple[str, ChunkRewrite | None]]
"""Chunk id → (the text it was read with, its rewrite or ``None`` to drop it), made before the write lock."""

_AUTHORED = (
    "SELECT id, source_id, content, location, author_ids, channel_id, thread_id FROM knowledge_chunks "
    "WHERE workspace_id = ? AND EXISTS (SELECT 1 FROM json_each(knowledge_chunks.author_ids) WHERE value = ?)"
)


def prepare_rewrites(
    conn: sqlite3.Connection, workspace_id: str, user_id: str
) -> dict[int, tuple[str, ChunkRewrite | None]]:
    """The rewrites of the user's chunks, computed on a reader connection so the writer holds its lock briefly.

    :func:`erase_user` uses one only if the chunk still holds the text it was made from.
    """
    return {
        int(chunk_id): (content, strip_user(content, json.loads(location), json.loads(authors), user_id))
        for chunk_id, _, content, location, authors, _, _ in conn.execute(_AUTHORED, (workspace_id, user_id))
    }


def _in(values: set[int] | list[int]) -> str:
    return json.dumps(sorted(values))


def erase_user(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, now: datetime, prepared: Prepared | None = None
) -> ForgetReport:
    """Everything the erasure rule removes, in the caller's transaction; the receipt.

    ``prepared``: rewrites from :func:`prepare_rewrites`; a chunk whose text changed since is rewritten here.
    """
    # freed pages are zeroed, not left holding their words; only for this erasure, not every later delete
    (secure,) = conn.execute("PRAGMA secure_delete").fetchone()
    conn.execute("PRAGMA secure_delete = ON")
    try:
        return _erase(conn, workspace_id, user_id, now, prepared)
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(secure)}")


def _erase(
    conn: sqlite3.Connection, workspace_id: str, user_id: str, now: datetime, prepared: Prepared | None
) -> ForgetReport:
    ws, user = workspace_id, user_id
    conn.execute(
        "INSERT INTO erasure_state (workspace_id, generation) VALUES (?, 1) "
        "ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1",
        (ws,),
    )
    conn.execute(
        "INSERT INTO erased_users (workspace_id, user_hash, erased_at) VALUES (?, ?, ?) "
        "ON CONFLICT (workspace_id, user_hash) DO UPDATE SET erased_at = excluded.erased_at",
        (ws, user_hash(ws, user), format_ts(now)),
    )
    # where they spoke: the channels and threads whose summaries drew on them
    scopes: set[Scope] = {
        (r[0], r[1])
        for r in conn.execute(
            "SELECT DISTINCT s.channel_id, s.thread_id FROM sessions s WHERE s.workspace_id = ? AND (s.user_id = ? "
            "OR s.id IN (SELECT session_id FROM session_messages WHERE workspace_id = ? AND author_id = ?))",
            (ws, user, ws, user),
        )
    }
    memories = conn.execute("DELETE FROM memories WHERE workspace_id = ? AND user_id = ?", (ws, user)).rowcount
    conn.execute("DELETE FROM memory_events WHERE workspace_id = ? AND user_id = ?", (ws, user))  # their history
    # sessions of others where they wrote: a new version (an archive planned before this conflicts)
    # and no persisted compaction (it may quote them)
    conn.execute(
        "UPDATE sessions SET version = version + 1, context_summary = NULL, context_summary_seq = 0 "
        "WHERE workspace_id = ? AND (user_id IS NULL OR user_id <> ?) "
        "AND id IN (SELECT session_id FROM session_messages WHERE workspace_id = ? AND author_id = ?)",
        (ws, user, ws, user),
    )
    own_messages = conn.execute(
        "SELECT count(*) FROM session_messages WHERE session_id IN "
        "(SELECT id FROM sessions WHERE workspace_id = ? AND user_id = ?)",
        (ws, user),
    ).fetchone()[0]
    sessions = conn.execute("DELETE FROM sessions WHERE workspace_id = ? AND user_id = ?", (ws, user)).rowcount
    written = conn.execute("DELETE FROM session_messages WHERE workspace_id = ? AND author_id = ?", (ws, user)).rowcount

    # long-term knowledge: their own archived conversations go whole
    own_sources = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM knowledge_sources WHERE workspace_id = ? AND json_extract(metadata, '$.user_id') = ?",
            (ws, user),
        )
    ]
    chunks_deleted = 0
    if own_sources:
        for channel, thread in conn.execute(
            "SELECT DISTINCT channel_id, thread_id FROM knowledge_chunks WHERE source_id IN (SELECT value FROM json_each(?))",
            (_in(own_sources),),
        ):
            scopes.add((channel, thread))
        chunks_deleted += conn.execute(
            "SELECT count(*) FROM knowledge_chunks WHERE source_id IN (SELECT value FROM json_each(?))",
            (_in(own_sources),),
        ).fetchone()[0]
        conn.execute("DELETE FROM knowledge_sources WHERE id IN (SELECT value FROM json_each(?))", (_in(own_sources),))
    sources_deleted = len(own_sources)

    # every other chunk with a line of theirs: rewritten without it, or dropped
    touched: set[int] = set()
    rewritten = 0
    ready = prepared or {}
    for chunk_id, source_id, content, location, authors, channel, thread in conn.execute(
        _AUTHORED, (ws, user)
    ).fetchall():
        scopes.add((channel, thread))
        touched.add(int(source_id))
        made = ready.get(int(chunk_id))
        if made is not None and made[0] == content:
            change = made[1]
        else:
            change = strip_user(content, json.loads(location), json.loads(authors), user)
        if change is None:
            conn.execute("DELETE FROM knowledge_chunks WHERE id = ?", (chunk_id,))
            chunks_deleted += 1
            continue
        conn.execute(
            "UPDATE knowledge_chunks SET content = ?, lexical = ?, token_count = ?, location = ?, author_ids = ?, "
            "unit_lexical = ? WHERE id = ?",
            (
                change.content,
                change.lexical,
                change.token_count,
                json.dumps(change.location, ensure_ascii=False),
                json.dumps(change.author_ids, ensure_ascii=False),
                unit_lexical_json(change.unit_lexical),
                chunk_id,
            ),
        )
        conn.execute("DELETE FROM chunk_embeddings WHERE chunk_id = ?", (chunk_id,))  # its vector embeds erased text
        rewritten += 1

    # who may see, and who took part: no longer them
    without_user = "(SELECT json_group_array(value) FROM json_each({col}) WHERE value <> :user)"
    has_user = "EXISTS (SELECT 1 FROM json_each({col}) WHERE value = :user)"
    params = {"ws": ws, "user": user}
    conn.execute(
        f"UPDATE knowledge_chunks SET members = {without_user.format(col='members')} "
        f"WHERE workspace_id = :ws AND {has_user.format(col='members')}",
        params,
    )
    for row in conn.execute(
        f"UPDATE knowledge_sources SET members = {without_user.format(col='members')} "
        f"WHERE workspace_id = :ws AND {has_user.format(col='members')} RETURNING id",
        params,
    ).fetchall():
        touched.add(int(row[0]))
    for source_id, title, metadata in conn.execute(
        "SELECT id, title, metadata FROM knowledge_sources WHERE workspace_id = ? AND metadata LIKE ?",
        (ws, f"%{user}%"),
    ).fetchall():
        scrubbed = scrub_source(title, json.loads(metadata), user)
        if scrubbed is not None:
            conn.execute(
                "UPDATE knowledge_sources SET title = ?, metadata = ? WHERE id = ?",
                (scrubbed[0], json.dumps(scrubbed[1], ensure_ascii=False), source_id),
            )
            touched.add(int(source_id))
    conn.execute(
        f"UPDATE sessions SET members = {without_user.format(col='members')} "
        f"WHERE workspace_id = :ws AND {has_user.format(col='members')}",
        params,
    )
    if touched:
        ids = _in(touched)
        # private to nobody now, or with no chunk left: gone
        doomed = conn.execute(
            "SELECT s.id, (SELECT count(*) FROM knowledge_chunks c WHERE c.source_id = s.id) FROM knowledge_sources s "
            "WHERE s.id IN (SELECT value FROM json_each(?)) AND ((s.private = 1 AND s.members = '[]') "
            "OR NOT EXISTS (SELECT 1 FROM knowledge_chunks c WHERE c.source_id = s.id))",
            (ids,),
        ).fetchall()
        if doomed:
            conn.execute(
                "DELETE FROM knowledge_sources WHERE id IN (SELECT value FROM json_each(?))",
                (_in([int(r[0]) for r in doomed]),),
            )
            sources_deleted += len(doomed)
            chunks_deleted += sum(int(r[1]) for r in doomed)
        # the rest is embedded again (its rewritten chunks lost their vectors)
        conn.execute(
            "UPDATE knowledge_sources SET status = 'pending', claimed_at = NULL, error = NULL, updated_at = ? "
            "WHERE id IN (SELECT value FROM json_each(?)) AND status <> 'pending'",
            (format_ts(now), ids),
        )

    # full-text indexes keep deleted terms in their segments until merged: merge them now
    if rewritten or chunks_deleted:
        conn.execute("INSERT INTO knowledge_chunks_fts (knowledge_chunks_fts) VALUES ('optimize')")
    if memories > 0:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")

    summaries = conn.execute(
        "DELETE FROM summaries WHERE workspace_id = ? AND scope = 'user' AND scope_id = ?", (ws, user)
    ).rowcount
    channels = sorted({c for c, _ in scopes if c is not None})
    threads = sorted({t for _, t in scopes if t is not None})
    if channels or threads:
        summaries += conn.execute(
            "DELETE FROM summaries WHERE workspace_id = ? AND ("
            "(scope = 'channel' AND scope_id IN (SELECT value FROM json_each(?))) "
            "OR (scope = 'thread' AND scope_id IN (SELECT value FROM json_each(?))) OR scope = 'workspace')",
            (ws, json.dumps(channels), json.dumps(threads)),
        ).rowcount
    return ForgetReport(
        memories=max(memories, 0),
        sessions=max(sessions, 0),
        messages=int(own_messages) + max(written, 0),
        summaries=max(summaries, 0),
        chunks_rewritten=rewritten,
        chunks_deleted=chunks_deleted,
        sources_deleted=sources_deleted,
    )


__all__ = [
    "Prepared",
    "check_erasure_generation",
    "erase_user",
    "erased_users",
    "erasure_generation",
    "prepare_rewrites",
    "read_erasure_state",
]
