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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import discord
from discord import app_commands

from omoide.bots._discord_commands import guild_id_of, is_admin, is_private_thread, readable_channels, register_commands
from omoide.bots._discord_replies import Interaction, logger, render_answer, send_pieces
from omoide.bots._discord_sync import SYNC_ORIGIN, SYNCABLE, sync_history
from omoide.bots._erasure import describe_erasure
from omoide.bots._redelivery import already_stored
from omoide.bots._split import DISCORD_LIMIT, split_message
from omoide.errors import ConfigError, OmoideError
from omoide.importers.discord_live import message_text
from omoide.models import KeyPolicy, Message, SessionKey

if TYPE_CHECKING:
    from omoide.engine import Memory

SYSTEM_PROMPT = (
    "You are omoide, a helpful assistant in a Discord server. Answer in the language the user writes in "
    "(日本語で話しかけられたら日本語で答えてください). Be concise; Discord markdown is fine. "
    "When the user asks you to remember something about them, use the remember tool; "
    "when they ask what you know about them, use recall."
)

USER_MESSAGE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
"""Message types that are a person writing; the others (joins, pins, thread members added…) are system messages."""


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
        self._answering: set[int] = set()
        register_commands(self)

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
        key = self.session_key(guild_id, channel_id, user.id)
        # a private thread's conversation is archived private to its members (the user and its speakers)
        await mem.set_visibility(key, private=private, members=[str(user.id)] if private else [])
        built = await mem.build_context(
            key,
            text,
            budget_tokens=self.config.context_budget,
            system=SYSTEM_PROMPT,
            user=user.id,
            channels=readable,
            public_only=True,  # the reply is read by the channel or the thread's members, never by the user alone
        )
        message = Message.user(text, author_id=str(user.id), author_name=user.display_name, message_id=str(message_id))
        reply = await mem.chat(key, message, system=built.system, tools=True)
        return reply.text

    def session_key(self, guild_id: int, channel_id: int, user_id: int) -> SessionKey:
        """A conversation in a channel (a thread is its own channel), by the configured policy:
        by default one per user; ``agent`` (named agent sessions, meaningless here) is taken as that."""
        policy = KeyPolicy.USER_CHANNEL if self.mem.settings.session_key_policy is KeyPolicy.AGENT else None
        return self.mem.session_key(
            platform="discord", workspace=guild_id, channel=channel_id, user=user_id, policy=policy
        )

    async def on_message(self, message: discord.Message) -> None:
        """Answer a message that mentions the bot, as ``/ask`` would (in the message's channel).

        The bot's own managed role counts as the bot (Discord's autocomplete offers both as
        "@omoide"). Only people's messages count: not bots' (this one's included) and not
        system messages, such as "X added omoide to the thread", whose ``mentions`` name the
        bot. A message already answered (a gateway event delivered again) is not answered twice.
        """
        me = self.user
        if (
            not self.config.mentions
            or me is None
            or message.author.bot
            or message.type not in USER_MESSAGE_TYPES
            or message.guild is None
        ):
            return
        # "@omoide" is the bot, or the role Discord made for it (autocomplete offers both)
        own_role = message.guild.self_role
        role_id = own_role.id if own_role is not None and own_role.id in message.raw_role_mentions else None
        if role_id is None and not any(u.id == me.id for u in message.mentions):
            return
        text = message_text(message, strip_mention_of=me.id, strip_role=role_id)
        if message.id in self._answering:
            return
        self._answering.add(message.id)
        try:
            if not text:
                answer = "Ask me anything — or use `/ask`, `/chat` (answers from this server's history) and `/memory`."
            else:
                key = self.session_key(message.guild.id, message.channel.id, message.author.id)
                if await already_stored(self.mem, key, str(message.id)):
                    logger.info("discord_message_redelivered", extra={"message_id": message.id})
                    return
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
        finally:
            self._answering.discard(message.id)
        pieces = split_message(answer, DISCORD_LIMIT) or ["…"]
        # a reply, unless the message was deleted meanwhile: then a plain message, not an error
        reference = message.to_reference(fail_if_not_exists=False)
        await message.channel.send(pieces[0], reference=reference, mention_author=False)
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
            me = self.user.id if self.user is not None else None
            await sync_history(self.mem, self.config, interaction, guild_id, channel, me=me)
        finally:
            self._syncing.discard(channel.id)

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
        self.stop()
        # Discord wants a response within 3 seconds; erasing re-embeds rewritten knowledge and
        # rewrites transcript files, which can take longer: acknowledge first, then edit
        await interaction.response.defer()
        try:
            report = await self.mem.forget_user(workspace=self.guild_id, user=self.user_id)
        except OmoideError as exc:
            logger.warning("discord_forget_failed", exc_info=exc)
            text = f"⚠️ Erasing failed ({exc.code}); run `/forget-me` again: it erases what is left."
        else:
            text = describe_erasure(report.as_dict(), "en", where="server")
        await interaction.edit_original_response(content=text, view=None)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary, custom_id="omoide:forget:no")
    async def cancel(self, interaction: Interaction, button: discord.ui.Button[ForgetConfirmation]) -> None:
        self.stop()
        await interaction.response.edit_message(content="Cancelled: nothing was erased.", view=None)


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
        ConfigError: no token, the token was rejected, the Message Content intent is not enabled,
            or Discord could not be reached.
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
    except (aiohttp.ClientConnectionError, discord.GatewayNotFound) as exc:
        # logging in failed for the network (after that, discord.py reconnects by itself)
        raise ConfigError(f"cannot reach Discord ({exc}): check the network, DNS or proxy") from None


__all__ = [
    "SYNC_ORIGIN",
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
