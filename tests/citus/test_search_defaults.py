"""HNSW settings as the database's defaults on Citus: a worker added later searches with them too.

When ``hnsw.iterative_scan`` / ``hnsw.ef_search`` are the database's defaults (``ALTER DATABASE …
SET`` on the coordinator, propagated to the workers), the store sends each vector search as one
statement, without the ``SET LOCAL`` transaction (``citus.workers_hnsw_ef_search``). If a worker
lacked them, a search routed there would silently return pgvector's default 40 rows for
``LIMIT 200``: this test adds a worker, moves the workspace's shards to it, and asks for 200.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from citus.conftest import own_cluster
from citus.test_routing import MODEL, _load
from omoide.settings import Settings
from omoide.stores.postgres import PostgresStore
from omoide.stores.postgres.citus import workers_hnsw_ef_search
from omoide.stores.search import SearchFilters


@pytest.fixture
def cluster_to_grow() -> Any:
    if os.environ.get("OMOIDE_TEST_CITUS_URL"):
        pytest.skip("adds a node: needs a cluster of its own (unset OMOIDE_TEST_CITUS_URL)")
    with own_cluster(prefix="omoide-citus-defaults-", spare_ports=1) as state:
        yield state


async def test_a_worker_added_later_searches_with_the_database_defaults(cluster_to_grow: Any, tmp_path: Path) -> None:
    state = cluster_to_grow
    url = str(state["url"])
    settings = Settings(database_url=url, transcripts_dir=tmp_path / "t", db_pool_max=2)
    async with PostgresStore(url, settings=settings, migrate=True) as store:
        _, vectors = await _load(store)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("ALTER DATABASE postgres SET hnsw.iterative_scan = relaxed_order")
        await conn.execute("ALTER DATABASE postgres SET hnsw.ef_search = 200")
        new_port = int(state["ports"][-1]) + 1
        grown = await asyncio.to_thread(state["script"].add_worker, state["base"], port=new_port)
        assert new_port in grown["ports"]
        await conn.execute("SELECT replicate_reference_tables()")  # what citus_rebalance_start does first
        shard = await conn.fetchval("SELECT get_shard_id_for_distribution_column('knowledge_chunks', 'g1')")
        host, port = await conn.fetchrow(
            "SELECT nodename, nodeport FROM pg_dist_shard_placement WHERE shardid = $1", shard
        )
        await conn.execute(
            "SELECT citus_move_shard_placement($1, $2, $3, $2, $4, shard_transfer_mode := 'block_writes')",
            shard,
            host,
            port,
            new_port,
        )
        assert await conn.fetchval("SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = $1", shard) == new_port
    finally:
        await conn.close()
    async with PostgresStore(url, settings=settings) as store:
        async with store.pool.acquire() as pooled:
            assert await workers_hnsw_ef_search(pooled) == 200  # the new worker included
        assert store._db.session_ef_search == 200  # so: one statement per search, no SET LOCAL
        ranked = await store.search.vector_ranking(model=MODEL, query=vectors[3], filters=SearchFilters("g1"), k=200)
    assert len(ranked) == 200
