"""The Slack bot (``omoide slack``): slack-bolt (asyncio) over Socket Mode.

Thin by design — each handler parses the event, calls :class:`omoide.Memory` and renders:

* **App mentions and DMs** are one conversation turn, ``Memory.chat(key, message,
  tools=True)``: the session window, the context guard and the memory tools (remember,
  recall, list, delete) run for the event's user — never for a user id the model names.
  The session key is ``mem.session_key(platform="slack", workspace=team, channel=…,
  user=…)`` with the configured policy (one session per user per channel by default); a
  message inside a thread uses the thread's session (policy ``thread``) and the reply
  goes into that thread.
* **Re-delivered events store nothing twice.** The platform message id is
  ``"{channel}:{ts}"``; an event whose message is already in its session (Slack retries
  an event it thinks was not acknowledged, with ``X-Slack-Retry-Num``) or is being
  answered right now is acknowledged and ignored.
* **``/ask <question>``** answers from the workspace's long-term memory with citations
  (``Memory.ask``), each linked to its Slack message (``chat.getPermalink``); the answer
  is ephemeral, since the evidence may come from channels the channel's members cannot see.
  It is asked with ``viewer=<the invoking user>``: public knowledge, plus private knowledge
  (DMs, group DMs, private channels) only where that user is a member.
* **Private conversations.** A turn in a DM, group DM or private channel marks its session
  private (``Memory.set_visibility``), so what the workers archive from it is visible only
  to its members (the user, and everyone who spoke in it).
* **``/memory add|search|list|delete …``** edits the invoking user's own memories;
  responses are ephemeral. Another user's memory id is "not found".
* **``/memory forget-me``** erases everything stored about the invoking user in the
  workspace (``Memory.forget_user``) after they press *Erase my data* on an ephemeral
  confirmation (Block Kit buttons, handled as ``block_actions``); the confirmation is then
  replaced by the receipt, one line per kind of record erased, in the user's language.
  The button erases the data of whoever presses it — never of a user id it carries.
* Long replies are split at paragraph boundaries (:func:`split_reply`) into messages of at most
  :data:`MESSAGE_LIMIT` characters (Slack's hard limit is 40,000; long messages are
  collapsed and hard to read). Markdown from the model is rendered as Slack ``mrkdwn``,
  and ``<``, ``>`` and ``&`` are escaped so a reply can never ping ``@channel``.

Run it with :func:`run_slack_bot` (``omoide slack``); the workers run in the same loop.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from omoide.bots._redelivery import already_stored
from omoide.bots._slack_commands import FORGET_CANCEL, FORGET_CONFIRM, SlackCommands
from omoide.bots._slack_format import MESSAGE_LIMIT, TEXTS, escape, split_reply, time_ts, to_mrkdwn, ts_time
from omoide.bots._slack_web import log, team_of
from omoide.engine import Memory
from omoide.errors import ConfigError, OmoideError
from omoide.models import Message

RATE_LIMIT_RETRIES = 2
"""Times a Web API call answered HTTP 429 is tried again, after the ``Retry-After`` it names."""
MENTIONS_RESOLVED = 5
"""At most this many user mentions (and channel links) per message are looked up to show a name."""
ACCEPTED_SUBTYPES = frozenset({"file_share", "thread_broadcast"})
"""Message subtypes that are a person talking (edits, joins and bot posts are not)."""

_USER_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_UNLABELLED_CHANNEL = re.compile(r"<#([A-Z0-9]+)\|?>")


# ------------------------------------------------------------------ configuration


def slack_tokens(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The bot token (``SLACK_BOT_TOKEN``, ``xoxb-…``) and app-level token (``SLACK_APP_TOKEN``, ``xapp-…``).

    Raises:
        ConfigError: a variable is missing or holds the wrong kind of token (the message names it).
    """
    env = os.environ if environ is None else environ
    wanted = (
        ("SLACK_BOT_TOKEN", "xoxb-", "the Bot User OAuth Token from your Slack app's OAuth & Permissions page"),
        (
            "SLACK_APP_TOKEN",
            "xapp-",
            "an app-level token with the connections:write scope (Basic Information → App-Level Tokens)",
        ),
    )
    found: list[str] = []
    for name, prefix, what in wanted:
        value = env.get(name, "").strip()
        if not value:
            raise ConfigError(f"{name} is not set: export {name}={prefix}… ({what}); see docs/slack.md", setting=name)
        if not value.startswith(prefix):
            raise ConfigError(
                f"{name} must start with {prefix!r} ({what}), got a token starting with {value[:5]!r}", setting=name
            )
        found.append(value)
    return found[0], found[1]


