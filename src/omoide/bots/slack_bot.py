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

import asyncio
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import aiohttp
import structlog
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from omoide.bots._erasure import describe_erasure
from omoide.bots._split import split_message
from omoide.engine import Memory
from omoide.errors import ConfigError, InvalidInput, NotFoundError, OmoideError, ProviderError
from omoide.importers._slack_text import slack_text
from omoide.models import KeyPolicy, Message, SessionKey
from omoide.text import is_japanese

if TYPE_CHECKING:
    from omoide.answers import AnswerResult
    from omoide.stores.memories import MemoryRecord
    from omoide.stores.search import ChunkHit

MESSAGE_LIMIT = 3_500
"""Characters per posted message: long replies are split on paragraphs below this."""
HARD_LIMIT = 40_000
"""Slack truncates a message's ``text`` beyond this many characters."""
RECENT_MESSAGES = 100
"""How far back in a session a re-delivered message is looked for."""
NAME_CACHE_SIZE = 4096
"""Display names kept per process (``users.info`` is asked once per user)."""
MENTIONS_RESOLVED = 5
"""At most this many user mentions per message are looked up to show a name."""
ACCEPTED_SUBTYPES = frozenset({"file_share", "thread_broadcast"})
"""Message subtypes that are a person talking (edits, joins and bot posts are not)."""
FORGET_VERBS = frozenset({"forget-me", "forget_me", "forgetme"})
"""``/memory`` verbs that ask to erase everything about the invoking user."""
FORGET_CONFIRM = "omoide_forget_me_confirm"
FORGET_CANCEL = "omoide_forget_me_cancel"
"""The ``action_id`` of the confirmation's two buttons (their ``value`` is the reply language)."""

Lang = Literal["ja", "en"]
log = structlog.get_logger(__name__)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SLACK_TS = re.compile(r"^\d{9,}\.\d{1,6}$")
_SLACK_ID = re.compile(r"^[A-Z0-9]{2,}$")
_USER_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_V = TypeVar("_V")

TEXTS: dict[Lang, dict[str, str]] = {
    "en": {
        "empty_mention": "Yes? Mention me with a question, or DM me.",
        "ask_usage": "Usage: `{cmd} &lt;question&gt;` — a cited answer from this workspace's history.",
        "question": "*Q:* {question}",
        "sources": "*Sources*",
        "memory_usage": (
            "Usage: `{cmd} add &lt;what to remember&gt;` · `{cmd} search &lt;query&gt;` · "
            "`{cmd} list [page]` · `{cmd} delete &lt;id&gt;` — only your own memories. "
            "`{cmd} forget-me` erases everything I keep about you."
        ),
        "remembered": "Remembered as memory `#{id}`.",
        "updated": "Updated memory `#{id}` (you had told me nearly the same thing).",
        "no_match": "None of your memories matches. `{cmd} list` shows them all.",
        "no_memories": "You have no memories here yet. Add one with `{cmd} add …`.",
        "no_page": "No memories on page {page}.",
        "page": "Your memories (page {page}):",
        "deleted": "Deleted memory `#{id}`.",
        "not_found": "You have no memory `#{id}`. `{cmd} list` shows yours.",
        "bad_id": "Memory ids are numbers, e.g. `{cmd} delete 12`.",
        "model_failed": ":warning: The language model failed ({code}). Please try again in a moment.",
        "failed": ":warning: Something went wrong ({code}).",
        "no_answer": "(no answer)",
        "forget_confirm": (
            "This erases *everything I keep about you in this workspace*: your memories, your conversation "
            "sessions and every message you wrote, your lines in long-term knowledge, the summaries drawn "
            "from them and your transcripts. It cannot be undone. Continue?"
        ),
        "forget_yes": "Erase my data",
        "forget_no": "Cancel",
        "forget_cancelled": "Cancelled: nothing was erased.",
        "workspace": "workspace",
    },
    "ja": {
        "empty_mention": "はい？質問と一緒にメンションするか、DM してください。",
        "ask_usage": "使い方: `{cmd} &lt;質問&gt;` — このワークスペースの履歴から出典付きで答えます。",
        "question": "*質問:* {question}",
        "sources": "*根拠*",
        "memory_usage": (
            "使い方: `{cmd} add &lt;覚えること&gt;` · `{cmd} search &lt;検索語&gt;` · "
            "`{cmd} list [ページ]` · `{cmd} delete &lt;id&gt;` — 自分のメモリだけが対象です。"
            "`{cmd} forget-me` であなたについてのデータをすべて消去します。"
        ),
        "remembered": "メモリ `#{id}` として覚えました。",
        "updated": "メモリ `#{id}` を更新しました（ほぼ同じ内容がすでにありました）。",
        "no_match": "一致するメモリはありません。`{cmd} list` で一覧できます。",
        "no_memories": "まだメモリはありません。`{cmd} add …` で追加できます。",
        "no_page": "{page} ページ目にメモリはありません。",
        "page": "あなたのメモリ（{page} ページ目）:",
        "deleted": "メモリ `#{id}` を削除しました。",
        "not_found": "あなたのメモリに `#{id}` はありません。`{cmd} list` で一覧できます。",
        "bad_id": "メモリ id は数字です（例: `{cmd} delete 12`）。",
        "model_failed": ":warning: 言語モデルの呼び出しに失敗しました（{code}）。少し待ってからもう一度どうぞ。",
        "failed": ":warning: エラーが発生しました（{code}）。",
        "no_answer": "（回答なし）",
        "forget_confirm": (
            "このワークスペースで保存している*あなたについてのデータをすべて*消去します: メモリ、会話セッションと"
            "あなたが書いたすべてのメッセージ、長期記憶の中のあなたの発言、それをもとにした要約、会話ログ。"
            "元に戻せません。続けますか？"
        ),
        "forget_yes": "データを消去する",
        "forget_no": "キャンセル",
        "forget_cancelled": "キャンセルしました。何も消去していません。",
        "workspace": "ワークスペース",
    },
}


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


