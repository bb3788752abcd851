"""PostgresStore specifics: pool, URLs, error translation, locking behaviour, pgvector types.

The cross-backend contract lives in tests/conformance; these tests cover what only the
PostgreSQL backend has, against the real server of the ``pg_url`` fixture.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import pytest
from pgvector import HalfVector

from omoide.errors import (
    ConfigError,
    InvalidContent,
    InvalidInput,
    MessageTooLarge,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from omoide.keys import session_key
from omoide.models import Message, SessionKey, SessionStatus
from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres.migrations import LATEST_VERSION

pytestmark = pytest.mark.postgres


def _settings(url: str, tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(database_url=url, transcripts_dir=tmp_path / "transcripts", **overrides)


def _key(user: str = "u1", workspace: str = "g1") -> SessionKey:
    return session_key(platform="discord", workspace=workspace, channel="c1", user=user)


@pytest.fixture
async def pg_store(pg_url: str, tmp_path: Path) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(pg_url, settings=_settings(pg_url, tmp_path, db_pool_max=5), migrate=True) as store:
        yield store


async def _backends(admin: asyncpg.Connection) -> int:
    """Client connections to this database, not counting ``admin`` itself."""
    return int(
        await admin.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
    )


async def test_open_store_builds_a_postgres_store(pg_url: str, tmp_path: Path) -> None:
    store = open_store(settings=_settings(pg_url, tmp_path))
    assert isinstance(store, PostgresStore)
    assert store.backend == "postgresql"
    async with store:
        assert await store.schema_version() == LATEST_VERSION
    await store.close()  # idempotent


async def test_pool_sizes_come_from_settings(pg_url: str, tmp_path: Path) -> None:
    settings = _settings(pg_url, tmp_path, db_pool_min=2, db_pool_max=3)
    admin = await asyncpg.connect(pg_url)
    try:
        async with PostgresStore(pg_url, settings=settings) as store:
            assert (store.pool.get_min_size(), store.pool.get_max_size()) == (2, 3)
            for _ in range(50):  # the one-off migration connection disconnects asynchronously
                if await _backends(admin) == 2:
                    break
                await asyncio.sleep(0.05)
            assert await _backends(admin) == 2

            peak = 0
            done = asyncio.Event()

            async def watch() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, await _backends(admin))
                    await asyncio.sleep(0.02)

            async def busy() -> None:
                async with store.pool.acquire() as conn:
                    await conn.execute("SELECT pg_sleep(0.15)")

            watcher = asyncio.create_task(watch())
            await asyncio.gather(*(busy() for _ in range(7)))
            done.set()
            await watcher
            assert peak == 3
            assert store.pool.get_size() == 3
        assert await _backends(admin) == 0  # close() closed them all
    finally:
        await admin.close()


async def test_postgres_scheme_alias_is_accepted(pg_url: str, tmp_path: Path) -> None:
    url = "postgres://" + pg_url.removeprefix("postgresql://")
    async with PostgresStore(url, settings=_settings(url, tmp_path)) as store:
        session = await store.sessions.get_or_create_session(_key())
        assert session.id >= 1


def test_non_postgres_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="postgresql://"):
        PostgresStore("mysql://localhost/db")


async def test_unreachable_server_is_store_unavailable(tmp_path: Path) -> None:
    url = f"postgresql://bot:s3cret@/omoide?host={tmp_path / 'no-server-here'}"
    store = PostgresStore(url, settings=_settings(url, tmp_path))
    with pytest.raises(StoreUnavailable) as info:
        await store.open()
    message = str(info.value)
    assert "s3cret" not in message and "bot:***@" in message
    assert "Is the server running" in message
    with pytest.raises(StoreUnavailable):
        await store.schema_version()


def _unused_port() -> int:
    """A local TCP port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_refused_tcp_connection_is_store_unavailable(tmp_path: Path) -> None:
    url = f"postgresql://bot:s3cret@127.0.0.1:{_unused_port()}/omoide"
    with pytest.raises(StoreUnavailable, match=r"127\.0\.0\.1") as info:
        await PostgresStore(url, settings=_settings(url, tmp_path)).open()
    assert "s3cret" not in str(info.value)


async def test_missing_database_is_store_unavailable(pg_server: Any, tmp_path: Path) -> None:
    url = pg_server.url_for("omoide_no_such_database")
    with pytest.raises(StoreUnavailable, match="CREATE DATABASE"):
        await PostgresStore(url, settings=_settings(url, tmp_path)).open()


async def test_calls_before_open_say_how_to_open(pg_url: str, tmp_path: Path) -> None:
    store = PostgresStore(pg_url, settings=_settings(pg_url, tmp_path))
    with pytest.raises(StoreError, match=r"await store\.open"):
        await store.sessions.get_session("discord:g1:c=c1:u=u1")


async def test_nul_character_is_invalid_content(pg_store: PostgresStore) -> None:
    session = await pg_store.sessions.get_or_create_session(_key())
    with pytest.raises(InvalidContent, match="NUL"):
        await pg_store.sessions.append_message(session.id, Message.user("a\x00b"))
    after = await pg_store.sessions.get_session_by_id(session.id)
    assert after is not None and after.last_seq == 0


