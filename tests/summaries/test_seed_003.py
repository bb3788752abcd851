"""Seed 003 (rolling summaries): every row of its test tables and its completion criteria, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from omoide import Memory
from omoide.models import Message
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.stores.summaries import ShortTermHistoryConfig, Summary, SummaryKind, SummaryScope
from omoide.summaries.service import should_update_short_term_memory

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
CFG = ShortTermHistoryConfig()


def _summary() -> Summary:
    return Summary(1, "g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM, 1, "x", 0, None, {}, NOW)


# ---------------------------------------------------------------- _should_update_short_term_memory


@pytest.mark.parametrize(
    ("row", "config", "existing", "idle", "new", "expected"),
    [
        ("履歴機能無効 (enabled=false) → True", ShortTermHistoryConfig(enabled=False), _summary(), 0, 0, True),
        ("既存記憶なし → True", CFG, None, 0, 0, True),
        ("idle 時間経過 (2時間以上) → True", CFG, _summary(), 7200, 0, True),
        ("メッセージ数超過 (50件以上) → True", CFG, _summary(), 0, 50, True),
        ("両条件未満 (1時間、30件) → False", CFG, _summary(), 3600, 30, False),
        ("idle + メッセージ (2時間 AND 60件) → True", CFG, _summary(), 7200, 60, True),
    ],
)
def test_should_update_short_term_memory(row, config, existing, idle, new, expected):
    latest = NOW - timedelta(seconds=idle)
    assert should_update_short_term_memory(latest, existing, new, config, now=NOW) is expected, row


# ---------------------------------------------------------------- generate_channel_memories


def summariser() -> ScriptedChatModel:
    """Answers each kind of prompt with a recognisable summary."""

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1].text
        if "ワークスペース全体" in prompt:
            return f"WS要約({prompt.count('## #')}チャンネル)"
        if "長期要約を更新" in prompt:
            return "長期要約: " + prompt.rsplit("## 新しい短期要約\n", 1)[-1]
        return f"短期要約: {prompt.count('] ')}件"

    return ScriptedChatModel(reply)


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"}), chat_model=summariser()) as m:
        yield m


async def talk(mem: Memory, channel: str, n: int, *, last_at: datetime, user: str = "u1") -> None:
    key = mem.session_key(platform="slack", workspace="g1", channel=channel, user=user)
    for i in range(n):
        when = last_at - timedelta(minutes=n - 1 - i)
        await mem.append(key, Message.user(f"{channel} のメッセージ {i}", author_id=user, created_at=when))


async def latest(mem: Memory, scope: SummaryScope, scope_id: str, kind: SummaryKind) -> Summary | None:
    return await mem.store.summaries.latest_summary("g1", scope, scope_id, kind)


async def test_row_no_trigger_no_update(mem: Memory):
    """更新条件満たさず: idle 未到達、メッセージ少 → 短期記憶更新されない."""
    gen = mem.summary_generator(clock=lambda: NOW)
    await talk(mem, "c1", 5, last_at=NOW - timedelta(hours=3))
    await gen.generate_channel_memories("g1", ["c1"])  # first summary (none existed)
    await talk(mem, "c1", 10, last_at=NOW - timedelta(minutes=30))
    report = await gen.generate_channel_memories("g1", ["c1"])
    assert report.short_term == 0 and report.skipped == 1
    assert (await latest(mem, SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)).version == 1


async def test_row_idle_trigger_saves_a_new_version(mem: Memory):
    """idle トリガー: 2時間以上経過 → 短期記憶が新バージョンで保存."""
    gen = mem.summary_generator(clock=lambda: NOW)
    await talk(mem, "c1", 5, last_at=NOW - timedelta(hours=5))
    await gen.generate_channel_memories("g1", ["c1"])
    await talk(mem, "c1", 3, last_at=NOW - timedelta(hours=2, minutes=1))
    report = await gen.generate_channel_memories("g1", ["c1"])
    assert report.short_term == 1
    short = await latest(mem, SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
    assert short.version == 2 and short.content == "短期要約: 8件" and short.source_message_count == 8


async def test_row_message_trigger_saves_a_new_version(mem: Memory):
    """メッセージトリガー: 50件以上 → 短期記憶が新バージョンで保存."""
    gen = mem.summary_generator(clock=lambda: NOW)
    await talk(mem, "c1", 5, last_at=NOW - timedelta(hours=3))
    await gen.generate_channel_memories("g1", ["c1"])
    await talk(mem, "c1", 50, last_at=NOW - timedelta(minutes=1))
    assert (await gen.generate_channel_memories("g1", ["c1"])).short_term == 1
    history = await mem.store.summaries.summary_history("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
    assert [s.version for s in history] == [2, 1]  # the first version is kept (history)


async def test_row_long_term_merged_right_after_short_term(mem: Memory):
    """長期記憶統合: 短期記憶保存後 → 長期記憶が更新される (and the merge sees the new short-term summary)."""
    gen = mem.summary_generator(clock=lambda: NOW)
    await talk(mem, "c1", 4, last_at=NOW - timedelta(hours=3))
    await gen.generate_channel_memories("g1", ["c1"])
    long = await latest(mem, SummaryScope.CHANNEL, "c1", SummaryKind.LONG_TERM)
    assert long.content == "長期要約: 短期要約: 4件" and long.version == 1
    await talk(mem, "c1", 2, last_at=NOW - timedelta(hours=2, minutes=5))
    await gen.generate_channel_memories("g1", ["c1"])
    long = await latest(mem, SummaryScope.CHANNEL, "c1", SummaryKind.LONG_TERM)
    assert long.content == "長期要約: 短期要約: 6件" and long.version == 1  # long-term is always overwritten
    model = mem.chat_model
    assert isinstance(model, ScriptedChatModel)
    merge_prompts = [c.messages[-1].text for c in model.calls if "長期要約を更新" in c.messages[-1].text]
    assert "長期要約: 短期要約: 4件" in merge_prompts[-1]  # the existing long-term summary was merged


async def test_row_workspace_long_term_after_channels(mem: Memory):
    """WS長期記憶更新: チャンネル長期記憶更新後 → WS長期記憶が更新される."""
    gen = mem.summary_generator(clock=lambda: NOW)
    await talk(mem, "c1", 3, last_at=NOW - timedelta(hours=3))
    await talk(mem, "c2", 3, last_at=NOW - timedelta(hours=3), user="u2")
    report = await gen.generate_channel_memories("g1", ["c1", "c2"])
    assert (report.short_term, report.long_term, report.workspaces) == (2, 2, 1)
    ws = await latest(mem, SummaryScope.WORKSPACE, "g1", SummaryKind.LONG_TERM)
    assert ws.content == "WS要約(2チャンネル)" and ws.source_message_count == 6


async def test_history_off_overwrites(mem: Memory):
    """履歴機能無効時: enabled=false → save() で上書き（save_as_new_version ではない）."""
    gen = mem.summary_generator(clock=lambda: NOW)
    off = ShortTermHistoryConfig(enabled=False)
    await talk(mem, "c1", 3, last_at=NOW - timedelta(minutes=5))
    await gen.generate_channel_memories("g1", ["c1"], config=off)
    await talk(mem, "c1", 2, last_at=NOW - timedelta(minutes=1))
    await gen.generate_channel_memories("g1", ["c1"], config=off)
    history = await mem.store.summaries.summary_history("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
    assert [(s.version, s.content) for s in history] == [(1, "短期要約: 5件")]


async def test_completion_criteria_order_of_updates(mem: Memory):
    """完了基準: 短期 (new version) → チャンネル長期 → ワークスペース長期, in that order."""
    gen = mem.summary_generator(clock=lambda: NOW)
    await talk(mem, "c1", 3, last_at=NOW - timedelta(hours=3))
    await gen.generate_channel_memories("g1", ["c1"], merge_each=True)
    model = mem.chat_model
    assert isinstance(model, ScriptedChatModel)
    kinds = [
        "ws"
        if "ワークスペース全体" in c.messages[-1].text
        else "long"
        if "長期要約を更新" in c.messages[-1].text
        else "short"
        for c in model.calls
    ]
    assert kinds == ["short", "long", "ws"]


async def test_threads_and_users_and_the_worker_pass(mem: Memory):
    """Per-thread short-term and per-user long-term use the same mechanism; ``run`` finds active scopes."""
    gen = mem.summary_generator(clock=lambda: NOW)
    key = mem.session_key(platform="slack", workspace="g1", channel="c1", thread="t1", user="u9", policy="thread")
    for i in range(3):
        await mem.append(
            key, Message.user(f"スレッド {i}", author_id="u9", created_at=NOW - timedelta(hours=3, minutes=i))
        )
    report = await gen.run()
    assert {"channel:c1", "thread:t1", "user:u9"} <= set(report.updated)
    assert await latest(mem, SummaryScope.THREAD, "t1", SummaryKind.SHORT_TERM) is not None
    assert await latest(mem, SummaryScope.USER, "u9", SummaryKind.LONG_TERM) is not None
    again = await gen.run()
    assert again.short_term == 0  # idle but nothing new since: no new version of the same text


async def test_offline_extractive_summaries_are_sensible(settings: Any):
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as mem:
        key = mem.session_key(platform="slack", workspace="g1", channel="c1", user="u1")
        lines = [
            "来週の勉強会は木曜19時から渋谷の会議室で開催します。",
            "発表は pgvector の HNSW インデックスについてです。",
            "ありがとう！",
            "懇親会の予算は一人3000円にしましょう。",
        ]
        for i, text in enumerate(lines):
            await mem.append(
                key, Message.user(text, author_id="u1", created_at=NOW - timedelta(hours=3, minutes=10 - i))
            )
        await mem.summary_generator(clock=lambda: NOW).generate_channel_memories("g1", ["c1"])
        short = await mem.summary(workspace="g1", scope="channel", scope_id="c1", kind="short_term")
        assert short is not None and "抽出" in short.content
        assert "勉強会" in short.content or "懇親会" in short.content
