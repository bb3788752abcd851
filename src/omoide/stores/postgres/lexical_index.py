"""The PostgreSQL lexical index role: reading and rewriting the rows' ``lexical`` tokens (the
generated ``tsvector`` columns follow rewritten rows) and recording the tokenizer that wrote them."""

from __future__ import annotations

import json
from collections.abc import Sequence

import asyncpg

from omoide.stores.lexical_index import LexicalIndexStore, LexicalTable
from omoide.stores.postgres._db import PostgresDb
from omoide.stores.postgres._search import TOKENIZER_KEY
from omoide.stores.postgres._units import chunk_unit_lexical


class PostgresLexicalIndex(LexicalIndexStore):
    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _lexical_batch(self, table: LexicalTable, after_id: int, limit: int) -> list[tuple[int, str]]:
        async with self._db.acquire() as conn:
            return await lexical_batch(conn, table.value, after_id, limit)

    async def _rewrite_lexical(self, table: LexicalTable, rows: list[tuple[int, str]]) -> None:
        async with self._db.acquire() as conn:
            await rewrite_lexical(conn, table.value, rows)

    async def _set_lexical_tokenizer(self, name: str) -> None:
        """Also forgets the tokenizer name the search role reuses (``db.tokenizer``), even on failure."""
        try:
            async with self._db.acquire() as conn:
                await set_lexical_tokenizer(conn, name)
        finally:
            self._db.tokenizer.forget()

    async def _lexical_row_count(self, table: LexicalTable) -> int:
        async with self._db.acquire() as conn:
            return await lexical_row_count(conn, table.value)


async def set_lexical_tokenizer(conn: asyncpg.Connection, name: str) -> None:
    await conn.execute(
        "INSERT INTO store_meta (key, value) VALUES ($1, $2) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at",
        TOKENIZER_KEY,
        name,
    )


async def lexical_batch(conn: asyncpg.Connection, table: str, after_id: int, limit: int) -> list[tuple[int, str]]:
    rows = await conn.fetch(
        f"SELECT id, content FROM {table} WHERE id > $1 ORDER BY id LIMIT $2",  # table: a LexicalTable value
        after_id,
        limit,
    )
    return [(int(r["id"]), str(r["content"])) for r in rows]


_LOCK_CHUNKS_FOR_LEXICAL = (
    "SELECT id, content, location FROM knowledge_chunks WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE"
)
_REWRITE_CHUNK_LEXICAL = """
UPDATE knowledge_chunks t SET lexical = r.lexical, unit_lexical = coalesce(r.unit_lexical::jsonb, t.unit_lexical)
FROM unnest($1::bigint[], $2::text[], $3::text[]) AS r(id, lexical, unit_lexical)
WHERE t.id = r.id
  AND (t.lexical <> r.lexical OR t.unit_lexical IS DISTINCT FROM coalesce(r.unit_lexical::jsonb, t.unit_lexical))
"""


async def rewrite_chunk_lexical(conn: asyncpg.Connection, rows: Sequence[tuple[int, str]]) -> None:
    """Chunks' ``lexical`` and, recomputed from the content and line records they hold under
    the row lock, their units' tokens (``unit_lexical``, :func:`~omoide.stores.units.unit_lexical_of`;
    a chunk without line records keeps its ``unit_lexical``)."""
    lexical = dict(rows)
    async with conn.transaction():
        found = await conn.fetch(_LOCK_CHUNKS_FOR_LEXICAL, list(lexical))
        if not found:
            return
        await conn.execute(
            _REWRITE_CHUNK_LEXICAL,
            [r["id"] for r in found],
            [lexical[r["id"]] for r in found],
            [chunk_unit_lexical(r["content"], json.loads(r["location"])) for r in found],
        )


async def rewrite_lexical(conn: asyncpg.Connection, table: str, rows: Sequence[tuple[int, str]]) -> None:
    if table == "knowledge_chunks":
        await rewrite_chunk_lexical(conn, rows)
        return
    await conn.execute(
        f"UPDATE {table} t SET lexical = r.lexical "
        "FROM unnest($1::bigint[], $2::text[]) AS r(id, lexical) WHERE t.id = r.id AND t.lexical <> r.lexical",
        [i for i, _ in rows],
        [t for _, t in rows],
    )


async def lexical_row_count(conn: asyncpg.Connection, table: str) -> int:
    return int(await conn.fetchval(f"SELECT count(*) FROM {table}"))  # table: a LexicalTable value


__all__ = [
    "PostgresLexicalIndex",
    "lexical_batch",
    "lexical_row_count",
    "rewrite_chunk_lexical",
    "rewrite_lexical",
    "set_lexical_tokenizer",
]