# ------------------------------------------------------------------ rendering


def ts_time(ts: str) -> datetime:
    """A Slack ``ts`` (``"1712345678.123456"``) as an exact UTC datetime."""
    seconds, _, fraction = ts.partition(".")
    return datetime.fromtimestamp(int(seconds), tz=UTC) + timedelta(microseconds=int(fraction[:6].ljust(6, "0")))


def time_ts(when: datetime) -> str:
    """The Slack ``ts`` of a datetime (the inverse of :func:`ts_time`, to the microsecond)."""
    micros = (when - _EPOCH) // timedelta(microseconds=1)
    seconds, rest = divmod(micros, 1_000_000)
    return f"{seconds}.{rest:06d}"


def escape(text: str) -> str:
    """Escape the three characters Slack reserves for control sequences (``@channel`` pings, links)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_QUOTE = re.compile(r"^&gt;(?=[ \t]|$)", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[*+-][ \t]+", re.MULTILINE)


def to_mrkdwn(text: str) -> str:
    """Model Markdown → Slack ``mrkdwn``, escaped.

    ``**b**`` → ``*b*``, ``[t](url)`` → ``<url|t>``, headings → bold lines, ``~~s~~`` →
    ``~s~``, ``*``/``-`` bullets → ``•``; code blocks are only escaped; ``> quotes`` stay quotes.
    """
    pieces = escape(text).split("```")
    for i in range(0, len(pieces), 2):  # outside code blocks
        piece = _HEADING.sub(lambda m: f"*{m.group(1)}*", pieces[i])
        piece = _BULLET.sub(r"\1• ", piece)
        piece = _BOLD.sub(r"*\1*", piece)
        piece = _STRIKE.sub(r"~\1~", piece)
        piece = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1).replace('|', '/')}>", piece)
        pieces[i] = _QUOTE.sub(">", piece)
    return "```".join(pieces)


def split_reply(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Split a reply into messages of at most ``limit`` characters at paragraph boundaries.

    Paragraphs (separated by blank lines outside code blocks) are packed greedily; one
    longer than ``limit`` is cut by :func:`omoide.bots._split.split_message` (between lines,
    then sentences, then words; code blocks closed and reopened).
    """
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.strip("\n").split("\n"):
        if line.count("```") % 2 == 1:
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    parts: list[str] = []
    buffer = ""
    for block in blocks:
        for piece in [block] if len(block) <= limit else split_message(block, limit):
            candidate = f"{buffer}\n\n{piece}" if buffer else piece
            if len(candidate) <= limit:
                buffer = candidate
            else:
                if buffer:
                    parts.append(buffer)
                buffer = piece
    if buffer:
        parts.append(buffer)
    return [part for part in parts if part.strip()]


