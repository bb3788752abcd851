"""Write the sample DiscordChatExporter export and its questions from ``script.py``.

Deterministic: the same script always gives byte-identical files (ids are snowflakes
computed from the message times; no randomness, no clock). Run from the repository::

    python tools/sample_data/generate.py            # rewrite src/omoide/sample_data/{discord,questions.json}
    python tools/sample_data/generate.py --check    # exit 1 if the shipped files differ

A build-time tool: only its output ships in the package.

Files follow the exporter's JSON writer (``JsonMessageWriter``, current version): one file
per channel or thread named ``<guild> - <category or parent> - <channel> [<id>].json``,
local times with the exporting machine's offset (+09:00), ``exportedAt``, author roles,
inline emoji, embeds, stickers, reactions with users, mentions, references, interactions.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import script  # type: ignore[import-not-found]  # tools/sample_data/script.py, beside this file

SHIPPED = Path(__file__).resolve().parents[2] / "src" / "omoide" / "sample_data"
"""Where the package's sample data lives (the default output)."""

JST = timezone(timedelta(hours=9))
DISCORD_EPOCH_MS = 1_420_070_400_000
EXPORTED_AT = "2025-11-17T09:12:44.5012345+09:00"
TWEMOJI = "https://cdn.jsdelivr.net/gh/twitter/twemoji@latest/assets/svg/{}.svg"
EMOJI_CODES = {
    "🙌": "raised_hands",
    "😄": "smile",
    "🙏": "pray",
    "🎉": "tada",
    "👍": "thumbsup",
    "🍡": "dango",
    "💪": "muscle",
    "🙇": "bow",
    "😅": "sweat_smile",
    "🏃": "person_running",
    "🎂": "birthday",
    "☀️": "sunny",
    "🍂": "fallen_leaf",
    "✅": "white_check_mark",
    "❌": "x",
    "🔧": "wrench",
    "📦": "package",
    "🔀": "twisted_rightwards_arrows",
    "✏️": "pencil2",
    "🍙": "rice_ball",
    "🍜": "ramen",
    "🥟": "dumpling",
    "😆": "laughing",
    "🐈": "cat2",
    "🍵": "tea",
    "📝": "pencil",
    "😇": "innocent",
    "😋": "yum",
    "🍻": "beers",
    "😂": "joy",
    "⏰": "alarm_clock",
    "☕": "coffee",
    "📣": "mega",
    "👋": "wave",
    "😍": "heart_eyes",
    "🎨": "art",
    "😭": "sob",
    "🎮": "video_game",
}


def _local(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=JST)


class _Ids:
    """Snowflakes from times: unique and in time order, like Discord's."""

    def __init__(self) -> None:
        self._used: set[int] = set()

    def at(self, when: datetime) -> str:
        ms = int(when.astimezone(UTC).timestamp() * 1000) - DISCORD_EPOCH_MS
        value = (ms << 22) | (1 << 17)  # worker 0, process 1, increment 0
        while value in self._used:
            value += 1
        self._used.add(value)
        return str(value)


def _stamp(when: datetime) -> str:
    """The exporter's local ISO format with milliseconds and offset."""
    return when.astimezone(JST).isoformat(timespec="milliseconds")


def _emoji(glyph: str) -> dict[str, Any]:
    code_points = "-".join(f"{ord(c):x}" for c in glyph if c != "\ufe0f")
    return {
        "id": "",
        "name": glyph,
        "code": EMOJI_CODES[glyph],
        "isAnimated": False,
        "imageUrl": TWEMOJI.format(code_points),
    }


def _inline_emojis(text: str) -> list[dict[str, Any]]:
    found = sorted({g for g in EMOJI_CODES if g in text}, key=text.index)
    return [_emoji(g) for g in found]


