"""Imported message windows → knowledge chunks (drafts), for :mod:`omoide.knowledge.importing`.

A window that fits ``chunk_max_tokens`` is one chunk of ``[2025-11-08 12:00] **name**: text``
lines (the archiver's format, which answers cite with times and speakers); a longer one is
packed into as few chunks as fit, a message too long on its own cut into ``(2/5)`` parts
(:func:`window_chunks`). Each chunk carries its line records and the search tokens of the
whole and of each line, computed in one pass (:func:`_line_lexicals`): tokenising is most of an
import's time.

An import's windows carry these lines and their counts already (``render_chunks=True``,
see :func:`omoide.importers.split_windows`): no line is rendered or counted twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import chain, pairwise
from typing import Any

from omoide.importers import ImportedMessage, MessageWindow, chunk_line
from omoide.knowledge.chunking import split_text
from omoide.providers.tokens import get_token_counter
from omoide.stores._erasure_common import LINES_KEY
from omoide.stores.knowledge import ChunkDraft
from omoide.stores.units import chunk_lines, line_lexical_source, unit_lexical_of
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import HEADER, chunk_lexical_text, speaker_of, split_chat_lines
from omoide.text.lexical import MAX_DISTINCT_BYTES, MAX_TOKEN_BYTES


def window_chunk(window: MessageWindow) -> ChunkDraft:
    """One chunk for one message window."""
    lines = window.rendered or [chunk_line(m) for m in window.messages]
    return _piece_chunk(
        window, [(m, line, 0) for m, line in zip(window.messages, lines, strict=True)], window.token_count
    )


def _header(message: ImportedMessage, part: int, parts: int) -> str:
    name = (message.author_name or message.author_id).replace("*", "")
    return f"[{message.created_at:%Y-%m-%d %H:%M}] **{name}** ({part}/{parts}): "


def _piece_chunk(window: MessageWindow, lines: Sequence[tuple[ImportedMessage, str, int]], tokens: int) -> ChunkDraft:
    messages = list({id(m): m for m, _, _ in lines}.values())
    texts = [line for _, line, _ in lines]
    content = "\n".join(texts)
    spans: list[list[Any]] = []  # join_lines + spans_json, without a LineSpan per line
    pos = 0
    for m, line, _ in lines:
        end = pos + len(line)
        spans.append([pos, end, m.author_id, m.message_id])
        pos = end + 1
    url = next((m.url for m in messages if m.url), None)
    location: dict[str, Any] = {"message_ids": [m.message_id for m in messages], "key": window.key, LINES_KEY: spans}
    if url:
        location["jump_url"] = url
    head = _PART.match(lines[0][1]) if len(lines) == 1 else None
    if head is not None:
        location["part"], location["parts"] = int(head.group(1)), int(head.group(2))
    times = [m.created_at for m in messages]
    per_line = _line_lexicals(texts)
    if per_line is None:
        lexical, unit_lexical = _lexicals(content, location)
    else:
        lexical, unit_lexical = _joined(list(chain.from_iterable(per_line))), tuple(map(_joined, per_line))
    return ChunkDraft(
        content=content,
        lexical=lexical,
        token_count=tokens,
        location=location,
        channel_id=window.channel_id,
        thread_id=window.thread_id,
        author_ids=tuple(dict.fromkeys(m.author_id for m in messages)),
        started_at=min(times),
        ended_at=max(times),
        unit_lexical=unit_lexical,
    )


def _lexicals(content: str, location: Mapping[str, Any]) -> tuple[str, tuple[str, ...] | None]:
    """The chunk's search tokens and each line's (``unit_lexical``), tokenising each message once:
    the search tokenizer never joins text across a newline, so the chunk's tokens are its lines'
    in order — the same result as tokenising both, at half the cost. When the two readings of
    the lines disagree (no line records, a header read differently) both are tokenised."""
    lines = chunk_lines(content, location)
    pairs = split_chat_lines(content)
    if (
        lines is None
        or len(lines) != len(pairs)
        or any(
            speaker != line.speaker or said.strip() != line.text
            for (speaker, said), line in zip(pairs, lines, strict=True)
        )
    ):
        return lexical_text(tokenize_for_search(chunk_lexical_text(content))), unit_lexical_of(content, location)
    per_line = [tokenize_for_search(line_lexical_source(line)) for line in lines]
    return lexical_text(chain.from_iterable(per_line)), tuple(lexical_text(tokens) for tokens in per_line)


_SAFE_TOKEN_CHARS = MAX_TOKEN_BYTES // 4
_SAFE_TOTAL_CHARS = MAX_DISTINCT_BYTES // 4


def _joined(tokens: list[str]) -> str:
    """:func:`~omoide.text.lexical_text` of ``tokens``, without its per-token work when no
    bound can apply (a UTF-8 character is at most 4 bytes): then it only joins them."""
    if tokens and (max(map(len, tokens)) > _SAFE_TOKEN_CHARS or sum(map(len, tokens)) > _SAFE_TOTAL_CHARS):
        return lexical_text(tokens)
    return " ".join(filter(None, tokens))


def _line_lexicals(lines: Sequence[str]) -> list[list[str]] | None:
    """Each line's search tokens, read off the line itself — what :func:`_lexicals` finds from
    the chunk's line records (the same header, speaker and text), without parsing the chunk
    again; ``None`` when a line is not one this module writes (no header, no text), and then
    :func:`_lexicals` decides. The lines' own continuation lines are indented, so no header
    hides inside one: the two readings :func:`_lexicals` compares always agree here."""
    out: list[list[str]] = []
    for line in lines:
        head = HEADER.match(line)
        if head is None:
            return None
        said = line[head.end() :].strip()
        if not said:
            return None
        out.append(tokenize_for_search(f"{speaker_of(head.group('label')) or ''}\n{said}"))
    return out


_PART = re.compile(r"^\[[^\]]*\] \*\*.*?\*\* \((\d+)/(\d+)\): ")


def window_chunks(window: MessageWindow, *, max_tokens: int) -> list[ChunkDraft]:
    """The chunks of one message window, none longer than ``max_tokens`` (``chunk_max_tokens``).

    A window that fits is one chunk (:func:`window_chunk`). Otherwise its lines are packed,
    in order, into as few chunks as fit, and a message too long for a chunk on its own is
    cut at token boundaries by the archiver's splitter
    (:func:`omoide.knowledge.chunking.split_text`) into parts headed
    ``[time] **name** (2/5):``, each recording ``part`` / ``parts`` in its ``location``.
    """
    counter = get_token_counter()
    if window.rendered_tokens:
        lines, costs = list(window.rendered), list(window.rendered_tokens)
        tokens = joined_tokens(lines, costs)
    else:
        lines = [chunk_line(m) for m in window.messages]
        tokens = counter.count("\n".join(lines))
    if tokens <= max_tokens:
        return [window_chunk(window)]
    costs = costs if window.rendered_tokens else [counter.count(line) for line in lines]
    units: list[tuple[ImportedMessage, str, int]] = []
    for message, line, cost in zip(window.messages, lines, costs, strict=True):
        if cost <= max_tokens:
            units.append((message, line, cost))
            continue
        body = message.text.replace("\r\n", "\n").replace("\n", "\n  ")
        pieces = split_text(body, budget=max_tokens - counter.count(_header(message, 99, 99)))
        for part, piece in enumerate(pieces, start=1):
            text = _header(message, part, len(pieces)) + piece
            units.append((message, text, counter.count(text)))
    drafts: list[ChunkDraft] = []
    group: list[tuple[ImportedMessage, str, int]] = []
    used = 0
    for unit in units:
        cost = unit[2] + (1 if group else 0)
        if group and used + cost > max_tokens:
            drafts.extend(_fitting(window, group, max_tokens))
            group, used, cost = [], 0, unit[2]
        group.append(unit)
        used += cost
    if group:
        drafts.extend(_fitting(window, group, max_tokens))
    return drafts


def _fitting(window: MessageWindow, group: list[tuple[ImportedMessage, str, int]], max_tokens: int) -> list[ChunkDraft]:
    """``group`` as one chunk, or halved until each part fits (joined lines can count a token more)."""
    tokens = group[0][2] if len(group) == 1 else joined_tokens([line for _, line, _ in group], [c for _, _, c in group])
    if tokens <= max_tokens or len(group) == 1:
        return [_piece_chunk(window, group, tokens)]
    half = len(group) // 2
    return _fitting(window, group[:half], max_tokens) + _fitting(window, group[half:], max_tokens)


def joined_tokens(lines: Sequence[str], costs: Sequence[int]) -> int:
    """``count("\\n".join(lines))`` from each line's own count ``costs`` (issue 17: counting every
    window's whole text again was the largest single cost of building an import's chunks).

    Exact, not an estimate. cl100k cuts text into pieces with a regular expression and encodes
    each piece on its own, and the piece that a newline joins depends only on how the line before
    it ends (the next line starts a piece of its own):

    * a line ending in a letter or digit (``\\p{L}`` / ``\\p{N}``): its last piece stops there
      and the newline is a piece of its own, one token;
    * a line ending in a run of punctuation, symbols or marks (with at most one space before
      it): the newline joins that run's piece (``!`` is one token, ``!\\n`` too): the line's
      count changes by ``count(run + "\\n") - count(run)`` (:func:`_newline_after`);
    * anything else (a line ending in whitespace or a control character, a line starting with
      whitespace): the joined text is counted, as before.

    ``tests/importers/test_fast_ingest.py`` compares it with the whole count on LoCoMo, Japanese
    and edge texts.
    """
    extra = len(lines) - 1
    for line, after in pairwise(lines):
        tail = _tail_piece(line) if after[:1] and not after[0].isspace() else None
        if tail is None:
            return get_token_counter().count("\n".join(lines))
        if tail:
            extra += _newline_after(tail) - 1
    return sum(costs) + extra


def _tail_piece(line: str) -> str | None:
    """The last cl100k piece of ``line`` when a newline after it would join it (a run of
    punctuation, symbols or marks, with the one space before it); ``""`` when the line ends in
    a letter or digit (the newline stays a piece of its own); ``None`` when neither is sure."""
    start = end = len(line)
    kind = _OTHER
    while start:
        char = line[start - 1]
        kind = _KINDS.get(char, -1)
        if kind < 0:
            kind = _kind(char)
        if kind != _PUNCT:
            break
        start -= 1
    if start == end:  # no run: a letter or digit ends the line, or something unsure
        return "" if end and kind == _ALNUM else None
    if start == 0 or kind == _ALNUM:
        return line[start:]
    return line[start - 1 :] if line[start - 1] == " " else None


_ALNUM, _PUNCT, _OTHER = 0, 1, 2
_KINDS: dict[str, int] = {}


def _kind(char: str) -> int:
    """What cl100k's pattern sees in ``char``: a letter or digit (``\\p{L}``, ``\\p{N}``), one of
    the run ``[^\\s\\p{L}\\p{N}]`` surely (punctuation, symbol, mark), or something else
    (whitespace, controls, unassigned: never derived). Remembered per character."""
    group = unicodedata.category(char)[0]
    found = _ALNUM if group in "LN" else _PUNCT if group in "PSM" else _OTHER
    if len(_KINDS) < 65_536:
        _KINDS[char] = found
    return found


@lru_cache(maxsize=4096)
def _newline_after(tail: str) -> int:
    """Tokens of ``tail + "\\n"`` beyond ``tail``'s own (1 when the newline stays a token of its own)."""
    counter = get_token_counter()
    return counter.count(tail + "\n") - counter.count(tail)


def drafts_of(windows: Sequence[MessageWindow], max_tokens: int) -> list[ChunkDraft]:
    """The chunks of ``windows``, in order (:func:`window_chunks` of each)."""
    return [draft for w in windows for draft in window_chunks(w, max_tokens=max_tokens)]


__all__ = ["chunk_line", "drafts_of", "joined_tokens", "window_chunk", "window_chunks"]
