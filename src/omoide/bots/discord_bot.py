"""The Discord bot (``omoide discord``): slash commands and mentions over :class:`omoide.Memory`.

Thin by design: each handler reads the interaction or message, calls one or two
``Memory`` methods and renders the result; everything else is the library's.

* ``/ask`` and mentions: a conversation with session memory (seed 001): one session per
  user per channel (``mem.session_key(platform="discord", …)``); the prompt gets the
  user's recalled memories, the channel's and server's summaries and long-term knowledge
  (``Memory.build_context``), and the model may call the memory tools (``Memory.chat(tools=True)``).
* ``/chat``: a cited answer from the server's history (seed 004, ``Memory.ask``), with jump links.
  Answers (here and in conversations) draw only on channels the asking member can read.
* ``/memory add|search|list|delete``: the invoking user's own memories, ephemeral replies.
  The user id always comes from the interaction, never from an argument.
* ``/sync`` (Manage Server or Administrator): this channel's (or thread's) history since
  the last sync or import into long-term memory (``Memory.ingest_cursor`` +
  ``Memory.ingest_messages``), with progress in the deferred response.
* ``/forget-me``: erase everything stored about the invoking user in this server
  (``Memory.forget_user``), after a confirmation button; the reply is the receipt, one
  line per kind of record erased.

Long replies are split at Discord's 2,000-character limit (:mod:`omoide.bots._split`).
:func:`run_discord_bot` runs the bot with omoide's workers in the same event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import discord
from discord import app_commands

from omoide.bots._erasure import describe_erasure
from omoide.bots._split import DISCORD_LIMIT, split_message
from omoide.errors import ConfigError, NotFoundError, OmoideError
from omoide.importers.discord_live import from_discord_message, readable_content
from omoide.models import Message

if TYPE_CHECKING:
    from omoide.answers import AnswerResult
    from omoide.engine import Memory
    from omoide.stores.memories import MemoryRecord

logger = logging.getLogger("omoide.bots.discord")

Interaction: TypeAlias = "discord.Interaction[discord.Client]"

SYSTEM_PROMPT = (
    "You are omoide, a helpful assistant in a Discord server. Answer in the language the user writes in "
    "(日本語で話しかけられたら日本語で答えてください). Be concise; Discord markdown is fine. "
    "When the user asks you to remember something about them, use the remember tool; "
    "when they ask what you know about them, use recall."
)
SYNC_ORIGIN = "discord:sync"
SYNCABLE = (discord.TextChannel, discord.Thread, discord.VoiceChannel, discord.StageChannel)


@dataclass(frozen=True, slots=True)
class DiscordBotConfig:
    """How the bot behaves.

    Attributes:
        command_guild: register the slash commands in this guild only (instant; for
            development). ``None``: globally (Discord may take a while to show them).
        sync_commands: register the commands with Discord at start.
        mentions: answer messages that mention the bot (needs the privileged
            *Message Content* intent).
        context_budget: tokens of long-term context (memories, summaries, knowledge)
            added to a conversation turn.
        sync_batch: messages fetched per ingest and progress update in ``/sync``.
        sync_max_messages: the most messages one ``/sync`` reads (``None``: all).
        sync_time_limit: seconds after which ``/sync`` stops (after a whole batch) and says
            to run it again; keeps it inside the 15 minutes an interaction can be edited.
        confirm_timeout: seconds the ``/forget-me`` buttons wait.
    """

    command_guild: int | None = None
    sync_commands: bool = True
    mentions: bool = True
    context_budget: int = 4000
    sync_batch: int = 500
    sync_max_messages: int | None = None
    sync_time_limit: float = 600.0
    confirm_timeout: float = 120.0


def default_intents(*, mentions: bool = True) -> discord.Intents:
    """Guilds and guild messages; the Message Content intent only when answering mentions."""
    intents = discord.Intents.default()
    intents.message_content = mentions
    return intents


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
    if interaction.guild_id is None:
        raise app_commands.NoPrivateMessage("This command works in a server, not in direct messages.")
    return interaction.guild_id


# ---------------------------------------------------------------- rendering


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


async def _show(interaction: Interaction, text: str, *, fallback: discord.abc.Messageable | None = None) -> None:
    """Edit the deferred response (best effort: its token lasts 15 minutes); else post to ``fallback``."""
    try:
        await interaction.edit_original_response(content=text)
    except discord.HTTPException:
        logger.warning("discord_progress_edit_failed", exc_info=True)
        if fallback is not None:
            await fallback.send(text)


# ---------------------------------------------------------------- the bot


class OmoideBot(discord.Client):
    """A :class:`discord.Client` with omoide's slash commands and mention handler.

    Args:
        mem: the open :class:`~omoide.Memory`.
        config: behaviour (see :class:`DiscordBotConfig`).
        **options: passed to :class:`discord.Client` (``intents`` default: :func:`default_intents`;
            ``allowed_mentions`` default: none, so no reply pings anyone).
    """

    def __init__(self, mem: Memory, *, config: DiscordBotConfig | None = None, **options: Any) -> None:
        self.config = config or DiscordBotConfig()
        options.setdefault("intents", default_intents(mentions=self.config.mentions))
        # answers quote users and models: never let them ping @everyone, roles or people
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        super().__init__(**options)
        self.mem = mem
        self.tree: app_commands.CommandTree[OmoideBot] = app_commands.CommandTree(self)
        self._syncing: set[int] = set()
        _register(self)

    async def setup_hook(self) -> None:
        if not self.config.sync_commands:
            return
        if self.config.command_guild is not None:
            guild = discord.Object(id=self.config.command_guild)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        else:
            await self.tree.sync()

    # ---- conversation (/ask, mentions)

    async def converse(
        self,
        *,
        guild_id: int,
        channel_id: int,
        user: discord.abc.User,
        text: str,
        message_id: int,
        readable: Sequence[int],
        private: bool = False,
    ) -> str:
        """One conversation turn for ``user`` in ``channel_id``: long-term context + session + memory tools.

        Knowledge comes only from the ``readable`` channels (see :func:`readable_channels`).
        """
        mem = self.mem
        key = mem.session_key(platform="discord", workspace=guild_id, channel=channel_id, user=user.id)
        # a private thread's conversation is archived private to its members (the user and its speakers)
        await mem.set_visibility(key, private=private, members=[str(user.id)] if private else [])
        built = await mem.build_context(
            key,
            text,
            budget_tokens=self.config.context_budget,
            system=SYSTEM_PROMPT,
            user=user.id,
            channels=readable,
        )
        message = Message.user(text, author_id=str(user.id), author_name=user.display_name, message_id=str(message_id))
        reply = await mem.chat(key, message, system=built.system, tools=True)
        return reply.text

    async def on_message(self, message: discord.Message) -> None:
        """Answer a message that mentions the bot, as ``/ask`` would (in the message's channel)."""
        me = self.user
        if (
            not self.config.mentions
            or me is None
            or message.author.bot
            or message.guild is None
            or not any(u.id == me.id for u in message.mentions)
        ):
            return
        text = readable_content(message, strip_mention_of=me.id)
        try:
            if not text:
                answer = "Ask me anything — or use `/ask`, `/chat` (answers from this server's history) and `/memory`."
            else:
                async with message.channel.typing():
                    answer = await self.converse(
                        guild_id=message.guild.id,
                        channel_id=message.channel.id,
                        user=message.author,
                        text=text,
                        message_id=message.id,
                        readable=readable_channels(message.guild, message.author, message.channel.id),
                        private=is_private_thread(message.channel),
                    )
        except OmoideError as exc:
            answer = f"⚠️ {exc.message}"
        pieces = split_message(answer, DISCORD_LIMIT) or ["…"]
        await message.reply(pieces[0], mention_author=False)
        for piece in pieces[1:]:
            await message.channel.send(piece)

    # ---- /sync

    async def sync_channel(self, interaction: Interaction) -> None:
        """``/sync``: ingest the channel's (or thread's) history since the last sync, with progress."""
        guild_id = guild_id_of(interaction)
        channel = interaction.channel
        if not isinstance(channel, SYNCABLE):
            await interaction.response.send_message("I can only sync text channels and threads.", ephemeral=True)
            return
        if channel.id in self._syncing:
            await interaction.response.send_message("A sync of this channel is already running.", ephemeral=True)
            return
        self._syncing.add(channel.id)
        try:
            await interaction.response.defer(thinking=True)
            await self._sync(interaction, guild_id, channel)
        finally:
            self._syncing.discard(channel.id)

    async def _sync(
        self,
        interaction: Interaction,
        guild_id: int,
        channel: discord.TextChannel | discord.Thread | discord.VoiceChannel | discord.StageChannel,
    ) -> None:
        mem = self.mem
        name = f"#{channel.name}"
        if isinstance(channel, discord.Thread):
            parent, thread = channel.parent_id, channel.id
        else:
            parent, thread = channel.id, None
        cursor = await mem.ingest_cursor(platform="discord", workspace=guild_id, channel=parent, thread=thread)
        after = discord.Object(id=int(cursor.message_id)) if cursor is not None else None
        since = "since the last sync" if cursor is not None else "from the beginning"
        await _show(interaction, f"Reading {name} {since}…")
        me = self.user.id if self.user is not None else None
        deadline = asyncio.get_running_loop().time() + self.config.sync_time_limit
        read = new = chunks = 0
        batch: list[discord.Message] = []
        stopped = False
        private = is_private_thread(channel)

        async def flush() -> None:
            nonlocal new, chunks
            if batch:
                done = await mem.ingest_messages(
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
            async for msg in channel.history(limit=self.config.sync_max_messages, after=after, oldest_first=True):
                read += 1
                if msg.author.id != me:  # the bot's own answers are not history
                    batch.append(msg)
                if read % self.config.sync_batch == 0:
                    await flush()
                    if asyncio.get_running_loop().time() >= deadline:
                        stopped = True
                        break
                    await _show(interaction, f"Syncing {name}: {read} messages read, {new} new stored…")
            await flush()
        except discord.Forbidden:
            await flush()
            await _show(
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
        await _show(interaction, text, fallback=channel)

    # ---- /forget-me

    async def forget_me(self, interaction: Interaction) -> None:
        """``/forget-me``: ask for confirmation (ephemeral buttons), then erase the user's data here."""
        guild_id = guild_id_of(interaction)
        view = ForgetConfirmation(
            self.mem, guild_id=guild_id, user_id=interaction.user.id, timeout=self.config.confirm_timeout
        )
        view.origin = interaction
        await interaction.response.send_message(
            "This erases **everything omoide keeps about you in this server**: your memories, your "
            "conversation sessions and every message you wrote, your lines in the server's long-term "
            "knowledge, the summaries drawn from them and your transcripts. It cannot be undone. Continue?",
            view=view,
            ephemeral=True,
        )


class ForgetConfirmation(discord.ui.View):
    """The two buttons of ``/forget-me``; only the invoking user can press them."""

    def __init__(self, mem: Memory, *, guild_id: int, user_id: int, timeout: float = 120.0) -> None:
        super().__init__(timeout=timeout)
        self.mem = mem
        self.guild_id = guild_id
        self.user_id = user_id
        self.origin: Interaction | None = None

    async def on_timeout(self) -> None:
        if self.origin is not None:
            try:
                await self.origin.edit_original_response(content="Timed out: nothing was erased.", view=None)
            except discord.HTTPException:
                logger.warning("discord_confirmation_timeout_edit_failed", exc_info=True)

    async def interaction_check(self, interaction: Interaction) -> bool:  # type: ignore[override]
        if interaction.user.id != self.user_id:
            await interaction.response.send_message("This confirmation is not yours.", ephemeral=True)
            return False
        return True

    @discord.ui.button(label="Erase my data", style=discord.ButtonStyle.danger, custom_id="omoide:forget:yes")
    async def confirm(self, interaction: Interaction, button: discord.ui.Button[ForgetConfirmation]) -> None:
        report = await self.mem.forget_user(workspace=self.guild_id, user=self.user_id)
        self.stop()
        await interaction.response.edit_message(
            content=describe_erasure(report.as_dict(), "en", where="server"),
            view=None,
        )

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary, custom_id="omoide:forget:no")
    async def cancel(self, interaction: Interaction, button: discord.ui.Button[ForgetConfirmation]) -> None:
        self.stop()
        await interaction.response.edit_message(content="Cancelled: nothing was erased.", view=None)


# ---------------------------------------------------------------- slash commands


def _register(bot: OmoideBot) -> None:
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
        await interaction.response.defer(thinking=True)
        readable = readable_channels(interaction.guild, interaction.user, interaction.channel_id)
        # the answer is posted where everyone in this channel reads it: inside a private thread the
        # asker's view (public + private knowledge they are a member of), elsewhere public knowledge only
        inside_private = is_private_thread(interaction.channel)
        result = await mem.ask(
            question,
            workspace=guild_id,
            asker=interaction.user.id,
            channel=readable or [0],
            viewer=interaction.user.id if inside_private else None,
            public_only=not inside_private,
        )
        await send_pieces(interaction, render_answer(result))

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
        done = await mem.remember(
            content, workspace=guild_id_of(interaction), user=interaction.user.id, category=category, tags=tag_list
        )
        verb = "Updated" if done.updated else "Remembered as"
        await send_pieces(interaction, f"{verb} `#{done.memory.id}`: {done.memory.content}", ephemeral=True)

    @group.command(name="search", description="Find your memories")
    @app_commands.describe(query="What to look for", limit="At most this many")
    async def memory_search(
        interaction: Interaction, query: app_commands.Range[str, 1, 1000], limit: app_commands.Range[int, 1, 25] = 5
    ) -> None:
        hits = await mem.recall(query, workspace=guild_id_of(interaction), user=interaction.user.id, limit=limit)
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
            await mem.memories.delete(guild_id_of(interaction), interaction.user.id, memory_id)
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


# ---------------------------------------------------------------- running


async def run_discord_bot(
    mem: Memory,
    token: str,
    *,
    config: DiscordBotConfig | None = None,
    workers: bool = True,
    **options: Any,
) -> None:
    """Run the bot until it is stopped, with omoide's workers in the same event loop.

    Args:
        mem: the open memory.
        token: the bot token.
        config: the bot's behaviour.
        workers: run omoide's workers (archive, embed, expire, summarise) alongside.
        **options: passed to :class:`discord.Client` (e.g. ``proxy``, ``connector``).

    Raises:
        ConfigError: no token, the token was rejected, or the Message Content intent is not enabled.
    """
    if not token.strip():
        raise ConfigError("set DISCORD_TOKEN to your bot's token (Developer Portal → your application → Bot)")
    bot = OmoideBot(mem, config=config, **options)
    try:
        async with bot:
            if workers:
                async with mem.workers():
                    await bot.start(token)
            else:
                await bot.start(token)
    except discord.LoginFailure:
        raise ConfigError("Discord rejected DISCORD_TOKEN: reset the bot token in the Developer Portal") from None
    except discord.PrivilegedIntentsRequired:
        raise ConfigError(
            "enable the Message Content intent (Developer Portal → Bot → Privileged Gateway Intents), "
            "or run with --no-mentions"
        ) from None


__all__ = [
    "SYSTEM_PROMPT",
    "DiscordBotConfig",
    "ForgetConfirmation",
    "OmoideBot",
    "default_intents",
    "is_admin",
    "readable_channels",
    "render_answer",
    "run_discord_bot",
    "send_pieces",
]
