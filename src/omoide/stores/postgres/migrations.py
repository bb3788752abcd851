"""Versioned migrations for PostgreSQL, safe to run from several processes at once.

Each migration is a numbered, named block of DDL (see :mod:`.schema`), recorded in
``schema_migrations(version, name, applied_at)``. :func:`apply_migrations` runs every
pending migration in *one* transaction that starts by taking a transaction-scoped advisory
lock (``pg_advisory_xact_lock``). A second process running it at the same moment blocks
on that lock until the first commits, then reads ``schema_migrations`` afresh (READ
COMMITTED: each statement sees what was committed before it started), finds nothing
pending and returns ``[]``. The lock is released by COMMIT or ROLLBACK, so a crashed
migrator never leaves it held, and DDL is transactional in PostgreSQL, so a failed
migration leaves no half-built schema.

On a Citus coordinator the same transaction then distributes the tables by ``workspace_id``
(:func:`~omoide.stores.postgres.citus.distribute_tables`; a no-op without the ``citus``
extension or once done).

A database whose newest recorded version is above :data:`LATEST_VERSION` was migrated by
a newer omoide; this code refuses to touch it (:class:`~omoide.errors.MigrationError`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import asyncpg

from omoide.errors import MigrationError
from omoide.stores.postgres.citus import distribute_tables
from omoide.stores.postgres.schema import (
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_5,
    MIGRATION_6,
    MIGRATION_7,
    MIGRATION_8,
    MIGRATION_9,
    MIGRATION_LEXICAL_LENGTH,
)
from omoide.stores.postgres.vector import ensure_vector_extension

logger = logging.getLogger(__name__)

# A fixed advisory-lock key (the bytes of "omoide:m"); advisory locks are per database.
MIGRATION_LOCK_KEY = int.from_bytes(b"omoide:m", "big")


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step.

    Attributes:
        version: its number; applied in increasing order.
        name: a short description, recorded with the version.
        sql: the DDL: one multi-statement script (migrations written before the tables could be distributed),
        or a tuple of single statements, each run by its own ``execute`` (every migration that can meet
        distributed tables on Citus: see :data:`MIGRATION_12_FILTER_INDEXES`); all in the migration transaction.
        needs_vector: create / check the pgvector extension before running ``sql``.
        vacuum_after: tables the migration rewrote, vacuumed (and analysed) once the migration
            transaction has committed: a rewritten table starts with an empty visibility map, so
            until autovacuum gets to it (a rewrite leaves no dead rows to trigger it) every
            index-only scan reads the table's rows too.
    """

    version: int
    name: str
    sql: str | tuple[str, ...]
    needs_vector: bool = False
    vacuum_after: tuple[str, ...] = ()


MIGRATION_10_MEMORY_EVENTS = """
CREATE TABLE memory_events (
    id           bigint      GENERATED ALWAYS AS IDENTITY,
    workspace_id text        NOT NULL,
    user_id      text        NOT NULL,
    memory_id    bigint      NOT NULL,
    action       text        NOT NULL CHECK (action IN ('created', 'updated', 'merged', 'deleted')),
    actor        text        NOT NULL,
    content      text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX memory_events_memory ON memory_events (workspace_id, user_id, memory_id, id);
INSERT INTO memory_events (workspace_id, user_id, memory_id, action, actor, content, created_at)
SELECT workspace_id, user_id, id, 'created', 'migration', content, updated_at FROM memories ORDER BY id;
"""
"""Memory history (issue 19): one row per change of a memory, written in the change's transaction; the
primary key leads with workspace_id so Citus can distribute it. Memories stored before history began get
one 'created' event with their content now (actor 'migration')."""

MIGRATION_12_FILTER_INDEXES = (
    "CREATE INDEX sessions_workspace_channel_active ON sessions (workspace_id, channel_id, last_active_at)",
    "CREATE INDEX sessions_workspace_user_active ON sessions (workspace_id, user_id, last_active_at)",
    "CREATE INDEX knowledge_sources_origin_session ON knowledge_sources (workspace_id, (metadata->>'origin_session_id'))",
)
"""Listing a workspace's sessions by channel or user, and the sources archived from one session (the
inspector, ``omoide sessions list``), by index instead of a scan of the workspace. One statement per
``execute``: on Citus, DDL on a distributed table is forwarded to the shards as its query string, and two
statements in one string are refused ("cannot insert multiple commands into a prepared statement")."""