async def check_tokens(client: AsyncWebClient, app_token: str) -> None:
    """Ask Slack whether both tokens are accepted (``auth.test``, ``apps.connections.open``).

    Without this a revoked or mistyped token with the right prefix is found out late: the
    Socket Mode client reconnects with a bad app token for ever, and a bad bot token connects
    and then fails every event.

    Raises:
        ConfigError: Slack rejected a token (the message names the variable and Slack's error),
            or Slack could not be reached.
    """
    checks: tuple[tuple[str, Callable[[], Awaitable[object]]], ...] = (
        ("SLACK_BOT_TOKEN", client.auth_test),
        ("SLACK_APP_TOKEN", lambda: client.apps_connections_open(app_token=app_token)),
    )
    for name, check in checks:
        try:
            await check()
        except SlackApiError as exc:
            data = exc.response.data
            error = data.get("error") if isinstance(data, dict) else None
            raise ConfigError(
                f"Slack rejected {name} ({error or f'HTTP {exc.response.status_code}'}): "
                "check the token in your Slack app's settings; see docs/slack.md",
                setting=name,
            ) from None
        except (SlackClientError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise ConfigError(f"cannot reach Slack to check {name}: {exc}", setting=name) from None


# ------------------------------------------------------------------ the bot


class SlackBot(SlackCommands):
    """The handlers of the Slack app, bound to one :class:`~omoide.Memory`.

    Conversation turns (app mentions and DMs) are here; the slash commands are
    :class:`~omoide.bots._slack_commands.SlackCommands`' and the Web API calls
    :class:`~omoide.bots._slack_web.SlackWeb`'s.

    Args:
        mem: the memory engine.
        split_at: the most characters per posted message.
        ask_command / memory_command: the slash commands' names, as configured in the app.
        privacy_ttl: seconds a channel's "public" from ``conversations.info`` is trusted
            (default :data:`~omoide.bots._slack_web.PRIVACY_TTL`, 10 minutes).
    """

    def register(self, app: AsyncApp) -> None:
        """Add the listeners to ``app``."""
        app.event("app_mention")(self.on_mention)
        app.event("message")(self.on_message)
        app.command(self.ask_command)(self.on_ask)
        app.command(self.memory_command)(self.on_memory)
        app.action(FORGET_CONFIRM)(self.on_forget_confirm)
        app.action(FORGET_CANCEL)(self.on_forget_cancel)

    # ---- conversation: app mentions and DMs

    async def on_mention(
        self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext, client: AsyncWebClient
    ) -> None:
        """``app_mention``: a conversation turn in the channel (or its thread)."""
        await self._converse(event, body, context, client)

    async def on_message(
        self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext, client: AsyncWebClient
    ) -> None:
        """``message``: a direct message is a conversation turn; other messages are ignored
        (channel messages reach the bot as ``app_mention``)."""
        if event.get("channel_type") != "im":
            return
        await self._converse(event, body, context, client)

    async def _converse(
        self, event: Mapping[str, Any], body: Mapping[str, Any], context: AsyncBoltContext, client: AsyncWebClient
    ) -> None:
        subtype = event.get("subtype")
        if (subtype is not None and subtype not in ACCEPTED_SUBTYPES) or event.get("bot_id") or event.get("edited"):
            # edits, deletions, joins, other bots (and our own posts) are not turns; editing a message
            # that mentions the app sends app_mention again, with "edited" (a typo fixed is no new question)
            return
        user, channel, ts, team = event.get("user"), event.get("channel"), event.get("ts"), team_of(body, context)
        if not (isinstance(user, str) and isinstance(channel, str) and isinstance(ts, str) and team):
            log.warning("slack_event_ignored", reason="missing user, channel, ts or team", event_type=event.get("type"))
            return
        thread = event.get("thread_ts") or None
        raw = str(event.get("text") or "")
        mentioned = [u for u in _USER_MENTION.findall(raw) if u != context.bot_user_id]
        names = await self.user_names(client, [user, *mentioned[:MENTIONS_RESOLVED]])
        linked = await self.channel_names(client, _UNLABELLED_CHANNEL.findall(raw)[:MENTIONS_RESOLVED])
        text = self.message_text(event, context.bot_user_id, names, linked)
        lang = self._lang(text)
        if not text:
            await self.post(client, channel, TEXTS[lang]["empty_mention"], thread_ts=thread)
            return
        message_id = f"{channel}:{ts}"
        if message_id in self._answering:
            log.info("slack_event_redelivered", message_id=message_id, state="being answered")
            return
        self._answering.add(message_id)
        try:
            key = self.session_key(team=team, channel=channel, thread=thread, user=user)
            if await already_stored(self.mem, key, message_id):
                log.info("slack_event_redelivered", message_id=message_id, state="stored")
                return
            message = Message.user(
                text, author_id=user, author_name=names.get(user), message_id=message_id, created_at=ts_time(ts)
            )
            private = await self.channel_is_private(client, channel, event.get("channel_type"))
            try:
                # a DM, group DM or private channel: its archives are visible to its members only
                await self.mem.set_visibility(key, private=private, members=[user] if private else [])
                reply = await self.mem.chat(key, message, tools=True)
                answer = to_mrkdwn(reply.text) if reply.text.strip() else TEXTS[lang]["no_answer"]
            except OmoideError as exc:
                log.warning("slack_turn_failed", session=key.value, code=exc.code, error=exc.message)
                answer = self.error_text(exc, lang)
            await self.post(client, channel, answer, thread_ts=thread)
        finally:
            self._answering.discard(message_id)


# ------------------------------------------------------------------ app and runner


def build_app(
    mem: Memory,
    *,
    token: str | None = None,
    client: AsyncWebClient | None = None,
    signing_secret: str | None = None,
    process_before_response: bool = False,
    split_at: int = MESSAGE_LIMIT,
    ask_command: str = "/ask",
    memory_command: str = "/memory",
) -> AsyncApp:
    """A slack-bolt ``AsyncApp`` with omoide's listeners.

    Args:
        mem: the memory engine.
        token: the bot token (``xoxb-…``); or give ``client``.
        client: the Web API client to use (tests point one at a local server). The app's client
            (this one or the one made for ``token``) gets a retry handler for HTTP 429 (after
            ``Retry-After``, :data:`RATE_LIMIT_RETRIES` times) unless it has one.
        signing_secret: verifies HTTP-mode requests (default ``$SLACK_SIGNING_SECRET``;
            Socket Mode needs none).
        process_before_response: acknowledge events only after handling them (tests;
            Slack wants an ack within 3 s, so the default acknowledges first).
        split_at / ask_command / memory_command: see :class:`SlackBot`.
    """
    app = AsyncApp(
        name="omoide",
        token=None if client is not None else token,
        client=client,
        signing_secret=signing_secret,
        process_before_response=process_before_response,
    )
    # Slack answers HTTP 429 with Retry-After when a method's rate limit is hit (chat.postMessage:
    # about one message a second per channel); slack_sdk does not retry those by default, and a
    # reply that failed would be lost: the user's message is stored, so a re-delivery is not answered
    handlers = app.client.retry_handlers
    if not any(isinstance(h, AsyncRateLimitErrorRetryHandler) for h in handlers):
        handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    SlackBot(mem, split_at=split_at, ask_command=ask_command, memory_command=memory_command).register(app)
    return app


async def run_slack_bot(
    mem: Memory,
    *,
    bot_token: str,
    app_token: str,
    workers: bool = True,
    split_at: int = MESSAGE_LIMIT,
    ask_command: str = "/ask",
    memory_command: str = "/memory",
    client: AsyncWebClient | None = None,
) -> None:
    """Connect over Socket Mode and serve until cancelled, with omoide's workers in this loop.

    On cancellation (Ctrl-C) the connection closes and the workers finish their work in hand.

    Args:
        mem: the memory engine.
        bot_token / app_token: see :func:`slack_tokens`.
        workers: run :meth:`Memory.workers` (archive, embed, expire, summarise) alongside.
        client: a Web API client to use instead of one for ``bot_token`` (e.g. another ``base_url``).
    """
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    app = build_app(
        mem,
        token=bot_token,
        client=client,
        split_at=split_at,
        ask_command=ask_command,
        memory_command=memory_command,
    )
    await check_tokens(app.client, app_token)
    handler = AsyncSocketModeHandler(app, app_token)
    try:
        if workers:
            async with mem.workers():
                await handler.start_async()  # type: ignore[no-untyped-call]
        else:
            await handler.start_async()  # type: ignore[no-untyped-call]
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]


__all__ = [
    "MESSAGE_LIMIT",
    "SlackBot",
    "build_app",
    "check_tokens",
    "escape",
    "run_slack_bot",
    "slack_tokens",
    "split_reply",
    "time_ts",
    "to_mrkdwn",
    "ts_time",
]
