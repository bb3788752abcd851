"""DiscordChatExporter JSON exports (one file per channel or thread, optionally in parts).

Field notes: ``../shared/data/formats/DISCORD_EXPORT.md`` (from the exporter's
``JsonMessageWriter``). The reader is lenient about version drift: only ``guild.id``,
``channel.id`` and, per message, ``id``, ``timestamp`` and ``author.id`` are required;
``content`` may be missing or null in hand-edited files and counts as empty. Anything
else may be absent (old exports lack ``exportedAt``, ``roles``, ``nickname``,
``stickers``, ``inlineEmojis``, ``interaction``, ``forwardedMessage``, …).

Mapping:

* workspace = ``guild`` (direct messages sit in the pseudo-guild ``"0"``,
  ``Direct Messages``); channel = ``channel``; for a thread (``Guild*Thread``)
  ``categoryId`` / ``category`` name the **parent channel** (a quirk of the format), so
  the message's ``channel_id`` is the parent and ``thread_id`` the thread;
* ``timestamp`` carries the exporting machine's offset and is converted to UTC;
* kinds: ``Default`` → message, ``Reply`` → reply (``reply_to`` = ``reference.messageId``),
  ``reference.type == "Forward"`` → forward (the original's content comes from
  ``forwardedMessage``), an ``interaction`` or the numeric kinds 20/23 (slash and
  context-menu commands) → command (``invoked_by`` = the user who ran it), every other
  known kind (joins, pins, renames, calls, thread creation, …; numeric kinds other than
  0/19/20/23) → system. Unknown kind *names* are kept as ordinary messages;
* text for memory = content (raw ``<@id>``, ``<:emoji:id>``, ``<t:…>`` markup from
  ``--markdown false`` is made readable) plus one line per attachment, embed, sticker and
  forwarded message;
* messages are yielded in file order: ``--reverse`` exports come newest first, so
  consumers sort by time (:func:`~omoide.importers.read_export` and
  :func:`~omoide.importers.message_windows` do).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omoide.importers._common import (
    ImportRun,
    RecordError,
    expand_files,
    join_text,
    optional_str,
    optional_time,
    parse_time,
    require_str,
)
from omoide.importers._errors import UnrecognizedExport
from omoide.importers._jsonfast import fast_items
from omoide.importers._jsonstream import JSONError, Rejected, checked, error_line, load_whole, read_header
from omoide.importers._model import ImportedAttachment, ImportedChannel, ImportedMessage, ImportReport, MessageKind

DM_GUILD_ID = "0"
"""The pseudo-guild id DiscordChatExporter uses for direct messages."""

MEDIA_DIR_SUFFIX = "_Files"
"""``--media`` downloads go to ``<export file>_Files/`` (sticker animations there are .json too)."""

THREAD_KINDS = frozenset({"GuildPublicThread", "GuildPrivateThread", "GuildNewsThread"})
DIRECT_KINDS = frozenset({"DirectTextChat", "DirectGroupTextChat"})
SYSTEM_KINDS = frozenset(
    {
        "RecipientAdd",
        "RecipientRemove",
        "Call",
        "ChannelNameChange",
        "ChannelIconChange",
        "ChannelPinnedMessage",
        "GuildMemberJoin",
        "ThreadCreated",
        "ThreadStarterMessage",
        "GuildBoost",
        "GuildBoostTier1",
        "GuildBoostTier2",
        "GuildBoostTier3",
        "ChannelFollowAdd",
        "GuildInviteReminder",
        "AutoModerationAction",
        "PollResult",
    }
)
_COMMAND_KINDS = frozenset({"20", "23", "ChatInputCommand", "ContextMenuCommand"})
_USER_NUMERIC_KINDS = frozenset({"0", "19", "20", "23"})

_DISCORD_EPOCH_MS = 1_420_070_400_000
_HEADER_KEYS = frozenset({"guild", "channel"})


def snowflake_time(snowflake: str) -> datetime:
    """The creation time encoded in a Discord snowflake id (aware UTC).

    Raises:
        ValueError: ``snowflake`` is not a decimal integer, or too large to be one.
    """
    ms = (int(snowflake) >> 22) + _DISCORD_EPOCH_MS
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError) as exc:
        raise ValueError(f"{snowflake!r:.40} is too large for a Discord snowflake") from exc


def jump_url(guild_id: str, channel_id: str, message_id: str) -> str:
    """The ``https://discord.com/channels/…`` link of a message (``@me`` for direct messages)."""
    guild = "@me" if guild_id == DM_GUILD_ID else guild_id
    return f"https://discord.com/channels/{guild}/{channel_id}/{message_id}"