MIGRATION_13_CHANNEL_IDS = (
    "CREATE INDEX IF NOT EXISTS knowledge_chunks_workspace_channel_ids "
    "ON knowledge_chunks (workspace_id, channel_id, started_at) INCLUDE (id)",
    "DROP INDEX IF EXISTS knowledge_chunks_workspace_channel_started",
)
"""The chunks of a channel by index only: migration 1's ``(workspace_id, channel_id, started_at)`` index
again, now carrying the chunk ids, so a channel-filtered vector search reads the ids of the channel's
chunks (40k of 1M: 4 ms) without visiting their rows (a chunk row is kilobytes: ~10x slower), then tests
the HNSW candidates against them (``omoide.stores.postgres._search.bitmap_vector_sql``). It replaces the old
index (same columns, same uses). Builds in seconds per million chunks; nothing is rewritten."""

MIGRATION_14_WORKER_STATE = (
    "CREATE TABLE worker_state ("
    " kind text NOT NULL CHECK (kind IN ('runner', 'progress', 'error')),"
    " key text NOT NULL,"
    " payload jsonb NOT NULL,"
    " updated_at timestamptz NOT NULL DEFAULT now(),"
    " PRIMARY KEY (kind, key))",
)
"""What the workers tell other processes and hosts (issue 17): heartbeats, job progress and recent errors, one
row per ``(kind, key)`` with a JSON payload (:mod:`omoide.stores.worker_state`); replaces the per-host JSON files
under ``$XDG_STATE_HOME``. It has no ``workspace_id``: on Citus it stays a plain coordinator table (neither
distributed nor a reference table), so a heartbeat is one local upsert. Not backed up (it describes processes)."""

MIGRATION_15_READER_VECTORS = (
    "ALTER TABLE chunk_embeddings ADD COLUMN IF NOT EXISTS reader_vectors bytea",
    "CREATE INDEX IF NOT EXISTS chunk_embeddings_reader_missing_idx "
    "ON chunk_embeddings (model, chunk_id) WHERE reader_vectors IS NULL",
)
"""The line reader's vectors (:mod:`omoide.stores.units`): ``chunk_embeddings.reader_vectors``, one vector per line
record, ``READER_DIMENSIONS`` (512) wide whatever the row's model, stored like ``unit_vectors``: little-endian
float16, row-major (``lines × 512``), ``NULL`` until read. No backfill (``omoide reindex --units`` fills it): adding
a nullable column rewrites nothing. The partial index holds the rows still without them (every row at first, then
only what the embedding worker has not reached), for ``omoide reindex --units`` and ``omoide status``; it builds in
seconds per million rows. One statement per ``execute`` (Citus forwards DDL on a distributed table to its shards:
see :data:`MIGRATION_12_FILTER_INDEXES`)."""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", MIGRATION_1, needs_vector=True),
    Migration(2, "sessions: persisted prompt compaction (context_summary, context_summary_seq)", MIGRATION_2),
    Migration(3, "knowledge: indexes for archiving, the embedding queue and listing sources", MIGRATION_3),
    Migration(4, "search: store_meta (lexical tokenizer of the index)", MIGRATION_4),
    Migration(5, "api_keys: hashed API keys, one workspace each (HTTP API, MCP)", MIGRATION_5),
    Migration(6, "visibility: private knowledge and sessions with their members (backfilled from DM ids)", MIGRATION_6),
    Migration(7, "session messages: stored token counts", MIGRATION_7),
    Migration(8, "erasure: per-workspace erasure generation and erased users (hashed)", MIGRATION_8),
    Migration(9, "retrieval units: per-line tokens of chunks, unit vectors with their embeddings", MIGRATION_9),
    Migration(10, "memory history: memory_events (each change of a memory, by whom)", MIGRATION_10_MEMORY_EVENTS),
    Migration(
        11,
        "search: chunk length in lexemes beside the tsvector (BM25 without reading it)",
        MIGRATION_LEXICAL_LENGTH,
        vacuum_after=("knowledge_chunks",),
    ),
    Migration(
        12,
        "indexes: sessions by channel / user, sources by the session they were archived from",
        MIGRATION_12_FILTER_INDEXES,
    ),
    Migration(
        13,
        "search: the chunk ids of a channel by index only (channel-filtered vector search without a join)",
        MIGRATION_13_CHANNEL_IDS,
    ),
    Migration(
        14,
        "workers: worker_state (heartbeats, job progress, recent errors for every process and host)",
        MIGRATION_14_WORKER_STATE,
    ),
    Migration(
        15,
        "retrieval units: the line reader's vectors with their embeddings (reader_vectors)",
        MIGRATION_15_READER_VECTORS,
    ),
)
LATEST_VERSION = MIGRATIONS[-1].version

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


