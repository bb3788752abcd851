"""The embedding queue on PostgreSQL: claiming sources, handing them back, finishing them.

Claims lock candidate rows with ``FOR UPDATE SKIP LOCKED``, so two workers never claim one
source and neither waits for the other. Citus refuses row locks in a statement that spans
shards: there the workspaces with work are read first (a plain read) and each is claimed by a
statement routed to its one shard (:data:`CLAIM_IN_WORKSPACE_SQL`).
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from omoide.stores._knowledge_common import source_not_found
from omoide.stores.knowledge import SourceId, SourceStatus

CLAIM_SQL = """
UPDATE knowledge_sources
SET status = 'processing', claimed_at = now(), attempts = attempts + 1, updated_at = now()
WHERE id IN (
    SELECT id FROM knowledge_sources
    WHERE status IN ('pending', 'processing')
      AND (status = 'pending' OR claimed_at < now() - make_interval(secs => $2))
    ORDER BY id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING id, workspace_id
"""
CLAIM_IN_WORKSPACE_SQL = """
UPDATE knowledge_sources
SET status = 'processing', claimed_at = now(), attempts = attempts + 1, updated_at = now()
WHERE workspace_id = $3 AND id = ANY(ARRAY(
    SELECT id FROM knowledge_sources
    WHERE workspace_id = $3 AND status IN ('pending', 'processing')
      AND (status = 'pending' OR claimed_at < now() - make_interval(secs => $2))
    ORDER BY id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
))
RETURNING id, workspace_id
"""
"""Citus: ``FOR UPDATE SKIP LOCKED`` only in a statement routed to one shard, so one claim per workspace.
The pick is an ``ARRAY(…)`` (an InitPlan, run once): on the worker, ``id IN (…)`` was planned as a
nested-loop semi join that re-ran the locking subquery per row and claimed past the ``LIMIT``."""
CLAIMABLE_WORKSPACES_SQL = """
SELECT workspace_id FROM knowledge_sources
WHERE status IN ('pending', 'processing')
  AND (status = 'pending' OR claimed_at < now() - make_interval(secs => $2))
GROUP BY workspace_id ORDER BY min(id) LIMIT $1
"""
"""Citus: the workspaces with claimable sources, the one waiting longest first (a plain read)."""
_FINISH_SOURCE = """
UPDATE knowledge_sources SET status = $2, error = $3, claimed_at = NULL, updated_at = now()
WHERE id = $1 AND workspace_id = $4
RETURNING id
"""


async def claim_sources(
    conn: asyncpg.Connection, limit: int, lease_seconds: float, *, citus: bool = False
) -> list[tuple[SourceId, str]]:
    """Claimed source ids (ascending) with their workspaces; on Citus one routed claim per workspace."""
    if not citus:
        rows = list(await conn.fetch(CLAIM_SQL, limit, lease_seconds))
    else:
        rows = []
        for r in await conn.fetch(CLAIMABLE_WORKSPACES_SQL, limit, lease_seconds):
            if len(rows) >= limit:
                break
            rows += await conn.fetch(CLAIM_IN_WORKSPACE_SQL, limit - len(rows), lease_seconds, r["workspace_id"])
    return sorted((SourceId(int(r["id"])), str(r["workspace_id"])) for r in rows)


async def release_sources(conn: asyncpg.Connection, source_ids: Sequence[int]) -> int:
    """Claimed sources back to ``pending`` without counting the claim as an attempt; returns how many."""
    released = await conn.fetch(
        "UPDATE knowledge_sources SET status = 'pending', claimed_at = NULL, attempts = greatest(attempts - 1, 0), "
        "updated_at = now() WHERE status = 'processing' AND id = ANY($1::bigint[]) RETURNING id",
        list(source_ids),
    )
    return len(released)


async def renew_claims(conn: asyncpg.Connection, source_ids: Sequence[int]) -> int:
    """Claimed sources still ``processing``: their lease starts again now; returns how many."""
    renewed = await conn.fetch(
        "UPDATE knowledge_sources SET claimed_at = now(), updated_at = now() "
        "WHERE status = 'processing' AND id = ANY($1::bigint[]) RETURNING id",
        list(source_ids),
    )
    return len(renewed)


async def finish_source(
    conn: asyncpg.Connection, source_id: int, ws: str, status: SourceStatus, error: str | None
) -> None:
    if await conn.fetchval(_FINISH_SOURCE, source_id, status.value, error, ws) is None:
        raise source_not_found(source_id)


__all__ = [
    "CLAIMABLE_WORKSPACES_SQL",
    "CLAIM_IN_WORKSPACE_SQL",
    "CLAIM_SQL",
    "claim_sources",
    "finish_source",
    "release_sources",
    "renew_claims",
]
