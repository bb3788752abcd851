"""Summaries inside a small context window: an over-budget input is summarised in parts, oldest first,
and the model never receives a prompt over its budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from omoide import Memory
from omoide.errors import ContextOverflow
from omoide.models import Message
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.providers.tokens import get_token_counter
from omoide.stores.summaries import SummaryKind, SummaryScope

counter = get_token_counter()
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
MAX_TOKENS = 64
LIMIT = 400


def reply(request: ChatRequest) -> str:
    prompt = request.messages[-1].text
    if "長期要約を更新" in prompt:
        return "長期要約"
    if "ワークスペース全体" in prompt:
        return "WS要約"
    return f"短期要約: {prompt.count('] ')}件"


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    small = settings.model_copy(
        update={
            "embedder": "hashing",
            "summary_max_tokens": MAX_TOKENS,
            "context_windows": {"scripted": LIMIT + MAX_TOKENS},
        }
    )
    model = ScriptedChatModel(reply, counter=counter, overflow_above=LIMIT)
    async with Memory.open(small, chat_model=model, token_counter=counter) as m:
        yield m


async def talk(mem: Memory, n: int, text: str = "c1 のメッセージ {i}") -> None:
    key = mem.session_key(platform="slack", workspace="g1", channel="c1", user="u1")
    for i in range(n):
        when = NOW - timedelta(hours=3, minutes=n - i)
        await mem.append(key, Message.user(text.format(i=i), author_id="u1", created_at=when))


async def test_messages_over_the_budget_are_summarised_in_parts(mem: Memory):
    await talk(mem, 60)
    model = mem.chat_model
    assert isinstance(model, ScriptedChatModel)
    everything = "\n".join(f"c1 のメッセージ {i}" for i in range(60))
    assert counter.count(everything) > LIMIT  # one prompt would not fit

    report = await mem.summary_generator(clock=lambda: NOW).generate_channel_memories("g1", ["c1"])
    assert report.short_term == 1

    assert all(c.prompt_tokens <= LIMIT for c in model.calls)  # never an over-budget prompt
    assert all(c.max_tokens == MAX_TOKENS for c in model.calls)
    short_calls = [c.messages[-1].text for c in model.calls if "箇条書きで要約" in c.messages[-1].text]
    assert len(short_calls) > 1  # summarised in parts
    for i in range(60):  # every message was read by some part, oldest first
        assert any(f"c1 のメッセージ {i}\n" in p + "\n" for p in short_calls), i
    assert "c1 のメッセージ 0\n" in short_calls[0] + "\n"
    assert "（これより前の部分の要約）" in short_calls[-1]  # the last part carries the earlier summary
    short = await mem.store.summaries.latest_summary("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
    assert short is not None and short.source_message_count == 60
    assert short.content.startswith("短期要約")


async def test_a_single_message_too_long_for_the_window_is_never_sent(mem: Memory):
    await talk(mem, 1, text="長い " * 2_000 + "{i}")
    model = mem.chat_model
    assert isinstance(model, ScriptedChatModel)
    with pytest.raises(ContextOverflow) as info:
        await mem.summary_generator(clock=lambda: NOW).generate_channel_memories("g1", ["c1"])
    assert info.value.limit == LIMIT and (info.value.prompt_tokens or 0) > LIMIT
    assert model.calls == []


async def test_one_scope_too_long_for_the_window_does_not_stop_the_pass(mem: Memory):
    """A pasted log too long for the model's window in one channel: the pass still summarises the
    other channels and users, counts the scope as failed and tries it again next pass."""
    huge = mem.session_key(platform="slack", workspace="g1", channel="c1", user="u1")
    await mem.append(huge, Message.user("長い " * 2_000, author_id="u1", created_at=NOW - timedelta(hours=3)))
    for channel, user in (("c2", "u2"), ("c3", "u3")):
        key = mem.session_key(platform="slack", workspace="g1", channel=channel, user=user)
        text = f"{channel} の勉強会は木曜19時からです。"
        await mem.append(key, Message.user(text, author_id=user, created_at=NOW - timedelta(hours=3)))

    report = await mem.summary_generator(clock=lambda: NOW).run()

    assert report.failed == 2  # channel c1, and user u1 (who wrote it)
    assert report.as_log()["failed"] == 2  # the worker reports ITEMS_FAILED from this field
    assert sorted(report.updated) == ["channel:c2", "channel:c3", "user:u2", "user:u3"]
    assert report.workspaces == 1
    summaries = mem.store.summaries
    assert await summaries.latest_summary("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM) is None
    for channel in ("c2", "c3"):
        assert await summaries.latest_summary("g1", SummaryScope.CHANNEL, channel, SummaryKind.LONG_TERM) is not None
    assert await summaries.latest_summary("g1", SummaryScope.WORKSPACE, "g1", SummaryKind.LONG_TERM) is not None
    model = mem.chat_model
    assert isinstance(model, ScriptedChatModel)
    assert all(c.prompt_tokens <= LIMIT for c in model.calls)  # the long one was never sent

    again = await mem.summary_generator(clock=lambda: NOW).run()  # tried again, still not fitting
    assert again.failed == 2 and again.updated == []


async def test_an_empty_summary_from_the_model_fails_only_its_scope(settings: Any):
    def empty_for_c1(request: ChatRequest) -> str:
        return "" if "c1 の" in request.messages[-1].text else reply(request)

    model = ScriptedChatModel(empty_for_c1, counter=counter)
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"}), chat_model=model) as m:
        for channel in ("c1", "c2"):
            key = m.session_key(platform="slack", workspace="g1", channel=channel, user="u-" + channel)
            text = f"{channel} の話題です"
            await m.append(key, Message.user(text, author_id="u-" + channel, created_at=NOW - timedelta(hours=3)))
        report = await m.summary_generator(clock=lambda: NOW).run()
    assert report.failed == 2  # channel c1 and its author's user summary
    assert sorted(report.updated) == ["channel:c2", "user:u-c2"]