# ------------------------------------------------------------------------- header


class _Channel:
    """Where the messages of one file live."""

    __slots__ = ("guild_id", "guild_name", "info", "parent_id", "parent_name", "thread_id", "thread_name")

    def __init__(self, header: Mapping[str, Any], source: str) -> None:
        guild, channel = header.get("guild"), header.get("channel")
        if not isinstance(guild, dict):
            raise RecordError("missing 'guild' object")
        if not isinstance(channel, dict):
            raise RecordError("missing 'channel' object")
        self.guild_id = require_str(guild, "id", "guild.")
        self.guild_name = optional_str(guild.get("name"))
        channel_id = require_str(channel, "id", "channel.")
        kind = optional_str(channel.get("type")) or ""
        name = optional_str(channel.get("name"))
        parent_id = channel.get("categoryId")
        if kind in THREAD_KINDS and isinstance(parent_id, str | int) and str(parent_id):
            self.parent_id, self.parent_name = str(parent_id), optional_str(channel.get("category"))
            self.thread_id: str | None = channel_id
            self.thread_name: str | None = name
        else:
            self.parent_id, self.parent_name = channel_id, name
            self.thread_id = self.thread_name = None
        is_direct = kind in DIRECT_KINDS or self.guild_id == DM_GUILD_ID
        self.info = ImportedChannel(
            "discord",
            self.guild_id,
            self.guild_name,
            self.parent_id,
            self.parent_name,
            self.thread_id,
            self.thread_name,
            kind=kind,
            topic=optional_str(channel.get("topic")),
            is_direct=is_direct,
            is_private=is_direct or kind == "GuildPrivateThread",
            source=source,
        )

    @property
    def own_id(self) -> str:
        """The exported channel's own id (the thread's, for a thread)."""
        return self.thread_id or self.parent_id


# --------------------------------------------------------------------------- text

_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_CHANNEL_MENTION = re.compile(r"<#(\d+)>")
_CUSTOM_EMOJI = re.compile(r"<a?:(\w+):\d+>")
_TIMESTAMP = re.compile(r"<t:(-?\d+)(?::[tTdDfFR])?>")


def _user_name(user: Mapping[str, Any]) -> str | None:
    return optional_str(user.get("nickname")) or optional_str(user.get("name"))


