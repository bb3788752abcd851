"""The line reader's vectors (``chunk_embeddings.reader_vectors``) on the 3-node Citus cluster: the store
tests of ``tests/stores/test_store_reader_vectors.py`` (imported: one contract) on the cluster's ``store``,
the column and its partial index on every shard, and the migration that adds them run on a database whose
``chunk_embeddings`` is already distributed (an upgrade, not a fresh install)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))

from test_store_reader_vectors import (  # noqa: F401
    test_an_erasure_leaves_no_reader_vectors_of_the_erased_lines,
    test_bad_reader_vectors_are_refused_and_nothing_is_written,
    test_embeddings_missing_units_with_and_without_the_reader,
    test_knowledge_status_counts_missing_reader_vectors_per_model_and_workspace,
    test_many_pages_of_missing_readers_come_in_id_order,
    test_put_embeddings_writes_reader_vectors_and_fetch_reads_them,
    test_put_unit_vectors_writes_both_and_keeps_a_stored_reader,
    test_reader_vectors_at_the_edge_of_float16_are_stored,
)

from omoide.stores.postgres.migrations import MIGRATIONS
from omoide.stores.postgres.store import PostgresStore

_ON_SHARDS = """
SELECT result FROM run_command_on_shards('chunk_embeddings', $$
SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = '%1$s'::regclass AND attname = 'reader_vectors')
    || ' ' || (SELECT count(*) FROM pg_indexes WHERE tablename = '%1$s'
               AND indexdef LIKE '%%(model, chunk_id) WHERE (reader_vectors IS NULL)%%')
$$)
"""


async def _shards(conn: asyncpg.Connection) -> list[str]:
    return [str(r["result"]) for r in await conn.fetch(_ON_SHARDS)]


async def test_the_migration_adds_the_column_and_index_to_distributed_shards(citus_url: str) -> None:
    (migration,) = [m for m in MIGRATIONS if m.version == 15]
    conn = await asyncpg.connect(citus_url)
    try:
        assert await conn.fetchval(
            "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'chunk_embeddings'::regclass"
        )
        shards = await _shards(conn)
        assert shards and set(shards) == {"1 1"}, shards  # a fresh install: every shard has both
        # back to version 14 on the distributed table, then migrate as an upgrade would
        await conn.execute("DROP INDEX chunk_embeddings_reader_missing_idx")
        await conn.execute("ALTER TABLE chunk_embeddings DROP COLUMN reader_vectors")
        await conn.execute("DELETE FROM schema_migrations WHERE version = $1", migration.version)
        assert set(await _shards(conn)) == {"0 0"}
    finally:
        await conn.close()
    store: Any = PostgresStore(citus_url, migrate=False)
    assert await store.pending_migrations() == [migration.version]
    assert await store.migrate() == [migration.version]
    conn = await asyncpg.connect(citus_url)
    try:
        assert set(await _shards(conn)) == {"1 1"}
        for statement in migration.sql:  # again (an interrupted run, one by hand): nothing changes
            await conn.execute(statement)
        assert set(await _shards(conn)) == {"1 1"}
    finally:
        await conn.close()
