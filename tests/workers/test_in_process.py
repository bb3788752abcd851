"""``mem.workers()``: the same workers inside a host's event loop (a bot), on both backends."""

from __future__ import annotations

import asyncio
import time

from omoide import Memory
from omoide.models import SessionStatus

from .helpers import check_all_done, talk, tuned


async def test_idle_sessions_become_searchable_knowledge_automatically(settings):
    """Seed 000 §4: inactive sessions are converted *automatically*, while the bot keeps running."""
    s = tuned(
        settings,
        embedder="hashing",
        archive_idle_seconds=0.3,
        worker_archive_interval_seconds=0.05,
        worker_embed_interval_seconds=0.05,
        worker_expire_interval_seconds=0.05,
        worker_summary_interval_seconds=0.05,
    )
    async with Memory.open(s) as mem:
        keys = [mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}") for i in range(3)]
        appended = []
        async with mem.workers() as runner:
            for i, key in enumerate(keys):
                appended += await talk(mem, key, 12, start=0, user=f"u{i}")
            deadline = time.monotonic() + 20
            while True:
                status = await mem.knowledge.status()
                if status.sources.get("ready") == 3 and status.embedded.get(mem.embedder.model_id) == status.chunks:
                    break
                assert time.monotonic() < deadline, f"the workers did not archive and embed: {status}"
                await asyncio.sleep(0.05)
            assert [(await mem.sessions.get(k)).status for k in keys] == [SessionStatus.ARCHIVED] * 3
            # the bot talks on in one session: it becomes active again, the others stay archived
            more = await talk(mem, keys[0], 2, start=12, user="u0")
            assert (await mem.sessions.get(keys[0])).status is SessionStatus.ACTIVE
        assert runner.stopping.is_set() and runner.cancelled == []
        assert set(runner.runs) == {"archiver", "embedder", "expiry", "summariser"}
        assert all(n >= 1 for n in runner.runs.values())
        await mem.knowledge.archive(now=True)
        await mem.knowledge.embed()
        await check_all_done(mem, appended + more)


async def test_leaving_the_block_stops_the_workers_promptly(settings):
    s = tuned(settings, embedder="hashing", worker_archive_interval_seconds=3600, worker_embed_interval_seconds=3600)
    async with Memory.open(s) as mem:
        started = time.monotonic()
        async with mem.workers(expire=False, summarise=False) as runner:
            await asyncio.sleep(0.1)
        assert time.monotonic() - started < 5
        assert set(runner.runs) == {"archiver", "embedder"}
