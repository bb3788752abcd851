"""A new connection to a Citus coordinator costs what it costs on one server (asyncpg's type look-up).

asyncpg looks up a statement's non-core types once per connection; on a Citus node its catalog
query scanned ``pg_class`` through Citus's shard-hiding filter once per composite type — seconds
per new pooled connection (``omoide.stores.postgres.citus.CONNECTION_SETUP``).
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
from asyncpg import introspection

from citus.test_routing import MODEL, _load
from omoide.settings import Settings
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres.citus import prepare_connection, workers_hnsw_ef_search
from omoide.stores.search import SearchFilters

SHARD_FILTER = "relation_is_a_known_shard"


async def _type_lookup_plan(conn: asyncpg.Connection) -> str:
    """``EXPLAIN`` of asyncpg's type look-up for ``bigint[]`` (oid 1016), the first a search needs."""
    sql = introspection.INTRO_LOOKUP_TYPES_13.replace("$1", "'{1016}'::oid[]")
    return "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + sql))


async def test_a_prepared_connection_looks_types_up_without_the_shard_filter(citus_url: str) -> None:
    conn = await asyncpg.connect(citus_url)
    try:
        assert SHARD_FILTER in await _type_lookup_plan(conn)  # Citus's default: the cause
        await prepare_connection(conn)
        assert SHARD_FILTER not in await _type_lookup_plan(conn)
        assert await conn.fetchval("SELECT $1::bigint[]", [1, 2]) == [1, 2]
    finally:
        await conn.close()


async def test_a_prepared_connection_reads_the_distributed_tables(citus_url: str) -> None:
    """The setting changes catalog listings only: the distributed tables read through the coordinator."""
    conn = await asyncpg.connect(citus_url)
    try:
        await prepare_connection(conn)
        assert await conn.fetchval("SELECT count(*) FROM knowledge_chunks WHERE workspace_id = 'g1'") == 0
        assert await conn.fetchval("SHOW citus.override_table_visibility") == "off"
    finally:
        await conn.close()


async def test_workers_hnsw_defaults_let_a_search_be_one_statement(citus_url: str, tmp_path: Path) -> None:
    """``ALTER DATABASE … SET`` on the coordinator reaches the workers (Citus propagates it); once
    every worker's sessions start with the search's settings, the one-statement search (no
    ``SET LOCAL`` transaction) still gets all ``k`` rows through the shard's HNSW index."""
    conn = await asyncpg.connect(citus_url)
    database = await conn.fetchval("SELECT current_database()")
    try:
        assert await workers_hnsw_ef_search(conn) is None  # pgvector's defaults: no iterative scan
        await conn.execute(f'ALTER DATABASE "{database}" SET hnsw.iterative_scan = relaxed_order')
        await conn.execute(f'ALTER DATABASE "{database}" SET hnsw.ef_search = 200')
        fresh = await asyncpg.connect(citus_url)  # new sessions (and new worker connections) see them
        try:
            assert await workers_hnsw_ef_search(fresh) == 200
        finally:
            await fresh.close()
        settings = Settings(database_url=citus_url, transcripts_dir=tmp_path / "t", db_pool_max=2)
        async with PostgresStore(citus_url, settings=settings) as store:
            _, vectors = await _load(store)
            async with store.pool.acquire() as pooled:
                ranked = await sops.vector_ranking(
                    pooled,
                    MODEL,
                    vectors[3],
                    SearchFilters("g1"),
                    200,
                    ef_search=200,
                    schema=None,
                    session_ef_search=200,
                )
        assert len(ranked) == 200
    finally:
        await conn.execute(f'ALTER DATABASE "{database}" RESET hnsw.iterative_scan')
        await conn.execute(f'ALTER DATABASE "{database}" RESET hnsw.ef_search')
        await conn.close()