def _readable(content: str, mentions: Mapping[str, str]) -> str:
    """Make raw Discord markup (exports made with ``--markdown false``) readable."""
    if "<" not in content:
        return content
    content = _USER_MENTION.sub(lambda m: "@" + mentions.get(m.group(1), m.group(1)), content)
    content = _ROLE_MENTION.sub("@role", content)
    content = _CHANNEL_MENTION.sub(lambda m: "#" + m.group(1), content)
    content = _CUSTOM_EMOJI.sub(r":\1:", content)

    def stamp(m: re.Match[str]) -> str:
        try:
            return datetime.fromtimestamp(int(m.group(1)), tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        except (OverflowError, OSError, ValueError):
            return m.group(0)

    return _TIMESTAMP.sub(stamp, content)


def _attachments(raw: object, where: str) -> tuple[ImportedAttachment, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RecordError(f"'{where}' must be an array")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise RecordError(f"'{where}[{i}]' must be an object")
        url = optional_str(item.get("url"))
        name = optional_str(item.get("fileName")) or (url.rsplit("/", 1)[-1].split("?")[0] if url else None)
        if name is None:
            raise RecordError(f"'{where}[{i}]' has neither 'fileName' nor 'url'")
        size = item.get("fileSizeBytes")
        out.append(ImportedAttachment(name, url, int(size) if isinstance(size, int | float) else None))
    return tuple(out)


def _embed_lines(raw: object) -> list[str]:
    if not isinstance(raw, list):
        return []
    lines = []
    for embed in raw:
        if not isinstance(embed, dict):
            continue
        parts = [p.strip() for p in (embed.get("title"), embed.get("description")) if isinstance(p, str) and p.strip()]
        fields = embed.get("fields")
        if isinstance(fields, list):
            for f in fields:
                if isinstance(f, dict) and (isinstance(f.get("name"), str) or isinstance(f.get("value"), str)):
                    parts.append(f"{f.get('name') or ''}: {f.get('value') or ''}".strip(": "))
        if not parts and isinstance(embed.get("url"), str) and embed["url"]:
            parts.append(embed["url"])
        if parts:
            lines.append("[embed: " + " — ".join(parts) + "]")
    return lines


def _sticker_lines(raw: object) -> list[str]:
    if not isinstance(raw, list):
        return []
    return [f"[sticker: {s['name']}]" for s in raw if isinstance(s, dict) and optional_str(s.get("name"))]


def _extras(message: Mapping[str, Any], attachments: tuple[ImportedAttachment, ...]) -> list[str]:
    lines = [f"[attachment: {a.name}]" for a in attachments]
    lines += _embed_lines(message.get("embeds"))
    lines += _sticker_lines(message.get("stickers"))
    return lines


# ------------------------------------------------------------------------ message


def _kind(raw_kind: str, message: Mapping[str, Any]) -> MessageKind:
    reference = message.get("reference")
    if isinstance(reference, dict) and reference.get("type") == "Forward":
        return "forward"
    if raw_kind in SYSTEM_KINDS or (raw_kind.isdigit() and raw_kind not in _USER_NUMERIC_KINDS):
        return "system"
    if raw_kind in _COMMAND_KINDS or isinstance(message.get("interaction"), dict):
        return "command"
    if raw_kind in ("Reply", "19"):
        return "reply"
    return "message"


def _parse_message(raw: object, channel: _Channel) -> ImportedMessage:
    if not isinstance(raw, dict):
        raise RecordError(f"a message must be a JSON object, got {type(raw).__name__}")
    message_id = require_str(raw, "id")
    if not message_id.isdigit():
        raise RecordError(f"'id' must be a Discord snowflake (decimal digits), got {message_id!r:.40}")
    created_at = parse_time(raw.get("timestamp"), "'timestamp'")
    author = raw.get("author")
    if not isinstance(author, dict):
        raise RecordError("missing 'author' object")
    author_id = require_str(author, "id", "author.")
    content = raw.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise RecordError(f"'content' must be a string, got {type(content).__name__}")
    raw_kind = optional_str(raw.get("type")) or "Default"
    kind = _kind(raw_kind, raw)

    raw_mentions = raw.get("mentions")
    mentions = {
        str(u["id"]): name
        for u in (raw_mentions if isinstance(raw_mentions, list) else ())
        if isinstance(u, dict) and u.get("id") is not None and (name := _user_name(u))
    }
    content = _readable(content, mentions)
    attachments = _attachments(raw.get("attachments"), "attachments")
    extras = _extras(raw, attachments)

    reply_to: str | None = None
    reference = raw.get("reference")
    if kind == "reply" and isinstance(reference, dict) and reference.get("messageId") is not None:
        reply_to = str(reference["messageId"])
    forwarded = raw.get("forwardedMessage")
    if isinstance(forwarded, dict):
        f_content = optional_str(forwarded.get("content")) or ""
        f_attachments = _attachments(forwarded.get("attachments"), "forwardedMessage.attachments")
        f_text = join_text(_readable(f_content, mentions), _extras(forwarded, f_attachments))
        if f_text:
            extras.append("[forwarded message] " + f_text.replace("\n", " / "))
        attachments += f_attachments

    invoked_by: str | None = None
    interaction = raw.get("interaction")
    if isinstance(interaction, dict) and isinstance(interaction.get("user"), dict):
        user_id = interaction["user"].get("id")
        invoked_by = str(user_id) if user_id is not None else None
        command = optional_str(interaction.get("name"))
        if command:
            who = _user_name(interaction["user"]) or invoked_by or "someone"
            extras.insert(0, f"[/{command} used by {who}]")

    return ImportedMessage(
        platform="discord",
        workspace_id=channel.guild_id,
        workspace_name=channel.guild_name,
        channel_id=channel.parent_id,
        channel_name=channel.parent_name,
        thread_id=channel.thread_id,
        thread_name=channel.thread_name,
        message_id=message_id,
        author_id=author_id,
        author_name=_user_name(author),
        is_bot=author.get("isBot") is True,
        text=join_text(content, extras),
        created_at=created_at,
        edited_at=optional_time(raw.get("timestampEdited"), "'timestampEdited'"),
        reply_to=reply_to,
        attachments=attachments,
        kind=kind,
        platform_kind=raw_kind,
        content=content.strip(),
        url=jump_url(channel.guild_id, channel.own_id, message_id),
        invoked_by=invoked_by,
    )


# --------------------------------------------------------------------------- files


def _record(raw: Any, index: int, channel: _Channel, run: ImportRun, source: str) -> ImportedMessage | None:
    """One message record → the message to yield, or None (reported, skipped or a duplicate)."""
    report = run.report
    report.records += 1
    if isinstance(raw, Rejected):
        run.problem(source, f"messages[{index}]", raw.problem)
        return None
    try:
        message = _parse_message(raw, channel)
    except RecordError as exc:
        msg_id = raw.get("id") if isinstance(raw, dict) else None
        run.problem(source, f"messages[{index}]", str(exc), message_id=str(msg_id) if msg_id else None)
        return None
    if message.kind == "system" and not run.include_system:
        report.system_skipped += 1
        return None
    if not message.text:
        report.empty_skipped += 1
        return None
    return message if report.accept(message) else None


def _read_file(path: Path, run: ImportRun) -> Iterator[ImportedMessage]:
    source = str(path)
    report = run.report
    whole: list[Any] | None = None  # the messages, when the streaming parser could not be used
    try:
        try:
            header, has_messages = read_header(path, stop_at="messages", needed=_HEADER_KEYS)
        except JSONError as exc:
            document = load_whole(path, exc)  # valid JSON ijson's C backend rejects (an integer beyond 64 bits)?
            if not isinstance(document, dict):
                raise exc from None
            header = {k: v for k, v in document.items() if k != "messages"}
            has_messages = isinstance(document.get("messages"), list)
            whole = [checked(m) for m in document["messages"]] if has_messages else None
        channel = _Channel(header, source)
    except OSError as exc:
        run.problem(source, "", f"cannot read the file: {exc.strerror or exc}")
        return
    except JSONError as exc:
        run.problem(source, "", f"not a DiscordChatExporter JSON export: the file is not valid JSON ({_one_line(exc)})")
        return
    except ValueError as exc:  # RecordError is a ValueError
        run.problem(source, "", f"not a DiscordChatExporter JSON export: {_one_line(exc)}")
        return
    if not has_messages:
        run.problem(source, "", "no 'messages' array: not a DiscordChatExporter JSON export")
        return
    report.files.append(source)
    report.add_channel(channel.info)
    items: Iterator[Any] = iter(whole) if whole is not None else fast_items(path, "messages")
    done = 0  # records handled so far
    while True:
        try:
            for raw in items:
                message = _record(raw, done, channel, run, source)
                done += 1
                if message is not None:
                    yield message
            return
        except OSError as exc:
            run.problem(source, f"messages[{done}]", f"read failed: {exc.strerror or exc}")
            return
        except ValueError as exc:  # not JSONError: the 'messages' array vanished between two reads
            run.problem(source, f"messages[{done}]", f"cannot read the messages: {_one_line(exc)}")
            return
        except JSONError as exc:
            document = load_whole(path, exc) if whole is None else None
            messages = document.get("messages") if isinstance(document, dict) else None
            if not isinstance(messages, list):
                run.problem(
                    source, f"messages[{done}]", f"invalid JSON, the rest of the file is skipped: {_one_line(exc)}"
                )
                return
            whole = messages  # the file is valid JSON after all: carry on from the same record
            items = (checked(m) for m in messages[done:])


def _one_line(exc: Exception) -> str:
    """The first line of an error message (yajl appends a context snippet and an arrow)."""
    return error_line(exc)


def iter_discord(
    paths: Path | str | Iterable[Path | str],
    *,
    report: ImportReport | None = None,
    strict: bool = False,
    include_system: bool = False,
) -> Iterator[ImportedMessage]:
    """Stream the messages of DiscordChatExporter JSON files, in file order.

    Args:
        paths: export files, or directories searched recursively for ``*.json``
            (partitioned ``[part N]`` files are read in order; ``--media`` folders
            ``…_Files/`` are left out).
        report: filled in while reading (channels, counts, problems); pass the same
            report to several calls to de-duplicate across them.
        strict: raise on the first malformed file or record instead of skipping it.
        include_system: keep system notifications (joins, pins, …); skipped by default.

    Yields:
        Each message once per ``(channel or thread, message id)``; the first copy wins.

    Raises:
        UnrecognizedExport: a path does not exist.
        MalformedExport: in strict mode, the first malformed file or record (``details``:
            ``path``, ``position`` such as ``messages[12]``, ``problem``).
    """
    run = ImportRun(report, strict=strict, include_system=include_system)
    files = expand_files(paths, ".json", skip_dirs_ending=MEDIA_DIR_SUFFIX)
    for path in files:
        if not path.exists():
            raise UnrecognizedExport(f"no such Discord export file: {path}", path=str(path))
    for path in files:
        yield from _read_file(path, run)


__all__ = ["DM_GUILD_ID", "SYSTEM_KINDS", "THREAD_KINDS", "iter_discord", "jump_url", "snowflake_time"]
