"""Two summariser workers on one database (two ``omoide worker`` processes, or one beside
``omoide serve``'s in-process workers) run their passes at the same time: a scope due in both
is summarised once, not once per worker (both backends). Also what a pass logs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from gated_models import Gated
from omoide import Memory
from omoide.models import Message
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.stores.summaries import SummaryKind, SummaryScope
from omoide.summaries.service import SummaryGenerator

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def reply(request: ChatRequest) -> str:
    prompt = request.messages[-1].text
    if "長期要約を更新" in prompt:
        return "長期要約"
    if "ワークスペース全体" in prompt:
        return "WS要約"
    return "短期要約"


async def test_two_passes_at_once_summarise_a_scope_once(settings: Any) -> None:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as mem:
        key = mem.session_key(platform="slack", workspace="g1", channel="c1", user="u1")
        await mem.append(
            key, Message.user("勉強会は木曜19時からです", author_id="u1", created_at=NOW - timedelta(hours=1))
        )
        slow, fast = Gated(reply), ScriptedChatModel(reply)
        first = SummaryGenerator(mem.store.summaries, lambda: slow, mem.settings, clock=lambda: NOW)
        second = SummaryGenerator(mem.store.summaries, lambda: fast, mem.settings, clock=lambda: NOW)

        running = asyncio.create_task(first.run())
        await asyncio.wait_for(slow.entered.wait(), timeout=60)  # the first worker is summarising c1
        done = await second.run()  # the second one runs a whole pass meanwhile
        slow.gate.set()
        late = await asyncio.wait_for(running, timeout=60)

        assert sorted(done.updated) == ["channel:c1", "user:u1"]
        assert late.updated == [] and late.short_term == 0  # its summary of c1 was already written
        store = mem.store.summaries
        for scope, scope_id in ((SummaryScope.CHANNEL, "c1"), (SummaryScope.USER, "u1")):
            versions = await store.summary_history("g1", scope, scope_id, SummaryKind.SHORT_TERM)
            assert [v.version for v in versions] == [1], scope
        merges = [c for c in [*slow.calls, *fast.calls] if "長期要約を更新" in c.messages[-1].text]
        assert len(merges) == 2  # c1 and u1 merged into their long-term summaries once each


async def test_an_idle_pass_logs_at_debug_and_a_working_one_at_info(settings: Any) -> None:
    """Like the worker's own worker_run line: an idle summariser does not log at INFO every pass."""
    import structlog

    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as mem:
        generator = SummaryGenerator(
            mem.store.summaries, lambda: ScriptedChatModel(reply), mem.settings, clock=lambda: NOW
        )
        with structlog.testing.capture_logs() as logs:
            await generator.run()  # nothing to summarise
            key = mem.session_key(platform="slack", workspace="g1", channel="c1", user="u1")
            await mem.append(key, Message.user("勉強会は木曜です", author_id="u1", created_at=NOW - timedelta(hours=1)))
            await generator.run()
        levels = [e["log_level"] for e in logs if e["event"] == "summaries_run"]
        assert levels == ["debug", "info"]
