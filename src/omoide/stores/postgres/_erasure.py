"""Erasing a user on PostgreSQL: one READ COMMITTED transaction (see ``docs/privacy.md``).

Its order is what makes it safe against the jobs running beside it:

1. ``erasure_state`` of the workspace is bumped first. Summary and import writes lock that
   row ``FOR SHARE`` and compare its generation with the one they read before their work
   (:func:`check_erasure_generation`): they wait for this transaction, then see the new
   generation and give up (:class:`~omoide.errors.ErasureConflict`); or they committed
   before, and the statements below (each with a fresh snapshot) scrub what they wrote.
2. Sessions where the user wrote get a new version (an archive planned before conflicts;
   one holding the session's lock commits first, and its chunks are scrubbed below).
3. Chunks are rewritten under their row locks; ``put_embeddings`` reads the chunks it is
   about to embed ``FOR SHARE`` and drops vectors of text they no longer hold.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import asyncpg

from omoide.stores._erasure_common import ErasureState, check_generation, scrub_source, strip_user, user_hash
from omoide.stores.memories import ForgetReport
from omoide.stores.postgres._units import unit_lexical_json

Scope = tuple[str | None, str | None]


async def erasure_generation(conn: asyncpg.Connection, workspace_id: str) -> int:
    value = await conn.fetchval("SELECT generation FROM erasure_state WHERE workspace_id = $1", workspace_id)
    return 0 if value is None else int(value)


async def erased_users(conn: asyncpg.Connection, workspace_id: str) -> dict[str, datetime]:
    rows = await conn.fetch("SELECT user_hash, erased_at FROM erased_users WHERE workspace_id = $1", workspace_id)
    return {r["user_hash"]: r["erased_at"] for r in rows}


async def read_erasure_state(conn: asyncpg.Connection, workspace_id: str) -> ErasureState:
    """The generation and the erased users, read in one transaction (one snapshot)."""
    async with conn.transaction():
        return ErasureState(await erasure_generation(conn, workspace_id), await erased_users(conn, workspace_id))


async def check_erasure_generation(conn: asyncpg.Connection, workspace_id: str, expected: int | None) -> None:
    """Inside a writing transaction: wait for a running erasure, then raise if one happened since ``expected``.

    The row is created if missing, so there is always a row to lock: an erasure inserting it
    at the same moment makes this insert wait for its commit.
    """
    if expected is None:
        return
    await conn.execute(
        "INSERT INTO erasure_state (workspace_id, generation) VALUES ($1, 0) ON CONFLICT (workspace_id) DO NOTHING",
        workspace_id,
    )
    current = int(
        await conn.fetchval("SELECT generation FROM erasure_state WHERE workspace_id = $1 FOR SHARE", workspace_id)
    )
    check_generation(workspace_id, expected, current)


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])


async def erase_user(conn: asyncpg.Connection, workspace_id: str, user_id: str) -> ForgetReport:
    """Everything the erasure rule removes, in one transaction; the receipt."""
    ws, user = workspace_id, user_id
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO erasure_state (workspace_id, generation) VALUES ($1, 1) "
            "ON CONFLICT (workspace_id) DO UPDATE SET generation = erasure_state.generation + 1",
            ws,
        )
        await conn.execute(
            "INSERT INTO erased_users (workspace_id, user_hash, erased_at) VALUES ($1, $2, now()) "
            "ON CONFLICT (workspace_id, user_hash) DO UPDATE SET erased_at = EXCLUDED.erased_at",
            ws,
            user_hash(ws, user),
        )
        # sessions of others where they wrote: new version (locks them; an archive holding one commits first)
        bumped = await conn.fetch(
            "UPDATE sessions SET version = version + 1, context_summary = NULL, context_summary_seq = 0 "
            "WHERE workspace_id = $1 AND user_id IS DISTINCT FROM $2 "
            "AND id IN (SELECT session_id FROM session_messages WHERE workspace_id = $1 AND author_id = $2) "
            "RETURNING channel_id, thread_id",
            ws,
            user,
        )
        scopes: set[Scope] = {(r["channel_id"], r["thread_id"]) for r in bumped}
        own = await conn.fetch(
            "DELETE FROM sessions WHERE workspace_id = $1 AND user_id = $2 "
            "RETURNING channel_id, thread_id, (SELECT count(*) FROM session_messages m "
            "WHERE m.session_id = sessions.id AND m.workspace_id = sessions.workspace_id) AS n",
            ws,
            user,
        )
        scopes |= {(r["channel_id"], r["thread_id"]) for r in own}
        memories = _count(await conn.execute("DELETE FROM memories WHERE workspace_id = $1 AND user_id = $2", ws, user))
        await conn.execute("DELETE FROM memory_events WHERE workspace_id = $1 AND user_id = $2", ws, user)  # history
        written = _count(
            await conn.execute("DELETE FROM session_messages WHERE workspace_id = $1 AND author_id = $2", ws, user)
        )

        # their own archived conversations go whole
        gone = await conn.fetch(
            "DELETE FROM knowledge_sources s WHERE workspace_id = $1 AND metadata->>'user_id' = $2 RETURNING "
            "(SELECT count(*) FROM knowledge_chunks c WHERE c.source_id = s.id AND c.workspace_id = s.workspace_id) AS n, "
            "(SELECT array_agg(DISTINCT coalesce(c.channel_id, '') || chr(31) || coalesce(c.thread_id, '')) "
            " FROM knowledge_chunks c WHERE c.source_id = s.id AND c.workspace_id = s.workspace_id) AS scopes",
            ws,
            user,
        )
        sources_deleted = len(gone)
        chunks_deleted = sum(int(r["n"]) for r in gone)
        for r in gone:
            for item in r["scopes"] or ():
                channel, _, thread = item.partition("\x1f")
                scopes.add((channel or None, thread or None))

        # every other chunk with a line of theirs: rewritten without it, or dropped
        rows = await conn.fetch(
            "SELECT id, source_id, content, location, author_ids, channel_id, thread_id FROM knowledge_chunks "
            "WHERE workspace_id = $1 AND author_ids ? $2 ORDER BY id FOR UPDATE",
            ws,
            user,
        )
        touched: set[int] = set()
        dropped: list[int] = []
        updates: list[tuple[Any, ...]] = []
        for r in rows:
            scopes.add((r["channel_id"], r["thread_id"]))
            touched.add(int(r["source_id"]))
            change = strip_user(r["content"], json.loads(r["location"]), json.loads(r["author_ids"]), user)
            if change is None:
                dropped.append(int(r["id"]))
            else:
                updates.append(
                    (
                        int(r["id"]),
                        change.content,
                        change.lexical,
                        change.token_count,
                        json.dumps(change.location, ensure_ascii=False),
                        json.dumps(change.author_ids, ensure_ascii=False),
                        unit_lexical_json(change.unit_lexical),
                    )
                )
        if dropped:
            await conn.execute(
                "DELETE FROM knowledge_chunks WHERE workspace_id = $2 AND id = ANY($1::bigint[])", dropped, ws
            )
            chunks_deleted += len(dropped)
        if updates:
            await conn.executemany(
                "UPDATE knowledge_chunks SET content = $2, lexical = $3, token_count = $4, location = $5::jsonb, "
                "author_ids = $6::jsonb, unit_lexical = $7::jsonb WHERE id = $1 AND workspace_id = $8",
                [(*u, ws) for u in updates],
            )
            # their vectors embed erased text
            await conn.execute(
                "DELETE FROM chunk_embeddings WHERE workspace_id = $2 AND chunk_id = ANY($1::bigint[])",
                [u[0] for u in updates],
                ws,
            )

        # who may see, and who took part: no longer them
        await conn.execute(
            "UPDATE knowledge_chunks SET members = members - $2 WHERE workspace_id = $1 AND members ? $2", ws, user
        )
        for r in await conn.fetch(
            "UPDATE knowledge_sources SET members = members - $2 WHERE workspace_id = $1 AND members ? $2 RETURNING id",
            ws,
            user,
        ):
            touched.add(int(r["id"]))
        for r in await conn.fetch(
            "SELECT id, title, metadata FROM knowledge_sources WHERE workspace_id = $1 AND metadata::text LIKE $2 "
            "FOR UPDATE",
            ws,
            f"%{user}%",
        ):
            scrubbed = scrub_source(r["title"], json.loads(r["metadata"]), user)
            if scrubbed is not None:
                await conn.execute(
                    "UPDATE knowledge_sources SET title = $2, metadata = $3::jsonb WHERE id = $1 AND workspace_id = $4",
                    r["id"],
                    scrubbed[0],
                    json.dumps(scrubbed[1], ensure_ascii=False),
                    ws,
                )
                touched.add(int(r["id"]))
        await conn.execute(
            "UPDATE sessions SET members = members - $2 WHERE workspace_id = $1 AND members ? $2", ws, user
        )
        if touched:
            doomed = await conn.fetch(
                "DELETE FROM knowledge_sources s WHERE s.workspace_id = $2 AND s.id = ANY($1::bigint[]) "
                "AND ((s.private AND s.members = '[]'::jsonb) OR NOT EXISTS "
                "(SELECT 1 FROM knowledge_chunks c WHERE c.source_id = s.id AND c.workspace_id = s.workspace_id)) "
                "RETURNING (SELECT count(*) FROM knowledge_chunks c "
                "WHERE c.source_id = s.id AND c.workspace_id = s.workspace_id) AS n",
                sorted(touched),
                ws,
            )
            sources_deleted += len(doomed)
            chunks_deleted += sum(int(r["n"]) for r in doomed)
            # the rest is embedded again (its rewritten chunks lost their vectors)
            await conn.execute(
                "UPDATE knowledge_sources SET status = 'pending', claimed_at = NULL, error = NULL, updated_at = now() "
                "WHERE workspace_id = $2 AND id = ANY($1::bigint[]) AND status <> 'pending'",
                sorted(touched),
                ws,
            )

        summaries = _count(
            await conn.execute(
                "DELETE FROM summaries WHERE workspace_id = $1 AND scope = 'user' AND scope_id = $2", ws, user
            )
        )
        channels = sorted({c for c, _ in scopes if c is not None})
        threads = sorted({t for _, t in scopes if t is not None})
        if channels or threads:
            summaries += _count(
                await conn.execute(
                    "DELETE FROM summaries WHERE workspace_id = $1 AND ((scope = 'channel' AND scope_id = ANY($2::text[])) "
                    "OR (scope = 'thread' AND scope_id = ANY($3::text[])) OR scope = 'workspace')",
                    ws,
                    channels,
                    threads,
                )
            )
    return ForgetReport(
        memories=memories,
        sessions=len(own),
        messages=sum(int(r["n"]) for r in own) + written,
        summaries=summaries,
        chunks_rewritten=len(updates),
        chunks_deleted=chunks_deleted,
        sources_deleted=sources_deleted,
    )


__all__ = ["check_erasure_generation", "erase_user", "erased_users", "erasure_generation", "read_erasure_state"]
