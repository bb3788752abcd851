"""PostgreSQL ends of a backup: a snapshot reader and a restoring writer.

The reader runs in one ``REPEATABLE READ READ ONLY`` transaction: every table is read from
the same snapshot while the bot keeps writing. The writer restores in one transaction with
binary ``COPY`` (which writes the given ids into ``GENERATED ALWAYS`` identity columns, as
``OVERRIDING SYSTEM VALUE`` would), then moves each identity sequence past the highest id
restored and past the source's own counter (``setval``), so new rows never collide with
restored ones. The restored tables are analysed at the end, so the planner knows their sizes
before autovacuum's next visit.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import asyncpg

from omoide.ops._codec import Row, decoder, encoder
from omoide.ops._pipeline import BATCH_ROWS, SourceInfo
from omoide.ops._sqlite import not_empty
from omoide.ops.tables import TABLES, Table, check_columns
from omoide.stores.postgres._errors import redact_url, translate_errors
from omoide.stores.postgres.migrations import check_not_newer, current_version
from omoide.stores.postgres.vector import register_vector_types, vector_extension

_LIVE_COLUMNS = """
SELECT c.table_name, c.column_name FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'  -- not views (Citus adds citus_tables, …)
  AND c.is_generated = 'NEVER'  -- generated columns are derived: rebuilt
ORDER BY c.table_name, c.ordinal_position
"""
_PARAM = re.compile(r"(?<!:):([a-z_]+)\b")


def _known(live: Mapping[str, list[str]]) -> dict[str, tuple[str, ...]]:
    return {t.name: tuple(c for c in t.columns if c in live[t.name]) for t in TABLES if t.name in live}


async def _connect(url: str) -> asyncpg.Connection:
    conn: asyncpg.Connection = await asyncpg.connect(url)
    found = await vector_extension(conn)
    if found is not None:
        await register_vector_types(conn, found[0])
    return conn


async def _live_columns(conn: asyncpg.Connection) -> dict[str, list[str]]:
    live: dict[str, list[str]] = {}
    for row in await conn.fetch(_LIVE_COLUMNS):
        live.setdefault(str(row[0]), []).append(str(row[1]))
    return live


def _numbered(where: str | None, params: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``:name`` parameters (the SQLite spelling export filters use) as asyncpg's ``$n``."""
    if not where:
        return "", []
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    sql = _PARAM.sub(number, where)
    values = dict(params or {})
    return f" WHERE {sql}", [values[n] for n in names]


async def _sequence(conn: asyncpg.Connection, table: Table) -> str | None:
    name = await conn.fetchval("SELECT pg_get_serial_sequence($1, $2)", table.name, table.identity)
    return None if name is None else str(name)


