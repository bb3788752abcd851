"""Opening the database for a command that only reads (or changes what is already there).

``omoide status --db sqlite:///nonexistent/dir/x.db`` used to exit 0 after silently creating
the directory tree and an empty database. A read-only command (status, sources, search, ask,
memory search/list/get, sessions list/show/export, context, …) now refuses a SQLite file
that does not exist, naming the path and the commands that create one; commands that write
(``omoide demo``, ``import``, ``migrate``, ``memory add``, ``sessions append``, ``worker``, …)
still create it. A PostgreSQL database is never created by omoide, so it needs no check.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

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
    if not path.strip() or path == ":memory:" or Path(path).is_file():
        return
    where = str(Path(path).resolve())
    raise NotFoundError(
        f"there is no omoide database at {where} (from {url}). Check --db / OMOIDE_DATABASE_URL, or create "
        "one: `omoide demo` (sample data), `omoide import EXPORT` (your chat history) or `omoide migrate` (empty)",
        path=where,
    )


@asynccontextmanager
async def open_existing_memory(db: str | None) -> AsyncIterator[Memory]:
    """:func:`~omoide.cli._common.open_memory` for a command that must not create the database."""
    require_existing_database(db)
    async with open_memory(db) as mem:
        yield mem


__all__ = ["open_existing_memory", "require_existing_database"]
