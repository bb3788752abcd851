"""PostgreSQL migrations and schema: versions, concurrency, pgvector, halfvec + HNSW, tsvector."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import numpy as np
import pytest
from pgvector import HalfVector

from omoide.errors import MigrationError
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres.migrations import LATEST_VERSION, MIGRATIONS
from omoide.stores.postgres.vector import register_vector_types

pytestmark = pytest.mark.postgres

TABLES = {
    "schema_migrations",
    "sessions",
    "session_messages",
    "knowledge_sources",
    "knowledge_chunks",
    "chunk_embeddings",
    "memories",
    "memory_embeddings",
    "summaries",
}


@pytest.fixture
async def admin(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(pg_url)
    try:
        yield conn
    finally:
        await conn.close()


async def _tables(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
    return {r[0] for r in rows}


async def _require_superuser(conn: asyncpg.Connection) -> None:
    if not await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"):
        pytest.skip("needs a superuser (CREATE ROLE / CREATE EXTENSION); the bundled test server has one")


async def test_migrate_creates_the_full_schema_once(pg_url: str, admin: asyncpg.Connection) -> None:
    store = PostgresStore(pg_url, migrate=False)
    assert await store.schema_version() == 0  # works without open()
    everything = [m.version for m in MIGRATIONS]
    assert await store.pending_migrations() == everything
    assert await store.migrate() == everything
    assert await store.schema_version() == LATEST_VERSION == everything[-1]
    assert await store.migrate() == []
    assert await store.pending_migrations() == []
    assert await _tables(admin) >= TABLES
    rows = await admin.fetch("SELECT version, name, applied_at FROM schema_migrations")
    assert [(r["version"], r["name"]) for r in rows] == [(m.version, m.name) for m in MIGRATIONS]
    assert rows[0]["applied_at"].tzinfo is not None
    # migration 11 rewrote knowledge_chunks: it is vacuumed after the commit (a fresh visibility map)
    vacuumed = await admin.fetchval("SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'knowledge_chunks'")
    assert vacuumed is not None


async def test_two_processes_migrating_at_once_make_one_schema(pg_server: Any, admin: asyncpg.Connection) -> None:
    """Two real processes start migrating an empty database (no pgvector yet) at the same instant."""
    await _require_superuser(admin)
    name = f"omoide_race_{os.getpid()}_{time.monotonic_ns()}"
    pg_server.execute(f"CREATE DATABASE {name} TEMPLATE template0")
    url = pg_server.url_for(name)
    script = (
        "import asyncio, json, sys, time\n"
        "from omoide.stores.postgres import PostgresStore\n"
        "async def main():\n"
        "    store = PostgresStore(sys.argv[1], migrate=False)\n"
        "    time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "    print(json.dumps(await store.migrate()))\n"
        "asyncio.run(main())\n"
    )
    start_at = str(time.time() + 2.0)  # both interpreters are up and waiting by then
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, url, start_at, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        for _ in range(2)
    ]
    outputs = [await p.communicate() for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
    applied = sorted(json.loads(out.decode()) for out, _ in outputs)
    # one process applied every version, the other found them applied
    assert applied == [[], [m.version for m in MIGRATIONS]]
    conn = await asyncpg.connect(url)
    try:
        counts = await conn.fetch("SELECT version, count(*) AS n FROM schema_migrations GROUP BY version")
        assert sorted((r["version"], r["n"]) for r in counts) == [(m.version, 1) for m in MIGRATIONS]
        assert await _tables(conn) >= TABLES
        assert await conn.fetchval("SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == 1
    finally:
        await conn.close()


async def test_newer_schema_is_refused(pg_url: str, admin: asyncpg.Connection) -> None:
    async with PostgresStore(pg_url):
        pass
    await admin.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')")
    store = PostgresStore(pg_url, migrate=False)
    with pytest.raises(MigrationError, match=r"schema version 99.*upgrade omoide"):
        await store.open()
    with pytest.raises(MigrationError, match="99"):
        await store.migrate()
    with pytest.raises(MigrationError, match="99"):
        await PostgresStore(pg_url, migrate=True).open()
    assert await store.schema_version() == 99


async def test_missing_pgvector_permission_explains_how_to_install(pg_server: Any, admin: asyncpg.Connection) -> None:
    """A role that may not CREATE EXTENSION vector gets a MigrationError with instructions; nothing is left behind."""
    await _require_superuser(admin)
    suffix = f"{os.getpid()}_{time.monotonic_ns()}"
    role, db = f"omoide_weak_{suffix}", f"omoide_novector_{suffix}"
    pg_server.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    pg_server.execute(f"CREATE DATABASE {db} OWNER {role} TEMPLATE template0")
    try:
        parts = urlsplit(pg_server.url_for(db))
        netloc = f"{role}:pw@{parts.netloc.rpartition('@')[2]}"
        url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        store = PostgresStore(url)
        with pytest.raises(MigrationError) as info:
            await store.open()
        message = str(info.value)
        assert "pgvector" in message and "CREATE EXTENSION vector" in message
        assert "permission denied" in message
        assert ":pw@" not in message
        assert await store.schema_version() == 0  # the migration transaction rolled back entirely
    finally:
        pg_server.execute(f"DROP DATABASE IF EXISTS {db}")
        pg_server.execute(f"DROP ROLE IF EXISTS {role}")


async def test_vector_extension_and_halfvec_columns(pg_url: str, admin: asyncpg.Connection) -> None:
    async with PostgresStore(pg_url):
        pass
    version = await admin.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 7)
    rows = await admin.fetch(
        "SELECT table_name, udt_name FROM information_schema.columns WHERE column_name = 'embedding' "
        "AND table_schema = 'public' ORDER BY table_name"
    )
    assert [(r["table_name"], r["udt_name"]) for r in rows] == [
        ("chunk_embeddings", "halfvec"),
        ("memory_embeddings", "halfvec"),
    ]


async def test_constraints_reject_bad_enum_values(pg_url: str, admin: asyncpg.Connection) -> None:
    async with PostgresStore(pg_url):
        pass
    with pytest.raises(asyncpg.CheckViolationError):
        await admin.execute(
            "INSERT INTO sessions (session_key, policy, platform, workspace_id, status) "
            "VALUES ('k', 'user_channel', 'discord', 'g1', 'sleeping')"
        )
    with pytest.raises(asyncpg.CheckViolationError):
        await admin.execute(
            "INSERT INTO summaries (workspace_id, scope, scope_id, kind, version, content) "
            "VALUES ('g1', 'galaxy', 'x', 'short_term', 1, 'c')"
        )


async def _insert_chunks(conn: asyncpg.Connection, vectors: np.ndarray, *, model: str = "m384") -> list[int]:
    source = await conn.fetchval("INSERT INTO knowledge_sources (workspace_id, type) VALUES ('g1', 'doc') RETURNING id")
    ids = []
    for i, vec in enumerate(vectors):
        chunk = await conn.fetchval(
            "INSERT INTO knowledge_chunks (source_id, workspace_id, chunk_index, content, lexical) "
            "VALUES ($1, 'g1', $2, $3, $4) RETURNING id",
            source,
            i,
            f"chunk {i}",
            "天気 東京" if i == 0 else f"token{i}",
        )
        await conn.execute(
            "INSERT INTO chunk_embeddings (chunk_id, workspace_id, model, dimensions, embedding) "
            "VALUES ($1, 'g1', $2, $3, $4)",
            chunk,
            model,
            len(vec),
            HalfVector(vec),
        )
        ids.append(chunk)
    return ids


async def test_hnsw_partial_expression_index_is_used(pg_url: str, admin: asyncpg.Connection) -> None:
    async with PostgresStore(pg_url):
        pass
    await register_vector_types(admin, "public")
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 384)).astype(np.float32)
    ids = await _insert_chunks(admin, vectors)
    await admin.execute(
        "CREATE INDEX chunk_embeddings_hnsw_m384 ON chunk_embeddings "
        "USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WHERE model = 'm384'"
    )
    await admin.execute("ANALYZE chunk_embeddings")
    query = (
        "SELECT chunk_id FROM chunk_embeddings WHERE model = 'm384' ORDER BY (embedding::halfvec(384)) <=> $1 LIMIT 5"
    )
    async with admin.transaction():
        # with only 200 rows an exact sort is cheaper; forbid it to show the index can serve the ORDER BY
        await admin.execute("SET LOCAL enable_seqscan = off")
        await admin.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in await admin.fetch("EXPLAIN " + query, HalfVector(vectors[42])))
        assert "chunk_embeddings_hnsw_m384" in plan, plan
        nearest = await admin.fetchval(query, HalfVector(vectors[42]))
    assert nearest == ids[42]


async def test_vector_dimensions_must_match_declared(pg_url: str, admin: asyncpg.Connection) -> None:
    async with PostgresStore(pg_url):
        pass
    await register_vector_types(admin, "public")
    source = await admin.fetchval(
        "INSERT INTO knowledge_sources (workspace_id, type) VALUES ('g1', 'doc') RETURNING id"
    )
    chunk = await admin.fetchval(
        "INSERT INTO knowledge_chunks (source_id, workspace_id, chunk_index, content) VALUES ($1, 'g1', 0, 'x') "
        "RETURNING id",
        source,
    )
    with pytest.raises(asyncpg.CheckViolationError):
        await admin.execute(
            "INSERT INTO chunk_embeddings (chunk_id, workspace_id, model, dimensions, embedding) "
            "VALUES ($1, 'g1', 'm', 384, $2)",
            chunk,
            HalfVector([0.5] * 3),
        )


async def test_lexical_tsvector_is_generated_and_indexed(pg_url: str, admin: asyncpg.Connection) -> None:
    async with PostgresStore(pg_url):
        pass
    await register_vector_types(admin, "public")
    ids = await _insert_chunks(admin, np.ones((3, 8), dtype=np.float32), model="m8")
    hits = await admin.fetch(
        "SELECT id FROM knowledge_chunks WHERE lexical_tsv @@ to_tsquery('simple', '天気') ORDER BY id"
    )
    assert [r["id"] for r in hits] == [ids[0]]
    index = await admin.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_chunks_lexical_tsv'")
    assert "USING gin (lexical_tsv)" in index
    generated = await admin.fetchval(
        "SELECT generation_expression FROM information_schema.columns "
        "WHERE table_name = 'memories' AND column_name = 'lexical_tsv'"
    )
    assert "to_tsvector('simple'::regconfig, lexical)" in generated


async def test_migrate_while_open_registers_vector_types_on_the_pool(pg_server: Any, admin: asyncpg.Connection) -> None:
    """Open without migrating on an empty database (no pgvector yet), then migrate: pool connections get halfvec."""
    await _require_superuser(admin)
    name = f"omoide_late_{os.getpid()}_{time.monotonic_ns()}"
    pg_server.execute(f"CREATE DATABASE {name} TEMPLATE template0")
    url = pg_server.url_for(name)
    async with PostgresStore(url, migrate=False) as store:
        assert await store.schema_version() == 0
        assert await store.migrate() == [m.version for m in MIGRATIONS]
        vec = np.arange(4, dtype=np.float32)
        async with store.pool.acquire() as conn:
            got = await conn.fetchval("SELECT $1::halfvec", HalfVector(vec))
        assert isinstance(got, HalfVector)
        assert np.array_equal(got.to_numpy(), vec)