async def test_oversized_message_is_rejected(pg_url: str, tmp_path: Path) -> None:
    settings = _settings(pg_url, tmp_path, max_message_bytes=1024)
    async with PostgresStore(pg_url, settings=settings) as store:
        session = await store.sessions.get_or_create_session(_key())
        with pytest.raises(MessageTooLarge, match="1024"):
            await store.sessions.append_message(session.id, Message.user("あ" * 400))  # 1,200 bytes of UTF-8
        assert await store.sessions.messages(session.id) == []


async def test_bad_arguments_are_invalid_input(pg_store: PostgresStore) -> None:
    session = await pg_store.sessions.get_or_create_session(_key())
    with pytest.raises(InvalidInput, match="window"):
        await pg_store.sessions.history(session.id, window=-1)
    with pytest.raises(InvalidInput, match="batch_size"):
        await pg_store.sessions.expire_idle(idle_before=datetime.now(UTC), batch_size=0)
    with pytest.raises(InvalidInput, match="status"):
        await pg_store.sessions.update_session(session.id, expected_version=session.version, status="gone")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="window_start_seq"):  # beyond the newest message
        await pg_store.sessions.update_session(session.id, expected_version=session.version, window_start_seq=5)


async def test_duplicate_platform_id_race_across_sessions_consumes_no_seq(pg_store: PostgresStore) -> None:
    a = await pg_store.sessions.get_or_create_session(_key("a"))
    b = await pg_store.sessions.get_or_create_session(_key("b"))
    results = await asyncio.gather(
        *(
            pg_store.sessions.append_message((a if i % 2 else b).id, Message.user("same", message_id="m-race"))
            for i in range(10)
        )
    )
    assert sum(created for _, created in results) == 1
    winner = next(m for m, created in results if created)
    loser_id = b.id if winner.session_id == a.id else a.id
    loser = await pg_store.sessions.get_session_by_id(loser_id)
    assert loser is not None and loser.last_seq == 0 and loser.version == a.version  # rolled back, untouched


async def test_expire_idle_skips_a_session_locked_by_an_append(pg_store: PostgresStore, pg_url: str) -> None:
    old = datetime.now(UTC) - timedelta(days=2)
    busy = await pg_store.sessions.get_or_create_session(_key("busy"))
    idle = await pg_store.sessions.get_or_create_session(_key("idle"))
    for s in (busy, idle):
        await pg_store.sessions.append_message(s.id, Message.user("old", created_at=old))
    other = await asyncpg.connect(pg_url)
    try:
        async with other.transaction():  # an append in flight holds the session row lock
            await other.execute("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", busy.id)
            expired = await pg_store.sessions.expire_idle(idle_before=datetime.now(UTC), batch_size=10)
        assert expired == 1
    finally:
        await other.close()
    after_busy = await pg_store.sessions.get_session_by_id(busy.id)
    after_idle = await pg_store.sessions.get_session_by_id(idle.id)
    assert after_busy is not None and after_busy.status is SessionStatus.ACTIVE
    assert after_idle is not None and after_idle.status is SessionStatus.EXPIRED


async def test_update_racing_a_concurrent_change_conflicts(pg_store: PostgresStore, pg_url: str) -> None:
    session = await pg_store.sessions.get_or_create_session(_key())
    other = await asyncpg.connect(pg_url)
    try:
        tx = other.transaction()
        await tx.start()
        await other.execute("UPDATE sessions SET version = version + 1 WHERE id = $1", session.id)
        update = asyncio.create_task(
            pg_store.sessions.update_session(
                session.id, expected_version=session.version, status=SessionStatus.ARCHIVED
            )
        )
        await asyncio.sleep(0.2)  # the update now waits for the row lock
        assert not update.done()
        await tx.commit()
        with pytest.raises(VersionConflict):
            await update
    finally:
        await other.close()
    after = await pg_store.sessions.get_session_by_id(session.id)
    assert after is not None and after.status is SessionStatus.ACTIVE and after.version == session.version + 1


async def test_pool_connections_have_pgvector_types(pg_store: PostgresStore) -> None:
    vec = np.linspace(-1, 1, 384, dtype=np.float32)
    async with pg_store.pool.acquire() as conn:
        source = await conn.fetchval(
            "INSERT INTO knowledge_sources (workspace_id, type) VALUES ('g1', 'doc') RETURNING id"
        )
        chunk = await conn.fetchval(
            "INSERT INTO knowledge_chunks (source_id, workspace_id, chunk_index, content) "
            "VALUES ($1, 'g1', 0, 'x') RETURNING id",
            source,
        )
        await conn.execute(
            "INSERT INTO chunk_embeddings (chunk_id, workspace_id, model, dimensions, embedding) "
            "VALUES ($1, 'g1', 'm', 384, $2)",
            chunk,
            HalfVector(vec),
        )
        got = await conn.fetchval("SELECT embedding FROM chunk_embeddings WHERE chunk_id = $1", chunk)
    assert isinstance(got, HalfVector)
    assert np.allclose(got.to_numpy(), vec, atol=1e-3)
