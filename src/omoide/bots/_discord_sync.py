"""``/sync``: read a Discord channel's (or thread's) new history into long-term memory.

From where the last sync or import of the channel stopped (``Memory.ingest_cursor``), in
batches (``Memory.ingest_messages``), with progress in the deferred response, until the
end of the history, the message limit or the time limit.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import discord

from omoide.bots._discord_commands import is_private_thread
from omoide.bots._discord_replies import Interaction, show
from omoide.importers.discord_live import from_discord_message

if TYPE_CHECKING:
    from omoide.bots.discord_bot import DiscordBotConfig
    from omoide.engine import Memory

SYNC_ORIGIN = "discord:sync"
SYNCABLE = (discord.TextChannel, discord.Thread, discord.VoiceChannel, discord.StageChannel)


async def sync_history(
    mem: Memory,
    config: DiscordBotConfig,
    interaction: Interaction,
    guild_id: int,
    channel: discord.TextChannel | discord.Thread | discord.VoiceChannel | discord.StageChannel,
    *,
    me: int | None,
) -> None:
    """Ingest ``channel``'s messages since the last sync (``me``: the bot's user id, whose posts are skipped)."""
    name = f"#{channel.name}"
    if isinstance(channel, discord.Thread):
        parent, thread = channel.parent_id, channel.id
    else:
        parent, thread = channel.id, None
    cursor = await mem.knowledge.ingest_cursor(platform="discord", workspace=guild_id, channel=parent, thread=thread)
    after = discord.Object(id=int(cursor.message_id)) if cursor is not None else None
    since = "since the last sync" if cursor is not None else "from the beginning"
    await show(interaction, f"Reading {name} {since}…")
    deadline = asyncio.get_running_loop().time() + config.sync_time_limit
    read = new = chunks = 0
    batch: list[discord.Message] = []
    stopped = False
    private = is_private_thread(channel)

    async def flush() -> None:
        nonlocal new, chunks
        if batch:
            done = await mem.knowledge.ingest_messages(
                [from_discord_message(m) for m in batch],
                workspace=guild_id,
                origin=SYNC_ORIGIN,
                private=private,
                members=[m.id for m in channel.members] if private and isinstance(channel, discord.Thread) else [],
            )
            new += done.new_messages
            chunks += done.chunks
            batch.clear()

    try:
        async for msg in channel.history(limit=config.sync_max_messages, after=after, oldest_first=True):
            read += 1
            if msg.author.id != me:  # the bot's own answers are not history
                batch.append(msg)
            if read % config.sync_batch == 0:
                await flush()
                if asyncio.get_running_loop().time() >= deadline:
                    stopped = True
                    break
                await show(interaction, f"Syncing {name}: {read} messages read, {new} new stored…")
        await flush()
    except discord.Forbidden:
        await flush()
        await show(
            interaction,
            f"I can't read the history of {name}: give me the Read Message History permission there. "
            f"{new} new messages were stored before that.",
            fallback=channel,
        )
        return
    if stopped:
        text = (
            f"Synced part of {name}: {new} new messages stored ({chunks} chunks, {read} messages read) "
            "before the time limit. Run `/sync` again to continue from there."
        )
    elif new == 0:
        text = f"Nothing new in {name} {since} ({read} messages read)."
    else:
        text = (
            f"Synced {name}: {new} new messages stored in long-term memory ({chunks} chunks, "
            f"{read} messages read). `/chat` can answer from them now."
        )
    await show(interaction, text, fallback=channel)


__all__ = ["SYNCABLE", "SYNC_ORIGIN", "sync_history"]
