"""Memory.ingest_messages / ingest_cursor: live messages (a bot's /sync) into long-term memory, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from omoide import Memory
from omoide.errors import InvalidInput
from omoide.importers import ImportedMessage, read_export
from omoide.sample_data import discord_export_paths, sample_guild

from .helpers import all_sources

GUILD = "111"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def live(
    n: int,
    *,
    channel: str = "c1",
    thread: str | None = None,
    start: int = 0,
    workspace: str = GUILD,
    platform: Any = "discord",
    **extra: Any,
) -> list[ImportedMessage]:
    """``n`` messages a minute apart, ids ``1000 + i`` (numeric, like snowflakes)."""
    return [
        ImportedMessage(
            platform=platform,
            workspace_id=workspace,
            workspace_name="guild",
            channel_id=channel,
            channel_name=f"name-{channel}",
            thread_id=thread,
            thread_name=None if thread is None else f"thread-{thread}",
            message_id=str(1000 + i),
            author_id=f"u{i % 3}",
            author_name=f"user{i % 3}",
            is_bot=False,
            text=f"メッセージ {i}: 勉強会の資料 {i} を共有します。",
            created_at=T0 + timedelta(minutes=i),
            url=f"https://discord.com/channels/{workspace}/{thread or channel}/{1000 + i}",
            **extra,
        )
        for i in range(start, start + n)
    ]


async def stored_ids(mem: Memory, channel: str, thread: str | None = None) -> list[str]:
    key = f"discord:{GUILD}:{channel}:{thread or '-'}"
    out: list[str] = []
    for source in await all_sources(mem.store):
        if source.metadata.get("conversation_key") == key:
            for chunk in await mem.store.knowledge.chunks_of_source(source.id):
                out.extend(chunk.location["message_ids"])
    return out


async def test_sync_is_idempotent_and_the_cursor_advances(mem: Memory):
    assert await mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel="c1") is None

    first = await mem.knowledge.ingest_messages(
        live(40) + live(5, channel="c1", thread="t9"), workspace=GUILD, origin="test"
    )
    assert (first.new_messages, first.known_messages, first.conversations, first.sources) == (45, 0, 2, 2)
    assert first.chunks >= 3  # 40 messages > the 30-message window limit
    cursor = await mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel="c1")
    assert cursor is not None and (cursor.message_id, cursor.messages) == ("1039", 40)
    assert cursor.created_at == T0 + timedelta(minutes=39)
    in_thread = await mem.knowledge.ingest_cursor(platform="discord", workspace=int(GUILD), channel="c1", thread="t9")
    assert in_thread is not None and (in_thread.message_id, in_thread.messages) == ("1004", 5)

    # the same range again: nothing new, the cursor stays
    again = await mem.knowledge.ingest_messages(live(40), workspace=GUILD)
    assert (again.new_messages, again.known_messages, again.sources, again.chunks) == (0, 40, 0, 0)
    assert await mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel="c1") == cursor

    # an overlapping later fetch: only the new messages are written, the cursor moves to the newest
    later = await mem.knowledge.ingest_messages(live(15, start=35), workspace=GUILD)
    assert (later.new_messages, later.known_messages, later.sources) == (10, 5, 1)
    moved = await mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel="c1")
    assert moved is not None and (moved.message_id, moved.messages) == ("1049", 50)

    ids = await stored_ids(mem, "c1")
    assert sorted(ids) == [str(1000 + i) for i in range(50)]  # every message exactly once
    sources = [s for s in await all_sources(mem.store) if s.metadata.get("conversation_key") == f"discord:{GUILD}:c1:-"]
    assert {s.type for s in sources} == {"discord_channel"}
    assert all(s.status.value == "pending" for s in sources)  # the embedder picks them up next
    assert {tuple(s.metadata["files"]) for s in sources} == {("test",), ("live",)}

    # searchable (lexically at once) with jump links
    hits = await mem.search("資料 45", workspace=GUILD, mode="lexical")
    assert hits.hits and hits.hits[0].jump_url is not None
    assert hits.hits[0].jump_url.startswith(f"https://discord.com/channels/{GUILD}/c1/")


async def test_batch_filters_duplicates_system_and_empty_messages(mem: Memory):
    batch = live(6)
    batch += [batch[0], batch[1]]  # fetched twice
    batch += live(1, start=50, kind="system")
    blank = live(1, start=51)[0]
    batch.append(ImportedMessage(**{**{f: getattr(blank, f) for f in blank.__slots__}, "text": "  "}))  # type: ignore[arg-type]
    done = await mem.knowledge.ingest_messages(reversed(batch), workspace=GUILD)  # any order
    assert (done.messages, done.new_messages) == (6, 6)
    assert (done.report.duplicates, done.report.system_skipped, done.report.empty_skipped) == (2, 1, 1)
    assert sorted(await stored_ids(mem, "c1")) == [str(1000 + i) for i in range(6)]

    with_system = await mem.knowledge.ingest_messages(
        live(1, start=50, kind="system"), workspace=GUILD, include_system=True
    )
    assert with_system.new_messages == 1


async def test_messages_of_another_workspace_are_refused(mem: Memory):
    mixed = live(3) + live(2, workspace="999", start=3)
    with pytest.raises(InvalidInput, match="workspace 999"):
        await mem.knowledge.ingest_messages(mixed, workspace=GUILD)
    assert await all_sources(mem.store) == []
    assert await mem.knowledge.ingest_cursor(platform="discord", workspace="999", channel="c1") is None


async def test_what_is_not_an_imported_message_is_refused_and_nothing_is_written(mem: Memory):
    for bad in ([*live(2), {"text": "hi"}], [1, 2], None, "text"):  # typed, not AttributeError / TypeError
        with pytest.raises(InvalidInput, match="ImportedMessage"):
            await mem.knowledge.ingest_messages(bad, workspace=GUILD)  # type: ignore[arg-type]
    assert await all_sources(mem.store) == []


async def test_an_interrupted_sync_leaves_whole_windows_and_resumes(mem: Memory, monkeypatch: pytest.MonkeyPatch):
    store = mem.store
    real = store.knowledge.add_source
    calls = 0

    async def failing(source: Any, chunks: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("connection lost")
        return await real(source, chunks, **kwargs)

    monkeypatch.setattr(store.knowledge, "add_source", failing)
    batch = live(20, channel="c1") + live(20, channel="c2")
    with pytest.raises(RuntimeError):
        await mem.knowledge.ingest_messages(batch, workspace=GUILD)
    # the first channel is stored whole; the second not at all (one transaction per conversation)
    assert sorted(await stored_ids(mem, "c1")) == [str(1000 + i) for i in range(20)]
    assert await stored_ids(mem, "c2") == []
    assert await mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel="c2") is None

    monkeypatch.setattr(store.knowledge, "add_source", real)
    resumed = await mem.knowledge.ingest_messages(batch, workspace=GUILD)
    assert (resumed.new_messages, resumed.known_messages) == (20, 20)
    assert sorted(await stored_ids(mem, "c2")) == [str(1000 + i) for i in range(20)]
    cursor = await mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel="c2")
    assert cursor is not None and cursor.message_id == "1019"


async def test_the_cursor_continues_after_an_export_import(mem: Memory):
    guild = sample_guild()[0]
    path = next(p for p in discord_export_paths() if "general" in p.name)
    await mem.knowledge.import_export(path)
    exported = [m for m in read_export([path]).messages if m.thread_id is None]
    newest = max(exported, key=lambda m: (m.created_at, int(m.message_id)))
    channel = newest.channel_id
    cursor = await mem.knowledge.ingest_cursor(platform="discord", workspace=guild, channel=channel)
    assert cursor is not None and cursor.message_id == newest.message_id
    assert cursor.messages == len(exported)

    # a sync re-fetching the tail of the export plus two new messages adds only the new ones
    tail = sorted(exported, key=lambda m: m.created_at)[-3:]
    fresh = [
        ImportedMessage(
            **{
                **{f: getattr(newest, f) for f in newest.__slots__},
                "message_id": str(int(newest.message_id) + (i + 1) * 4_194_304),
                "created_at": newest.created_at + timedelta(minutes=i + 1),
                "text": f"新しいメッセージ {i}",
            }
        )  # type: ignore[arg-type]
        for i in range(2)
    ]
    done = await mem.knowledge.ingest_messages(tail + fresh, workspace=guild)
    assert (done.new_messages, done.known_messages) == (2, 3)
    after = await mem.knowledge.ingest_cursor(platform="discord", workspace=guild, channel=channel)
    assert after is not None and after.message_id == fresh[-1].message_id


async def test_build_context_takes_knowledge_only_from_the_given_channels(mem: Memory):
    await mem.knowledge.ingest_messages(live(5, channel="open") + live(5, channel="private"), workspace=GUILD)
    key = mem.session_key(platform="discord", workspace=GUILD, channel="open", user="u1")

    def knowledge_channels(built: Any) -> set[str]:
        return {p.ref["jump_url"].split("/")[-2] for p in built.parts if p.kind.value == "knowledge"}

    everything = await mem.build_context(key, "勉強会の資料", budget_tokens=4000)
    assert knowledge_channels(everything) == {"open", "private"}
    scoped = await mem.build_context(key, "勉強会の資料", budget_tokens=4000, channels=["open"])
    assert knowledge_channels(scoped) == {"open"}
    none = await mem.build_context(key, "勉強会の資料", budget_tokens=4000, channels=[])
    assert knowledge_channels(none) == set()
