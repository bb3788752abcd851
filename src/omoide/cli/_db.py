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

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from omoide.cli._common import open_memory
from omoide.engine import Memory
from omoide.errors import NotFoundError
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


@asynccontextmanager
async def open_existing_memory(db: str | None) -> AsyncIterator[Memory]:
    """:func:`~omoide.cli._common.open_memory` for a command that must not create the database."""
    require_existing_database(db)
    async with open_memory(db) as mem:
        yield mem


__all__ = ["open_existing_memory", "require_existing_database"]
