"""SQLite writers on competing connections: several stores, and several processes, on one file.

The conformance suite's ``test_concurrent_writers_lose_nothing`` runs every writer through
one store, whose single writer thread serialises them. Here the writers hold different
write connections (one per :class:`SqliteStore`, one per process), so only SQLite's own
lock — ``BEGIN IMMEDIATE`` waiting up to ``db_busy_timeout_ms`` — keeps them apart. The
default busy timeout (5 s) is used on purpose: it must be enough. (Measured on the 2-core
dev machine: with 4 write connections the slowest append waited 0.15 s, with 20 about
1.3 s — SQLite's busy handler polls, it does not queue, so waits grow with connections.)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import textwrap
import time
from contextlib import AsyncExitStack
from pathlib import Path

from omoide.keys import session_key
from omoide.models import Message
from omoide.settings import Settings
from omoide.stores.sqlite import SqliteStore

KEY = session_key(platform="discord", workspace="g1", channel="c1", user="crowd")


def _check_session(stored: list[Message], writers: list[str], per_writer: int) -> None:
    """Every message is there once, ``seq`` is 1..N without a gap, each writer's order is kept."""
    total = len(writers) * per_writer
    assert len(stored) == total
    assert [m.seq for m in stored] == list(range(1, total + 1))
    assert len({m.id for m in stored}) == total
    for writer in writers:
        mine = [int(m.text.split(":")[1]) for m in stored if m.author_id == writer]
        assert mine == list(range(per_writer)), f"writer {writer} lost or reordered messages"


async def test_writers_on_several_stores_lose_nothing(tmp_path: Path) -> None:
    """4 stores (4 write connections) x 5 writers x 100 messages into one session: exactly 2,000."""
    url = f"sqlite:///{tmp_path / 'omoide.db'}"
    settings = Settings(db_busy_timeout_ms=60_000)  # order and completeness, not lock wait times, on a loaded machine
    stores_count, writers_per_store, per_writer = 4, 5, 100
    async with AsyncExitStack() as stack:
        stores = [
            await stack.enter_async_context(SqliteStore(url, settings=settings, migrate=True))
            for _ in range(stores_count)
        ]
        # every store races to create the session too: one row
        sessions = await asyncio.gather(*(store.sessions.get_or_create_session(KEY) for store in stores))
        assert len({s.id for s in sessions}) == 1
        session = sessions[0]

        async def writer(store: SqliteStore, name: str) -> None:
            for i in range(per_writer):
                await store.sessions.append_message(session.id, Message.user(f"{name}:{i}", author_id=name))

        names = [f"s{s}w{w}" for s in range(stores_count) for w in range(writers_per_store)]
        await asyncio.gather(
            *(writer(stores[s], f"s{s}w{w}") for s in range(stores_count) for w in range(writers_per_store))
        )

        total = stores_count * writers_per_store * per_writer
        for store in stores:  # every store reads the same, complete session
            _check_session(await store.sessions.messages(session.id), names, per_writer)
            after = await store.sessions.get_session_by_id(session.id)
            assert after is not None
            assert after.last_seq == total
            assert after.version == session.version + total
            assert [m.seq for m in await store.sessions.history(session.id, window=20)] == list(
                range(total - 19, total + 1)
            )


_APPEND_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, pathlib, sys, time

    from omoide.keys import session_key
    from omoide.models import Message
    from omoide.settings import Settings
    from omoide.stores.sqlite import SqliteStore

    url, go, ready, prefix, writers, per_writer, processes = sys.argv[1:8]
    writers, per_writer, processes = int(writers), int(per_writer), int(processes)
    here = pathlib.Path(go).parent
    key = session_key(platform="discord", workspace="g1", channel="c1", user="crowd")

    async def main() -> None:
        # a long lock wait: on a loaded machine (CI building venvs beside it) eight writers in two
        # processes can queue for the write lock past the 5 s default; this test is about order
        # and completeness, not wait times
        async with SqliteStore(url, settings=Settings(db_busy_timeout_ms=60_000), migrate=True) as store:
            pathlib.Path(ready).touch()
            while not pathlib.Path(go).exists():
                time.sleep(0.005)
            session = await store.sessions.get_or_create_session(key)

            async def writer(name: str) -> None:
                for i in range(per_writer):
                    await store.sessions.append_message(session.id, Message.user(f"{name}:{i}", author_id=name))
                    if i == 0:
                        # rendezvous: every writer of every process has written once before any goes
                        # on, so the rest is written by both processes at once even if one started late
                        (here / f"started-{name}").touch()
                        while len(list(here.glob("started-*"))) < processes * writers:
                            await asyncio.sleep(0.005)

            await asyncio.gather(*(writer(f"{prefix}w{w}") for w in range(writers)))
            print(json.dumps({"session_id": session.id, "version": session.version}))

    asyncio.run(main())
    """
)


async def test_two_processes_appending_to_one_session_lose_nothing(tmp_path: Path) -> None:
    """Two OS processes x 4 writers x 100 messages, created and appended at once: exactly 800, in order."""
    db = tmp_path / "omoide.db"
    url = f"sqlite:///{db}"
    go = tmp_path / "go"
    processes, writers, per_writer = 2, 4, 100
    args = [str(writers), str(per_writer), str(processes)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPEND_SCRIPT, url, str(go), str(tmp_path / f"ready{p}"), f"p{p}", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(processes)
    ]
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready{p}").exists() for p in range(processes)):  # both have migrated
            assert time.monotonic() < deadline, "appending subprocesses did not start"
            for proc in procs:
                assert proc.poll() is None, proc.communicate()[1]
            await asyncio.sleep(0.01)
        go.touch()
        results = []
        for proc in procs:
            out, err = await asyncio.to_thread(proc.communicate, timeout=120)
            assert proc.returncode == 0, err
            results.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    assert len({r["session_id"] for r in results}) == 1  # both processes got the same session
    total = processes * writers * per_writer
    async with SqliteStore(url, settings=Settings(), migrate=False) as store:
        session_id = results[0]["session_id"]
        names = [f"p{p}w{w}" for p in range(processes) for w in range(writers)]
        stored = await store.sessions.messages(session_id)
        _check_session(stored, names, per_writer)
        processes_in_seq_order = [m.author_id[:2] for m in stored if m.author_id]
        switches = sum(a != b for a, b in itertools.pairwise(processes_in_seq_order))
        assert switches > 1, "the two processes did not write at the same time; the test proved nothing"
        after = await store.sessions.get_session_by_id(session_id)
        assert after is not None
        assert after.last_seq == total
        # the process that created the session read it before any append; the other may have seen appends
        created_version = min(r["version"] for r in results)
        assert after.version == created_version + total
