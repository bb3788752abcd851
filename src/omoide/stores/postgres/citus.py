"""Citus (distributed PostgreSQL): detect it and distribute omoide's tables by ``workspace_id``.

Every omoide query is scoped to one workspace, so ``workspace_id`` is the distribution
column: a workspace's sessions, messages, sources, chunks, embeddings, memories and
summaries live in one shard group (the tables are *colocated*), and a query filtered by
``workspace_id = $n`` is a *router* query, sent whole to the one worker that holds it.
``docs/scale.md`` explains the layout.

:func:`distribute_tables` runs at the end of every migration (same transaction, same
advisory lock as :func:`~omoide.stores.postgres.migrations.apply_migrations`), only when
the ``citus`` extension is installed in the database, and is idempotent: a table already in
``pg_dist_partition`` is left alone, so a later migration that adds a table only gets that
table distributed. A single-node PostgreSQL database is never touched by this module.

What changes on Citus (and only there):

* Citus requires every primary key, unique constraint and foreign key of a distributed
  table to include the distribution column. Migration 1 keyed rows by ``id`` alone, so the
  first distribution appends ``workspace_id`` to those keys (:data:`KEY_REWRITE`), keeping
  each constraint's *name* and its leading columns: ``ON CONFLICT ON CONSTRAINT <name>``
  then works on both backends, and lookups by ``id`` keep using the index.
* ``store_meta`` (global key/value facts) and ``api_keys`` (found by the token's hash,
  before the workspace is known) have no workspace scope: they become *reference* tables,
  copied to every node, so reads are local everywhere and joins with them push down.
* ``schema_migrations`` stays a plain table on the coordinator: only the migrator reads it.

:func:`prepare_connection` is for every pooled connection to a Citus node: it stops Citus from
hiding its shards in that session's catalog scans, which made asyncpg's per-connection type
look-ups take seconds (see :data:`CONNECTION_SETUP`).
"""

from __future__ import annotations

import json
import logging

import asyncpg

logger = logging.getLogger(__name__)

DISTRIBUTION_COLUMN = "workspace_id"
COLOCATION_ANCHOR = "sessions"

DISTRIBUTED_TABLES: tuple[str, ...] = (
    "sessions",
    "session_messages",
    "knowledge_sources",
    "knowledge_chunks",
    "chunk_embeddings",
    "memories",
    "memory_embeddings",
    "summaries",
    "erasure_state",
    "erased_users",
    "memory_events",
)
"""Workspace-scoped tables, distributed by ``workspace_id`` and colocated with ``sessions``;
parents before children (foreign keys). A table missing from the database is skipped."""

REFERENCE_TABLES: tuple[str, ...] = ("store_meta", "api_keys")
"""Tables without a workspace scope, replicated to every node."""

