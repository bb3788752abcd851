"""Token counting throughput and ContextGuard overhead.

Usage:
    python benchmarks/context.py [--messages 100] [--calls 500]

* Token counting: tokens/s of ``TiktokenCounter.count`` (cl100k_base, offline) on
  Japanese and English chat text from the shared data sets.
* Guard overhead: the time ``ContextGuard.run`` adds to a call when no stage beyond 0 is
  needed (normalising the turns and counting the prompt), on a history of ``--messages``
  messages, with a model that answers instantly. Target: <= 2 ms per call at 100 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from _machine import machine, percentiles

from omoide.context import ContextGuard, PromptBudget
from omoide.models import Message
from omoide.providers.scripted import ScriptedChatModel
from omoide.providers.tokens import TiktokenCounter, get_token_counter

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def sample_texts() -> dict[str, list[str]]:
    ja = json.loads((DATA / "ja" / "realpersonachat_sample_dialogues.json").read_text(encoding="utf-8"))
    en = json.loads((DATA / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    ja_texts = [u["text"] for d in ja[:60] for u in d["utterances"]]
    en_texts = []
    for conv in en:
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                en_texts.extend(t["text"] for t in turns)
    return {"japanese": ja_texts[:2000], "english": en_texts[:2000]}


def bench_counting(texts: dict[str, list[str]]) -> None:
    counter = TiktokenCounter(cache_size=0)  # raw encoding speed, no memoisation
    print("\n== token counting (tiktoken cl100k_base, offline)")
    for lang, items in texts.items():
        chars = sum(len(t) for t in items)
        start = time.perf_counter()
        for _ in range(5):
            tokens = sum(counter.count(t) for t in items)
        elapsed = (time.perf_counter() - start) / 5
        print(
            f"{lang:<9} {len(items):>5} texts, {chars:>7,} chars, {tokens:>7,} tokens: "
            f"{tokens / elapsed:>12,.0f} tokens/s  ({elapsed / len(items) * 1e6:.1f} µs per message)"
        )


async def bench_guard(texts: dict[str, list[str]], n_messages: int, calls: int) -> None:
    counter = get_token_counter()
    mixed = [t for pair in zip(texts["japanese"], texts["english"], strict=False) for t in pair]
    history = [
        (Message.user if i % 2 == 0 else Message.assistant)(mixed[i % len(mixed)], seq=i + 1) for i in range(n_messages)
    ]
    model = ScriptedChatModel(lambda _request: "ok")
    guard = ContextGuard(model, counter, PromptBudget(200_000, 4_096))
    direct: list[float] = []
    guarded: list[float] = []
    for _ in range(calls):
        t = time.perf_counter()
        await model.complete(history, system="You are helpful.", max_tokens=4_096)
        direct.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = await guard.run(history, system="You are helpful.")
        guarded.append(time.perf_counter() - t)
    assert result.stage == 0
    d, g = percentiles(direct), percentiles(guarded)
    print(f"\n== guard overhead, {n_messages}-message history ({result.prompt_tokens:,} prompt tokens), {calls} calls")
    print(f"model call alone     p50 {d['p50']:.3f} ms  p95 {d['p95']:.3f} ms")
    print(f"through ContextGuard p50 {g['p50']:.3f} ms  p95 {g['p95']:.3f} ms")
    print(f"overhead             p50 {g['p50'] - d['p50']:.3f} ms  p95 {g['p95'] - d['p95']:.3f} ms (target <= 2 ms)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    texts = sample_texts()
    bench_counting(texts)
    await bench_guard(texts, args.messages, args.calls)


if __name__ == "__main__":
    asyncio.run(main())
