"""PostgreSQL reads of knowledge sources for listing (the inspector, ``omoide knowledge sources``):
one source, a page of sources (by workspace, or by the session they were archived from), a
source's chunks."""

from __future__ import annotations

import asyncpg

from omoide.stores.knowledge import KnowledgeChunk, KnowledgeSource
from omoide.stores.postgres._knowledge import CHUNK_COLUMNS, SOURCE_COLUMNS, chunk_from_row, source_from_row


async def get_source(conn: asyncpg.Connection, source_id: int) -> KnowledgeSource | None:
    row = await conn.fetchrow(f"SELECT {SOURCE_COLUMNS} FROM knowledge_sources s WHERE s.id = $1", source_id)
    return None if row is None else source_from_row(row)


def list_sources_query(
    workspace_id: str | None, origin_session_id: int | None, limit: int, offset: int
) -> tuple[str, list[object]]:
    """The SQL and arguments of :func:`list_sources`."""
    where: list[str] = []
    args: list[object] = []
    if workspace_id is not None:
        args.append(workspace_id)
        where.append(f"s.workspace_id = ${len(args)}")
    if origin_session_id is not None:
        # the expression of knowledge_sources_origin_session, so the index serves it
        args.append(str(origin_session_id))
        where.append(f"s.metadata->>'origin_session_id' = ${len(args)}")
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    sql = (
        f"SELECT {SOURCE_COLUMNS} FROM knowledge_sources s {clause}"
        f"ORDER BY s.id DESC LIMIT ${len(args) + 1} OFFSET ${len(args) + 2}"
    )
    return sql, [*args, limit, offset]


async def list_sources(
    conn: asyncpg.Connection, workspace_id: str | None, origin_session_id: int | None, limit: int, offset: int
) -> list[KnowledgeSource]:
    sql, args = list_sources_query(workspace_id, origin_session_id, limit, offset)
    return [source_from_row(r) for r in await conn.fetch(sql, *args)]


async def chunks_of_source(conn: asyncpg.Connection, source_id: int) -> list[KnowledgeChunk]:
    rows = await conn.fetch(
        f"SELECT {CHUNK_COLUMNS} FROM knowledge_chunks WHERE source_id = $1 ORDER BY chunk_index", source_id
    )
    return [chunk_from_row(r) for r in rows]
