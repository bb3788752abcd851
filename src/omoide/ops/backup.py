"""``omoide backup``: a copy of a running database that ``omoide restore`` can bring back.

Two forms (:func:`backup` picks by the path):

* **SQLite file** (an SQLite database and a path ending in ``.db`` / ``.sqlite`` /
  ``.sqlite3``): SQLite's online backup API, page for page, while the bot runs. The copy is
  an ordinary omoide database: open it with ``--db sqlite:///COPY``.
* **Logical folder** (any other path, and always for PostgreSQL): every table as gzipped
  JSONL in a neutral form plus a versioned ``manifest.json`` (see :mod:`omoide.ops._logical`
  and :mod:`omoide.ops.tables`). It restores into an empty database of *either* backend —
  the way to move from SQLite to PostgreSQL and back.

Both read one snapshot: rows appended while the backup runs are either all in it or not.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from omoide.errors import ConfigError
from omoide.ops._logical import FolderWriter
from omoide.ops._pipeline import OnProgress, RowSource, copy_rows

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
BackupKind = Literal["sqlite-file", "logical"]


@dataclass(frozen=True, slots=True)
class BackupReport:
    """What a backup wrote.

    Attributes:
        path: the file or folder written.
        kind: ``sqlite-file`` or ``logical``.
        backend: the backend backed up.
        rows: rows per table (logical backups; ``{}`` for a file copy).
        bytes: the size on disk.
        seconds: how long it took.
        embeddings: whether the vectors are in it.
    """

    path: Path
    kind: BackupKind
    backend: str
    rows: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    seconds: float = 0.0
    embeddings: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "backend": self.backend,
            "rows": self.rows,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "embeddings": self.embeddings,
        }


def backend_of(url: str) -> str:
    """``sqlite`` or ``postgresql``, from a database URL.

    Raises:
        ConfigError: another scheme.
    """
    if url.startswith("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    raise ConfigError(f"database URL {url!r} is not supported: use sqlite:///PATH or postgresql://…")


def sqlite_path(url: str) -> str:
    """The file of an SQLite URL.

    Raises:
        ConfigError: an in-memory database (it lives in one process: nothing else can read it).
    """
    from omoide.stores.sqlite._conn import MEMORY, path_from_url

    path = path_from_url(url)
    if path == MEMORY:
        raise ConfigError(
            "sqlite:///:memory: lives inside one process: nothing else can back it up, restore into it or export it; "
            "use a database file (sqlite:///./data/omoide.db)"
        )
    return path


@asynccontextmanager
async def open_source(url: str) -> AsyncIterator[RowSource]:
    """A snapshot reader of the database at ``url`` (an async context manager).

    Raises:
        NotFoundError: an SQLite file that does not exist.
        StoreUnavailable: PostgreSQL cannot be reached.
        MigrationError: the database was migrated by a newer omoide.
        StoreError: it has tables or columns this omoide does not know.
    """
    if backend_of(url) == "sqlite":
        from omoide.ops._sqlite import SqliteReader

        async with SqliteReader(sqlite_path(url)) as sqlite_reader:
            yield sqlite_reader
    else:
        from omoide.ops._postgres import PostgresReader

        async with PostgresReader(url) as pg_reader:
            yield pg_reader


def kind_for(url: str, path: Path, *, logical: bool | None = None) -> BackupKind:
    """Which backup :func:`backup` makes of ``url`` at ``path`` (see the module docstring).

    Raises:
        ConfigError: a file copy of a PostgreSQL database was asked for.
    """
    backend = backend_of(url)
    if logical is None:
        logical = backend != "sqlite" or path.suffix.lower() not in SQLITE_SUFFIXES
    if not logical and backend != "sqlite":
        raise ConfigError("only an SQLite database can be copied as a file; back PostgreSQL up as a logical folder")
    return "logical" if logical else "sqlite-file"


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def backup(
    url: str,
    path: Path,
    *,
    logical: bool | None = None,
    embeddings: bool = True,
    on_progress: OnProgress | None = None,
) -> BackupReport:
    """Back the database at ``url`` up to ``path`` (a new file or folder), while it is in use.

    Args:
        url: the database (``sqlite:///…`` or ``postgresql://…``).
        path: where to write; must not exist.
        logical: ``True`` for a logical folder, ``False`` for an SQLite file copy, ``None``
            to choose by the path (see the module docstring).
        embeddings: include the vectors (logical backups; ``False`` makes a much smaller
            backup whose restore re-computes them: ``omoide restore --reembed``).
        on_progress: ``(table, rows just written, rows in the table)`` (logical backups).

    Raises:
        ConflictError: ``path`` exists.
        ConfigError: a file copy of PostgreSQL, or an in-memory SQLite database.
        NotFoundError: the SQLite file does not exist.
        MigrationError / StoreError: the database is newer than this omoide.
    """
    started = time.perf_counter()
    kind = kind_for(url, path, logical=logical)
    if kind == "sqlite-file":
        from omoide.ops._sqlite import copy_file

        await asyncio.to_thread(copy_file, sqlite_path(url), path)
        return BackupReport(path, kind, "sqlite", bytes=_size(path), seconds=time.perf_counter() - started)
    async with open_source(url) as source, FolderWriter(path) as sink:
        rows = await copy_rows(source, sink, embeddings=embeddings, on_progress=on_progress)
        backend = source.info.backend
        with_vectors = source.info.embeddings and embeddings
    return BackupReport(
        path,
        kind,
        backend,
        rows=rows,
        bytes=_size(path),
        seconds=time.perf_counter() - started,
        embeddings=with_vectors,
    )


__all__ = ["SQLITE_SUFFIXES", "BackupKind", "BackupReport", "backend_of", "backup", "kind_for", "open_source"]
