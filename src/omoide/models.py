"""Domain types shared by every layer.

Messages carry *content blocks* in the shape of the Anthropic Messages API, the
richest of the common formats: ``text``, ``tool_use`` and ``tool_result``. Other
formats (OpenAI chat, JSONL transcripts) are converted at the edges.

All types are frozen ``slots`` dataclasses; every timestamp is an aware UTC
``datetime``. Stored objects carry their database ids; objects built by a caller
have ``id=None`` until a store returns the stored copy.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, NewType, TypeAlias

from omoide.errors import InvalidContent, InvalidInput

SessionId = NewType("SessionId", int)
MessageId = NewType("MessageId", int)

Role: TypeAlias = Literal["user", "assistant"]
ROLES: tuple[Role, ...] = ("user", "assistant")


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def ensure_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime; naive values are taken to be UTC.

    Raises:
        InvalidInput: ``value`` is outside the years 1–9999 once in UTC
            (``9999-12-31T23:00-05:00`` is 10000-01-01 there).
    """
    tz = value.tzinfo
    if tz is UTC:
        return value
    if tz is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInput(f"{value.isoformat()} is outside the years 1–9999 in UTC") from None


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A text block.

    ``tokens`` is the text's token count as stored with the message (cl100k, counted once
    when the message was written; see :mod:`omoide.providers.tokens`), or ``None`` when
    it was not counted yet. It travels with the text it was counted from — a new text is
    a new block — and takes no part in equality or the JSON form.
    """

    text: str
    tokens: int | None = field(default=None, compare=False, repr=False)
    type: Literal["text"] = field(default="text", init=False)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = field(default="tool_use", init=False)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = field(default="tool_result", init=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": self.tool_use_id, "content": self.content}
        if self.is_error:
            out["is_error"] = True
        return out


ContentBlock: TypeAlias = TextBlock | ToolUseBlock | ToolResultBlock
_BLOCK_TYPES = (TextBlock, ToolUseBlock, ToolResultBlock)


def _tool_result_text(content: Any, where: str) -> str:
    """Tool results may be a string or a list of text blocks; normalise to a string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, Mapping) and item.get("type") == "text" and isinstance(item.get("text"), str):
                parts.append(item["text"])
            else:
                raise InvalidContent(f"{where}: tool_result content list may only hold text blocks, got {item!r:.80}")
        return "\n".join(parts)
    raise InvalidContent(f"{where}: tool_result content must be a string or a list of text blocks")


