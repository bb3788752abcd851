"""How should the SQLite store talk to SQLite from asyncio? aiosqlite vs one thread hop per operation.

Variants, all running the same SQL on a fresh WAL database file with the real omoide schema:

* ``threads``: :class:`omoide.stores.sqlite.SqliteStore` as shipped: stdlib :mod:`sqlite3`, each whole
  store operation is one synchronous function run in a thread (a single-thread executor for the
  writer connection, a pool of reader connections in their own executor): one hop per operation.
* ``aiosqlite``: aiosqlite connections (one writer guarded by an ``asyncio.Lock``, one reader),
  one thread hop per statement: an append is BEGIN IMMEDIATE, duplicate check, UPDATE … RETURNING,
  INSERT, COMMIT, i.e. five hops; a window load is one ``execute_fetchall``.
* ``inline``: the same synchronous functions called directly on the event loop thread. It blocks
  the loop, so it is not an option; it is the floor (SQLite + Python work, no thread hop).

Measured per variant and round (fresh database each time):

* ``append``: one append at a time (latency), ``--messages`` messages round-robin over ``--sessions``
  sessions, each with a platform message id (so the duplicate check runs);
* ``window``: ``history(window=20)`` of a random session (every session holds >= 20 messages);
* ``append_x20``: 20 tasks x 50 appends into one session at once; wall time / 1,000 appends.

Rounds alternate the variant order so background load on a shared machine hits each alike.

Run::

    .venv/bin/python benchmarks/sqlite_driver.py [--rounds 3] [--sessions 500] [--messages 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from omoide.keys import session_key
from omoide.models import Message, MessageId, SessionId, SessionKey
from omoide.settings import Settings
from omoide.stores.sqlite import SqliteStore
from omoide.stores.sqlite import _sessions as ops
from omoide.stores.sqlite._conn import connect, format_ts, in_write_transaction
from omoide.stores.sqlite.migrations import apply_pending

WINDOW = 20
TEXT = "今日は東京で打ち合わせ。andy が新しい検索の設計を説明してくれた。明日までに資料をまとめる。"


class Variant(Protocol):
    name: str

    async def open(self, path: Path) -> None: ...
    async def close(self) -> None: ...
    async def create(self, key: SessionKey) -> int: ...
    async def append(self, session_id: int, message: Message) -> None: ...
    async def history(self, session_id: int) -> list[Message]: ...


class Threads:
    """The shipped store."""

    name = "threads"

    async def open(self, path: Path) -> None:
        self.store = SqliteStore(f"sqlite:///{path}", settings=Settings(), migrate=True)
        await self.store.open()

    async def close(self) -> None:
        await self.store.close()

    async def create(self, key: SessionKey) -> int:
        return int((await self.store.sessions.get_or_create_session(key)).id)

    async def append(self, session_id: int, message: Message) -> None:
        await self.store.sessions.append_message(SessionId(session_id), message)

    async def history(self, session_id: int) -> list[Message]:
        return await self.store.sessions.history(SessionId(session_id), window=WINDOW)


class Inline:
    """The same functions on the event loop thread (blocks the loop: the floor, not an option)."""

    name = "inline"

    async def open(self, path: Path) -> None:
        self.conn = connect(str(path), busy_timeout_ms=5000)
        apply_pending(self.conn)

    async def close(self) -> None:
        self.conn.close()

    async def create(self, key: SessionKey) -> int:
        from omoide.models import utcnow

        return int(in_write_transaction(self.conn, lambda c: ops.get_or_create_session(c, key, utcnow())).id)

    async def append(self, session_id: int, message: Message) -> None:
        in_write_transaction(self.conn, lambda c: ops.append_message(c, session_id, message))

    async def history(self, session_id: int) -> list[Message]:
        return ops.history(self.conn, session_id, WINDOW)


class AioSqlite:
    """aiosqlite: one thread hop per statement."""

    name = "aiosqlite"

    async def open(self, path: Path) -> None:
        import aiosqlite

        conn = connect(str(path), busy_timeout_ms=5000)
        apply_pending(conn)
        conn.close()
        self.writer = await aiosqlite.connect(path, isolation_level=None)
        self.reader = await aiosqlite.connect(path, isolation_level=None)
        for c in (self.writer, self.reader):
            for pragma in ("busy_timeout = 5000", "foreign_keys = ON", "journal_mode = WAL", "synchronous = NORMAL"):
                await c.execute(f"PRAGMA {pragma}")
        self.lock = asyncio.Lock()

    async def close(self) -> None:
        await self.reader.close()
        await self.writer.close()

    async def create(self, key: SessionKey) -> int:
        from omoide.models import utcnow

        stamp = format_ts(utcnow())
        async with self.lock:
            await self.writer.execute(
                "INSERT INTO sessions (session_key, policy, platform, workspace_id, channel_id, user_id, "
                "last_active_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_key) DO NOTHING",
                (key.value, key.policy.value, key.platform, key.workspace, key.channel, key.user, stamp, stamp),
            )
            rows = await self.writer.execute_fetchall("SELECT id FROM sessions WHERE session_key = ?", (key.value,))
        return int(next(iter(rows))[0])

    async def append(self, session_id: int, message: Message) -> None:
        w = self.writer
        async with self.lock:
            await w.execute("BEGIN IMMEDIATE")
            try:
                if message.message_id is not None:
                    dup = await w.execute_fetchall(
                        f"SELECT {ops.MESSAGE_COLUMNS} FROM session_messages "
                        "WHERE workspace_id = (SELECT workspace_id FROM sessions WHERE id = ?) "
                        "AND platform_message_id = ?",
                        (session_id, message.message_id),
                    )
                    if dup:
                        ops.message_from_row(next(iter(dup)))
                        await w.execute("COMMIT")
                        return
                created_at = format_ts(message.created_at)
                bumped = await w.execute_fetchall(
                    "UPDATE sessions SET last_seq = last_seq + 1, version = version + 1, status = 'active', "
                    "last_active_at = max(last_active_at, ?) WHERE id = ? RETURNING last_seq, workspace_id",
                    (created_at, session_id),
                )
                seq, workspace_id = next(iter(bumped))
                cursor = await w.execute(
                    "INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, "
                    "author_name, is_bot, platform_message_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id,
                        workspace_id,
                        seq,
                        message.role,
                        message.content_json(),
                        message.author_id,
                        message.author_name,
                        int(message.is_bot),
                        message.message_id,
                        created_at,
                    ),
                )
                await w.execute("COMMIT")
            except BaseException:
                await w.execute("ROLLBACK")
                raise
        assert cursor.lastrowid is not None
        message.with_stored(id=MessageId(cursor.lastrowid), session_id=SessionId(session_id), seq=seq)

    async def history(self, session_id: int) -> list[Message]:
        rows = list(
            await self.reader.execute_fetchall(
                f"SELECT {ops.MESSAGE_COLUMNS} FROM session_messages WHERE session_id = ?1 "
                "AND seq > (SELECT window_start_seq FROM sessions WHERE id = ?1) ORDER BY seq DESC LIMIT ?2",
                (session_id, WINDOW),
            )
        )
        rows.reverse()
        return [ops.message_from_row(r) for r in rows]


def pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def run_round(variant: Variant, path: Path, sessions: int, messages: int, loads: int) -> dict[str, list[float]]:
    await variant.open(path)
    try:
        ids = [
            await variant.create(session_key(platform="bench", workspace="w1", channel=f"c{i}", user="u"))
            for i in range(sessions)
        ]
        append: list[float] = []
        for n in range(messages):
            msg = Message.user(f"{TEXT} #{n}", author_id="u", author_name="User", message_id=f"m{n}")
            t0 = time.perf_counter()
            await variant.append(ids[n % sessions], msg)
            append.append(time.perf_counter() - t0)
        rng = random.Random(7)
        window: list[float] = []
        for _ in range(loads):
            sid = rng.choice(ids)
            t0 = time.perf_counter()
            got = await variant.history(sid)
            window.append(time.perf_counter() - t0)
            assert len(got) == WINDOW, len(got)
        hot = await variant.create(session_key(platform="bench", workspace="w1", channel="hot", user="u"))

        async def writer(w: int) -> None:
            for i in range(50):
                await variant.append(hot, Message.user(f"{w}:{i}", message_id=f"x{w}:{i}"))

        t0 = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(20)))
        x20 = [(time.perf_counter() - t0) / 1000]
        return {"append": append, "window": window, "append_x20": x20}
    finally:
        await variant.close()


def machine() -> str:
    return (
        f"{platform.platform()} | {os.cpu_count()} CPUs | Python {platform.python_version()} | "
        f"SQLite {sqlite3.sqlite_version}"
    )


async def main_async(rounds: int, sessions: int, messages: int, loads: int) -> None:
    variants: list[Variant] = [Threads(), Inline()]
    try:
        import aiosqlite

        variants.insert(1, AioSqlite())
        aio = f"aiosqlite {aiosqlite.__version__}"
    except ImportError:
        aio = "aiosqlite not installed: skipped (pip install aiosqlite)"
    print(f"machine: {machine()} | {aio}")
    print(f"rounds: {rounds}; per round {sessions} sessions, {messages} appends, {loads} window loads, 20x50 appends\n")
    results: dict[str, dict[str, list[float]]] = {v.name: {} for v in variants}
    with tempfile.TemporaryDirectory(prefix="omoide-sqlite-bench-") as tmp:
        for r in range(rounds):
            order = variants if r % 2 == 0 else list(reversed(variants))
            for v in order:
                got = await run_round(v, Path(tmp) / f"{v.name}-{r}.db", sessions, messages, loads)
                for op, samples in got.items():
                    results[v.name].setdefault(op, []).extend(samples)
    print(
        f"{'variant':<10} {'append p50':>11} {'append p95':>11} {'window p50':>11} {'window p95':>11} {'x20 per append':>15}"
    )
    for name, ops_ in results.items():
        print(
            f"{name:<10} {pct(ops_['append'], 0.5):>8.3f} ms {pct(ops_['append'], 0.95):>8.3f} ms "
            f"{pct(ops_['window'], 0.5):>8.3f} ms {pct(ops_['window'], 0.95):>8.3f} ms "
            f"{statistics.median(ops_['append_x20']) * 1000:>12.3f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=2_000)
    args = parser.parse_args()
    if args.messages < args.sessions * WINDOW:
        parser.error(f"--messages must be at least --sessions x {WINDOW} so every window is full")
    asyncio.run(main_async(args.rounds, args.sessions, args.messages, args.loads))


if __name__ == "__main__":
    main()
