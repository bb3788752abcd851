"""What the Discord bot replies with, and whose channels an answer may draw on.

Rendering (:func:`render_answer`, :func:`render_memories`), sending a reply in pieces of at
most 2,000 characters (:func:`send_pieces`), and the interaction checks the commands share
(:func:`is_admin`, :func:`guild_id_of`, :func:`readable_channels`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import discord
from discord import app_commands

from omoide.bots._split import DISCORD_LIMIT, split_message

if TYPE_CHECKING:
    from omoide.answers import AnswerResult
    from omoide.stores.memories import MemoryRecord

logger = logging.getLogger("omoide.bots.discord")

Interaction: TypeAlias = "discord.Interaction[discord.Client]"


class NotAdmin(app_commands.CheckFailure):
    """The invoking member lacks Manage Server and Administrator."""


def is_admin(interaction: Interaction) -> bool:
    """Manage Server or Administrator, from the member's permissions in the interaction (a check)."""
    perms = interaction.permissions
    if interaction.guild_id is None or not (perms.administrator or perms.manage_guild):
        raise NotAdmin("You need the Manage Server permission to use this command.")
    return True


def readable_channels(guild: discord.Guild | None, user: discord.abc.User, here: int | None) -> list[int]:
    """The channels whose history ``user`` may read: where their answers may draw knowledge from.

    From the gateway's guild cache (channels, roles and overwrites, with ``Intents.guilds``);
    when the guild or the member is not cached, only the channel the question was asked in.
    Knowledge from a thread carries its parent channel's id, so the parent decides.
    """
    if guild is not None and isinstance(user, discord.Member) and guild.channels:
        return [
            c.id
            for c in guild.channels
            if not isinstance(c, discord.CategoryChannel) and c.permissions_for(user).read_message_history
        ]
    return [here] if here else []


def is_private_thread(channel: object) -> bool:
    """A private thread: its knowledge is private to its members (threads carry the parent's channel id)."""
    return isinstance(channel, discord.Thread) and channel.type is discord.ChannelType.private_thread


def guild_id_of(interaction: Interaction) -> int:
    """The server an interaction comes from (a check: commands work in a server only)."""
    if interaction.guild_id is None:
        raise app_commands.NoPrivateMessage("This command works in a server, not in direct messages.")
    return interaction.guild_id


def render_answer(result: AnswerResult) -> str:
    """``/chat``'s reply: the answer, then one line per cited source with its jump link."""
    from omoide.answers.prompt import time_range

    if result.no_data:
        hint = (
            "（管理者がチャンネルで `/sync` を実行すると、その履歴から答えられるようになります。）"
            if result.language == "ja"
            else "(An admin can run `/sync` in a channel to let me answer from its history.)"
        )
        return f"{result.text}\n{hint}"
    if not result.citations:
        return result.text
    lines = [result.text, "", "**根拠**" if result.language == "ja" else "**Sources**"]
    for c in result.citations:
        chunk = c.hit.chunk
        where = " · ".join(p for p in (chunk.source_title, time_range(chunk.started_at, chunk.ended_at)) if p)
        link = f" — <{c.hit.jump_url}>" if c.hit.jump_url else ""
        lines.append(f"[#{c.number}] {where}{link}")
    return "\n".join(lines)


def render_memories(memories: Sequence[MemoryRecord]) -> str:
    """One line per memory, in the given order (a recall's is best first; its fused scores mean nothing to a reader)."""
    lines = []
    for m in memories:
        tags = f" [{', '.join(m.tags)}]" if m.tags else ""
        lines.append(f"`#{m.id}` ({m.category}{tags}) {m.content} — {m.updated_at:%Y-%m-%d}")
    return "\n".join(lines)


async def send_pieces(interaction: Interaction, text: str, *, ephemeral: bool = False) -> None:
    """Send ``text`` as the interaction's reply, split at 2,000 characters.

    After a deferral the first piece replaces the "thinking…" message and the rest are
    follow-ups; otherwise the first piece is the response itself.
    """
    pieces = split_message(text, DISCORD_LIMIT) or ["…"]
    first, rest = pieces[0], pieces[1:]
    if interaction.response.is_done():
        await interaction.edit_original_response(content=first)
    else:
        await interaction.response.send_message(first, ephemeral=ephemeral)
    for piece in rest:
        await interaction.followup.send(piece, ephemeral=ephemeral)


async def show(interaction: Interaction, text: str, *, fallback: discord.abc.Messageable | None = None) -> None:
    """Edit the deferred response (best effort: its token lasts 15 minutes); else post to ``fallback``."""
    try:
        await interaction.edit_original_response(content=text)
    except discord.HTTPException:
        logger.warning("discord_progress_edit_failed", exc_info=True)
        if fallback is not None:
            await fallback.send(text)


__all__ = [
    "Interaction",
    "NotAdmin",
    "guild_id_of",
    "is_admin",
    "is_private_thread",
    "logger",
    "readable_channels",
    "render_answer",
    "render_memories",
    "send_pieces",
    "show",
]