def block_from_dict(data: Any, *, where: str = "block") -> ContentBlock:
    """Parse one content block from its JSON form.

    Raises:
        InvalidContent: the block is not a mapping, has an unknown ``type`` or a
            missing / mistyped field. The message names the field.
    """
    if type(data) is not dict and not isinstance(data, Mapping):
        raise InvalidContent(f"{where}: a content block must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    if kind == "text":
        text = data.get("text")
        if not isinstance(text, str):
            raise InvalidContent(f"{where}: text block needs a string 'text'")
        return TextBlock(text)
    if kind == "tool_use":
        id_, name, input_ = data.get("id"), data.get("name"), data.get("input", {})
        if not isinstance(id_, str) or not id_:
            raise InvalidContent(f"{where}: tool_use block needs a non-empty string 'id'")
        if not isinstance(name, str) or not name:
            raise InvalidContent(f"{where}: tool_use block needs a non-empty string 'name'")
        if not isinstance(input_, Mapping):
            raise InvalidContent(f"{where}: tool_use 'input' must be a JSON object")
        return ToolUseBlock(id_, name, dict(input_))
    if kind == "tool_result":
        tid = data.get("tool_use_id")
        if not isinstance(tid, str) or not tid:
            raise InvalidContent(f"{where}: tool_result block needs a non-empty string 'tool_use_id'")
        is_error = data.get("is_error", False)
        if not isinstance(is_error, bool):
            raise InvalidContent(f"{where}: tool_result 'is_error' must be a boolean")
        return ToolResultBlock(tid, _tool_result_text(data.get("content", ""), where), is_error)
    raise InvalidContent(f"{where}: unknown content block type {kind!r}; expected text, tool_use or tool_result")


_loads = json.JSONDecoder().decode


def with_text_tokens(content: tuple[ContentBlock, ...], tokens: int | None) -> tuple[ContentBlock, ...]:
    """``content`` with a stored token count put on its only text block (see ``TextBlock.tokens``)."""
    if tokens is None or len(content) != 1:
        return content
    block = content[0]
    return (TextBlock(block.text, tokens),) if isinstance(block, TextBlock) else content


def blocks_from_json(value: str | Sequence[Any]) -> tuple[ContentBlock, ...]:
    """Parse content blocks from a JSON string or an already-decoded list.

    A plain string that is not JSON is *not* accepted here: use :meth:`Message.user`
    for plain text.
    """
    if isinstance(value, str):
        try:
            value = _loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidContent(f"content is not valid JSON: {exc.msg} at position {exc.pos}") from exc
    if not isinstance(value, list):
        raise InvalidContent("content must be a JSON list of blocks")
    out: list[ContentBlock] = []
    for i, item in enumerate(value):
        if type(item) is dict and item.get("type") == "text" and len(item) == 2 and type(item.get("text")) is str:
            out.append(TextBlock(item["text"]))  # the common case, without the general checks
        else:
            out.append(block_from_dict(item, where=f"content[{i}]"))
    return tuple(out)


MAX_JSON_DEPTH = 64
"""The deepest nesting of objects and arrays omoide stores in free-form JSON (a tool block's input, a
memory's metadata): what is stored must also be answered, and JSON serialisers stop somewhere
(pydantic at 255 levels, the whole answer included)."""


def json_depth(value: object) -> int:
    """How deeply ``value`` nests objects (mappings) and arrays (lists, tuples): 0 for a scalar."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def blocks_to_json(blocks: Iterable[ContentBlock], *, allow_nan: bool = True) -> str:
    """The blocks as compact JSON; ``allow_nan=False`` raises ``ValueError`` for a NaN or an infinity
    (Python writes them as the bare words ``NaN`` / ``Infinity``, which are not JSON)."""
    return json.dumps([b.to_dict() for b in blocks], ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan)


# ------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation.

    Attributes:
        role: ``user`` or ``assistant`` (tool results travel in user turns).
        content: the content blocks, at least one.
        author_id / author_name / is_bot: who wrote it on the platform.
        message_id: the platform's message id; re-appending a stored id is a no-op.
        created_at: when it was written (UTC); defaults to now.
        id / session_id / seq: set on stored messages. ``seq`` numbers a session's
            messages 1, 2, 3, … in append order.
    """

    role: Role
    content: tuple[ContentBlock, ...]
    author_id: str | None = None
    author_name: str | None = None
    is_bot: bool = False
    message_id: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    id: MessageId | None = None
    session_id: SessionId | None = None
    seq: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidContent(f"role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if not isinstance(self.content, tuple):
            object.__setattr__(self, "content", tuple(self.content))
        if not self.content:
            raise InvalidContent("a message needs at least one content block")
        for i, block in enumerate(self.content):
            if type(block) not in _BLOCK_TYPES and not isinstance(block, _BLOCK_TYPES):
                raise InvalidContent(f"content[{i}] is not a content block: {type(block).__name__}")
        object.__setattr__(self, "created_at", ensure_utc(self.created_at))

    @classmethod
    def user(cls, text: str, **kwargs: Any) -> Message:
        """A user message with one text block."""
        return cls("user", (TextBlock(text),), **kwargs)

    @classmethod
    def assistant(cls, text: str, **kwargs: Any) -> Message:
        """An assistant message with one text block (``is_bot`` defaults to True)."""
        kwargs.setdefault("is_bot", True)
        return cls("assistant", (TextBlock(text),), **kwargs)

    @property
    def text(self) -> str:
        """The text of all text blocks, joined by newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def content_json(self, *, allow_nan: bool = True) -> str:
        return blocks_to_json(self.content, allow_nan=allow_nan)

    def with_stored(self, *, id: MessageId, session_id: SessionId, seq: int) -> Message:
        return replace(self, id=id, session_id=session_id, seq=seq)


SUMMARY_PREFIX = "[Previous conversation summary]\n"
"""Prefix of the user turn that stands for a compacted history (seed 002)."""
SUMMARY_ACK = "Understood, I have the context."
"""The assistant turn that acknowledges a compaction summary (seed 002)."""


def summary_turns(summary: str, *, created_at: datetime | None = None) -> list[Message]:
    """The two turns that stand for a summarised history: a summary and its acknowledgement."""
    when = {"created_at": created_at} if created_at is not None else {}
    return [Message.user(SUMMARY_PREFIX + summary, **when), Message.assistant(SUMMARY_ACK, **when)]


def is_summary_turn(message: Message) -> bool:
    """Whether ``message`` is the user turn of a compaction summary pair."""
    return message.role == "user" and message.text.startswith(SUMMARY_PREFIX)


# ------------------------------------------------------------------------- sessions


class SessionStatus(enum.StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    EXPIRED = "expired"


class KeyPolicy(enum.StrEnum):
    """How a conversation maps to a session (see :mod:`omoide.keys`)."""

    USER_CHANNEL = "user_channel"  # seed 001: one session per user in each channel (bot default)
    CHANNEL = "channel"  # everyone in a channel shares one session
    THREAD = "thread"  # one session per thread (falls back to the channel)
    AGENT = "agent"  # a named agent session (seed 002)


@dataclass(frozen=True, slots=True)
class SessionKey:
    """The parts a session key is built from, and its stable string form.

    Build one with :func:`omoide.keys.session_key`; parse the string form with
    :func:`omoide.keys.parse_session_key`.
    """

    policy: KeyPolicy
    platform: str
    workspace: str
    channel: str | None = None
    thread: str | None = None
    user: str | None = None
    agent: str | None = None
    value: str = ""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Session:
    """A stored session (short-term memory of one conversation).

    Attributes:
        version: optimistic-lock counter, bumped by every state change (append included).
        last_seq: the ``seq`` of the newest message (0 when empty).
        archived_seq: watermark; messages with ``seq <= archived_seq`` are in long-term memory.
        window_start_seq: messages with ``seq <= window_start_seq`` were reset out of the
            prompt window (still stored until archived).
        context_summary / context_summary_seq: the persisted compaction of the prompt
            (seed 002): a summary that stands for the messages with ``seq <= context_summary_seq``
            in the prompt, so the next turn does not summarise them again. The messages
            themselves stay stored.
        private / members: a private conversation (a DM with the bot, a group DM, a private
            channel): its archived knowledge is visible only to ``members`` (user ids; the
            archiver adds every participant). Set by ``Memory.append(..., private=True)``.
    """

    id: SessionId
    key: str
    policy: KeyPolicy
    platform: str
    workspace_id: str
    channel_id: str | None
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    status: SessionStatus
    version: int
    last_seq: int
    archived_seq: int
    window_start_seq: int
    last_active_at: datetime
    created_at: datetime
    context_summary: str | None = None
    context_summary_seq: int = 0
    private: bool = False
    members: tuple[str, ...] = ()

    @property
    def unarchived_count(self) -> int:
        return self.last_seq - self.archived_seq


__all__ = [
    "ROLES",
    "SUMMARY_ACK",
    "SUMMARY_PREFIX",
    "ContentBlock",
    "KeyPolicy",
    "Message",
    "MessageId",
    "Role",
    "Session",
    "SessionId",
    "SessionKey",
    "SessionStatus",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "block_from_dict",
    "blocks_from_json",
    "blocks_to_json",
    "ensure_utc",
    "is_summary_turn",
    "summary_turns",
    "utcnow",
    "with_text_tokens",
]