def link(url: str | None, label: str) -> str:
    """``<url|label>`` (escaped), or the escaped label alone without a URL."""
    text = escape(label).replace("|", "/")
    return f"<{url}|{text}>" if url else text


def _team(payload: Mapping[str, Any], context: AsyncBoltContext) -> str | None:
    team = payload.get("team_id") or context.team_id or payload.get("team")
    return str(team) if team else None


# ------------------------------------------------------------------ the bot


class SlackBot:
    """The handlers of the Slack app, bound to one :class:`~omoide.Memory`.

    Args:
        mem: the memory engine.
        split_at: the most characters per posted message.
        ask_command / memory_command: the slash commands' names, as configured in the app.
    """

    def __init__(
        self,
        mem: Memory,
        *,
        split_at: int = MESSAGE_LIMIT,
        ask_command: str = "/ask",
        memory_command: str = "/memory",
    ) -> None:
        if not 16 <= split_at <= HARD_LIMIT:
            raise ConfigError(f"split_at must be from 16 to {HARD_LIMIT} characters, got {split_at}")
        self.mem = mem
        self.split_at = split_at
        self.ask_command = ask_command
        self.memory_command = memory_command
        self._answering: set[str] = set()
        self._names: OrderedDict[str, str | None] = OrderedDict()
        self._private: OrderedDict[str, bool] = OrderedDict()

    def register(self, app: AsyncApp) -> None:
        """Add the listeners to ``app``."""
        app.event("app_mention")(self.on_mention)
        app.event("message")(self.on_message)
        app.command(self.ask_command)(self.on_ask)
        app.command(self.memory_command)(self.on_memory)
        app.action(FORGET_CONFIRM)(self.on_forget_confirm)
        app.action(FORGET_CANCEL)(self.on_forget_cancel)

    # ---- helpers

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

    async def _already_stored(self, key: SessionKey, message_id: str) -> bool:
        session = await self.mem.sessions.get_or_create(key)
        recent = await self.mem.sessions.messages(key, after_seq=max(0, session.last_seq - RECENT_MESSAGES))
        return any(m.message_id == message_id for m in recent)

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
        """An ephemeral response to a slash command (through its ``response_url``), split."""
        for part in split_reply(text, self.split_at):
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
        _remember(self._names, user_id, name)  # a failure is remembered too: one lookup per user, not per message
        return name

    async def channel_is_private(self, client: AsyncWebClient, channel: str, channel_type: object = None) -> bool:
        """Whether a conversation is private: a DM (``im``), group DM (``mpim``) or private channel.

        ``message`` events name it (``channel_type`` ``im`` / ``mpim`` / ``group`` / ``channel``);
        ``app_mention`` events do not, so ``conversations.info`` is asked once per channel
        (``channels:read``, ``groups:read``, ``im:read``, ``mpim:read``) and cached. When it
        cannot be asked, the channel counts as private: knowledge is never widened by an error.
        """
        if channel_type in ("im", "mpim", "group"):
            return True
        if channel_type == "channel":
            return False
        if channel.startswith("D"):
            return True
        if channel in self._private:
            self._private.move_to_end(channel)
            return self._private[channel]
        try:
            found = await client.conversations_info(channel=channel)
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("slack_channel_lookup_failed", channel=channel, error=str(exc)[:200])
            return True  # not cached: asked again next time
        info = found.get("channel") or {}
        private = bool(info.get("is_private") or info.get("is_im") or info.get("is_mpim") or info.get("is_group"))
        _remember(self._private, channel, private)
        return private

    async def user_names(self, client: AsyncWebClient, user_ids: Iterable[str]) -> dict[str, str]:
        """Display names of the users that have one."""
        ids = list(dict.fromkeys(user_ids))
        names = await asyncio.gather(*(self.user_name(client, u) for u in ids))
        return {u: n for u, n in zip(ids, names, strict=True) if n}

    @staticmethod
    def message_text(event: Mapping[str, Any], bot_user_id: str | None, users: Mapping[str, str] | None = None) -> str:
        """The readable text of a message event: the bot's own mention removed, mentions
        (``users``: id → name) and links resolved, one ``[attachment: name]`` line per file."""
        text = str(event.get("text") or "")
        if bot_user_id:
            text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
        lines = [slack_text(text, users or {}, {}).strip()]
        for f in event.get("files") or ():
            if isinstance(f, Mapping) and (f.get("name") or f.get("title")):
                lines.append(f"[attachment: {f.get('name') or f.get('title')}]")
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
        if (subtype is not None and subtype not in ACCEPTED_SUBTYPES) or event.get("bot_id"):
            return  # edits, deletions, joins, other bots (and our own posts) are not turns
        user, channel, ts, team = event.get("user"), event.get("channel"), event.get("ts"), _team(body, context)
        if not (isinstance(user, str) and isinstance(channel, str) and isinstance(ts, str) and team):
            log.warning("slack_event_ignored", reason="missing user, channel, ts or team", event_type=event.get("type"))
            return
        thread = event.get("thread_ts") or None
        mentioned = [u for u in _USER_MENTION.findall(str(event.get("text") or "")) if u != context.bot_user_id]
        names = await self.user_names(client, [user, *mentioned[:MENTIONS_RESOLVED]])
        text = self.message_text(event, context.bot_user_id, names)
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
            if await self._already_stored(key, message_id):
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

    # ---- /ask

    async def on_ask(
        self,
        ack: AsyncAck,
        command: dict[str, Any],
        respond: AsyncRespond,
        context: AsyncBoltContext,
        client: AsyncWebClient,
    ) -> None:
        """``/ask <question>``: a cited answer from the workspace's long-term memory, ephemeral."""
        await ack()
        raw = str(command.get("text") or "").strip()
        question = slack_text(raw, {}, {}).strip()
        lang = self._lang(question)
        team = _team(command, context)
        if not question or not team:
            await self.respond(respond, TEXTS[lang]["ask_usage"].format(cmd=self.ask_command))
            return
        try:
            asker = str(command.get("user_id") or "") or None
            # the asker's view: public knowledge plus the private knowledge they are a member of
            result = await self.mem.ask(
                question, workspace=team, asker=asker, language=lang, viewer=asker, public_only=asker is None
            )
        except OmoideError as exc:
            log.warning("slack_ask_failed", workspace=team, code=exc.code, error=exc.message)
            await self.respond(respond, self.error_text(exc, lang))
            return
        urls = await asyncio.gather(*(self.permalink(client, c.hit.chunk, c.hit.jump_url) for c in result.citations))
        await self.respond(respond, self.render_answer(question, result, urls, lang))

    def render_answer(self, question: str, result: AnswerResult, urls: Sequence[str | None], lang: Lang) -> str:
        """The question, the answer in ``mrkdwn``, then one linked line per citation."""
        from omoide.answers.prompt import time_range

        lines = [TEXTS[lang]["question"].format(question=escape(question)), "", to_mrkdwn(result.text)]
        if result.citations:
            lines += ["", TEXTS[lang]["sources"]]
            for citation, url in zip(result.citations, urls, strict=True):
                chunk = citation.hit.chunk
                where = " · ".join(p for p in (chunk.source_title, time_range(chunk.started_at, chunk.ended_at)) if p)
                lines.append(f"[#{citation.number}] {link(url, where or chunk.source_type)}")
        return "\n".join(lines)

    # ---- /memory

    async def on_memory(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
    ) -> None:
        """``/memory add|search|list|delete …`` on the invoking user's own memories, ephemeral."""
        await ack()
        text = str(command.get("text") or "").strip()
        verb, _, rest = text.partition(" ")
        verb, rest = verb.lower(), slack_text(rest.strip(), {}, {}).strip()
        lang = self._lang(text)
        t, cmd = TEXTS[lang], self.memory_command
        team, user = _team(command, context), command.get("user_id")
        if not team or not isinstance(user, str):
            await self.respond(respond, t["memory_usage"].format(cmd=cmd))
            return
        if verb in FORGET_VERBS:
            await self._ask_to_forget(respond, self._lang(rest))
            return
        try:
            reply = await self._memory(verb, rest, team=team, user=user, lang=lang)
        except OmoideError as exc:
            log.warning("slack_memory_failed", workspace=team, verb=verb, code=exc.code, error=exc.message)
            reply = self.error_text(exc, lang)
        await self.respond(respond, reply)

    async def _memory(self, verb: str, rest: str, *, team: str, user: str, lang: Lang) -> str:
        t, cmd = TEXTS[lang], self.memory_command
        if verb in {"add", "remember"} and rest:
            done = await self.mem.remember(rest, workspace=team, user=user)
            return t["updated" if done.updated else "remembered"].format(id=done.memory.id)
        if verb in {"search", "recall", "find"} and rest:
            hits = await self.mem.recall(rest, workspace=team, user=user, limit=5)
            if not hits:
                return t["no_match"].format(cmd=cmd)
            return "\n".join(_memory_line(h.memory) for h in hits)
        if verb in {"list", "ls"} and (not rest or rest.isdigit()):
            page = int(rest) if rest else 1
            records = await self.mem.memories.list(team, user, page=max(page, 1), page_size=20)
            if not records:
                return t["no_page"].format(page=page) if page > 1 else t["no_memories"].format(cmd=cmd)
            return "\n".join([t["page"].format(page=page), *(_memory_line(m) for m in records)])
        if verb in {"delete", "remove", "rm", "forget"} and rest:
            number = rest.lstrip("#")
            if not number.isdigit():
                return t["bad_id"].format(cmd=cmd)
            try:
                await self.mem.memories.delete(team, user, int(number))
            except NotFoundError:
                return t["not_found"].format(id=number, cmd=cmd)
            return t["deleted"].format(id=number)
        return t["memory_usage"].format(cmd=cmd)

    # ---- /memory forget-me

    async def _ask_to_forget(self, respond: AsyncRespond, lang: Lang) -> None:
        """The ephemeral confirmation of ``/memory forget-me``: what goes, and two buttons."""
        t = TEXTS[lang]

        def button(action_id: str, label: str, **style: str) -> dict[str, Any]:
            text = {"type": "plain_text", "text": label}
            return {"type": "button", "action_id": action_id, "text": text, "value": lang, **style}

        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": t["forget_confirm"]}},
            {
                "type": "actions",
                "elements": [
                    button(FORGET_CONFIRM, t["forget_yes"], style="danger"),
                    button(FORGET_CANCEL, t["forget_no"]),
                ],
            },
        ]
        await respond(text=t["forget_confirm"], blocks=blocks, response_type="ephemeral")

    def _action_lang(self, body: Mapping[str, Any]) -> Lang:
        for action in body.get("actions") or ():
            value = action.get("value") if isinstance(action, Mapping) else None
            if value == "ja":
                return "ja"
            if value == "en":
                return "en"
        return self.mem.settings.answer_language

    async def on_forget_confirm(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
    ) -> None:
        """*Erase my data*: erase everything about the user who pressed it; the confirmation becomes the receipt."""
        await ack()
        lang = self._action_lang(body)
        presser = body.get("user") or {}
        user = presser.get("id") if isinstance(presser, Mapping) else None
        team_of = body.get("team") or {}
        team = context.team_id or (team_of.get("id") if isinstance(team_of, Mapping) else None)
        if not (isinstance(user, str) and user and team):
            log.warning("slack_forget_ignored", reason="missing user or team")
            await respond(text=TEXTS[lang]["failed"].format(code="NO_USER"), replace_original=True)
            return
        try:
            report = await self.mem.forget_user(workspace=team, user=user)
        except OmoideError as exc:
            log.warning("slack_forget_failed", workspace=team, code=exc.code, error=exc.message)
            reply = self.error_text(exc, lang)
        else:
            log.info("slack_user_forgotten", workspace=team, erased=report.as_dict())
            reply = escape(describe_erasure(report.as_dict(), lang, where=TEXTS[lang]["workspace"]))
        await respond(text=reply, replace_original=True, response_type="ephemeral")

    async def on_forget_cancel(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """*Cancel*: the confirmation says nothing was erased."""
        await ack()
        lang = self._action_lang(body)
        await respond(text=TEXTS[lang]["forget_cancelled"], replace_original=True, response_type="ephemeral")


def _remember(cache: OrderedDict[str, _V], key: str, value: _V) -> None:
    """Put ``key`` in a least-recently-used cache of at most :data:`NAME_CACHE_SIZE` entries."""
    cache[key] = value
    while len(cache) > NAME_CACHE_SIZE:
        cache.popitem(last=False)


def _memory_line(memory: MemoryRecord) -> str:
    tags = f" · {', '.join(memory.tags)}" if memory.tags else ""
    return f"`#{memory.id}` {escape(memory.content)} _({escape(memory.category)}{escape(tags)} · {memory.updated_at:%Y-%m-%d})_"


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
        client: the Web API client to use (tests point one at a local server).
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
    "escape",
    "run_slack_bot",
    "slack_tokens",
    "split_reply",
    "time_ts",
    "to_mrkdwn",
    "ts_time",
]
