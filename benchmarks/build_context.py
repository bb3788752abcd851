"""``Memory.build_context`` latency end to end on SQLite with the hashing embedder.

Usage:
    python benchmarks/build_context.py [--memories 1000] [--calls 200] [--budget 8000] [--json]

Data: the shipped sample export (340 messages → 61 chunks, embedded), ``--memories``
memories of the asking user, and a 20-message session window. Each call recalls memories,
searches knowledge (hybrid), fetches the window and fits everything into ``--budget``
tokens; the hashing embedder keeps provider time out of the figure. The load average
(``os.getloadavg()``) is printed with the figures: the machine is shared.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, percentiles

from omoide import Memory, Message
from omoide.sample_data import discord_export_paths, questions, sample_guild
from omoide.settings import Settings

TOPICS = ["誕生日", "好きな食べ物", "勉強会", "リリース", "Python", "東京", "猫", "コーヒー", "映画", "旅行"]


async def bench(memories: int, calls: int, budget: int) -> dict[str, Any]:
    rng = random.Random(7)
    root = Path(tempfile.mkdtemp())
    settings = Settings(database_url=f"sqlite:///{root / 'ctx.db'}", embedder="hashing", transcripts_dir=root)
    guild, _ = sample_guild()
    async with Memory.open(settings) as mem:
        await mem.knowledge.import_export(discord_export_paths())
        await mem.knowledge.embed()
        for i in range(memories):
            await mem.remember(
                f"{rng.choice(TOPICS)}についてのメモ {i}: {rng.choice(TOPICS)}", workspace=guild, user="u1"
            )
        key = mem.session_key(platform="discord", workspace=guild, channel="c1", user="u1")
        for i in range(20):
            await mem.append(key, Message.user(f"質問 {i}: {rng.choice(TOPICS)}は？", author_id="u1"))
            await mem.append(key, Message.assistant(f"答え {i}"))
        qs = [q.question for q in questions()]
        await mem.build_context(key, qs[0], budget_tokens=budget)  # warm: vector matrices, tokenizer
        load_before = os.getloadavg()
        samples = []
        parts = 0
        for i in range(calls):
            t = time.perf_counter()
            built = await mem.build_context(key, qs[i % len(qs)], budget_tokens=budget)
            samples.append(time.perf_counter() - t)
            parts += len(built.parts)
        return {
            "memories": memories,
            "calls": calls,
            "budget": budget,
            "mean_parts": round(parts / calls, 1),
            "build_context_ms": {k: round(v, 2) for k, v in percentiles(samples).items()},
            "loadavg": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(bench(args.memories, args.calls, args.budget))
    if args.json:
        print(json.dumps({"machine": machine(), **result}, indent=2))
        return
    r = result["build_context_ms"]
    print(
        f"build_context (SQLite, hashing, {result['memories']} memories, budget {result['budget']}): "
        f"p50 {r['p50']:.2f} ms, p95 {r['p95']:.2f} ms (n={r['n']}, {result['mean_parts']} parts on average)"
    )
    print(f"load average before/after the calls: {result['loadavg']['before']} / {result['loadavg']['after']}")
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
