"""The memory_events migration (SQLite 11, PostgreSQL 10): memories stored before it get one ``created``
event by ``migration`` with their content, so every memory has a history."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest

from omoide.settings import Settings
from omoide.stores.postgres.store import PostgresStore
from omoide.stores.sqlite import SqliteStore
from omoide.stores.sqlite.migrations import MIGRATIONS, apply_pending


async def test_sqlite_migration_gives_old_memories_a_history(tmp_path: Path):
    db = tmp_path / "omoide.db"
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        apply_pending(conn, migrations=tuple(m for m in MIGRATIONS if m.version < 11))
        conn.execute(
            "INSERT INTO memories (workspace_id, user_id, content, lexical, created_at, updated_at) "
            "VALUES ('g1', 'u1', '古い記憶', '古い 記憶', '2025-01-01T00:00:00+00:00', '2025-02-01T00:00:00+00:00')"
        )
    finally:
        conn.close()
    async with SqliteStore(f"sqlite:///{db}", settings=Settings(), migrate=True) as store:
        (event,) = await store.memories.memory_history("g1", "u1", 1)
        assert (event.action, event.actor, event.content) == ("created", "migration", "古い記憶")
        assert event.created_at.isoformat() == "2025-02-01T00:00:00+00:00"
        assert await store.memories.memory_history("g1", "u2", 1) == []


@pytest.mark.postgres
async def test_postgres_migration_gives_old_memories_a_history(pg_url: str):
    async with PostgresStore(pg_url, migrate=True) as store:
        admin = await asyncpg.connect(pg_url)
        try:
            memory_id = await admin.fetchval(
                "INSERT INTO memories (workspace_id, user_id, content, lexical) VALUES ('g1', 'u1', '古い記憶', '古い 記憶') "
                "RETURNING id"
            )
            # back to the schema before memory history: the table gone, its migration not applied
            await admin.execute("DROP TABLE memory_events; DELETE FROM schema_migrations WHERE version = 10")
        finally:
            await admin.close()
        assert await store.migrate() == [10]
        (event,) = await store.memories.memory_history("g1", "u1", memory_id)
        assert (event.action, event.actor, event.content) == ("created", "migration", "古い記憶")
        admin = await asyncpg.connect(pg_url)
        try:
            key = await admin.fetch(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'memory_events'::regclass AND i.indisprimary"
            )
        finally:
            await admin.close()
        assert {r["attname"] for r in key} == {"workspace_id", "id"}  # Citus can distribute it by workspace