KEY_REWRITE = """
ALTER TABLE session_messages DROP CONSTRAINT IF EXISTS session_messages_session_id_fkey;
ALTER TABLE knowledge_chunks DROP CONSTRAINT IF EXISTS knowledge_chunks_source_id_fkey;
ALTER TABLE chunk_embeddings DROP CONSTRAINT IF EXISTS chunk_embeddings_chunk_id_fkey;
ALTER TABLE memory_embeddings DROP CONSTRAINT IF EXISTS memory_embeddings_memory_id_fkey;

ALTER TABLE sessions
    DROP CONSTRAINT sessions_pkey, ADD CONSTRAINT sessions_pkey PRIMARY KEY (id, workspace_id),
    DROP CONSTRAINT sessions_session_key_key,
    ADD CONSTRAINT sessions_session_key_key UNIQUE (session_key, workspace_id);
ALTER TABLE session_messages
    DROP CONSTRAINT session_messages_pkey, ADD CONSTRAINT session_messages_pkey PRIMARY KEY (id, workspace_id),
    DROP CONSTRAINT session_messages_session_seq,
    ADD CONSTRAINT session_messages_session_seq UNIQUE (session_id, seq, workspace_id);
ALTER TABLE knowledge_sources
    DROP CONSTRAINT knowledge_sources_pkey, ADD CONSTRAINT knowledge_sources_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE knowledge_chunks
    DROP CONSTRAINT knowledge_chunks_pkey, ADD CONSTRAINT knowledge_chunks_pkey PRIMARY KEY (id, workspace_id),
    DROP CONSTRAINT knowledge_chunks_source_index,
    ADD CONSTRAINT knowledge_chunks_source_index UNIQUE (source_id, chunk_index, workspace_id);
ALTER TABLE chunk_embeddings
    DROP CONSTRAINT chunk_embeddings_pkey,
    ADD CONSTRAINT chunk_embeddings_pkey PRIMARY KEY (chunk_id, model, workspace_id);
ALTER TABLE memories
    DROP CONSTRAINT memories_pkey, ADD CONSTRAINT memories_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE memory_embeddings
    DROP CONSTRAINT memory_embeddings_pkey,
    ADD CONSTRAINT memory_embeddings_pkey PRIMARY KEY (memory_id, model, workspace_id);
ALTER TABLE summaries
    DROP CONSTRAINT summaries_pkey, ADD CONSTRAINT summaries_pkey PRIMARY KEY (id, workspace_id);

ALTER TABLE session_messages ADD CONSTRAINT session_messages_session_id_fkey
    FOREIGN KEY (session_id, workspace_id) REFERENCES sessions (id, workspace_id) ON DELETE CASCADE;
ALTER TABLE knowledge_chunks ADD CONSTRAINT knowledge_chunks_source_id_fkey
    FOREIGN KEY (source_id, workspace_id) REFERENCES knowledge_sources (id, workspace_id) ON DELETE CASCADE;
ALTER TABLE chunk_embeddings ADD CONSTRAINT chunk_embeddings_chunk_id_fkey
    FOREIGN KEY (chunk_id, workspace_id) REFERENCES knowledge_chunks (id, workspace_id) ON DELETE CASCADE;
ALTER TABLE memory_embeddings ADD CONSTRAINT memory_embeddings_memory_id_fkey
    FOREIGN KEY (memory_id, workspace_id) REFERENCES memories (id, workspace_id) ON DELETE CASCADE;
"""
"""Migration 1's keys with ``workspace_id`` appended (same names, same leading columns)."""


CONNECTION_SETUP = "SET citus.override_table_visibility TO off"
"""Run once on each new connection to a Citus node (session setting, this node only).

Citus hides shard tables from a session by adding ``relation_is_a_known_shard(oid)`` to every
scan of ``pg_class`` (``citus.override_table_visibility``, on by default). asyncpg looks up the
types of a statement's parameters and columns once per connection (``bigint[]`` is the first
one a search meets), with a catalog query that scans ``pg_class`` once per composite type:
measured on the local 3-node cluster, 2.2–3.6 s for that first ``bigint[]`` statement of each new
connection on the coordinator (26–67 ms on one PostgreSQL server), i.e. the first searches
after the pool opens or replaces an idle connection wait seconds; with the setting off the
look-up costs what it costs on one server. Shards then show in this session's catalog
listings: omoide's pooled statements never list the catalog (they name their relations), and
the backup's table listing runs on its own connection."""


async def prepare_connection(conn: asyncpg.Connection) -> None:
    """Set up a new pooled connection to a Citus node (:data:`CONNECTION_SETUP`)."""
    await conn.execute(CONNECTION_SETUP)


WORKERS_HNSW_SQL = """
SELECT success, result FROM run_command_on_workers($$
SELECT current_setting('hnsw.iterative_scan', true) || ' ' || current_setting('hnsw.ef_search', true)
$$)
"""


async def workers_hnsw_ef_search(conn: asyncpg.Connection) -> int | None:
    """The ``hnsw.ef_search`` every worker's new sessions start with, when they all run iterative
    scans (``hnsw.iterative_scan = relaxed_order``) with the same value; else ``None``.

    A vector search on Citus sets its HNSW settings in a transaction (``SET LOCAL``, propagated:
    ``BEGIN`` + settings + query + ``COMMIT``, three commands to the worker) because a
    coordinator session's settings do not reach the workers. When the database's defaults
    already are the search's (``ALTER DATABASE … SET`` on the coordinator: Citus 14 propagates
    it to the workers; ``docs/scale.md``), the search can be one statement, as on one server:
    measured on the local cluster, 0.6–0.7 ms less coordinator CPU, 0.3–0.4 ms less worker CPU
    and 1.1 ms less client CPU per search. Read at store open: a worker added later must get
    the same defaults (``ALTER DATABASE`` again) before shards move to it."""
    values: set[str] = set()
    for row in await conn.fetch(WORKERS_HNSW_SQL):
        scan, _, ef = str(row["result"] or "").partition(" ")
        if not row["success"] or scan != "relaxed_order":
            return None
        values.add(ef)
    if len(values) != 1:
        return None
    value = values.pop()
    return int(value) if value.isdigit() else None