@dataclass
class _World:
    ids: _Ids = field(default_factory=_Ids)
    guild_id: str = ""
    role_ids: dict[str, str] = field(default_factory=dict)
    user_ids: dict[str, str] = field(default_factory=dict)
    channel_ids: dict[str, str] = field(default_factory=dict)
    category_ids: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def build(self) -> None:
        self.guild_id = self.ids.at(_local(script.GUILD["created"]))
        for key, (*_, created) in script.MEMBERS.items():
            self.user_ids[key] = self.ids.at(_local(created))
        base = _local(script.GUILD["created"])
        for i, role in enumerate(script.ROLES):
            self.role_ids[role] = self.ids.at(base + timedelta(minutes=1 + i))
        for i, category in enumerate(dict.fromkeys(c[1] for c in script.CHANNELS.values())):
            self.category_ids[category] = self.ids.at(base + timedelta(seconds=30 + i))
        for key, (*_, created) in script.CHANNELS.items():
            self.channel_ids[key] = self.ids.at(_local(created))
        for key, (_, _, created) in script.THREADS.items():
            self.channel_ids[key] = self.ids.at(_local(created))

    def user(self, key: str, *, roles: bool = True) -> dict[str, Any]:
        username, nickname, role, _ = script.MEMBERS[key]
        user_id = self.user_ids[key]
        out: dict[str, Any] = {
            "id": user_id,
            "name": username,
            "discriminator": "4821" if key in script.BOTS else "0000",
            "nickname": nickname,
            "color": script.ROLES[role][0] if role else None,
            "isBot": key in script.BOTS,
        }
        if roles:
            out["roles"] = (
                [
                    {
                        "id": self.role_ids[role],
                        "name": role,
                        "color": script.ROLES[role][0],
                        "position": script.ROLES[role][1],
                    }
                ]
                if role
                else []
            )
        out["avatarUrl"] = f"https://cdn.discordapp.com/embed/avatars/{list(script.MEMBERS).index(key) % 6}.png"
        return out


@dataclass
class _Draft:
    channel: str
    author: str
    when: datetime
    text: str
    options: dict[str, Any]
    id: str = ""


def _drafts(world: _World) -> list[_Draft]:
    drafts: list[_Draft] = []
    counter = 0
    for channel, start, lines in script.SCENES:
        when = _local(start)
        for position, line in enumerate(lines):
            author, minutes, text = line[0], line[1], line[2]
            options: dict[str, Any] = dict(line[3]) if len(line) > 3 else {}
            counter += 1
            jitter = timedelta(seconds=(counter * 37 + 11) % 40 + (3 if position else 0))
            when = when + timedelta(minutes=minutes) + jitter + timedelta(milliseconds=(counter * 173) % 1000)
            drafts.append(_Draft(channel, author, when, text, options))
    drafts.sort(key=lambda d: d.when)
    for draft in drafts:
        draft.id = world.ids.at(draft.when)
        label = draft.options.get("label")
        if label:
            if label in world.labels:
                raise SystemExit(f"duplicate label {label!r}")
            world.labels[label] = draft.id
    return drafts


def _message(world: _World, draft: _Draft) -> dict[str, Any]:
    opts = draft.options
    kind = opts.get("type") or ("Reply" if "reply" in opts else "20" if "interaction" in opts else "Default")
    edited = draft.when + timedelta(minutes=opts["edited"]) if "edited" in opts else None
    channel_id = world.channel_ids[draft.channel]
    attachments = []
    for i, (name, size) in enumerate(opts.get("attach", [])):
        attachment_id = str(int(draft.id) + 1 + i)
        attachments.append(
            {
                "id": attachment_id,
                "url": f"https://cdn.discordapp.com/attachments/{channel_id}/{attachment_id}/{name}",
                "fileName": name,
                "fileSizeBytes": size,
            }
        )
    embeds = []
    if "embed" in opts:
        e = opts["embed"]
        embeds.append(
            {
                "title": e["title"],
                "url": e["url"],
                "timestamp": None,
                "description": e.get("description", ""),
                "color": "#24292F",
                "images": [],
                "fields": [{"name": n, "value": v, "isInline": True} for n, v in e.get("fields", [])],
                "inlineEmojis": _inline_emojis(e["title"]),
            }
        )
    stickers = []
    if "sticker" in opts:
        sticker_id = "749054660769218631"
        stickers.append(
            {
                "id": sticker_id,
                "name": opts["sticker"],
                "format": "Lottie",
                "sourceUrl": f"https://media.discordapp.net/stickers/{sticker_id}.json",
            }
        )
    reactions = []
    others = [k for k in script.MEMBERS if k != draft.author and k not in script.BOTS]
    for glyph, count in opts.get("reactions", []):
        reactions.append(
            {"emoji": _emoji(glyph), "count": count, "users": [world.user(k, roles=False) for k in others[:count]]}
        )
    mentions = [
        world.user(k)
        for k, (_, nickname, _, _) in script.MEMBERS.items()
        if f"@{nickname}" in draft.text and k not in script.BOTS
    ]
    message: dict[str, Any] = {
        "id": draft.id,
        "type": kind,
        "timestamp": _stamp(draft.when),
        "timestampEdited": _stamp(edited) if edited else None,
        "callEndedTimestamp": None,
        "isPinned": bool(opts.get("pinned")),
        "content": draft.text,
        "author": world.user(draft.author),
        "attachments": attachments,
        "embeds": embeds,
        "stickers": stickers,
        "reactions": reactions,
        "mentions": mentions,
        "inlineEmojis": _inline_emojis(draft.text),
    }
    if "reply" in opts:
        message["reference"] = {
            "type": "Default",
            "messageId": world.labels[opts["reply"]],
            "channelId": channel_id,
            "guildId": world.guild_id,
        }
    elif "ref" in opts:
        message["reference"] = {
            "type": "Default",
            "messageId": world.labels[opts["ref"]],
            "channelId": channel_id,
            "guildId": world.guild_id,
        }
    elif "thread" in opts:
        message["reference"] = {
            "type": "Default",
            "messageId": None,
            "channelId": world.channel_ids[opts["thread"]],
            "guildId": world.guild_id,
        }
    if "interaction" in opts:
        command, user = opts["interaction"]
        message["interaction"] = {"id": str(int(draft.id) - 4096), "name": command, "user": world.user(user)}
    return message


