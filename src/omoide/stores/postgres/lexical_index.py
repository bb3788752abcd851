"""The PostgreSQL lexical index role (the SQL in :mod:`._search`; the generated ``tsvector``
columns follow rewritten rows)."""

from __future__ import annotations

from omoide.stores.lexical_index import LexicalIndexStore, LexicalTable
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres._db import PostgresDb


class PostgresLexicalIndex(LexicalIndexStore):
    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _lexical_batch(self, table: LexicalTable, after_id: int, limit: int) -> list[tuple[int, str]]:
        async with self._db.acquire() as conn:
            return await sops.lexical_batch(conn, table.value, after_id, limit)

    async def _rewrite_lexical(self, table: LexicalTable, rows: list[tuple[int, str]]) -> None:
        async with self._db.acquire() as conn:
            await sops.rewrite_lexical(conn, table.value, rows)

    async def _set_lexical_tokenizer(self, name: str) -> None:
        """Also forgets the tokenizer name the search role reuses (``db.tokenizer``), even on failure."""
        try:
            async with self._db.acquire() as conn:
                await sops.set_lexical_tokenizer(conn, name)
        finally:
            self._db.tokenizer.forget()

    async def _lexical_row_count(self, table: LexicalTable) -> int:
        async with self._db.acquire() as conn:
            return await sops.lexical_row_count(conn, table.value)


__all__ = ["PostgresLexicalIndex"]
