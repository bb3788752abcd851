"""omoide.importers.discord_live: discord.py messages (built from API payloads) in the importers' shape."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import pytest

from omoide import Memory
from omoide.importers.discord_live import from_discord_message, readable_content
from omoide.settings import Settings

GUILD = 1290478288896131072
GENERAL = 1290478288896131073
THREAD = 1290478288896131999
ALICE = {"id": "700000000000000001", "username": "alice", "discriminator": "0", "global_name": "Alice", "avatar": None}
BOT = {
    "id": "900000000000000001",
    "username": "omoide",
    "discriminator": "0",
    "global_name": None,
    "avatar": None,
    "bot": True,
}
AT = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
async def state() -> AsyncIterator[Any]:
    client = discord.Client(intents=discord.Intents.default())
    yield client._connection
    await client.close()


def guild_of(state: Any) -> discord.Guild:
    return discord.Guild(
        state=state,
        data={  # type: ignore[typeddict-item]
            "id": str(GUILD),
            "name": "omoide lab",
            "icon": None,
            "owner_id": ALICE["id"],
            "roles": [],
            "emojis": [],
            "stickers": [],
            "features": [],
            "channels": [],
            "member_count": 2,
        },
    )


def text_channel(state: Any, guild: discord.Guild) -> discord.TextChannel:
    data = {
        "id": str(GENERAL),
        "type": 0,
        "name": "general",
        "position": 0,
        "permission_overwrites": [],
        "parent_id": None,
    }
    channel = discord.TextChannel(state=state, guild=guild, data=data)  # type: ignore[arg-type]
    guild._add_channel(channel)
    return channel


def thread_channel(state: Any, guild: discord.Guild) -> discord.Thread:
    data = {
        "id": str(THREAD),
        "type": 11,
        "guild_id": str(GUILD),
        "parent_id": str(GENERAL),
        "owner_id": ALICE["id"],
        "name": "v0.4.0 の相談",
        "message_count": 3,
        "member_count": 2,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": AT.isoformat(),
            "locked": False,
        },
    }
    return discord.Thread(state=state, guild=guild, data=data)  # type: ignore[arg-type]


def payload(content: str, *, n: int = 0, **extra: Any) -> dict[str, Any]:
    mid = discord.utils.time_snowflake(AT + dt.timedelta(minutes=n))
    return {
        "id": str(mid),
        "channel_id": str(GENERAL),
        "author": ALICE,
        "content": content,
        "timestamp": (AT + dt.timedelta(minutes=n)).isoformat(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        **extra,
    }


async def test_an_ordinary_message(state: Any):
    guild = guild_of(state)
    channel = text_channel(state, guild)
    data = payload(
        f"<@{BOT['id']}> 明日は <t:1767225600:f> から <:party:123456> <#{GENERAL}>",
        mentions=[BOT],
        attachments=[
            {
                "id": "1",
                "filename": "slides.pdf",
                "size": 2048,
                "url": "https://cdn.discordapp.com/a/slides.pdf",
                "proxy_url": "",
            }
        ],
        embeds=[
            {"type": "rich", "title": "議事録", "description": "要点", "fields": [{"name": "日時", "value": "3/1"}]}
        ],
        sticker_items=[{"id": "5", "name": "thumbs", "format_type": 1}],
        edited_timestamp=(AT + dt.timedelta(minutes=3)).isoformat(),
    )
    message = discord.Message(state=state, channel=channel, data=data)  # type: ignore[arg-type]
    m = from_discord_message(message)
    assert (m.platform, m.workspace_id, m.workspace_name) == ("discord", str(GUILD), "omoide lab")
    assert (m.channel_id, m.channel_name, m.thread_id) == (str(GENERAL), "general", None)
    assert (m.message_id, m.author_id, m.author_name, m.is_bot) == (data["id"], ALICE["id"], "Alice", False)
    assert m.kind == "message" and m.platform_kind == "default"
    assert m.created_at == discord.utils.snowflake_time(int(data["id"])) and m.created_at.tzinfo is not None
    assert m.edited_at == AT + dt.timedelta(minutes=3)
    assert m.content == "@omoide 明日は 2026-01-01 00:00 UTC から :party: #general"
    assert m.text.splitlines()[1:] == [
        "[attachment: slides.pdf]",
        "[embed: 議事録 — 要点 — 日時: 3/1]",
        "[sticker: thumbs]",
    ]
    assert m.attachments[0].url == "https://cdn.discordapp.com/a/slides.pdf" and m.attachments[0].size_bytes == 2048
    assert m.url == f"https://discord.com/channels/{GUILD}/{GENERAL}/{data['id']}"
    # the bot's own mention can be removed (the text of a mention-conversation)
    assert readable_content(message, strip_mention_of=int(BOT["id"])).startswith("明日は 2026-01-01")


async def test_replies_threads_commands_forwards_and_system_messages(state: Any):
    guild = guild_of(state)
    channel = text_channel(state, guild)
    thread = thread_channel(state, guild)

    original = payload("元の発言", n=0)
    reply = payload(
        "そうですね",
        n=1,
        type=19,
        message_reference={"type": 0, "message_id": original["id"], "channel_id": str(GENERAL)},
    )
    m = from_discord_message(discord.Message(state=state, channel=channel, data=reply))  # type: ignore[arg-type]
    assert (m.kind, m.reply_to) == ("reply", original["id"])

    in_thread = payload("スレッドでの発言", n=2, channel_id=str(THREAD))
    m = from_discord_message(discord.Message(state=state, channel=thread, data=in_thread))  # type: ignore[arg-type]
    assert (m.channel_id, m.channel_name, m.thread_id, m.thread_name) == (
        str(GENERAL),
        "general",
        str(THREAD),
        "v0.4.0 の相談",
    )
    assert m.conversation == ("discord", str(GUILD), str(GENERAL), str(THREAD))
    assert m.url == f"https://discord.com/channels/{GUILD}/{THREAD}/{in_thread['id']}"

    command = payload(
        "v0.4.0 は延期されました [#1]",
        n=3,
        type=20,
        author=BOT,
        interaction_metadata={
            "id": "42",
            "type": 2,
            "user": ALICE,
            "authorizing_integration_owners": {"0": str(GUILD)},
        },
    )
    m = from_discord_message(discord.Message(state=state, channel=channel, data=command))  # type: ignore[arg-type]
    assert (m.kind, m.invoked_by, m.is_bot) == ("command", ALICE["id"], True)
    assert m.text.splitlines()[-1] == "[command used by Alice]"

    forward = payload(
        "",
        n=4,
        message_reference={"type": 1, "message_id": "1", "channel_id": "2", "guild_id": "3"},
        message_snapshots=[
            {
                "message": {
                    "type": 0,
                    "content": "転送された告知",
                    "embeds": [],
                    "attachments": [],
                    "timestamp": AT.isoformat(),
                    "edited_timestamp": None,
                    "flags": 0,
                    "mentions": [],
                    "mention_roles": [],
                }
            }
        ],
    )
    m = from_discord_message(discord.Message(state=state, channel=channel, data=forward))  # type: ignore[arg-type]
    assert m.kind == "forward" and m.text == "[forwarded message] 転送された告知"

    join = payload("", n=5, type=7)
    m = from_discord_message(discord.Message(state=state, channel=channel, data=join))  # type: ignore[arg-type]
    assert (m.kind, m.platform_kind) == ("system", "new_member")


async def test_converted_messages_ingest_like_an_import(state: Any, tmp_path: Path):
    guild = guild_of(state)
    channel = text_channel(state, guild)
    messages = [
        discord.Message(state=state, channel=channel, data=payload(f"話題 {i}: 勉強会の準備", n=i))  # type: ignore[arg-type]
        for i in range(10)
    ]
    messages.append(discord.Message(state=state, channel=channel, data=payload("", n=11, type=7)))  # type: ignore[arg-type]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", transcripts_dir=tmp_path, embedder="hashing")
    async with Memory.open(settings) as mem:
        done = await mem.knowledge.ingest_messages([from_discord_message(m) for m in messages], workspace=GUILD)
        assert (done.new_messages, done.report.system_skipped, done.sources) == (10, 1, 1)
        source = (await mem.knowledge.sources(workspace=GUILD))[0]
        assert source.type == "discord_channel" and source.title == "#general"
        chunk = (await mem.store.knowledge.chunks_of_source(source.id))[0]
        assert chunk.content.startswith("[2026-03-01 12:00] **Alice**: 話題 0")
        assert chunk.location["jump_url"].startswith(f"https://discord.com/channels/{GUILD}/{GENERAL}/")