def _header(world: _World, key: str) -> tuple[dict[str, Any], str]:
    guild = {
        "id": world.guild_id,
        "name": script.GUILD["name"],
        "iconUrl": "https://cdn.discordapp.com/embed/avatars/0.png",
    }
    if key in script.THREADS:
        name, parent, _ = script.THREADS[key]
        parent_name = script.CHANNELS[parent][0]
        channel = {
            "id": world.channel_ids[key],
            "type": "GuildPublicThread",
            "categoryId": world.channel_ids[parent],
            "category": parent_name,
            "name": name,
            "topic": None,
        }
        file_name = f"{script.GUILD['name']} - {parent_name} - {name} [{world.channel_ids[key]}].json"
    else:
        name, category, topic, _ = script.CHANNELS[key]
        channel = {
            "id": world.channel_ids[key],
            "type": "GuildTextChat",
            "categoryId": world.category_ids[category],
            "category": category,
            "name": name,
            "topic": topic,
        }
        file_name = f"{script.GUILD['name']} - {category} - {name} [{world.channel_ids[key]}].json"
    header = {
        "guild": guild,
        "channel": channel,
        "dateRange": {"after": None, "before": None},
        "exportedAt": EXPORTED_AT,
    }
    return header, file_name


def render() -> dict[str, str]:
    """Every output file: relative path → contents."""
    world = _World()
    world.build()
    drafts = _drafts(world)
    files: dict[str, str] = {}
    for key in [*script.CHANNELS, *script.THREADS]:
        header, file_name = _header(world, key)
        messages = [_message(world, d) for d in drafts if d.channel == key]
        document = {**header, "messages": messages, "messageCount": len(messages)}
        files[f"discord/{file_name}"] = json.dumps(document, ensure_ascii=False, indent=2)
    by_id = {d.id: d for d in drafts}
    questions = []
    for i, q in enumerate(script.QUESTIONS, start=1):
        ids = [world.labels[label] for label in q["labels"]]
        first = by_id[ids[0]]
        if q["expect"] not in first.text:
            raise SystemExit(f"question {i}: {q['expect']!r} is not in message {q['labels'][0]!r}")
        channel = (
            script.THREADS[first.channel][0] if first.channel in script.THREADS else script.CHANNELS[first.channel][0]
        )
        questions.append(
            {
                "id": f"q{i:02d}",
                "lang": q["lang"],
                "question": q["question"],
                "answer": q["answer"],
                "message_ids": ids,
                "channel": channel,
                "expect": q["expect"],
            }
        )
    files["questions.json"] = (
        json.dumps(
            {
                "description": "Questions answerable from the sample export, with the ids of the messages "
                "that answer them (the first one contains `expect`).",
                "guild_id": world.guild_id,
                "guild_name": script.GUILD["name"],
                "questions": questions,
            },
            ensure_ascii=False,
            indent=2,
        )
        + "\n"
    )
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    parser.add_argument("--out", type=Path, default=SHIPPED, help="output directory")
    args = parser.parse_args(argv)
    files = render()
    out: Path = args.out
    if args.check:
        shipped = {p.relative_to(out).as_posix() for p in (out / "discord").glob("*.json")} | {"questions.json"}
        stale = sorted(
            name
            for name in shipped | files.keys()
            if name not in files or not (out / name).is_file() or (out / name).read_text("utf-8") != files[name]
        )
        for name in stale:
            print(f"differs: {name}", file=sys.stderr)
        return 1 if stale else 0
    (out / "discord").mkdir(parents=True, exist_ok=True)
    for old in (out / "discord").glob("*.json"):
        if f"discord/{old.name}" not in files:
            old.unlink()
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