class PostgresReader:
    """Rows of a PostgreSQL database from one snapshot (an async context manager).

    Args:
        url: the database URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = redact_url(url)
        self.info = SourceInfo(backend="postgresql", schema_version=0)
        self._conn: asyncpg.Connection | None = None
        self._tx: Any = None
        self._columns: dict[str, tuple[str, ...]] = {}

    async def __aenter__(self) -> PostgresReader:
        with translate_errors(self.url):
            conn = await _connect(self.url)
            try:
                self._tx = conn.transaction(isolation="repeatable_read", readonly=True)
                await self._tx.start()
                version = await current_version(conn)
                check_not_newer(version, where=self.where)
                live = await _live_columns(conn)
                check_columns(live, where=self.where)
                self._columns = _known(live)
                sequences: dict[str, int] = {}
                for table in TABLES:
                    if table.identity is None or table.name not in self._columns:
                        continue
                    seq = await _sequence(conn, table)
                    if seq is not None:
                        row = await conn.fetchrow(f"SELECT last_value, is_called FROM {seq}")
                        assert row is not None
                        sequences[table.name] = int(row[0]) if row[1] else int(row[0]) - 1
            except BaseException:
                await conn.close()
                raise
        self._conn = conn
        self.info = SourceInfo(backend="postgresql", schema_version=version, sequences=sequences)
        return self

    async def __aexit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await self._tx.rollback()
            finally:
                await conn.close()

    def _require(self) -> asyncpg.Connection:
        assert self._conn is not None, "use `async with PostgresReader(...)`"
        return self._conn

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return self._columns

    async def count(self, table: Table, *, where: str | None = None, params: Mapping[str, Any] | None = None) -> int:
        clause, args = _numbered(where, params)
        with translate_errors(self.url):
            return int(await self._require().fetchval(f'SELECT count(*) FROM "{table.name}"{clause}', *args))

    async def batches(
        self,
        table: Table,
        columns: tuple[str, ...],
        *,
        where: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[list[Row]]:
        conn = self._require()
        decode = decoder("postgresql", [table.columns[c] for c in columns], columns)
        clause, args = _numbered(where, params)
        cols = ", ".join(f'"{c}"' for c in columns)
        order = ", ".join(f'"{c}"' for c in table.key)
        sql = f'SELECT {cols} FROM "{table.name}"{clause} ORDER BY {order}'
        batch: list[Row] = []
        with translate_errors(self.url):
            async for record in conn.cursor(sql, *args, prefetch=BATCH_ROWS):
                batch.append(decode(record))
                if len(batch) >= BATCH_ROWS:
                    yield batch
                    batch = []
        if batch:
            yield batch


class PostgresWriter:
    """Restores rows into an empty, migrated PostgreSQL database in one transaction.

    Args:
        url: the database URL (already migrated by the caller).
        require_empty: refuse a database that has any row.

    Raises:
        ConflictError: (on enter) the database is not empty.
    """

    def __init__(self, url: str, *, require_empty: bool = True) -> None:
        self.url = url
        self.where = redact_url(url)
        self.require_empty = require_empty
        self._conn: asyncpg.Connection | None = None
        self._tx: Any = None
        self._columns: dict[str, tuple[str, ...]] = {}

    async def __aenter__(self) -> PostgresWriter:
        with translate_errors(self.url):
            conn = await _connect(self.url)
            try:
                self._tx = conn.transaction()
                await self._tx.start()
                self._columns = _known(await _live_columns(conn))
                if self.require_empty:
                    filled = [t for t in self._columns if await conn.fetchval(f'SELECT EXISTS (SELECT 1 FROM "{t}")')]
                    if filled:
                        raise not_empty(self.where, filled)
            except BaseException:
                await conn.close()
                raise
        self._conn = conn
        return self

    async def __aexit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                if not conn.is_closed() and conn.is_in_transaction():
                    await self._tx.rollback()
            finally:
                await conn.close()

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return self._columns

    async def write(self, table: Table, columns: tuple[str, ...], rows: list[Row]) -> None:
        conn = self._conn
        assert conn is not None, "use `async with PostgresWriter(...)`"
        if not rows:
            return
        encode = encoder("postgresql", [table.columns[c] for c in columns], columns, table=table.name, key=table.key)
        with translate_errors(self.url):
            await conn.copy_records_to_table(table.name, records=[encode(r) for r in rows], columns=list(columns))

    async def finish(self, info: SourceInfo, counts: Mapping[str, int]) -> None:
        conn = self._conn
        assert conn is not None, "use `async with PostgresWriter(...)`"
        with translate_errors(self.url):
            for table in TABLES:
                if table.identity is None or table.name not in self._columns:
                    continue
                seq = await _sequence(conn, table)
                if seq is None:
                    continue
                highest = await conn.fetchval(f'SELECT coalesce(max("{table.identity}"), 0) FROM "{table.name}"')
                last = max(int(highest), info.sequences.get(table.name, 0))
                if last > 0:
                    await conn.execute("SELECT setval($1::regclass, $2, true)", seq, last)
            await self._tx.commit()
            for name, rows in counts.items():  # planner statistics now, not at autovacuum's next visit
                if rows:
                    await conn.execute(f'ANALYZE "{name}"')


__all__ = ["PostgresReader", "PostgresWriter"]
