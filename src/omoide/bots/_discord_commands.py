"""The Discord bot's slash commands: ``/ask``, ``/chat``, ``/memory …``, ``/sync`` and ``/forget-me``.

:func:`register_commands` adds them to a bot's command tree, with the error handler that
turns a failed check or an omoide error into an ephemeral reply. The checks here are shared
with mentions: who may run ``/sync`` (:func:`is_admin`), which server a command runs in
(:func:`guild_id_of`), and which channels an answer may draw on (:func:`readable_channels`,
:func:`is_private_thread`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from omoide.bots._discord_replies import Interaction, logger, render_answer, render_memories, send_pieces
from omoide.errors import NotFoundError, OmoideError

if TYPE_CHECKING:
    from omoide.bots.discord_bot import OmoideBot


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


def register_commands(bot: OmoideBot) -> None:
    """Add omoide's slash commands and their error handler to ``bot.tree``."""
    tree = bot.tree
    mem = bot.mem

    @tree.command(name="ask", description="Talk with omoide (remembers this conversation and what you told it)")
    @app_commands.describe(question="What you want to say or ask")
    @app_commands.guild_only()
    async def ask(interaction: Interaction, question: app_commands.Range[str, 1, 4000]) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(thinking=True)
        answer = await bot.converse(
            guild_id=guild_id,
            channel_id=interaction.channel_id or 0,
            user=interaction.user,
            text=question,
            message_id=interaction.id,
            readable=readable_channels(interaction.guild, interaction.user, interaction.channel_id),
            private=is_private_thread(interaction.channel),
        )
        await send_pieces(interaction, answer)

    @tree.command(name="chat", description="Answer from this server's history, with sources and links")
    @app_commands.describe(question="Your question about what was said in this server")
    @app_commands.guild_only()
    async def chat(interaction: Interaction, question: app_commands.Range[str, 1, 2000]) -> None:
        guild_id = guild_id_of(interaction)
        # inside a private thread the asker's view (public + the private knowledge they are a member
        # of, e.g. another private thread's), shown to the asker only: the thread's other members may
        # not read all of it. Elsewhere public knowledge only, posted for everyone in the channel.
        inside_private = is_private_thread(interaction.channel)
        await interaction.response.defer(thinking=True, ephemeral=inside_private)
        readable = readable_channels(interaction.guild, interaction.user, interaction.channel_id)
        result = await mem.ask(
            question,
            workspace=guild_id,
            asker=interaction.user.id,
            channel=readable or [0],
            viewer=interaction.user.id if inside_private else None,
            public_only=not inside_private,
        )
        await send_pieces(interaction, render_answer(result), ephemeral=inside_private)

    group = app_commands.Group(
        name="memory",
        description="What omoide remembers about you",
        guild_only=True,
        allowed_contexts=app_commands.AppCommandContext(guild=True),
    )

    @group.command(name="add", description="Remember something about you")
    @app_commands.describe(content="What to remember", category="A short label", tags="Comma-separated tags")
    async def memory_add(
        interaction: Interaction,
        content: app_commands.Range[str, 1, 4000],
        category: app_commands.Range[str, 1, 64] = "general",
        tags: str | None = None,
    ) -> None:
        tag_list = [t.strip() for t in tags.split(",") if t.strip()] if tags else None
        guild_id = guild_id_of(interaction)
        # remembering embeds the memory (a remote embedder may take longer than the 3 s Discord waits)
        await interaction.response.defer(ephemeral=True, thinking=True)
        done = await mem.remember(
            content,
            workspace=guild_id,
            user=interaction.user.id,
            category=category,
            tags=tag_list,
            actor=f"user:{interaction.user.id}",
        )
        verb = "Updated" if done.updated else "Remembered as"
        await send_pieces(interaction, f"{verb} `#{done.memory.id}`: {done.memory.content}", ephemeral=True)

    @group.command(name="search", description="Find your memories")
    @app_commands.describe(query="What to look for", limit="At most this many")
    async def memory_search(
        interaction: Interaction, query: app_commands.Range[str, 1, 1000], limit: app_commands.Range[int, 1, 25] = 5
    ) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)  # recalling embeds the query
        hits = await mem.recall(query, workspace=guild_id, user=interaction.user.id, limit=limit)
        if not hits:
            text = "No memory of yours matches. `/memory list` shows them all."
        else:
            text = render_memories([h.memory for h in hits])
        await send_pieces(interaction, text, ephemeral=True)

    @group.command(name="list", description="List your memories, newest first")
    @app_commands.describe(page="Page (20 per page)")
    async def memory_list(interaction: Interaction, page: app_commands.Range[int, 1, 1000] = 1) -> None:
        records = await mem.memories.list(guild_id_of(interaction), interaction.user.id, page=page)
        if records:
            text = render_memories(records)
        else:
            text = "You have no memories here yet. Add one with `/memory add`." if page == 1 else "No more memories."
        await send_pieces(interaction, text, ephemeral=True)

    @group.command(name="delete", description="Delete one of your memories")
    @app_commands.describe(memory_id="The memory's number (see /memory list)")
    async def memory_delete(interaction: Interaction, memory_id: app_commands.Range[int, 1]) -> None:
        try:
            await mem.memories.delete(
                guild_id_of(interaction), interaction.user.id, memory_id, actor=f"user:{interaction.user.id}"
            )
        except NotFoundError:
            text = f"You have no memory `#{memory_id}` here."
        else:
            text = f"Deleted memory `#{memory_id}`."
        await send_pieces(interaction, text, ephemeral=True)

    tree.add_command(group)

    @tree.command(name="sync", description="Store this channel's new messages in omoide's long-term memory (admins)")
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.check(is_admin)
    async def sync(interaction: Interaction) -> None:
        await bot.sync_channel(interaction)

    @tree.command(name="forget-me", description="Erase your memories and conversations with omoide in this server")
    @app_commands.guild_only()
    async def forget_me(interaction: Interaction) -> None:
        await bot.forget_me(interaction)

    @tree.error
    async def on_error(interaction: Interaction, error: app_commands.AppCommandError) -> None:
        cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
        if isinstance(cause, app_commands.CheckFailure):
            text = str(cause) or "You can't use this command here."
        elif isinstance(cause, OmoideError):
            text = f"⚠️ {cause.message}"
        else:
            logger.error("discord_command_failed", exc_info=cause)
            text = "⚠️ Something went wrong; the error was logged."
        try:
            if interaction.response.type is discord.InteractionResponseType.deferred_channel_message:
                await interaction.edit_original_response(content=text)  # replaces "thinking…"
            elif interaction.response.is_done():
                await interaction.followup.send(text, ephemeral=True)
            else:
                await interaction.response.send_message(text, ephemeral=True)
        except discord.HTTPException:
            logger.warning("discord_error_reply_failed", exc_info=True)


__all__ = [
    "NotAdmin",
    "guild_id_of",
    "is_admin",
    "is_private_thread",
    "readable_channels",
    "register_commands",
]
