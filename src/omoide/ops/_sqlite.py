"""SQLite ends of a backup: a snapshot reader, a restoring writer, and the online file copy.

The reader holds one read transaction for the whole backup: in WAL mode it sees the
database as it was at its first read, while the bot goes on appending (writers do not wait
for it, and it does not see their later commits). The writer restores inside one
``BEGIN IMMEDIATE`` transaction, so a failed restore leaves the target as empty as it was.

:func:`copy_file` is SQLite's online backup API (:meth:`sqlite3.Connection.backup`) in one
step: the copy is the snapshot of one read transaction, page for page (FTS indexes included).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from omoide.errors import ConflictError, InvalidInput, NotFoundError, StoreError
from omoide.ops._codec import Row, decoder, encoder
from omoide.ops._pipeline import BATCH_ROWS, SourceInfo
from omoide.ops.tables import BY_NAME, DERIVED_TABLES, TABLES, Table, check_columns
from omoide.stores.sqlite import migrations
from omoide.stores.sqlite._conn import connect, map_sqlite_errors

_T = TypeVar("_T")

BUSY_TIMEOUT_MS = 30_000
SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` is an SQLite database file (by its 16-byte header)."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except (IsADirectoryError, FileNotFoundError):
        return False


def _live_columns(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {name: tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')) for name in names}


def _foreign(live: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The tables of ``live`` that are not omoide's (another application's database)."""
    return [
        name
        for name in live
        if name not in BY_NAME
        and name not in DERIVED_TABLES
        and not name.startswith(("sqlite_", "knowledge_chunks_fts_", "memories_fts_"))
    ]


def _refuse_filled(conn: sqlite3.Connection, where: str) -> dict[str, tuple[str, ...]]:
    """The omoide tables of an SQLite restore target, which must be empty and omoide's (or have no table).

    Raises:
        ConflictError: a table has rows, or the file is another application's database.
    """
    live = _live_columns(conn)
    foreign = _foreign(live)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ConflictError(
            f"cannot restore into {where}: it is a database of another application (tables: {shown}), left as "
            "it is. Restore into a new SQLite file (--db sqlite:///NEW.db)",
            tables=foreign,
        )
    known = _known(live)
    filled = [t for t in known if conn.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone()]
    if filled:
        raise not_empty(where, filled)
    return known


def check_restore_target(path: str) -> None:
    """Refuse an existing SQLite file as a restore target unless it is empty and omoide's (or has
    no table), looking at it read-only (its journal mode is left as it is).

    Raises:
        ConflictError: it has rows, or is another application's database.
    """
    conn = connect(path, busy_timeout_ms=BUSY_TIMEOUT_MS, readonly=True)
    try:
        with map_sqlite_errors("restore", path):
            _refuse_filled(conn, repr(path))
    finally:
        conn.close()


def check_backup_file(path: str) -> None:
    """Refuse an SQLite file as a backup unless it is an omoide database (it has ``schema_migrations``).

    Raises:
        InvalidInput: another application's database, or one without tables.
    """
    conn = connect(path, busy_timeout_ms=BUSY_TIMEOUT_MS, readonly=True)
    try:
        with map_sqlite_errors("restore", path):
            tables = list(_live_columns(conn))
    finally:
        conn.close()
    if "schema_migrations" in tables:
        return
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    what = f"a database of another application (tables: {shown})" if tables else "a database without tables"
    raise InvalidInput(
        f"{path} is an SQLite file but not an omoide backup: it is {what}. Give a file made by "
        "`omoide backup PATH.db`, an omoide database, or a backup folder"
    )


