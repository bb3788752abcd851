"""JSONL transcript store: append latency (fsync off/on) and replay time of a 10k-record session.

Usage:
    python benchmarks/transcripts.py
"""

import asyncio
import tempfile
import time
from pathlib import Path

from _machine import machine, percentiles

from omoide.transcripts import (
    TranscriptStore,
    assistant_record,
    to_openai_messages,
    tool_result_record,
    tool_use_record,
    user_record,
)


async def appends(fsync: bool, n: int) -> dict:
    store = TranscriptStore(Path(tempfile.mkdtemp()), fsync=fsync)
    s = await store.create_session("bench")
    samples = []
    for i in range(n):
        t = time.perf_counter()
        await store.append_user("bench", s.id, f"message {i} " + "x" * 200)
        samples.append(time.perf_counter() - t)
    return percentiles(samples)


async def replay(n: int) -> dict:
    store = TranscriptStore(Path(tempfile.mkdtemp()))
    s = await store.create_session("bench")
    recs = []
    for i in range(n // 4):
        recs += [
            user_record(f"q{i} " + "x" * 200),
            assistant_record(f"a{i}"),
            tool_use_record(f"t{i}", "f", {"i": i}),
            tool_result_record(f"t{i}", "r" * 200),
        ]
    await store.extend("bench", s.id, recs)
    out = {}
    for name, fn in [
        ("records()", lambda: store.records("bench", s.id)),
        ("history()", lambda: store.sessions.history("bench", s.id)),
    ]:
        samples = []
        for _ in range(5):
            t = time.perf_counter()
            await fn()
            samples.append(time.perf_counter() - t)
        out[name] = min(samples) * 1000
    records = await store.records("bench", s.id)
    t = time.perf_counter()
    to_openai_messages(records)
    out["to_openai_messages"] = (time.perf_counter() - t) * 1000
    return out


async def main():
    print(machine())
    print("append, fsync=False, 2000:", {k: round(v, 3) for k, v in (await appends(False, 2000)).items()})
    print("append, fsync=True, 300:", {k: round(v, 3) for k, v in (await appends(True, 300)).items()})
    print("replay 10k records (ms):", {k: round(v, 1) for k, v in (await replay(10_000)).items()})


if __name__ == "__main__":
    asyncio.run(main())
