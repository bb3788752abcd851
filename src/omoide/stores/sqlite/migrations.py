"""Versioned migrations for the SQLite backend.

Each :class:`Migration` is a numbered, named tuple of statements. :func:`apply_pending`
runs every pending migration inside one ``BEGIN IMMEDIATE`` transaction and records each
in ``schema_migrations(version, name, applied_at)``:

* ``BEGIN IMMEDIATE`` takes the database's write lock before reading the applied
  versions, so when two processes migrate the same file at once, the second waits
  (busy timeout) and then finds everything applied: each version is applied and
  recorded exactly once.
* SQLite DDL is transactional, so a failing migration leaves no half-built schema.
  Statements run one by one with ``execute`` (``executescript`` would commit).
* A database whose newest version is higher than the newest migration known here was
  migrated by a newer omoide; :class:`~omoide.errors.MigrationError` says so instead of
  letting old code write to a schema it does not know.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from omoide.errors import MigrationError
from omoide.models import utcnow
from omoide.stores.sqlite._conn import format_ts, in_write_transaction
from omoide.stores.sqlite.schema import SCHEMA_MIGRATIONS_TABLE, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema change: ``version`` (1, 2, 3, …), a short ``name`` and its SQL statements."""

    version: int
    name: str
    statements: tuple[str, ...]


V11_MEMORY_EVENTS: tuple[str, ...] = (
    """
    CREATE TABLE memory_events (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace_id  TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        memory_id     INTEGER NOT NULL,
        action        TEXT NOT NULL CHECK (action IN ('created', 'updated', 'merged', 'deleted')),
        actor         TEXT NOT NULL,
        content       TEXT,
        created_at    TEXT NOT NULL
    )
    """,
    "CREATE INDEX memory_events_memory_idx ON memory_events (workspace_id, user_id, memory_id, id)",
    # the memories stored before history began: one 'created' event with their content now
    "INSERT INTO memory_events (workspace_id, user_id, memory_id, action, actor, content, created_at) "
    "SELECT workspace_id, user_id, id, 'created', 'migration', content, updated_at FROM memories ORDER BY id",
)
"""Memory history (issue 19): one row per change of a memory, written in the change's transaction."""

V12_FILTER_INDEXES: tuple[str, ...] = (
    "CREATE INDEX sessions_workspace_channel_active_idx ON sessions (workspace_id, channel_id, last_active_at)",
    "CREATE INDEX sessions_workspace_user_active_idx ON sessions (workspace_id, user_id, last_active_at)",
    "CREATE INDEX knowledge_sources_origin_session_idx "
    "ON knowledge_sources (workspace_id, json_extract(metadata, '$.origin_session_id'))",
)
"""Listing a workspace's sessions by channel or user, and the sources archived from one session (the
inspector, ``omoide sessions list``), by index instead of a scan of the workspace."""

V13_WORKER_STATE: tuple[str, ...] = (
    """
    CREATE TABLE worker_state (
        kind        TEXT NOT NULL CHECK (kind IN ('runner', 'progress', 'error')),
        key         TEXT NOT NULL,
        payload     TEXT NOT NULL,
        updated_at  TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    ) WITHOUT ROWID
    """,
)
"""What the workers tell other processes (issue 17): heartbeats, job progress and recent errors, one row per
``(kind, key)`` with a JSON payload (:mod:`omoide.stores.worker_state`); replaces the JSON files beside the
database. Not backed up: it describes running processes, not data."""