async def applied_versions(conn: asyncpg.Connection) -> list[int]:
    """The versions recorded in ``schema_migrations``, ascending (empty if it does not exist)."""
    if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
        return []
    rows = await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
    return [int(r[0]) for r in rows]


async def current_version(conn: asyncpg.Connection) -> int:
    """The newest applied version, 0 for an empty database."""
    versions = await applied_versions(conn)
    return versions[-1] if versions else 0


def check_not_newer(version: int, *, where: str) -> None:
    """Raise if the database was migrated by a newer omoide than this one.

    Raises:
        MigrationError: ``version`` is above :data:`LATEST_VERSION`.
    """
    if version > LATEST_VERSION:
        raise MigrationError(
            f"the database {where} has schema version {version}, but this omoide only knows versions up to "
            f"{LATEST_VERSION}: upgrade omoide (pip install -U 'omoide[postgres]') or use another database.",
            schema_version=version,
            known_version=LATEST_VERSION,
        )


async def pending_migrations(conn: asyncpg.Connection, *, where: str) -> list[Migration]:
    """The migrations not yet applied, without changing anything (for ``--dry-run``).

    Raises:
        MigrationError: the schema is newer than this code.
    """
    applied = await applied_versions(conn)
    check_not_newer(applied[-1] if applied else 0, where=where)
    done = set(applied)
    return [m for m in MIGRATIONS if m.version not in done]


async def apply_migrations(conn: asyncpg.Connection, *, where: str, up_to: int | None = None) -> list[int]:
    """Apply every pending migration in one transaction; return the versions applied.

    Args:
        conn: a connection not inside a transaction.
        where: the database URL without password, for messages.
        up_to: stop after this version (tests build a database as an older omoide left it).

    Raises:
        MigrationError: the schema is newer than this code, or pgvector is missing.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_KEY)
        await conn.execute(_CREATE_TABLE)
        pending = [m for m in await pending_migrations(conn, where=where) if up_to is None or m.version <= up_to]
        for migration in pending:
            started = time.perf_counter()
            if migration.needs_vector:
                await ensure_vector_extension(conn, where=where)
            for statement in (migration.sql,) if isinstance(migration.sql, str) else migration.sql:
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", migration.version, migration.name
            )
            logger.info(
                "migration_applied",
                extra={
                    "store": "postgresql",
                    "version": migration.version,
                    "migration": migration.name,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
        await distribute_tables(conn)  # Citus only: a no-op on single-node PostgreSQL
    # VACUUM cannot run in a transaction; a second process found nothing pending and skips it
    for table in dict.fromkeys(t for m in pending for t in m.vacuum_after):
        started = time.perf_counter()
        await conn.execute(f"VACUUM (ANALYZE) {table}")
        logger.info(
            "migration_vacuumed",
            extra={
                "store": "postgresql",
                "table": table,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
    return [m.version for m in pending]


__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "MIGRATION_LOCK_KEY",
    "Migration",
    "applied_versions",
    "apply_migrations",
    "check_not_newer",
    "current_version",
    "pending_migrations",
]
