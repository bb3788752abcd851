"""Builders of DiscordChatExporter-shaped JSON (current writer, or an old one without optional keys)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

JST = timezone(timedelta(hours=9))
DISCORD_EPOCH_MS = 1_420_070_400_000
GUILD = {"id": "1100000000000000001", "name": "Test Guild", "iconUrl": "https://cdn.discordapp.com/icons/1/a.png"}
DM_GUILD = {"id": "0", "name": "Direct Messages", "iconUrl": "https://cdn.discordapp.com/embed/avatars/0.png"}
GENERAL = {
    "id": "1100000000000000010",
    "type": "GuildTextChat",
    "categoryId": "1100000000000000002",
    "category": "Text Channels",
    "name": "general",
    "topic": "chit-chat",
}
THREAD = {
    "id": "1100000000000000020",
    "type": "GuildPublicThread",
    "categoryId": "1100000000000000010",
    "category": "general",
    "name": "release plan",
    "topic": None,
}


def snowflake(when: datetime, increment: int = 0) -> str:
    ms = int(when.timestamp() * 1000) - DISCORD_EPOCH_MS
    return str((ms << 22) + increment)


def user(
    user_id: str, name: str, nickname: str | None = None, *, bot: bool = False, old: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": user_id, "name": name, "discriminator": "0000" if not bot else "1234"}
    if nickname is not None:
        out["nickname"] = nickname
    out |= {"color": None, "isBot": bot}
    if not old:
        out["roles"] = [{"id": "1100000000000000003", "name": "member", "color": None, "position": 1}]
    out["avatarUrl"] = "https://cdn.discordapp.com/embed/avatars/1.png"
    return out


ALICE = user("200000000000000001", "alice", "Alice")
BOB = user("200000000000000002", "bob", "Bobby")
BOT = user("200000000000000099", "helper", "Helper", bot=True)


def message(
    when: datetime,
    content: str = "",
    author: dict[str, Any] = ALICE,
    *,
    kind: str = "Default",
    increment: int = 0,
    old: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """One message as the exporter writes it (local +09:00 timestamps)."""
    out: dict[str, Any] = {
        "id": snowflake(when, increment),
        "type": kind,
        "timestamp": when.astimezone(JST).isoformat(timespec="milliseconds"),
        "timestampEdited": None,
        "callEndedTimestamp": None,
        "isPinned": False,
        "content": content,
        "author": author,
        "attachments": [],
        "embeds": [],
        "reactions": [],
        "mentions": [],
    }
    if not old:
        out["stickers"] = []
        out["inlineEmojis"] = []
    out.update(extra)
    return out


def document(
    messages: list[dict[str, Any]],
    *,
    guild: dict[str, Any] = GUILD,
    channel: dict[str, Any] = GENERAL,
    old: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {"guild": guild, "channel": channel, "dateRange": {"after": None, "before": None}}
    if not old:
        out["exportedAt"] = "2025-01-10T09:00:00.1234567+09:00"
    out["messages"] = messages
    out["messageCount"] = len(messages)
    return out


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def t(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    """A UTC time in January 2025."""
    return datetime(2025, 1, day, hour, minute, second, tzinfo=UTC)
