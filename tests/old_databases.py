"""Databases as an older omoide left them, for the upgrade tests: an SQLite file or a PostgreSQL
database migrated up to a version, holding one source, one chunk and (optionally) its vector,
written with that version's columns only."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

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


def _pg_value(value: Any, placeholder: str) -> tuple[Any, str]:
    """A value for asyncpg and its placeholder: JSON as ``jsonb``, a 1-D array as ``halfvec``."""
    if isinstance(value, dict | list):
        return json.dumps(value), f"{placeholder}::jsonb"
    if isinstance(value, np.ndarray):
        return "[" + ",".join(str(float(x)) for x in value) + "]", f"{placeholder}::text::halfvec"
    return value, placeholder


async def _pg_insert(conn: Any, table: str, values: Mapping[str, Any], returning: str | None = None) -> Any:
    args, slots = [], []
    for i, value in enumerate(values.values(), start=1):
        arg, slot = _pg_value(value, f"${i}")
        args.append(arg)
        slots.append(slot)
    sql = f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join(slots)})"
    if returning is None:
        return await conn.execute(sql, *args)
    return await conn.fetchval(f"{sql} RETURNING {returning}", *args)


async def postgres_at(
    url: str,
    version: int,
    workspace: str,
    *,
    chunk: Mapping[str, Any],
    embedding: Mapping[str, Any] | None = None,
) -> int:
    """The PostgreSQL database at ``url`` migrated to ``version``, with a ready source in
    ``workspace``, its chunk (``chunk``'s columns besides the keys and index: lists and dicts are
    stored as ``jsonb``) and, given ``embedding``'s columns, the chunk's vector (a 1-D array as
    ``halfvec``). Returns the chunk's id."""
    import asyncpg

    from omoide.stores.postgres.migrations import apply_migrations

    conn = await asyncpg.connect(url)
    try:
        await apply_migrations(conn, where="test", up_to=version)
        source = await _pg_insert(
            conn,
            "knowledge_sources",
            {"workspace_id": workspace, "type": "session", "title": "old", "status": "ready"},
            returning="id",
        )
        chunk_id = await _pg_insert(
            conn,
            "knowledge_chunks",
            {"source_id": source, "workspace_id": workspace, "chunk_index": 0, **chunk},
            returning="id",
        )
        if embedding is not None:
            await _pg_insert(conn, "chunk_embeddings", {"chunk_id": chunk_id, "workspace_id": workspace, **embedding})
        return int(chunk_id)
    finally:
        await conn.close()
