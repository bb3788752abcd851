"""What the Slack bot asks of Slack and how it replies: lookups, caches, posts and errors.

:class:`SlackWeb` holds the bot's state (the memory engine, the display-name and
channel-privacy caches, the messages being answered) and the Web API calls every handler
shares; :class:`~omoide.bots._slack_commands.SlackCommands` and
:class:`~omoide.bots.slack_bot.SlackBot` build on it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
import structlog
from slack_bolt.async_app import AsyncBoltContext, AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from omoide.bots._slack_format import HARD_LIMIT, MESSAGE_LIMIT, TEXTS, Lang, escape, split_reply, time_ts
from omoide.engine import Memory
from omoide.errors import ConfigError, InvalidInput, OmoideError, ProviderError
from omoide.importers._slack_messages import _legacy_attachments as legacy_attachments
from omoide.importers._slack_text import slack_text
from omoide.models import KeyPolicy, SessionKey
from omoide.text import is_japanese

if TYPE_CHECKING:
    from omoide.stores.search import ChunkHit

RESPONSE_URL_USES = 5
"""Messages a slash command's or button's ``response_url`` takes (within 30 minutes)."""
PRIVACY_TTL = 600.0
"""Seconds a channel's "public" answer from ``conversations.info`` is trusted (it may be made private)."""
NAME_CACHE_SIZE = 4096
"""Display names kept per process (``users.info`` is asked once per user)."""

log = structlog.get_logger("omoide.bots.slack_bot")
_SLACK_TS = re.compile(r"^\d{9,}\.\d{1,6}$")
_SLACK_ID = re.compile(r"^[A-Z0-9]{2,}$")
_V = TypeVar("_V")


def team_of(payload: Mapping[str, Any], context: AsyncBoltContext) -> str | None:
    """The workspace (team id) an event, command or action comes from."""
    team = payload.get("team_id") or context.team_id or payload.get("team")
    return str(team) if team else None


