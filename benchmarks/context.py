"""Token counting throughput and ContextGuard overhead.

Usage:
    python benchmarks/context.py [--messages 100] [--calls 300] [--mode warm|cold|restart|chat|all] [--window 200000]

* Token counting: tokens/s of ``TiktokenCounter.count`` (cl100k_base, offline) on
  Japanese and English chat text from the shared data sets.
* Guard overhead: the time ``ContextGuard.run`` adds to a call when no stage beyond 0 is
  needed (normalising the turns and counting the prompt), on a history of ``--messages``
  messages, with a model that answers instantly. Target: <= 2 ms per call at 100 messages.
  Modes (the token counter memoises per-text counts, so they differ in memo hits):

  - ``warm``: the same history every call (every text is a memo hit: the best case);
  - ``cold``: fresh texts every call, built by the caller (no memo hit, no stored count:
    the worst case, e.g. a caller handing the guard its own history);
  - ``restart``: fresh texts every call, loaded from a real SQLite session store with a
    fresh counter (no memo hit): the first turn of ``Memory.chat`` after a restart. The
    store counted each message once when it was appended (``token_count``), so the
    loaded blocks carry their counts and nothing is encoded again;
  - ``chat``: the realistic case: the window slides by two new messages (a user turn and
    its answer) per call, so two texts are new and the rest were counted last turn.

  With a large window (``--window 200000``, a Claude-sized model) the counter's cheap
  upper bound (UTF-8 bytes) already proves the prompt fits and no text is encoded before
  sending; with a small one (``--window 8192``) every prompt is counted exactly, and the
  memo is what keeps ``warm`` and ``chat`` cheap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from _machine import machine, percentiles

from omoide.context import ContextGuard, PromptBudget
from omoide.keys import session_key
from omoide.models import Message
from omoide.providers.scripted import ScriptedChatModel
from omoide.providers.tokens import TiktokenCounter
from omoide.settings import Settings
from omoide.stores.sqlite import SqliteStore

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MODES = ("warm", "cold", "restart", "chat")


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


def conversation(texts: dict[str, list[str]], length: int, tag: str) -> list[Message]:
    """``length`` alternating user/assistant messages, each text unique (``tag`` + position)."""
    mixed = [t for pair in zip(texts["japanese"], texts["english"], strict=False) for t in pair]
    return [
        (Message.user if i % 2 == 0 else Message.assistant)(f"{mixed[i % len(mixed)]} ({tag}{i})", seq=i + 1)
        for i in range(length)
    ]


async def stored_histories(texts: dict[str, list[str]], n_messages: int, calls: int) -> list[list[Message]]:
    """Fresh conversations appended to a SQLite session store and read back as windows."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(f"sqlite:///{tmp}/context.db", settings=Settings(), migrate=True)
        await store.open()
        try:
            for call in range(calls):
                session = await store.sessions.get_or_create_session(
                    session_key(platform="bench", workspace="bench", channel=f"c{call}", user="u")
                )
                for message in conversation(texts, n_messages, f"r{call}-"):
                    await store.sessions.append_message(session.id, message)
                out.append(await store.sessions.history(session.id, window=n_messages))
        finally:
            await store.close()
    return out


async def histories(texts: dict[str, list[str]], mode: str, n_messages: int, calls: int) -> list[list[Message]]:
    """The history each call sends, built before timing."""
    if mode == "restart":
        return await stored_histories(texts, n_messages, calls)
    if mode == "warm":
        same = conversation(texts, n_messages, "w")
        return [same] * calls
    if mode == "cold":
        return [conversation(texts, n_messages, f"c{call}-") for call in range(calls)]
    if mode == "chat":
        whole = conversation(texts, n_messages + 2 * calls, "s")
        return [whole[2 * call : 2 * call + n_messages] for call in range(calls)]
    raise ValueError(mode)


async def bench_guard(
    texts: dict[str, list[str]], n_messages: int, calls: int, mode: str, window: int
) -> dict[str, float]:
    counter = TiktokenCounter()  # a fresh memo per mode, as in a new process
    model = ScriptedChatModel(lambda _request: "ok")
    guard = ContextGuard(model, counter, PromptBudget(window, min(4_096, window // 4)))
    prompts = await histories(texts, mode, n_messages, calls)
    if mode not in ("cold", "restart"):  # the turn before the first timed one was already counted
        counter.count_messages(prompts[0])
    direct: list[float] = []
    guarded: list[float] = []
    tokens = 0
    for history in prompts:
        t = time.perf_counter()
        await model.complete(history, system="You are helpful.", max_tokens=4_096)
        direct.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = await guard.run(history, system="You are helpful.")
        guarded.append(time.perf_counter() - t)
        assert result.stage == 0
        tokens = max(tokens, result.prompt_tokens)
    d, g = percentiles(direct), percentiles(guarded)
    over = {"p50": g["p50"] - d["p50"], "p95": g["p95"] - d["p95"]}
    verdict = "ok" if over["p50"] <= 2.0 else "OVER TARGET"
    print(
        f"{mode:<7} {n_messages}-message history (<= {tokens:,} prompt tokens), {calls} calls: "
        f"guard p50 {g['p50']:.3f} ms  p95 {g['p95']:.3f} ms | model alone p50 {d['p50']:.3f} ms | "
        f"overhead p50 {over['p50']:.3f} ms  p95 {over['p95']:.3f} ms (target <= 2 ms: {verdict})"
    )
    return over


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--mode", choices=[*MODES, "all"], default="all")
    parser.add_argument("--window", type=int, default=200_000, help="the model's context window")
    parser.add_argument("--skip-counting", action="store_true", help="only the guard overhead")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    texts = sample_texts()
    if not args.skip_counting:
        bench_counting(texts)
    print(f"\n== ContextGuard overhead per call, no stage beyond 0, {args.window:,}-token window")
    for mode in MODES if args.mode == "all" else (args.mode,):
        await bench_guard(texts, args.messages, args.calls, mode, args.window)
    print("load average after (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    asyncio.run(main())
