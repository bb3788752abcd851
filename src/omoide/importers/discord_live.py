"""Live Discord messages (discord.py objects) in the importers' neutral shape.

A bot that syncs a channel's history reads :class:`discord.Message` objects instead of a
DiscordChatExporter file; :func:`from_discord_message` maps them to the same
:class:`~omoide.importers.ImportedMessage` the export reader produces, so
:meth:`omoide.Memory.ingest_messages` windows, chunks and de-duplicates them exactly as an
import (and a later import of an export of the same channel skips them, and vice versa):

* workspace = guild (``"0"`` for direct messages, as DiscordChatExporter does); for a
  message in a thread, ``channel_id`` is the parent channel and ``thread_id`` the thread;
* kinds: ``default`` → message, ``reply`` → reply, slash and context-menu command
  responses → command (``invoked_by`` = who ran it), a forward → forward, every other
  type (joins, pins, thread creation, …) → system;
* text = the content with mentions resolved (``clean_content``), custom emoji and
  ``<t:…>`` timestamps made readable, then one line per attachment, embed, sticker and
  forwarded message, like the export reader's.

Needs the ``discord`` extra (``pip install 'omoide[discord]'``); this module is not
imported by :mod:`omoide.importers` itself.
"""

from __future__ import annotations

import discord

from omoide.importers._common import join_text
from omoide.importers._discord import _CHANNEL_MENTION, _ROLE_MENTION, DM_GUILD_ID, _readable
from omoide.importers._model import ImportedAttachment, ImportedMessage, MessageKind

_COMMAND_TYPES = frozenset({discord.MessageType.chat_input_command, discord.MessageType.context_menu_command})
_USER_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply, *_COMMAND_TYPES})


def message_kind(message: discord.Message) -> MessageKind:
    """The neutral kind of a live message (see the module docstring)."""
    reference = message.reference
    if reference is not None and reference.type is discord.MessageReferenceType.forward:
        return "forward"
    if message.type not in _USER_TYPES:
        return "system"
    if message.type in _COMMAND_TYPES or message.interaction_metadata is not None:
        return "command"
    if message.type is discord.MessageType.reply:
        return "reply"
    return "message"


def _embed_lines(embeds: list[discord.Embed]) -> list[str]:
    lines = []
    for embed in embeds:
        parts = [p.strip() for p in (embed.title, embed.description) if p and p.strip()]
        parts += [f"{f.name or ''}: {f.value or ''}".strip(": ") for f in embed.fields if f.name or f.value]
        if not parts and embed.url:
            parts.append(embed.url)
        if parts:
            lines.append("[embed: " + " — ".join(parts) + "]")
    return lines


def _attachments(items: list[discord.Attachment]) -> tuple[ImportedAttachment, ...]:
    return tuple(ImportedAttachment(a.filename, a.url, a.size) for a in items)


def _extras(
    attachments: tuple[ImportedAttachment, ...], embeds: list[discord.Embed], stickers: list[discord.StickerItem]
) -> list[str]:
    lines = [f"[attachment: {a.name}]" for a in attachments]
    lines += _embed_lines(embeds)
    lines += [f"[sticker: {s.name}]" for s in stickers if s.name]
    return lines


def readable_content(
    message: discord.Message, *, strip_mention_of: int | None = None, strip_role: int | None = None
) -> str:
    """The message body for memory: mentions as ``@name`` / ``#channel``, emoji and timestamps readable.

    Args:
        strip_mention_of: a user id (the bot's) whose mentions are removed rather than resolved.
        strip_role: a role id (the bot's own managed role) whose mentions are removed too.
    """
    content = message.content
    if strip_mention_of is not None:
        content = content.replace(f"<@{strip_mention_of}>", "").replace(f"<@!{strip_mention_of}>", "")
    if strip_role is not None:
        content = content.replace(f"<@&{strip_role}>", "")
    if content != message.content:
        # clean_content works on message.content; resolve the rest by hand, as it does
        names = {str(u.id): u.display_name for u in message.mentions}
        channels = {str(c.id): c.name for c in message.channel_mentions}
        roles = {str(r.id): r.name for r in message.role_mentions}
        content = _CHANNEL_MENTION.sub(lambda m: f"#{channels[m[1]]}" if m[1] in channels else m[0], content)
        content = _ROLE_MENTION.sub(lambda m: f"@{roles[m[1]]}" if m[1] in roles else m[0], content)
        return _readable(content, names).strip()
    return _readable(message.clean_content.replace("\u200b", ""), {}).strip()


def message_text(
    message: discord.Message, *, strip_mention_of: int | None = None, strip_role: int | None = None
) -> str:
    """:func:`readable_content`, then one line per attachment, embed and sticker (as in
    :func:`from_discord_message`): what a bot stores for a message it answers."""
    extras = _extras(_attachments(message.attachments), message.embeds, message.stickers)
    return join_text(readable_content(message, strip_mention_of=strip_mention_of, strip_role=strip_role), extras)


def from_discord_message(message: discord.Message) -> ImportedMessage:
    """One live Discord message as an :class:`~omoide.importers.ImportedMessage`."""
    channel = message.channel
    guild = message.guild
    thread_id: str | None = None
    thread_name: str | None = None
    if isinstance(channel, discord.Thread):
        channel_id = str(channel.parent_id)
        parent = channel.parent
        channel_name = parent.name if parent is not None else None
        thread_id, thread_name = str(channel.id), channel.name
    else:
        channel_id = str(channel.id)
        channel_name = getattr(channel, "name", None)
    content = readable_content(message)
    attachments = _attachments(message.attachments)
    extras = _extras(attachments, message.embeds, message.stickers)
    for snapshot in message.message_snapshots:
        f_attachments = _attachments(snapshot.attachments)
        f_text = join_text(_readable(snapshot.content, {}), _extras(f_attachments, snapshot.embeds, snapshot.stickers))
        if f_text:
            extras.append("[forwarded message] " + f_text.replace("\n", " / "))
        attachments += f_attachments
    kind = message_kind(message)
    invoked_by: str | None = None
    if message.interaction_metadata is not None:
        user = message.interaction_metadata.user
        invoked_by = str(user.id)
        extras.insert(0, f"[command used by {user.display_name}]")
    reference = message.reference
    reply_to = str(reference.message_id) if kind == "reply" and reference and reference.message_id else None
    return ImportedMessage(
        platform="discord",
        workspace_id=str(guild.id) if guild is not None else DM_GUILD_ID,
        workspace_name=guild.name if guild is not None else "Direct Messages",
        channel_id=channel_id,
        channel_name=channel_name,
        thread_id=thread_id,
        thread_name=thread_name,
        message_id=str(message.id),
        author_id=str(message.author.id),
        author_name=message.author.display_name,
        is_bot=message.author.bot,
        text=join_text(content, extras),
        created_at=message.created_at,
        edited_at=message.edited_at,
        reply_to=reply_to,
        attachments=attachments,
        kind=kind,
        platform_kind=message.type.name,
        content=content,
        url=message.jump_url,
        invoked_by=invoked_by,
    )


__all__ = ["from_discord_message", "message_kind", "message_text", "readable_content"]
