"""Message windows (seed 004's ``message_windows``): a conversation cut into searchable pieces.

A channel's history is not a list of independent sentences: a question and its answer
sit in consecutive messages, often from different people. A window keeps such a stretch
together. Each channel, and each thread on its own, is read in time order and cut where

* the silence between two consecutive messages is longer than ``max_gap``
  (default 30 minutes: a new topic, usually), or
* adding the next message would exceed ``max_messages`` (default 30) or ``max_tokens``
  (default 512, counted with tiktoken ``cl100k_base`` on the rendered lines, so the
  window fits an embedding model's input).

Windows never overlap: every message is in exactly one window, and a message larger than
``max_tokens`` on its own gets a window to itself (flagged ``oversized``; splitting it
further is the chunker's job). Each window keeps its messages, time span, message ids and
participants; :func:`window_text` renders it as ``name: text`` lines, the text that is
counted by default.

An import also needs each message as the line its knowledge chunk stores
(:func:`chunk_line`, ``[2025-11-08 12:00] **name**: text``) and that line's count
(``render_chunks=True``): both lines are counted with **one** tokenisation of the message's
text. cl100k cuts text into pieces before it encodes them, and both lines cut between their
header and `` text`` (the header ends in ``:``, a run of punctuation that a space ends), so a
line's count is its header's plus the text's; the headers (name; date; time of day) repeat
and are counted once each (:class:`LineCounter`). The windows are exactly those of
counting each line whole (issue 17: counting every message in both formats was a third of
an import's time).

These are pure functions of their input: the same messages always give the same windows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from omoide.errors import InvalidInput
from omoide.importers._common import natural_key
from omoide.importers._model import ConversationKey, ImportedMessage

DEFAULT_MAX_GAP = timedelta(minutes=30)
DEFAULT_MAX_MESSAGES = 30
DEFAULT_MAX_TOKENS = 512
SEPARATOR_TOKENS = 1
"""Tokens charged for the newline between two lines of a window."""


class TextCounter(Protocol):
    """Anything that counts tokens in text (:class:`omoide.providers.tokens.TiktokenCounter`)."""

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Participant:
    """Someone who wrote in a window, with how many of its messages are theirs."""

    author_id: str
    author_name: str | None
    is_bot: bool
    message_count: int


@dataclass(frozen=True, slots=True)
class MessageWindow:
    """Consecutive messages of one channel or thread.

    Attributes:
        conversation: ``(platform, workspace_id, channel_id, thread_id)``.
        messages: the messages, in time order.
        started_at / ended_at: times of the first and last message (UTC).
        message_ids: the platform message ids, in order.
        participants: who wrote, in order of first message.
        token_count: tokens of :func:`window_text` as charged against ``max_tokens``
            (each line's count plus one per separating newline).
        oversized: one message alone exceeds ``max_tokens``.
        rendered / rendered_tokens: with ``render_chunks``, each message's :func:`chunk_line`
            and its token count (the chunker's input, counted once); else empty.
    """

    conversation: ConversationKey
    messages: tuple[ImportedMessage, ...] = field(repr=False)
    started_at: datetime
    ended_at: datetime
    message_ids: tuple[str, ...]
    participants: tuple[Participant, ...]
    token_count: int
    oversized: bool = False
    rendered: tuple[str, ...] = field(default=(), repr=False, compare=False)
    rendered_tokens: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @property
    def platform(self) -> str:
        return self.conversation[0]

    @property
    def workspace_id(self) -> str:
        return self.conversation[1]

    @property
    def channel_id(self) -> str:
        return self.conversation[2]

    @property
    def thread_id(self) -> str | None:
        return self.conversation[3]

    @property
    def channel_name(self) -> str | None:
        return self.messages[0].channel_name

    @property
    def thread_name(self) -> str | None:
        return self.messages[0].thread_name

    @property
    def key(self) -> str:
        """A stable id: the conversation and the first and last message ids."""
        platform, workspace, channel, thread = self.conversation
        return f"{platform}:{workspace}:{channel}:{thread or '-'}:{self.message_ids[0]}-{self.message_ids[-1]}"


def message_line(message: ImportedMessage) -> str:
    """One message as a window line: ``name: text`` (continuation lines indented)."""
    name = message.author_name or message.author_id
    text = message.text.replace("\n", "\n  ")
    return f"{name}: {text}"


def chunk_line(message: ImportedMessage) -> str:
    """One message as a line of an imported knowledge chunk: ``[2025-11-08 12:00] **name**: text``
    (continuation lines indented; ``*`` dropped from the name so the bold stays one span)."""
    name = (message.author_name or message.author_id).replace("*", "")
    text = message.text.replace("\r\n", "\n").replace("\n", "\n  ")
    return f"[{message.created_at:%Y-%m-%d %H:%M}] **{name}**: {text}"


class LineCounter:
    """Token counts of a message's two lines (:func:`message_line`, :func:`chunk_line`) from one
    count of its text (see the module docstring): ``count(line) == count(header) + count(" " + text)``
    for both, the headers counted once per name, date and time of day.

    Exact, not an estimate: cl100k's pieces never span the ``:`` + space between a header and
    its text, nor the ``]`` + space after the time, and a piece is encoded on its own
    (``tests/importers/test_fast_ingest.py`` compares with whole-line counts).
    """

    __slots__ = ("_count", "_headers")

    def __init__(self, counter: TextCounter) -> None:
        self._count = counter.count
        self._headers: dict[str, int] = {}

    def _header(self, text: str) -> int:
        found = self._headers.get(text)
        if found is None:
            if len(self._headers) > 65_536:  # names, dates, minutes of a day: a bound, never reached in practice
                self._headers.clear()
            found = self._headers[text] = self._count(text)
        return found

    def lines(self, message: ImportedMessage) -> tuple[int, str, int]:
        """``(count of message_line, chunk_line, count of chunk_line)``."""
        name = message.author_name or message.author_id
        stamp = f"{message.created_at:%Y-%m-%d %H:%M}"
        raw = message.text
        window_text = raw.replace("\n", "\n  ")
        body = self._count(" " + window_text)
        if "\r\n" in raw:
            chunk_text = raw.replace("\r\n", "\n").replace("\n", "\n  ")
            chunk_body = self._count(" " + chunk_text)
        else:
            chunk_text, chunk_body = window_text, body
        bold = name.replace("*", "")
        line = f"[{stamp}] **{bold}**: {chunk_text}"
        if len(stamp) != 16:  # a year before 1000 or after 9999: not the pieces the split relies on
            return self._count(f"{name}: {window_text}"), line, self._count(line)
        chunk = self._header("[" + stamp[:10]) + self._header(stamp[10:] + "]") + self._header(f" **{bold}**:")
        return self._header(name + ":") + body, line, chunk + chunk_body


def window_text(window: MessageWindow, *, timestamps: bool = False) -> str:
    """The window as text, one :func:`message_line` per message.

    Args:
        window: the window.
        timestamps: prefix each line with its UTC time (``[2025-11-08 12:00] ``); these
            prefixes are not counted in ``token_count``.
    """
    if not timestamps:
        return "\n".join(message_line(m) for m in window.messages)
    return "\n".join(f"[{m.created_at:%Y-%m-%d %H:%M}] {message_line(m)}" for m in window.messages)


def _check_limits(max_gap: timedelta, max_messages: int, max_tokens: int) -> None:
    if max_gap <= timedelta(0):
        raise InvalidInput(f"max_gap must be positive, got {max_gap}")
    if max_messages < 1:
        raise InvalidInput(f"max_messages must be at least 1, got {max_messages}")
    if max_tokens < 1:
        raise InvalidInput(f"max_tokens must be at least 1, got {max_tokens}")


def _participants(messages: Sequence[ImportedMessage]) -> tuple[Participant, ...]:
    counts: dict[str, int] = {}
    first: dict[str, ImportedMessage] = {}
    for m in messages:
        counts[m.author_id] = counts.get(m.author_id, 0) + 1
        first.setdefault(m.author_id, m)
    return tuple(Participant(a, m.author_name, m.is_bot, counts[a]) for a, m in first.items())


def _window(
    messages: list[ImportedMessage], tokens: int, oversized: bool, rendered: list[str], rendered_tokens: list[int]
) -> MessageWindow:
    return MessageWindow(
        conversation=messages[0].conversation,
        messages=tuple(messages),
        started_at=messages[0].created_at,
        ended_at=messages[-1].created_at,
        message_ids=tuple(m.message_id for m in messages),
        participants=_participants(messages),
        token_count=tokens,
        oversized=oversized,
        rendered=tuple(rendered),
        rendered_tokens=tuple(rendered_tokens),
    )


def split_windows(
    messages: Iterable[ImportedMessage],
    *,
    max_gap: timedelta = DEFAULT_MAX_GAP,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    counter: TextCounter | None = None,
    render_chunks: bool = False,
) -> Iterator[MessageWindow]:
    """Cut one conversation's messages, already in time order, into windows (streaming).

    Args:
        messages: messages of one channel or thread, oldest first.
        max_gap: a longer silence between two messages starts a new window.
        max_messages: at most this many messages per window.
        max_tokens: at most this many tokens per window (see :class:`MessageWindow`),
            unless a single message is larger.
        counter: the token counter (default: tiktoken ``cl100k_base``, offline).
        render_chunks: also render each message's :func:`chunk_line` and count it, from the same
            count of its text (:class:`LineCounter`): ``rendered`` / ``rendered_tokens``.

    Raises:
        InvalidInput: a non-positive limit, messages from more than one conversation, or
            messages out of time order.
        ConfigError: no ``counter`` given and tiktoken is not installed.
    """
    _check_limits(max_gap, max_messages, max_tokens)
    if counter is None:
        from omoide.providers.tokens import get_token_counter

        counter = get_token_counter()
    count = counter.count
    both = LineCounter(counter).lines if render_chunks else None
    current: list[ImportedMessage] = []
    rendered: list[str] = []
    rendered_tokens: list[int] = []
    tokens = 0
    for message in messages:
        if both is None:
            cost = count(message_line(message))
        else:
            cost, line, line_tokens = both(message)
        if current:
            last = current[-1]
            if message.conversation != last.conversation:
                raise InvalidInput(
                    f"split_windows takes one conversation; got {last.conversation} and {message.conversation}"
                )
            if message.created_at < last.created_at:
                raise InvalidInput(
                    f"messages must be in time order: {message.message_id} ({message.created_at.isoformat()}) "
                    f"comes after {last.message_id} ({last.created_at.isoformat()})"
                )
            if (
                message.created_at - last.created_at > max_gap
                or len(current) >= max_messages
                or tokens + SEPARATOR_TOKENS + cost > max_tokens
            ):
                yield _window(current, tokens, tokens > max_tokens, rendered, rendered_tokens)
                current, rendered, rendered_tokens, tokens = [], [], [], 0
        tokens += cost if not current else SEPARATOR_TOKENS + cost
        current.append(message)
        if both is not None:
            rendered.append(line)
            rendered_tokens.append(line_tokens)
    if current:
        yield _window(current, tokens, tokens > max_tokens, rendered, rendered_tokens)


def message_windows(
    messages: Iterable[ImportedMessage],
    *,
    max_gap: timedelta = DEFAULT_MAX_GAP,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    counter: TextCounter | None = None,
    render_chunks: bool = False,
) -> list[MessageWindow]:
    """Group messages by channel and thread, sort each by time, and cut them into windows.

    Input order does not matter (``--reverse`` exports, several partitions, interleaved
    channels are all fine): each conversation is sorted by time, ties broken by message id
    in natural order (``9`` before ``10``).
    Windows come conversation by conversation (in order of first appearance), each in
    time order. Arguments are those of :func:`split_windows`.

    Raises:
        InvalidInput: a non-positive limit.
        ConfigError: no ``counter`` given and tiktoken is not installed.
    """
    _check_limits(max_gap, max_messages, max_tokens)
    groups: dict[ConversationKey, list[ImportedMessage]] = {}
    for message in messages:
        groups.setdefault(message.conversation, []).append(message)
    out: list[MessageWindow] = []
    for group in groups.values():
        group.sort(key=lambda m: (m.created_at, natural_key(m.message_id)))
        out.extend(
            split_windows(
                group,
                max_gap=max_gap,
                max_messages=max_messages,
                max_tokens=max_tokens,
                counter=counter,
                render_chunks=render_chunks,
            )
        )
    return out


__all__ = [
    "DEFAULT_MAX_GAP",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "SEPARATOR_TOKENS",
    "LineCounter",
    "MessageWindow",
    "Participant",
    "TextCounter",
    "chunk_line",
    "message_line",
    "message_windows",
    "split_windows",
    "window_text",
]
