"""Chunking: a run of conversation messages → searchable :class:`ChunkDraft` pieces.

Each message becomes one formatted line, as seed 000 writes conversation logs, with the
author's display name and the time when they are known::

    [2026-01-19 10:00] **Alice (User)**: 今日の天気は？
    [2026-01-19 10:01] **Assistant**: 晴れです。

A message too long for one chunk (``chunk_max_tokens``) is cut into parts at token
boundaries (``**Alice (User)** (2/3)``); every other message stays whole. Lines are then
grouped into chunks by one of two strategies:

* ``message_based`` (the default, seed 000's recommendation): windows of ``chunk_messages``
  messages, neighbouring windows sharing ``chunk_overlap`` messages, and never more than
  ``chunk_max_tokens`` tokens (a window that would be longer is cut short).
* ``token_based``: as many whole messages as fit in ``chunk_max_tokens`` tokens, neighbouring
  chunks sharing up to ``chunk_token_overlap`` tokens' worth of messages.

Unlike seed 000's loop, the last window never repeats messages the previous window
already ended with, and a chunk is never empty. Tokens are counted with tiktoken
``cl100k_base``, loaded once per process (:func:`omoide.providers.tokens.get_token_counter`).

Each chunk records where it came from in ``location``: ``seq_start`` / ``seq_end`` (the
session's message numbers), ``total`` (messages in the session when it was archived),
``message_ids`` (stored message ids), ``lines`` (who wrote which characters of the content:
``[start, end, author_id, message_id]`` per line, what an erasure removes) and ``part`` /
``parts`` for a piece of a long message. Its ``lexical`` text is :func:`omoide.text.tokenize_for_search` of the names and
message text (not of the timestamps and labels), space-separated, and its ``unit_lexical``
the same per line (:func:`omoide.stores.units.unit_lexical_of`: the tokens search ranks each
message of the chunk by).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from omoide.errors import ConfigError
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.settings import Settings
from omoide.stores._erasure_common import LINES_KEY, PLATFORM_IDS_KEY, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft
from omoide.stores.units import chunk_lines, line_lexical_source
from omoide.text.lexical import lexical_text

Strategy = Literal["message_based", "token_based"]
STRATEGIES: tuple[Strategy, ...] = ("message_based", "token_based")

SEPARATOR = "\n\n"
_SEPARATOR_TOKENS = 1  # "\n\n" is one cl100k token
_SPLIT_MARGIN = 8  # tokens kept free when cutting a long message (re-encoding at a cut can add one or two)
_TOOL_INPUT_CHARS = 500
_ROLE_LABEL = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True, slots=True)
class ChunkingOptions:
    """How to cut messages into chunks (see the module docstring).

    Raises:
        ConfigError: a value is out of range (overlap not smaller than the window, …).
    """

    strategy: Strategy = "message_based"
    messages: int = 10
    overlap: int = 2
    max_tokens: int = 512
    token_overlap: int = 64

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"chunk strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if self.messages < 1:
            raise ConfigError(f"chunk_messages must be at least 1, got {self.messages}")
        if not 0 <= self.overlap < self.messages:
            raise ConfigError(f"chunk_overlap must be 0 … chunk_messages-1 ({self.messages - 1}), got {self.overlap}")
        if self.max_tokens < 32:
            raise ConfigError(f"chunk_max_tokens must be at least 32, got {self.max_tokens}")
        if not 0 <= self.token_overlap * 2 <= self.max_tokens:
            raise ConfigError(
                f"chunk_token_overlap must be 0 … chunk_max_tokens/2 ({self.max_tokens // 2}), got {self.token_overlap}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> ChunkingOptions:
        return cls(
            strategy=settings.chunk_strategy,
            messages=settings.chunk_messages,
            overlap=settings.chunk_overlap,
            max_tokens=settings.chunk_max_tokens,
            token_overlap=settings.chunk_token_overlap,
        )


def author_label(message: Message) -> str:
    """``Alice (User)`` when the display name is known, else seed 000's ``User`` / ``Assistant``."""
    role = _ROLE_LABEL[message.role]
    name = (message.author_name or "").strip()
    return f"{name} ({role})" if name else role


