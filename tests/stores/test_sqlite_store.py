"""SQLite specifics of the store: pragmas, files, locking, stored formats, FTS5 sync, error mapping.

Behaviour shared with PostgreSQL lives in ``tests/conformance``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide.errors import ConfigError, InvalidInput, StoreError, StoreUnavailable
from omoide.keys import session_key
from omoide.models import Message, SessionStatus
from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores.sessions import SessionStore
from omoide.stores.sqlite import SqliteStore
from omoide.stores.sqlite._sessions import HISTORY_SQL

KEY = session_key(platform="discord", workspace="g1", channel="c1", user="u1")
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")


def _url(path: Path | str) -> str:
    return f"sqlite:///{path}"


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(_url(tmp_path / "omoide.db"), settings=Settings(db_busy_timeout_ms=1234), migrate=True) as s:
        yield s


def _pragmas(conn: sqlite3.Connection) -> dict[str, object]:
    names = ("journal_mode", "foreign_keys", "busy_timeout", "synchronous", "query_only")
    return {name: conn.execute(f"PRAGMA {name}").fetchone()[0] for name in names}


async def test_open_store_builds_an_sqlite_store(tmp_path: Path) -> None:
    store = open_store(_url(tmp_path / "x.db"), settings=Settings(), migrate=True)
    assert isinstance(store, SqliteStore)
    assert isinstance(store.sessions, SessionStore)
    assert store.backend == "sqlite"


async def test_connections_use_wal_foreign_keys_busy_timeout(sqlite_store: SqliteStore) -> None:
    conns = sqlite_store._db._conns
    assert conns is not None
    writer = await asyncio.wrap_future(conns.writer_executor.submit(_pragmas, conns.writer))
    assert writer == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 1234, "synchronous": 1, "query_only": 0}
    assert conns.readers
    for reader in conns.readers:
        assert _pragmas(reader) == {**writer, "query_only": 1}


async def test_file_and_directories_are_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = tmp_path / "a" / "b" / "omoide.db"
    async with SqliteStore(_url(absolute), settings=Settings(), migrate=True) as store:
        await store.sessions.get_or_create_session(KEY)
    assert absolute.is_file()
    monkeypatch.chdir(tmp_path)
    async with SqliteStore("sqlite:///./rel/dir/omoide.db", settings=Settings(), migrate=True) as store:
        assert store.path == "./rel/dir/omoide.db"
        await store.sessions.get_or_create_session(KEY)
    assert (tmp_path / "rel" / "dir" / "omoide.db").is_file()


async def test_in_memory_database_works_on_one_connection() -> None:
    async with SqliteStore("sqlite:///:memory:", settings=Settings(), migrate=True) as store:
        session = await store.sessions.get_or_create_session(KEY)
        await store.sessions.append_message(session.id, Message.user("hello"))
        assert [m.text for m in await store.sessions.history(session.id, window=5)] == ["hello"]


async def test_lifecycle_errors_and_reopen(tmp_path: Path) -> None:
    store = SqliteStore(_url(tmp_path / "x.db"), settings=Settings(), migrate=True)
    with pytest.raises(StoreError, match=r"not open.*async with store"):
        await store.sessions.get_session("k")
    await store.open()
    await store.open()  # idempotent
    session = await store.sessions.get_or_create_session(KEY)
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreError, match="not open"):
        await store.sessions.get_session_by_id(session.id)
    async with store:  # a closed store can be opened again
        assert (await store.sessions.get_session_by_id(session.id)) == session


def test_bad_urls_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="no file path"):
        SqliteStore("sqlite:///", settings=Settings(), migrate=True)
    with pytest.raises(ConfigError, match="must start with sqlite:///"):
        SqliteStore("sqlite://relative.db", settings=Settings(), migrate=True)
    with pytest.raises(ConfigError, match="at least one reader"):
        SqliteStore("sqlite:///x.db", settings=Settings(), migrate=True, readers=0)


async def test_timestamps_and_content_are_stored_as_documented(sqlite_store: SqliteStore) -> None:
    session = await sqlite_store.sessions.get_or_create_session(KEY)
    message = Message.user("東京は晴れ", created_at=datetime(2026, 3, 15, 9, 30, tzinfo=UTC))
    stored, _ = await sqlite_store.sessions.append_message(session.id, message)
    with sqlite3.connect(sqlite_store.path) as raw:
        created, content = raw.execute("SELECT created_at, content FROM session_messages").fetchone()
        s_created, s_active = raw.execute("SELECT created_at, last_active_at FROM sessions").fetchone()
    assert created == "2026-03-15T09:30:00.000000+00:00"
    assert TS.match(s_created) and TS.match(s_active)
    assert content == message.content_json()
    assert json.loads(content) == [{"type": "text", "text": "東京は晴れ"}]
    assert stored.created_at.tzinfo is not None


async def test_history_walks_the_session_seq_index(sqlite_store: SqliteStore) -> None:
    with sqlite3.connect(sqlite_store.path) as raw:
        plan = " ".join(str(row[3]) for row in raw.execute(f"EXPLAIN QUERY PLAN {HISTORY_SQL}", (1, 20)))
    assert "session_messages USING" in plan and "INDEX" in plan, plan
    assert "SCAN session_messages" not in plan
    assert "TEMP B-TREE" not in plan


async def test_busy_database_waits_then_raises_store_unavailable(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    async with SqliteStore(_url(db), settings=Settings(db_busy_timeout_ms=200), migrate=True) as store:
        session = await store.sessions.get_or_create_session(KEY)
        blocker = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        try:
            blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match=r"locked.*OMOIDE_DB_BUSY_TIMEOUT_MS"):
                await store.sessions.append_message(session.id, Message.user("blocked"))
            assert time.monotonic() - started >= 0.15
            # reads are not blocked by a writer in WAL mode
            assert (await store.sessions.get_session_by_id(session.id)) is not None
            # a lock released within the timeout only delays the write
            blocker.execute("COMMIT")
            blocker.execute("BEGIN IMMEDIATE")
            threading.Timer(0.05, blocker.execute, ("COMMIT",)).start()
            _, created = await store.sessions.append_message(session.id, Message.user("delayed"))
            assert created
        finally:
            await asyncio.sleep(0.1)
            blocker.close()
        assert [m.text for m in await store.sessions.messages(session.id)] == ["delayed"]


async def test_broken_files_map_to_store_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an sqlite database" * 100)
    with pytest.raises(StoreError, match="not an intact SQLite database"):
        await SqliteStore(_url(garbage), settings=Settings(), migrate=True).open()
    directory = tmp_path / "a-directory"
    directory.mkdir()
    with pytest.raises(StoreUnavailable, match="cannot open the database file"):
        await SqliteStore(_url(directory), settings=Settings(), migrate=True).open()


async def test_bad_arguments_are_invalid_input(sqlite_store: SqliteStore) -> None:
    session = await sqlite_store.sessions.get_or_create_session(KEY)
    with pytest.raises(InvalidInput, match="window"):
        await sqlite_store.sessions.history(session.id, window=-1)
    with pytest.raises(InvalidInput, match="limit"):
        await sqlite_store.sessions.messages(session.id, limit=-5)
    with pytest.raises(InvalidInput, match="unknown session status 'gone'"):
        await sqlite_store.sessions.update_session(session.id, expected_version=session.version, status="gone")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="beyond the newest message"):
        await sqlite_store.sessions.update_session(session.id, expected_version=session.version, window_start_seq=1)
    with pytest.raises(InvalidInput, match="session_id must be an integer"):
        await sqlite_store.sessions.history("1", window=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="batch_size"):
        await sqlite_store.sessions.expire_idle(idle_before=datetime.now(UTC), batch_size=0)
    with pytest.raises(InvalidInput, match="not valid Unicode"):
        await sqlite_store.sessions.append_message(session.id, Message.user("broken \ud800 surrogate"))
    after = await sqlite_store.sessions.get_session_by_id(session.id)
    assert after is not None and after.last_seq == 0 and after.status is SessionStatus.ACTIVE


async def test_fts_tables_follow_their_content_tables(sqlite_store: SqliteStore) -> None:
    """The knowledge/memory methods land later; their FTS5 triggers are part of migration 1."""
    now = "2026-01-01T00:00:00.000000+00:00"
    with sqlite3.connect(sqlite_store.path, isolation_level=None) as raw:
        raw.execute("PRAGMA foreign_keys = ON")
        raw.execute(
            "INSERT INTO knowledge_sources (id, workspace_id, type, created_at, updated_at) VALUES (1, 'g1', 'session', ?, ?)",
            (now, now),
        )
        raw.execute(
            "INSERT INTO knowledge_chunks (id, source_id, workspace_id, chunk_index, content, lexical, created_at) "
            "VALUES (10, 1, 'g1', 0, '今日の天気は晴れ', '今日 天気 晴れ Café', ?)",
            (now,),
        )

        def chunk_hits(query: str) -> list[int]:
            return [
                r[0]
                for r in raw.execute(
                    "SELECT rowid FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH ?", (query,)
                )
            ]

        assert chunk_hits("天気") == [10]
        assert chunk_hits("cafe") == [10]  # unicode61 remove_diacritics 2 folds case and accents
        raw.execute("UPDATE knowledge_chunks SET lexical = '明日 雨' WHERE id = 10")
        assert chunk_hits("天気") == [] and chunk_hits("雨") == [10]
        raw.execute("DELETE FROM knowledge_sources WHERE id = 1")  # cascades to the chunk and its FTS row
        assert chunk_hits("雨") == []
        assert raw.execute("SELECT count(*) FROM knowledge_chunks").fetchone()[0] == 0
        raw.execute("INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts) VALUES ('integrity-check')")

        raw.execute(
            "INSERT INTO memories (id, workspace_id, user_id, content, lexical, created_at, updated_at) "
            "VALUES (5, 'g1', 'u1', '誕生日は3月15日', '誕生日 3月 15日', ?, ?)",
            (now, now),
        )
        assert [r[0] for r in raw.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH '誕生日'")] == [5]
        raw.execute("DELETE FROM memories WHERE id = 5")
        assert raw.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '誕生日'").fetchone()[0] == 0
        raw.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")


async def test_embedding_blobs_must_match_their_dimensions(sqlite_store: SqliteStore) -> None:
    now = "2026-01-01T00:00:00.000000+00:00"
    with sqlite3.connect(sqlite_store.path, isolation_level=None) as raw:
        raw.execute(
            "INSERT INTO knowledge_sources (id, workspace_id, type, created_at, updated_at) VALUES (1, 'g1', 'doc', ?, ?)",
            (now, now),
        )
        raw.execute(
            "INSERT INTO knowledge_chunks (id, source_id, workspace_id, chunk_index, content, created_at) VALUES (1, 1, 'g1', 0, 'x', ?)",
            (now,),
        )
        insert = "INSERT INTO chunk_embeddings (chunk_id, workspace_id, model, dimensions, embedding, embedded_at) VALUES (1, 'g1', ?, 3, ?, ?)"
        raw.execute(insert, ("m1", bytes(12), now))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            raw.execute(insert, ("m2", bytes(8), now))
