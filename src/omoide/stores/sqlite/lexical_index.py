"""The SQLite lexical index role (the SQL in :mod:`._search`; the FTS5 triggers re-index rewritten rows)."""

from __future__ import annotations

from omoide.models import utcnow
from omoide.stores.lexical_index import LexicalIndexStore, LexicalTable
from omoide.stores.sqlite import _search as sops
from omoide.stores.sqlite._db import SqliteDb


class SqliteLexicalIndex(LexicalIndexStore):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _lexical_batch(self, table: LexicalTable, after_id: int, limit: int) -> list[tuple[int, str]]:
        return await self._db.read("lexical_batch", sops.lexical_batch, table.value, after_id, limit)

    async def _rewrite_lexical(self, table: LexicalTable, rows: list[tuple[int, str]]) -> None:
        await self._db.write("rewrite_lexical", sops.rewrite_lexical, table.value, rows)

    async def _set_lexical_tokenizer(self, name: str) -> None:
        await self._db.write("set_lexical_tokenizer", sops.set_lexical_tokenizer, name, utcnow())

    async def _lexical_row_count(self, table: LexicalTable) -> int:
        return await self._db.read("lexical_row_count", sops.lexical_row_count, table.value)


__all__ = ["SqliteLexicalIndex"]
