"""Opening the database for a command that only reads (or changes what is already there).

``omoide status --db sqlite:///nonexistent/dir/x.db`` used to exit 0 after silently creating
the directory tree and an empty database. A read-only command (status, sources, search, ask,
memory search/list/get, sessions list/show/export, context, …) now refuses a SQLite file
that does not exist, naming the path and the commands that create one; commands that write
(``omoide demo``, ``import``, ``migrate``, ``memory add``, ``sessions append``, ``worker``, …)
still create it. A PostgreSQL database is never created by omoide, so it needs no check.

A file that exists is not enough: opened by a read-only command, an empty file or another
application's SQLite database used to be migrated — omoide's tables added to it. It must hold
omoide's ``schema_migrations`` table (every omoide database has had it since the first version);
the check opens the file read-only.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import typer

from omoide.cli._common import open_memory
from omoide.engine import Memory
from omoide.errors import ConfigError, NotFoundError
from omoide.settings import load_settings

_SQLITE = "sqlite:///"


def require_existing_database(db: str | None) -> None:
    """Raise unless the database ``db`` (default: the configured one) already exists.

    Raises:
        NotFoundError: a SQLite URL whose file does not exist; the message names the
            path and what to run.
        ConfigError: the settings are invalid.
    """
    overrides: dict[str, Any] = {"database_url": db} if db else {}
    url = load_settings(**overrides).database_url
    if not url.startswith(_SQLITE):
        return
    path = url[len(_SQLITE) :]
    if not path.strip() or path == ":memory:":
        return
    where = str(Path(path).resolve())
    what = _not_omoide(Path(path)) if Path(path).is_file() else "there is no file there"
    if what is None:
        return
    raise NotFoundError(
        f"there is no omoide database at {where} (from {url}): {what}. Check --db / OMOIDE_DATABASE_URL, or "
        "create one: `omoide demo` (sample data), `omoide import EXPORT` (your chat history) or `omoide migrate` "
        "(empty)",
        path=where,
    )


def _not_omoide(path: Path) -> str | None:
    """Why the file at ``path`` is no omoide database, or ``None`` when it is one (read-only look)."""
    if path.stat().st_size == 0:
        return "it is an empty file, not an omoide database"
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:  # unreadable: let opening the store say why
        return None
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            return "it is not a SQLite database"
        return None  # locked, unreadable, …: opening the store says why
    finally:
        conn.close()
    if "schema_migrations" in tables:
        return None
    if not tables:
        return "it is a SQLite database without tables, not an omoide database"
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    return f"it is a SQLite database of another application (tables: {shown}), not an omoide database; it was left as it is"


_SQLITE_HEADER = b"SQLite format 3\x00"


def refuse_foreign_database(db: str | None) -> None:
    """Raise when the configured SQLite file is another application's database (tables, none of
    them omoide's): a command that writes would add omoide's tables to it. A new, empty or
    table-less file, an omoide database and PostgreSQL pass.

    Raises:
        ConfigError: naming the file and some of its tables.
    """
    path = _sqlite_file(db)
    if path is None or not path.is_file() or path.stat().st_size == 0:
        return
    tables = _tables(path)
    if not tables or "schema_migrations" in tables:
        return
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    raise ConfigError(
        f"{path} is a SQLite database of another application (tables: {shown}); omoide would add its own "
        "tables to it, so it was left as it is. Point --db / OMOIDE_DATABASE_URL at a new file "
        "(e.g. sqlite:///./omoide.db)"
    )


def _tables(path: Path) -> list[str] | None:
    """The tables of the SQLite file at ``path`` (opened read-only), or ``None`` when it cannot be
    read as one (opening the store then says why)."""
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        return [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def _sqlite_file(db: str | None) -> Path | None:
    """The configured SQLite file (``None`` for PostgreSQL or an in-memory database)."""
    overrides: dict[str, Any] = {"database_url": db} if db else {}
    url = load_settings(**overrides).database_url
    path = url[len(_SQLITE) :] if url.startswith(_SQLITE) else ""
    return Path(path).resolve() if path.strip() and path != ":memory:" else None


def check_output_file(output: Path, db: str | None, *, option: str = "--output") -> None:
    """Refuse an ``-o FILE`` that would destroy data or cannot be written, before anything is opened.

    ``omoide export --workspace W -o data/omoide.db`` truncated the database it was about to read.

    Raises:
        typer.BadParameter: ``output`` is a folder, is in a folder that does not exist, is the
            database (or its -wal / -shm / -journal file), or is an existing SQLite database.
        ConfigError: the settings are invalid.
    """
    target = output.resolve()
    if target.is_dir():
        raise typer.BadParameter(
            f"{output} is a folder; give a file name, e.g. {output / 'export.jsonl'}", param_hint=option
        )
    if not target.parent.is_dir():
        raise typer.BadParameter(f"the folder {output.parent} does not exist; create it first", param_hint=option)
    database = _sqlite_file(db)
    if database is not None and target in {database, *(Path(f"{database}{s}") for s in ("-wal", "-shm", "-journal"))}:
        raise typer.BadParameter(
            f"{output} is the database being exported ({database}): writing there would destroy it; "
            "choose another file",
            param_hint=option,
        )
    if target.is_file():
        with target.open("rb") as existing:
            if existing.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER:
                raise typer.BadParameter(
                    f"{output} is a SQLite database (an omoide database or backup?); it is not overwritten — "
                    "choose another file",
                    param_hint=option,
                )


@contextmanager
def replacing(output: Path) -> Iterator[IO[str]]:
    """A text file that becomes ``output`` only when the block finishes: written beside it and moved
    into place, so a failed or interrupted export leaves an existing ``output`` as it was and no
    partial file behind."""
    fd, temporary = tempfile.mkstemp(dir=output.resolve().parent, prefix=f".{output.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(temporary, output)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@asynccontextmanager
async def open_existing_memory(db: str | None) -> AsyncIterator[Memory]:
    """:func:`~omoide.cli._common.open_memory` for a command that must not create the database."""
    require_existing_database(db)
    async with open_memory(db) as mem:
        yield mem


__all__ = ["check_output_file", "open_existing_memory", "replacing", "require_existing_database"]
