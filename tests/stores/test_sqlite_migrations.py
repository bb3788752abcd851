"""SQLite migrations: full schema, idempotence, two processes at once, a newer database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from omoide.errors import MigrationError, StoreError
from omoide.settings import Settings
from omoide.stores.sqlite import LATEST_VERSION, MIGRATIONS, SqliteStore
from omoide.stores.sqlite.migrations import Migration, applied_versions, apply_pending
from omoide.stores.sqlite.schema import TABLES


def _store(path: Path, *, migrate: bool = True, **settings: object) -> SqliteStore:
    return SqliteStore(f"sqlite:///{path}", settings=Settings(**settings), migrate=migrate)  # type: ignore[arg-type]


def _objects(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall())


def _migration_rows(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()


async def test_migration_1_creates_the_full_schema(tmp_path: Path) -> None:
    db = tmp_path / "omoide.db"
    async with _store(db) as store:
        assert await store.schema_version() == LATEST_VERSION
        assert await store.pending_migrations() == []
    objects = _objects(db)
    for table in TABLES:
        assert objects.get(table) == "table", table
    for trigger in ("knowledge_chunks_fts_insert", "knowledge_chunks_fts_delete", "knowledge_chunks_fts_update"):
        assert objects.get(trigger) == "trigger"
    for trigger in ("memories_fts_insert", "memories_fts_delete", "memories_fts_update"):
        assert objects.get(trigger) == "trigger"
    assert objects.get("session_messages_platform_id_uq") == "index"
    rows = _migration_rows(db)
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]
    assert all(r[2].endswith("+00:00") for r in rows)


async def test_migrate_twice_applies_nothing_the_second_time(tmp_path: Path) -> None:
    db = tmp_path / "omoide.db"
    async with _store(db, migrate=False) as store:
        assert await store.schema_version() == 0
        assert [m.version for m in await store.pending_migrations()] == [m.version for m in MIGRATIONS]
        assert await store.migrate() == [m.version for m in MIGRATIONS]
        assert await store.migrate() == []
    async with _store(db) as again:  # migrate on open: nothing to do
        assert await again.migrate() == []
    assert len(_migration_rows(db)) == len(MIGRATIONS)


async def test_unmigrated_database_says_how_to_migrate(tmp_path: Path) -> None:
    async with _store(tmp_path / "empty.db", migrate=False) as store:
        with pytest.raises(StoreError, match="omoide migrate"):
            await store.sessions.list_sessions()


async def test_newer_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "omoide.db"
    async with _store(db):
        pass
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, 'from the future', '2099-01-01T00:00:00.000000+00:00')",
            (LATEST_VERSION + 98,),
        )
    with pytest.raises(MigrationError, match=rf"version {LATEST_VERSION + 98}.*up to {LATEST_VERSION}.*newer omoide"):
        await _store(db).open()
    with pytest.raises(MigrationError, match="newer omoide"):  # also without migrating: old code must not write
        await _store(db, migrate=False).open()


def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    db = tmp_path / "omoide.db"
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        broken = (*MIGRATIONS, Migration(LATEST_VERSION + 1, "broken", ("CREATE TABLE extra (x INTEGER)", "NOT SQL")))
        with pytest.raises(sqlite3.OperationalError):
            apply_pending(conn, migrations=broken)
        assert not conn.in_transaction
        assert applied_versions(conn) == []  # DDL is transactional: migration 1 was rolled back too
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "sessions" not in names and "extra" not in names
        assert apply_pending(conn) == [m.version for m in MIGRATIONS]
    finally:
        conn.close()


async def test_messages_stored_before_token_counts_load_and_count_as_before(tmp_path: Path) -> None:
    """Migration 8 adds ``token_count``: older rows stay NULL and are counted when used."""
    from omoide.keys import session_key
    from omoide.models import Message
    from omoide.providers.tokens import get_token_counter

    db = tmp_path / "omoide.db"
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        apply_pending(conn, migrations=tuple(m for m in MIGRATIONS if m.version < 8))
        conn.execute(
            "INSERT INTO sessions (session_key, policy, platform, workspace_id, status, last_seq, last_active_at, "
            "created_at) VALUES ('k', 'channel', 'discord', 'g', 'active', 1, '2026-01-01T00:00:00.000000Z', "
            "'2026-01-01T00:00:00.000000Z')"
        )
        conn.execute(
            "INSERT INTO session_messages (session_id, workspace_id, seq, role, content, created_at) "
            """VALUES (1, 'g', 1, 'user', '[{"type":"text","text":"古いメッセージ"}]', '2026-01-01T00:00:00.000000Z')"""
        )
    finally:
        conn.close()
    async with _store(db) as store:
        assert await store.schema_version() == LATEST_VERSION
        old = (await store.sessions.messages(1))[0]
        assert old.text == "古いメッセージ" and old.content[0].tokens is None
        session = await store.sessions.get_or_create_session(
            session_key(platform="discord", workspace="g", channel="c", user="u")
        )
        await store.sessions.append_message(session.id, Message.user("新しいメッセージ"))
        new = (await store.sessions.messages(session.id))[0]
        counter = get_token_counter()
        assert new.content[0].tokens == counter.count("新しいメッセージ")
        assert counter.count_message(old) == counter.count_message(Message.user("古いメッセージ"))


_MIGRATE_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from omoide.settings import Settings
    from omoide.stores.sqlite import SqliteStore

    url, go, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    ready.touch()  # imports done
    while not go.exists():
        time.sleep(0.001)

    async def main():
        store = SqliteStore(url, settings=Settings(db_busy_timeout_ms=100), migrate=False)
        async with store:
            applied = await store.migrate()
            print(json.dumps({"applied": applied, "version": await store.schema_version()}))

    asyncio.run(main())
    """
)


def test_two_processes_migrating_at_once_build_one_schema(tmp_path: Path) -> None:
    """Processes start together on a file that does not exist yet; each version is applied exactly once."""
    db = tmp_path / "new" / "dir" / "omoide.db"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE_SCRIPT, f"sqlite:///{db}", str(go), str(tmp_path / f"ready{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready{i}").exists() for i in range(len(procs))):  # every interpreter has imported
        assert time.monotonic() < deadline, "migration subprocesses did not start"
        time.sleep(0.01)
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    versions = [m.version for m in MIGRATIONS]
    assert sorted(map(json.dumps, (r["applied"] for r in results))) == sorted(
        [json.dumps(versions)] + [json.dumps([])] * (len(procs) - 1)
    )
    assert all(r["version"] == LATEST_VERSION for r in results)
    assert [r[0] for r in _migration_rows(db)] == versions
    assert set(TABLES) <= set(_objects(db))