async def citus_installed(conn: asyncpg.Connection) -> bool:
    """Whether the ``citus`` extension is installed in this database."""
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"))


async def _distributed(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT logicalrelid::regclass::text AS name FROM pg_dist_partition")
    return {str(r["name"]) for r in rows}


async def _exists(conn: asyncpg.Connection, table: str) -> bool:
    return await conn.fetchval("SELECT to_regclass($1)", table) is not None


async def distribute_tables(conn: asyncpg.Connection) -> list[str]:
    """Distribute (or replicate) every omoide table Citus does not manage yet; return their names.

    A no-op returning ``[]`` without Citus or when everything is distributed already. Runs
    inside the caller's migration transaction (after its advisory lock), so two processes
    never distribute at once and a failure leaves the tables as they were.
    """
    if not await citus_installed(conn):
        return []
    done = await _distributed(conn)
    wanted = [t for t in (*REFERENCE_TABLES, *DISTRIBUTED_TABLES) if t not in done and await _exists(conn, t)]
    if not wanted:
        return []
    # a transaction that creates shards over several connections and then uses them must
    # not switch between parallel and sequential execution halfway
    await conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    if COLOCATION_ANCHOR not in done:
        await conn.execute(KEY_REWRITE)
    for table in wanted:
        if table in REFERENCE_TABLES:
            await conn.execute("SELECT create_reference_table($1)", table)
        elif table == COLOCATION_ANCHOR:
            await conn.execute("SELECT create_distributed_table($1, $2)", table, DISTRIBUTION_COLUMN)
        else:
            await conn.execute(
                "SELECT create_distributed_table($1, $2, colocate_with => $3)",
                table,
                DISTRIBUTION_COLUMN,
                COLOCATION_ANCHOR,
            )
    logger.info("citus_tables_distributed", extra={"store": "postgresql", "tables": wanted})
    return wanted


def local_shards_sql(table: str, *, joins: str = "") -> str:
    """``FROM … WHERE …`` over the shards of ``table`` placed on the node that runs it: ``d`` its
    ``pg_dist_shard`` row, ``c`` the shard's ``pg_class`` row (``joins`` go between the two
    clauses). Sent to every node with ``run_command_on_all_nodes``, where no parameter reaches:
    ``table`` must be a constant of the code."""
    return (
        "FROM pg_dist_shard d JOIN pg_dist_placement p ON p.shardid = d.shardid\n"
        "JOIN pg_class c ON c.oid = to_regclass(shard_name(d.logicalrelid, d.shardid))\n"
        f"{joins}"
        f"WHERE d.logicalrelid = '{table}'::regclass AND p.groupid = (SELECT groupid FROM pg_dist_local_group)"
    )


SHARD_ROWS_SQL = f"""
SELECT result FROM run_command_on_all_nodes($node$
SELECT coalesce(json_object_agg(d.shardid, c.reltuples), '{{}}')::text
{local_shards_sql("chunk_embeddings")}
$node$) WHERE success
"""
"""Each ``chunk_embeddings`` shard's planner row count, one command per node (each node lists the
placements it holds: the coordinator's own table is an empty shell, ``reltuples`` 0)."""


async def shard_rows(conn: asyncpg.Connection) -> dict[int, float]:
    """``chunk_embeddings``' rows per shard id (``reltuples``; ≤ 0 for a shard never analysed)."""
    out: dict[int, float] = {}
    for record in await conn.fetch(SHARD_ROWS_SQL):
        for shard, rows in json.loads(record["result"] or "{}").items():
            out[int(shard)] = max(out.get(int(shard), -1.0), float(rows))
    return out


async def shard_of(conn: asyncpg.Connection, workspace_id: str) -> int:
    """The id of the ``chunk_embeddings`` shard holding ``workspace_id`` (coordinator metadata, no worker)."""
    return int(
        await conn.fetchval("SELECT get_shard_id_for_distribution_column('chunk_embeddings', $1::text)", workspace_id)
    )


__all__ = [
    "COLOCATION_ANCHOR",
    "CONNECTION_SETUP",
    "DISTRIBUTED_TABLES",
    "DISTRIBUTION_COLUMN",
    "KEY_REWRITE",
    "REFERENCE_TABLES",
    "SHARD_ROWS_SQL",
    "WORKERS_HNSW_SQL",
    "citus_installed",
    "distribute_tables",
    "local_shards_sql",
    "prepare_connection",
    "shard_of",
    "shard_rows",
    "workers_hnsw_ef_search",
]
