"""Shutdown of the summariser job: a stop ends the pass after the scope in flight (its summary
saved and merged), like the archiver and the embedder, instead of running every remaining
scope's model calls until the shutdown timeout cancels them (both backends)."""

from __future__ import annotations

import asyncio
from typing import Any

from gated_models import Gated
from omoide import Memory
from omoide.models import Message
from omoide.providers.scripted import ChatRequest
from omoide.stores.summaries import SummaryKind, SummaryScope
from omoide.workers.jobs import worker_runner

from .helpers import tuned


def reply(request: ChatRequest) -> str:
    return "長期要約" if "長期要約を更新" in request.messages[-1].text else "要約"


async def test_a_stop_ends_the_summary_pass_after_the_scope_in_flight(settings: Any) -> None:
    model = Gated(reply)
    s = tuned(settings, embedder="hashing", worker_shutdown_timeout_seconds=120)
    async with Memory.open(s, chat_model=model) as mem:
        channels = [f"c{i}" for i in range(5)]
        for channel in channels:
            key = mem.session_key(platform="slack", workspace="g1", channel=channel, user="u1")
            await mem.append(key, Message.user(f"{channel} の勉強会は木曜19時からです", author_id="u1"))
        runner = worker_runner(mem, archive=False, embed=False, expire=False)
        task = asyncio.create_task(runner.run())
        await asyncio.wait_for(model.entered.wait(), timeout=60)  # the pass is summarising c0
        runner.stop()  # SIGTERM
        model.gate.set()
        await asyncio.wait_for(task, timeout=60)

        assert runner.cancelled == []  # it ended by itself, not at the shutdown timeout
        store = mem.store.summaries
        done = [
            c
            for c in channels
            if await store.latest_summary("g1", SummaryScope.CHANNEL, c, SummaryKind.SHORT_TERM) is not None
        ]
        assert done == ["c0"]  # the scope in flight finished, no new one was started
        long = await store.latest_summary("g1", SummaryScope.CHANNEL, "c0", SummaryKind.LONG_TERM)
        assert long is not None  # ... and was merged into its long-term summary
        assert await store.latest_summary("g1", SummaryScope.WORKSPACE, "g1", SummaryKind.LONG_TERM) is not None
