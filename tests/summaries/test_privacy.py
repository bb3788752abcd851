"""Summaries read public conversations only: a DM with the bot never reaches a channel's or
the workspace's summary, nor a public channel's context (both backends)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from omoide import Memory
from omoide.models import Message

SECRET = "金庫の暗証番号は4271です"


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as m:
        yield m


async def test_private_conversations_stay_out_of_shared_summaries(mem: Memory) -> None:
    dm = mem.session_key(platform="slack", workspace="T1", channel="D1", user="alice")
    await mem.append(dm, Message.user(SECRET, author_id="alice", message_id="d1"), private=True)
    await mem.append(dm, Message.assistant("覚えました。"))
    general = mem.session_key(platform="slack", workspace="T1", channel="C1", user=None, policy="channel")
    for i, text in enumerate(["来週の勉強会は渋谷で19時から", "テーマは HNSW インデックス", "資料は前日に共有します"]):
        await mem.append(general, Message.user(text, author_id=f"u{i}", message_id=f"c{i}"))

    await mem.summaries.run()

    channel = await mem.summary(workspace="T1", scope="channel", scope_id="C1", kind="long_term")
    workspace = await mem.summary(workspace="T1", scope="workspace")
    assert channel is not None and workspace is not None
    assert "4271" not in channel.content and "4271" not in workspace.content
    assert await mem.summary(workspace="T1", scope="channel", scope_id="D1", kind="short_term") is None

    bob = mem.session_key(platform="slack", workspace="T1", channel="C1", user="bob")
    await mem.append(bob, Message.user("暗証番号は？", author_id="bob"))
    built = await mem.build_context(bob, budget_tokens=8000)
    assert "4271" not in built.system
    assert any(p.kind.value == "workspace_summary" for p in built.parts)