def _known(live: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The logical tables present in ``live``, with their columns in logical order."""
    out: dict[str, tuple[str, ...]] = {}
    for table in TABLES:
        if table.name in live:
            out[table.name] = tuple(c for c in table.columns if c in live[table.name])
    return out


def _open(path: str, *, must_exist: bool, readonly: bool) -> sqlite3.Connection:
    if must_exist and not Path(path).is_file():
        raise NotFoundError(f"there is no SQLite database at {Path(path).resolve()}", path=path)
    return connect(path, busy_timeout_ms=BUSY_TIMEOUT_MS, readonly=readonly)


def _select(table: Table, columns: tuple[str, ...], where: str | None) -> str:
    cols = ", ".join(f'"{c}"' for c in columns)
    order = ", ".join(f'"{c}"' for c in table.key)
    return f'SELECT {cols} FROM "{table.name}"' + (f" WHERE {where}" if where else "") + f" ORDER BY {order}"


class _OneThreadAtATime:
    """A connection used from worker threads, by one thread at a time (see ``connect``).

    Every call runs under one lock. A call whose await was cancelled (Ctrl-C) goes on in its
    thread; ``__aexit__`` then waits for it before it rolls back and closes the connection,
    instead of closing it under the running statement (a segmentation fault).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def _in_thread(self, work: Callable[[], _T]) -> _T:
        def locked() -> _T:
            with self._lock:
                return work()

        return await asyncio.to_thread(locked)


class SqliteReader(_OneThreadAtATime):
    """Rows of an SQLite database, from one snapshot (an async context manager).

    Args:
        path: the database file (must exist).
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.info = SourceInfo(backend="sqlite", schema_version=0)
        self._conn: sqlite3.Connection | None = None
        self._columns: dict[str, tuple[str, ...]] = {}

    async def __aenter__(self) -> SqliteReader:
        await self._in_thread(self._start)
        return self

    def _start(self) -> None:
        conn = _open(self.path, must_exist=True, readonly=True)
        try:
            with map_sqlite_errors("backup", self.path):
                conn.execute("BEGIN")  # one snapshot from the first read to the end
                version = migrations.current_version(conn)
                migrations.check_not_newer(version, where=repr(self.path))
                live = _live_columns(conn)
                check_columns(live, where=repr(self.path))
                sequences: dict[str, int] = {}
                if "sqlite_sequence" in live:  # the highest id each AUTOINCREMENT table ever handed out
                    sequences = {str(n): int(s) for n, s in conn.execute("SELECT name, seq FROM sqlite_sequence")}
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._columns = _known(live)
        self.info = SourceInfo(backend="sqlite", schema_version=version, sequences=sequences)

    async def __aexit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._in_thread(lambda: _rollback_and_close(conn))

    def _require(self) -> sqlite3.Connection:
        assert self._conn is not None, "use `async with SqliteReader(...)`"
        return self._conn

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return self._columns

    async def count(self, table: Table, *, where: str | None = None, params: Mapping[str, Any] | None = None) -> int:
        conn = self._require()
        sql = f'SELECT count(*) FROM "{table.name}"' + (f" WHERE {where}" if where else "")

        def run() -> int:
            with map_sqlite_errors("backup", self.path):
                return int(conn.execute(sql, dict(params or {})).fetchone()[0])

        return await self._in_thread(run)

    async def batches(
        self,
        table: Table,
        columns: tuple[str, ...],
        *,
        where: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[list[Row]]:
        conn = self._require()
        decode = decoder("sqlite", [table.columns[c] for c in columns], columns)
        with map_sqlite_errors("backup", self.path):
            cursor = conn.execute(_select(table, columns, where), dict(params or {}))

        def fetch() -> list[Row]:
            with map_sqlite_errors("backup", self.path):
                return [decode(r) for r in cursor.fetchmany(BATCH_ROWS)]

        while batch := await self._in_thread(fetch):
            yield batch


class SqliteWriter(_OneThreadAtATime):
    """Restores rows into an empty, migrated SQLite database in one transaction.

    Args:
        path: the database file (already migrated by the caller).
        require_empty: refuse a database that has any row (a restore); ``False`` to add
            rows to a restored one (re-computed vectors).

    Raises:
        ConflictError: (on enter) the database is not empty, or is another application's.
    """

    def __init__(self, path: str, *, require_empty: bool = True) -> None:
        super().__init__()
        self.path = path
        self.require_empty = require_empty
        self._conn: sqlite3.Connection | None = None
        self._columns: dict[str, tuple[str, ...]] = {}

    async def __aenter__(self) -> SqliteWriter:
        await self._in_thread(self._start)
        return self

    def _start(self) -> None:
        conn = _open(self.path, must_exist=True, readonly=False)
        try:
            with map_sqlite_errors("restore", self.path):
                conn.execute("BEGIN IMMEDIATE")
                if self.require_empty:
                    self._columns = _refuse_filled(conn, repr(self.path))
                else:
                    self._columns = _known(_live_columns(conn))
        except BaseException:
            _rollback_and_close(conn)
            raise
        self._conn = conn

    async def __aexit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._in_thread(lambda: _rollback_and_close(conn))

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return self._columns

    async def write(self, table: Table, columns: tuple[str, ...], rows: list[Row]) -> None:
        conn = self._conn
        assert conn is not None, "use `async with SqliteWriter(...)`"
        if not rows:
            return
        encode = encoder("sqlite", [table.columns[c] for c in columns], columns, table=table.name, key=table.key)
        cols = ", ".join(f'"{c}"' for c in columns)
        sql = f'INSERT INTO "{table.name}" ({cols}) VALUES ({", ".join("?" * len(columns))})'

        def run() -> None:
            with map_sqlite_errors("restore", self.path):
                conn.executemany(sql, [encode(r) for r in rows])

        await self._in_thread(run)

    async def finish(self, info: SourceInfo, counts: Mapping[str, int]) -> None:
        conn = self._conn
        assert conn is not None, "use `async with SqliteWriter(...)`"

        def run() -> None:
            with map_sqlite_errors("restore", self.path):
                for table in TABLES:
                    if table.identity is None or table.name not in self._columns:
                        continue
                    # inserting explicit ids already moved the counter to the highest one; ids the
                    # source handed out to rows deleted since stay used
                    wanted = info.sequences.get(table.name, 0)
                    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table.name,)).fetchone()
                    if row is None and wanted > 0:
                        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table.name, wanted))
                    elif row is not None and int(row[0]) < wanted:
                        conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (wanted, table.name))
                conn.execute("COMMIT")

        await self._in_thread(run)


def not_empty(where: str, tables: list[str]) -> ConflictError:
    """The error of a restore into a database that already has data."""
    return ConflictError(
        f"cannot restore into {where}: it is not empty (rows in {', '.join(tables)}). Restore into a new, empty "
        "database (a new SQLite file, or createdb + omoide restore --db postgresql://…/NEW)",
        tables=tables,
    )


def _rollback_and_close(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


# ------------------------------------------------------------------ file copies


def copy_file(source: str, dest: Path) -> int:
    """Copy the SQLite database ``source`` to the new file ``dest`` with the online backup API.

    Safe while other connections and processes write: the copy is one read transaction's
    snapshot. Written to ``dest`` + ``.partial``, checked (``PRAGMA quick_check``) and renamed,
    so ``dest`` is never a half-written file. Returns the pages copied.

    Raises:
        NotFoundError: ``source`` does not exist.
        ConflictError: ``dest`` exists.
        StoreError: the copy failed or is not intact.
    """
    if dest.exists():
        raise ConflictError(f"{dest} already exists: choose a new backup path", path=str(dest))
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = _open(source, must_exist=True, readonly=True)
    try:
        with map_sqlite_errors("backup", source):
            migrations.check_not_newer(migrations.current_version(src), where=repr(source))
            out = sqlite3.connect(partial)
            try:
                src.backup(out)  # pages=-1: one step, one snapshot (a paged copy restarts on every write)
                out.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
                check = out.execute("PRAGMA quick_check").fetchone()[0]
                pages = int(out.execute("PRAGMA page_count").fetchone()[0])
            finally:
                out.close()
        if check != "ok":
            partial.unlink(missing_ok=True)
            raise StoreError(
                f"the copy of {source} failed its integrity check ({check}): check the source with "
                "`sqlite3 FILE 'PRAGMA integrity_check'` and the disk of the backup path"
            )
        os.replace(partial, dest)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        src.close()
    return pages


def restore_file(backup: Path, target: str) -> int:
    """Copy an SQLite backup file over the empty (or absent) SQLite database ``target``.

    Returns the schema version of the backup (the caller migrates the target afterwards).

    Raises:
        ConflictError: ``target`` has rows, or is another application's database.
        MigrationError: the backup comes from a newer omoide.
    """
    src = _open(str(backup), must_exist=True, readonly=True)
    try:
        with map_sqlite_errors("restore", str(backup)):
            version = migrations.current_version(src)
            migrations.check_not_newer(version, where=repr(str(backup)))
            dst = connect(target, busy_timeout_ms=BUSY_TIMEOUT_MS)
            try:
                with map_sqlite_errors("restore", target):
                    _refuse_filled(dst, repr(target))  # the page copy replaces every table of it
                    src.backup(dst)
            finally:
                dst.close()
    finally:
        src.close()
    return version


__all__ = [
    "SqliteReader",
    "SqliteWriter",
    "check_backup_file",
    "check_restore_target",
    "copy_file",
    "is_sqlite_file",
    "not_empty",
    "restore_file",
]