V14_READER_VECTORS: tuple[str, ...] = (
    # the line reader's vector of each line (omoide.stores.units.READER_DIMENSIONS wide, whatever the
    # row's model), stored with the chunk's vector: little-endian float16, row-major, lines x 512
    # (half of float32: the reader's vectors are as wide as a large embedder's); NULL: not read yet.
    # No backfill: the column is NULL on every existing row (`omoide reindex --units` fills it).
    """
    ALTER TABLE chunk_embeddings ADD COLUMN reader_vectors BLOB
        CHECK (reader_vectors IS NULL OR (length(reader_vectors) > 0 AND length(reader_vectors) % (2 * 512) = 0))
    """,
    # what `reindex --units` and `omoide status` look for without reading the wide rows (the
    # generation trigger of migration 10 fires on updates of the vector and its keys only: writing
    # reader vectors leaves the cached search matrices valid)
    "CREATE INDEX chunk_embeddings_reader_missing_idx ON chunk_embeddings (model, chunk_id) WHERE reader_vectors IS NULL",
)
"""The line reader's vectors (``chunk_embeddings.reader_vectors``, :mod:`omoide.stores.units`) and the partial
index of the rows still without them."""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial schema: sessions, messages, knowledge, embeddings, memories, summaries, FTS5",
        V1,
    ),
    Migration(2, "sessions: persisted prompt compaction (context_summary, context_summary_seq)", V2),
    Migration(3, "knowledge: indexes for archiving, the embedding queue and listing sources", V3),
    Migration(4, "search: store_meta and per-workspace embedding generations", V4),
    Migration(5, "memories: per-user vector generations, owner-scoped full text, category index", V5),
    Migration(6, "api_keys: hashed API keys, one workspace each (HTTP API, MCP)", V6),
    Migration(7, "visibility: private knowledge and sessions with their members (backfilled from DM ids)", V7),
    Migration(8, "session messages: stored token counts", V8),
    Migration(9, "erasure: per-workspace erasure generation and erased users (hashed)", V9),
    Migration(10, "retrieval units: per-line search tokens on chunks, unit vectors with a chunk's vector", V10),
    Migration(11, "memory history: memory_events (each change of a memory, by whom)", V11_MEMORY_EVENTS),
    Migration(
        12, "indexes: sessions by channel / user, sources by the session they were archived from", V12_FILTER_INDEXES
    ),
    Migration(
        13, "workers: worker_state (heartbeats, job progress, recent errors for every process)", V13_WORKER_STATE
    ),
    Migration(
        14, "retrieval units: the line reader's vectors with a chunk's vector (reader_vectors)", V14_READER_VECTORS
    ),
)
LATEST_VERSION = MIGRATIONS[-1].version


def _has_migrations_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone()
    return row is not None


def applied_versions(conn: sqlite3.Connection) -> list[int]:
    """The versions recorded in ``schema_migrations``, ascending (empty for a new database)."""
    if not _has_migrations_table(conn):
        return []
    return [int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]


def current_version(conn: sqlite3.Connection) -> int:
    """The newest applied version (0 for a new database)."""
    versions = applied_versions(conn)
    return versions[-1] if versions else 0


def check_not_newer(version: int, *, where: str) -> None:
    """Raise :class:`MigrationError` when ``version`` is newer than this code knows.

    Raises:
        MigrationError: the database was migrated by a newer omoide.
    """
    if version > LATEST_VERSION:
        raise MigrationError(
            f"the database {where} has schema version {version}, but this omoide only knows versions up to "
            f"{LATEST_VERSION}: it was migrated by a newer omoide. Upgrade omoide (pip install -U omoide) "
            "or point OMOIDE_DATABASE_URL at another database",
            version=version,
            latest=LATEST_VERSION,
        )


def pending(conn: sqlite3.Connection, *, where: str = "") -> list[Migration]:
    """Migrations not yet applied, in order (read-only; for ``omoide migrate --dry-run``).

    Raises:
        MigrationError: the database is newer than this code.
    """
    done = applied_versions(conn)
    check_not_newer(done[-1] if done else 0, where=where)
    applied = set(done)
    return [m for m in MIGRATIONS if m.version not in applied]


def apply_pending(
    conn: sqlite3.Connection,
    *,
    where: str = "",
    migrations: tuple[Migration, ...] = MIGRATIONS,
    now: datetime | None = None,
) -> list[int]:
    """Apply every pending migration in one write transaction; return the versions applied.

    ``conn`` must be in autocommit mode (no open transaction). Safe to run from several
    processes at once (see the module docstring).

    Raises:
        MigrationError: the database is newer than this code.
        sqlite3.Error: the caller maps it (the transaction has been rolled back).
    """
    known = {m.version for m in migrations}
    # Fast path without the write lock: nothing to do in the common case.
    if known <= set(applied_versions(conn)):
        check_not_newer(current_version(conn), where=where)
        return []

    def run(c: sqlite3.Connection) -> list[int]:
        c.execute(SCHEMA_MIGRATIONS_TABLE)
        applied = {int(row[0]) for row in c.execute("SELECT version FROM schema_migrations")}
        check_not_newer(max(applied, default=0), where=where)
        stamp = format_ts(now or utcnow())
        done: list[int] = []
        for migration in migrations:
            if migration.version in applied:
                continue
            for statement in migration.statements:
                c.execute(statement)
            c.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, stamp),
            )
            done.append(migration.version)
        return done

    done = in_write_transaction(conn, run)
    for version in done:
        logger.info("sqlite_migration_applied version=%d where=%s", version, where)
    return done


__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "applied_versions",
    "apply_pending",
    "check_not_newer",
    "current_version",
    "pending",
]