def render_body(message: Message) -> str:
    """The message's content as plain text: text blocks as they are, tool blocks in brackets."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                parts.append(block.text.strip())
        elif isinstance(block, ToolUseBlock):
            payload = json.dumps(dict(block.input), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            if len(payload) > _TOOL_INPUT_CHARS:
                payload = payload[:_TOOL_INPUT_CHARS] + "…"
            parts.append(f"[tool call {block.name}: {payload}]")
        elif isinstance(block, ToolResultBlock):
            label = "tool error" if block.is_error else "tool result"
            parts.append(f"[{label}: {block.content.strip()}]")
    return "\n".join(parts)


def format_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def format_message(message: Message) -> str:
    """One line of a chunk: ``[2026-01-19 10:00] **Alice (User)**: text``."""
    return f"[{format_time(message.created_at)}] **{author_label(message)}**: {render_body(message)}"


def split_text(body: str, *, budget: int, encoding: Any = None) -> list[str]:
    """Cut ``body`` at token boundaries into pieces of at most ``budget`` tokens (minus a margin).

    The one splitter of a message too long for a chunk, for archived sessions
    (:class:`Chunker`) and imported exports alike (:func:`omoide.knowledge.importing.window_chunks`).
    The text is encoded a block at a time (a little more than one piece), so memory stays
    small whatever the message's size: encoding a 1.5 MB message whole took 130 MB.

    Args:
        body: the text.
        budget: the tokens a piece may take (what is left of ``chunk_max_tokens`` after its header).
        encoding: a tiktoken encoding (default: ``cl100k_base``, loaded once per process).
    """
    if encoding is None:
        from omoide.providers.tokens import load_encoding

        encoding = load_encoding()
    size = max(16, budget - _SPLIT_MARGIN)
    pieces: list[str] = []
    pos, end = 0, len(body)
    chars_per_token = 4.0
    while pos < end:
        block_chars = int(size * chars_per_token * 1.5) + 64
        while True:
            block = body[pos : pos + block_chars]
            last = pos + block_chars >= end
            tokens = encoding.encode_ordinary(block)
            if last or len(tokens) > size + 1:
                break
            block_chars *= 2  # fewer tokens than a piece in this block: take a longer one
        if last and len(tokens) <= size:
            cut = len(block)
        else:
            # a piece of `size` tokens, never the block's last token (the block's end may cut a word)
            take = min(size, len(tokens) - (0 if last else 1))
            # the characters of the first `take` tokens (a cut inside a character moves before it)
            head = len(encoding.decode_bytes(tokens[:take]))
            cut = len(block.encode("utf-8")[:head].decode("utf-8", "ignore"))
            if cut <= 0:  # one character spans the whole slice (cannot happen for sane sizes)
                cut = 1
            chars_per_token = max(0.5, cut / max(take, 1))
        piece = block[:cut].strip()
        if piece:
            pieces.append(piece)
        pos += cut
    return pieces or [body]


@dataclass(frozen=True, slots=True)
class _Unit:
    """A formatted message, or one part of a message too long for a chunk."""

    index: int  # position of the message in the input
    message: Message
    line: str
    lexical: tuple[str, ...]
    tokens: int
    part: int = 1
    parts: int = 1


class Chunker:
    """Cuts a run of messages into :class:`ChunkDraft` objects (see the module docstring).

    Args:
        options: the strategy and its sizes.
        tokenize: lexical tokens for search (default :func:`omoide.text.tokenize_for_search`).

    Example:
        >>> chunker = Chunker(ChunkingOptions(messages=10, overlap=2))   # doctest: +SKIP
        >>> drafts = chunker.chunk(messages, total=session.last_seq)     # doctest: +SKIP
    """

    def __init__(self, options: ChunkingOptions, *, tokenize: Callable[[str], list[str]] | None = None) -> None:
        from omoide.providers.tokens import get_token_counter, load_encoding

        self.options = options
        self._counter = get_token_counter()
        self._encoding: Any = load_encoding()
        from omoide.text import tokenize_for_search

        self._search_tokens = tokenize_for_search
        self._tokenize = tokenize or tokenize_for_search

    @classmethod
    def from_settings(cls, settings: Settings) -> Chunker:
        return cls(ChunkingOptions.from_settings(settings))

    def count(self, text: str) -> int:
        return self._counter.count(text)

    # ------------------------------------------------------------------ units

    def _units(self, messages: Sequence[Message], tokenize: Callable[[str], list[str]]) -> list[_Unit]:
        units: list[_Unit] = []
        for index, message in enumerate(messages):
            body = render_body(message)
            name = (message.author_name or "").strip()
            line = format_message(message)
            tokens = self.count(line)
            if tokens <= self.options.max_tokens:
                lexical = tuple(tokenize(f"{name}\n{body}" if name else body))
                units.append(_Unit(index, message, line, lexical, tokens))
                continue
            stamp, label = format_time(message.created_at), author_label(message)
            pieces = self._split(body, budget=self.options.max_tokens - self.count(f"[{stamp}] **{label}** (99/99): "))
            for part, piece in enumerate(pieces, start=1):
                head = f"[{stamp}] **{label}** ({part}/{len(pieces)}): "
                text = head + piece
                lexical = tuple(tokenize(f"{name}\n{piece}" if name else piece))
                units.append(_Unit(index, message, text, lexical, self.count(text), part, len(pieces)))
        return units

    def _split(self, body: str, *, budget: int) -> list[str]:
        """Cut ``body`` at token boundaries into pieces of at most ``budget`` tokens (minus a margin)."""
        return split_text(body, budget=budget, encoding=self._encoding)

    # ------------------------------------------------------------------ windows

    def _message_windows(self, units: Sequence[_Unit]) -> list[tuple[int, int]]:
        opts = self.options
        windows: list[tuple[int, int]] = []
        start = 0
        while start < len(units):
            end, tokens, seen = start, 0, 0
            last_index = -1
            while end < len(units):
                unit = units[end]
                new_message = unit.index != last_index
                if new_message and seen == opts.messages:
                    break
                cost = unit.tokens + (_SEPARATOR_TOKENS if end > start else 0)
                if end > start and tokens + cost > opts.max_tokens:
                    break
                tokens += cost
                if new_message:
                    seen += 1
                    last_index = unit.index
                end += 1
            windows.append((start, end))
            if end >= len(units):
                break
            overlap = min(opts.overlap, (seen - 1) // 2)
            start = max(start + 1, self._back_by_messages(units, start, end, overlap))
        return windows

    @staticmethod
    def _back_by_messages(units: Sequence[_Unit], start: int, end: int, messages: int) -> int:
        """The first unit of the last ``messages`` messages of ``units[start:end]``."""
        if messages <= 0:
            return end
        pos, seen, last_index = end, 0, -1
        while pos > start:
            index = units[pos - 1].index
            if index != last_index:
                if seen == messages:
                    break
                seen += 1
                last_index = index
            pos -= 1
        return pos

    def _token_windows(self, units: Sequence[_Unit]) -> list[tuple[int, int]]:
        opts = self.options
        windows: list[tuple[int, int]] = []
        start = 0
        while start < len(units):
            end, tokens = start, 0
            while end < len(units):
                cost = units[end].tokens + (_SEPARATOR_TOKENS if end > start else 0)
                if end > start and tokens + cost > opts.max_tokens:
                    break
                tokens += cost
                end += 1
            windows.append((start, end))
            if end >= len(units):
                break
            back, shared = end, 0
            while back - 1 > start and shared + units[back - 1].tokens <= opts.token_overlap:
                shared += units[back - 1].tokens + _SEPARATOR_TOKENS
                back -= 1
            start = max(start + 1, back)
        return windows

    # ------------------------------------------------------------------ public

    def chunk(
        self,
        messages: Sequence[Message],
        *,
        total: int | None = None,
        session_id: int | None = None,
        channel_id: str | None = None,
        thread_id: str | None = None,
    ) -> list[ChunkDraft]:
        """Cut ``messages`` (oldest first) into chunks.

        Args:
            messages: the messages, oldest first (stored ones carry ``seq`` and ``id``).
            total: the number of messages in the session (recorded in each ``location``).
            session_id / channel_id / thread_id: recorded on each chunk.

        Returns:
            The chunks in order; empty when ``messages`` is empty.
        """
        memo: dict[str, list[str]] = {}

        def search_tokens(text: str) -> list[str]:
            # each line is tokenised once: for the chunk's tokens, for its units' (the same
            # source text when the author has a name) and again in the next chunk's overlap
            found = memo.get(text)
            if found is None:
                found = memo[text] = self._search_tokens(text)
            return found

        tokenize = search_tokens if self._tokenize is self._search_tokens else self._tokenize
        units = self._units(messages, tokenize)
        if not units:
            return []
        if self.options.strategy == "message_based":
            windows = self._message_windows(units)
        else:
            windows = self._token_windows(units)
        return [
            self._draft(
                units[start:end],
                search_tokens,
                total=total,
                session_id=session_id,
                channel_id=channel_id,
                thread_id=thread_id,
            )
            for start, end in windows
        ]

    def _draft(
        self,
        units: Sequence[_Unit],
        search_tokens: Callable[[str], list[str]],
        *,
        total: int | None,
        session_id: int | None,
        channel_id: str | None,
        thread_id: str | None,
    ) -> ChunkDraft:
        content, lines = join_lines(
            [(u.line, u.message.author_id, None if u.message.id is None else int(u.message.id)) for u in units],
            SEPARATOR,
        )
        seen: set[int] = set()
        messages: list[Message] = []
        for unit in units:
            if unit.index not in seen:
                seen.add(unit.index)
                messages.append(unit.message)
        authors: list[str] = []
        for m in messages:
            if m.author_id and m.author_id not in authors:
                authors.append(m.author_id)
        location: dict[str, Any] = {}
        if session_id is not None:
            location["session_id"] = session_id
        seqs = [m.seq for m in messages if m.seq is not None]
        if seqs:
            location["seq_start"] = min(seqs)
            location["seq_end"] = max(seqs)
        if total is not None:
            location["total"] = total
        location["message_count"] = len(messages)
        ids = [int(m.id) for m in messages if m.id is not None]
        if ids:
            location["message_ids"] = ids
        platform_ids = {str(int(m.id)): m.message_id for m in messages if m.id is not None and m.message_id}
        if platform_ids:  # stored id → the platform's id, so a message hit can link to its message
            location[PLATFORM_IDS_KEY] = platform_ids
        if len(units) == 1 and units[0].parts > 1:
            location["part"] = units[0].part
            location["parts"] = units[0].parts
        location[LINES_KEY] = spans_json(lines)
        times = [m.created_at for m in messages]
        # unit_lexical_of(content, location), with each line's search tokens computed once
        lines_of = chunk_lines(content, location)
        unit_lexical = (
            None if lines_of is None else tuple(lexical_text(search_tokens(line_lexical_source(x))) for x in lines_of)
        )
        return ChunkDraft(
            content=content,
            lexical=lexical_text(token for unit in units for token in unit.lexical),
            token_count=self.count(content),
            location=location,
            channel_id=channel_id,
            thread_id=thread_id,
            author_ids=tuple(authors),
            started_at=min(times),
            ended_at=max(times),
            unit_lexical=unit_lexical,
        )


__all__ = [
    "SEPARATOR",
    "STRATEGIES",
    "Chunker",
    "ChunkingOptions",
    "Strategy",
    "author_label",
    "format_message",
    "render_body",
    "split_text",
]
