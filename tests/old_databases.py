"""Databases as an older omoide left them, for the upgrade tests: an SQLite file migrated up to a
version, holding one source, one chunk and (optionally) its vector, written with that version's
columns only."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STAMP = "2026-01-19T10:00:00.000000+00:00"
"""When the old rows were written."""


def _insert(conn: sqlite3.Connection, table: str, values: Mapping[str, Any]) -> None:
    columns = ", ".join(values)
    conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(values))})", tuple(values.values()))


def sqlite_file_at(
    path: Path,
    version: int,
    workspace: str,
    *,
    chunk: Mapping[str, Any],
    embedding: Mapping[str, Any] | None = None,
) -> None:
    """An SQLite file at migration ``version`` with a ready source (id 1) in ``workspace``, its chunk
    (id 1: ``chunk``'s columns besides the keys, index and times) and, given ``embedding``'s columns,
    the chunk's vector."""
    from omoide.stores.sqlite import MIGRATIONS
    from omoide.stores.sqlite.migrations import apply_pending

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        apply_pending(conn, migrations=tuple(m for m in MIGRATIONS if m.version <= version))
        _insert(
            conn,
            "knowledge_sources",
            {
                "workspace_id": workspace,
                "type": "discord_channel",
                "title": "old",
                "status": "ready",
                "created_at": STAMP,
                "updated_at": STAMP,
            },
        )
        _insert(
            conn,
            "knowledge_chunks",
            {"source_id": 1, "workspace_id": workspace, "chunk_index": 0, "created_at": STAMP, **chunk},
        )
        if embedding is not None:
            _insert(
                conn, "chunk_embeddings", {"chunk_id": 1, "workspace_id": workspace, "embedded_at": STAMP, **embedding}
            )
    finally:
        conn.close()
