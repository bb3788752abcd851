"""The SQLite lexical index role (the SQL in :mod:`._search`; the FTS5 triggers re-index rewritten rows).

Rewriting the chunks' tokens also rewrites their unit tokens (``unit_lexical``, one per line
record, :func:`omoide.stores.units.unit_lexical_of`) with the current tokenizer: computed on a
reader from each chunk's content and line records, written with the new ``lexical`` where the
chunk still holds that content.
"""

from __future__ import annotations

import sqlite3

from omoide.models import utcnow
from omoide.stores.lexical_index import LexicalIndexStore, LexicalTable
from omoide.stores.sqlite import _search as sops
from omoide.stores.sqlite import _units as uops
from omoide.stores.sqlite._db import SqliteDb


class SqliteLexicalIndex(LexicalIndexStore):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _lexical_batch(self, table: LexicalTable, after_id: int, limit: int) -> list[tuple[int, str]]:
        return await self._db.read("lexical_batch", sops.lexical_batch, table.value, after_id, limit)

    async def _rewrite_lexical(self, table: LexicalTable, rows: list[tuple[int, str]]) -> None:
        units: list[tuple[int, str, str]] = []
        if table is LexicalTable.CHUNKS:
            units = await self._db.read("unit_lexical_rewrites", uops.unit_lexical_rewrites, [r[0] for r in rows])
        await self._db.write("rewrite_lexical", _rewrite, table.value, rows, units)

    async def _set_lexical_tokenizer(self, name: str) -> None:
        await self._db.write("set_lexical_tokenizer", sops.set_lexical_tokenizer, name, utcnow())

    async def _lexical_row_count(self, table: LexicalTable) -> int:
        return await self._db.read("lexical_row_count", sops.lexical_row_count, table.value)


def _rewrite(
    conn: sqlite3.Connection, table: str, rows: list[tuple[int, str]], units: list[tuple[int, str, str]]
) -> None:
    sops.rewrite_lexical(conn, table, rows)
    if units:
        uops.write_unit_lexical_rewrites(conn, units)


__all__ = ["SqliteLexicalIndex"]