class SlackWeb:
    """The state and Slack Web API calls shared by the bot's handlers, bound to one :class:`~omoide.Memory`.

    Args:
        mem: the memory engine.
        split_at: the most characters per posted message.
        ask_command / memory_command: the slash commands' names, as configured in the app.
        privacy_ttl: seconds a channel's "public" from ``conversations.info`` is trusted
            (default :data:`~omoide.bots._slack_web.PRIVACY_TTL`, 10 minutes).
    """

    def __init__(
        self,
        mem: Memory,
        *,
        split_at: int = MESSAGE_LIMIT,
        ask_command: str = "/ask",
        memory_command: str = "/memory",
        privacy_ttl: float = PRIVACY_TTL,
    ) -> None:
        if not 16 <= split_at <= HARD_LIMIT:
            raise ConfigError(f"split_at must be from 16 to {HARD_LIMIT} characters, got {split_at}")
        self.mem = mem
        self.split_at = split_at
        self.ask_command = ask_command
        self.memory_command = memory_command
        self._answering: set[str] = set()
        self._names: OrderedDict[str, str | None] = OrderedDict()
        self.privacy_ttl = privacy_ttl
        self._private: OrderedDict[str, tuple[bool, float]] = OrderedDict()  # channel → (private, when asked)
        self._channel_names: OrderedDict[str, str | None] = OrderedDict()

    def _lang(self, text: str) -> Lang:
        if is_japanese(text):
            return "ja"
        if any(ch.isalpha() for ch in text):
            return "en"
        return self.mem.settings.answer_language

    def session_key(self, *, team: str, channel: str, thread: str | None, user: str) -> SessionKey:
        """The session of a message: the configured policy, or the thread's session inside a thread."""
        policy: KeyPolicy | None = None
        if thread:
            policy = KeyPolicy.THREAD
        elif self.mem.settings.session_key_policy is KeyPolicy.AGENT:
            policy = KeyPolicy.USER_CHANNEL  # a chat platform has no named agent sessions
        return self.mem.session_key(
            platform="slack", workspace=team, channel=channel, thread=thread, user=user, policy=policy
        )

    def error_text(self, exc: OmoideError, lang: Lang) -> str:
        """What a user sees for a failure (a bad input's message; otherwise only the error's code)."""
        if isinstance(exc, InvalidInput):
            return f":warning: {escape(exc.message)}"
        key = "model_failed" if isinstance(exc, ProviderError) else "failed"
        return TEXTS[lang][key].format(code=exc.code)

    async def post(self, client: AsyncWebClient, channel: str, text: str, *, thread_ts: str | None = None) -> None:
        """Post ``text`` (already ``mrkdwn``) to a channel or thread, split into readable messages."""
        for part in split_reply(text, self.split_at):
            await client.chat_postMessage(
                channel=channel, text=part, thread_ts=thread_ts, unfurl_links=False, unfurl_media=False
            )

    async def respond(self, respond: AsyncRespond, text: str) -> None:
        """An ephemeral response to a slash command (through its ``response_url``), split.

        A ``response_url`` takes at most :data:`RESPONSE_URL_USES` messages: a longer text is
        split into fewer, longer messages (up to Slack's hard limit) rather than cut off.
        """
        parts = split_reply(text, self.split_at)
        if len(parts) > RESPONSE_URL_USES:
            parts = split_reply(text, max(self.split_at, min(HARD_LIMIT, -(-len(text) // RESPONSE_URL_USES) + 2)))
        if len(parts) > RESPONSE_URL_USES:
            parts = split_reply(text, HARD_LIMIT)
        if len(parts) > RESPONSE_URL_USES:
            log.warning("slack_response_truncated", parts=len(parts), kept=RESPONSE_URL_USES)
            parts = parts[:RESPONSE_URL_USES]
        for part in parts:
            await respond(text=part, response_type="ephemeral", unfurl_links=False, unfurl_media=False)

    async def user_name(self, client: AsyncWebClient, user_id: str) -> str | None:
        """A user's display name (``users.info``, needs ``users:read``), cached; ``None`` when unknown."""
        if user_id in self._names:
            self._names.move_to_end(user_id)
            return self._names[user_id]
        name: str | None = None
        try:
            found = await client.users_info(user=user_id)
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("slack_user_lookup_failed", user=user_id, error=str(exc)[:200])
        else:
            info = found.get("user") or {}
            profile = info.get("profile") or {}
            for candidate in (profile.get("display_name"), profile.get("real_name"), info.get("real_name")):
                if isinstance(candidate, str) and candidate.strip():
                    name = candidate.strip()
                    break
        remember_in(self._names, user_id, name)  # a failure is remembered too: one lookup per user, not per message
        return name

    async def channel_is_private(self, client: AsyncWebClient, channel: str, channel_type: object = None) -> bool:
        """Whether a conversation is private: a DM (``im``), group DM (``mpim``) or private channel.

        ``message`` events name it (``channel_type`` ``im`` / ``mpim`` / ``group`` / ``channel``);
        ``app_mention`` events do not, so ``conversations.info`` is asked (``channels:read``,
        ``groups:read``, ``im:read``, ``mpim:read``) and cached: "private" for good, "public"
        for :attr:`privacy_ttl` seconds, since a public channel can be converted to private.
        When it cannot be asked, the channel counts as private: knowledge is never widened by an error.
        """
        if channel_type in ("im", "mpim", "group"):
            return True
        if channel_type == "channel":
            return False
        if channel.startswith("D"):
            return True
        cached = self._private.get(channel)
        if cached is not None and (cached[0] or time.monotonic() - cached[1] < self.privacy_ttl):
            self._private.move_to_end(channel)
            return cached[0]
        try:
            found = await client.conversations_info(channel=channel)
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("slack_channel_lookup_failed", channel=channel, error=str(exc)[:200])
            return True  # not cached: asked again next time
        return self._remember_info(channel, found.get("channel") or {})

    async def channel_name(self, client: AsyncWebClient, channel: str) -> str | None:
        """A public channel's name (``conversations.info``), cached; ``None`` for a private
        conversation (its name is not for everyone who may read what it is written into) or
        when it cannot be asked (a failure is remembered too)."""
        if channel in self._channel_names:
            self._channel_names.move_to_end(channel)
            return self._channel_names[channel]
        name: str | None = None
        try:
            found = await client.conversations_info(channel=channel)
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("slack_channel_lookup_failed", channel=channel, error=str(exc)[:200])
        else:
            self._remember_info(channel, found.get("channel") or {})
            return self._channel_names[channel]
        remember_in(self._channel_names, channel, name)
        return name

    def _remember_info(self, channel: str, info: Mapping[str, Any]) -> bool:
        """What one ``conversations.info`` answer says, kept for both lookups (so neither asks
        again): whether the conversation is private, and a public channel's name. Returns the first."""
        private = any(info.get(k) for k in ("is_private", "is_im", "is_mpim", "is_group"))
        remember_in(self._private, channel, (private, time.monotonic()))
        candidate = info.get("name")
        name = candidate.strip() if not private and isinstance(candidate, str) and candidate.strip() else None
        remember_in(self._channel_names, channel, name)
        return private

    async def channel_names(self, client: AsyncWebClient, channel_ids: Iterable[str]) -> dict[str, str]:
        """Names of the public channels among ``channel_ids``."""
        ids = list(dict.fromkeys(channel_ids))
        names = await asyncio.gather(*(self.channel_name(client, c) for c in ids))
        return {c: n for c, n in zip(ids, names, strict=True) if n}

    async def user_names(self, client: AsyncWebClient, user_ids: Iterable[str]) -> dict[str, str]:
        """Display names of the users that have one."""
        ids = list(dict.fromkeys(user_ids))
        names = await asyncio.gather(*(self.user_name(client, u) for u in ids))
        return {u: n for u, n in zip(ids, names, strict=True) if n}

    @staticmethod
    def message_text(
        event: Mapping[str, Any],
        bot_user_id: str | None,
        users: Mapping[str, str] | None = None,
        channels: Mapping[str, str] | None = None,
    ) -> str:
        """The readable text of a message event: the bot's own mention removed, mentions
        (``users``: id → name), channel links (``channels``: id → name, for links Slack sends
        without a label) and links resolved, one ``[attachment: name]`` line per file and one
        ``[embed: …]`` line per legacy attachment (a message shared into the conversation),
        as the Slack importer stores them."""
        text = str(event.get("text") or "")
        if bot_user_id:
            text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
        lines = [slack_text(text, users or {}, channels or {}).strip()]
        for f in event.get("files") or ():
            if isinstance(f, Mapping) and (f.get("name") or f.get("title")):
                lines.append(f"[attachment: {f.get('name') or f.get('title')}]")
        lines += legacy_attachments(event, users or {}, channels or {})
        return "\n".join(line for line in lines if line).strip()

    async def permalink(self, client: AsyncWebClient, chunk: ChunkHit, fallback: str | None) -> str | None:
        """A link to the first message of a cited chunk (``chat.getPermalink``), else ``fallback``."""
        if not str(chunk.source_type).startswith("slack") or not chunk.channel_id:
            return fallback
        if not _SLACK_ID.match(str(chunk.channel_id)):
            return fallback
        ids = [str(i) for i in chunk.location.get("message_ids", ()) if _SLACK_TS.match(str(i))]
        ts = ids[0] if ids else (time_ts(chunk.started_at) if chunk.started_at else None)
        if ts is None:
            return fallback
        try:
            found = await client.chat_getPermalink(channel=chunk.channel_id, message_ts=ts)
        except SlackApiError as exc:
            data = exc.response.data
            error = data.get("error") if isinstance(data, dict) else f"HTTP {exc.response.status_code}"
            log.info("slack_permalink_failed", channel=chunk.channel_id, ts=ts, error=error)
            return fallback
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("slack_permalink_failed", channel=chunk.channel_id, ts=ts, error=repr(exc))
            return fallback
        url = found.get("permalink")
        return url if isinstance(url, str) and url else fallback


def remember_in(cache: OrderedDict[str, _V], key: str, value: _V) -> None:
    """Put ``key`` in a least-recently-used cache of at most :data:`NAME_CACHE_SIZE` entries."""
    cache[key] = value
    while len(cache) > NAME_CACHE_SIZE:
        cache.popitem(last=False)


__all__ = ["SlackWeb", "team_of"]
