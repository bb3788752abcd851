"""Retrieval units: the messages (lines) of a chunk, each ranked on its own at search time.

A chunk of chat holds several messages; the evidence a question needs is often one or two of
them. So each chunk also carries its **units**, one per line record (``location["lines"]``,
one per message or part of a long message):

* ``knowledge_chunks.unit_lexical``: the search tokens of each line (``speaker`` and text,
  as :func:`~omoide.text.chat_lines.chunk_lexical_text` gives them), one space-joined
  string per line — written with the chunk, rewritten with it by an erasure and by
  ``omoide reindex --lexical``; ``NULL`` for a chunk written before units existed (or one
  without line records: an imported document), until ``omoide reindex --units``.
* ``chunk_embeddings.unit_vectors``: one vector per line from the chunk's embedding model,
  stored with the chunk's own vector (the same row, the same content hash): a ``(lines,
  dimensions)`` matrix, int8 with a scale per line (:mod:`omoide.stores.unit_codec`); ``NULL``
  until embedded.
* ``chunk_embeddings.reader_vectors``: one vector per line from the line reader, a second,
  fixed sentence encoder (:data:`READER_DIMENSIONS` wide whatever the row's model), stored in
  the same row and the same form (:func:`encode_reader_vectors`); ``NULL`` until read.

Search ranks chunks first (lexical and vector lists over chunks, fused), then scores the
units of the best chunks (:mod:`omoide.search.units`), so a hit can be one message.

This module holds the pure functions both ends share: the lines of a stored chunk, their
tokens and the text each unit's vector is computed from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.stores._erasure_common import LineSpan, line_spans
from omoide.stores.unit_codec import decode_matrix, encode_matrix
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import HEADER, speaker_of

UNIT_CONTEXT = 1
"""Neighbouring lines on each side embedded with a unit (its vector reads the exchange)."""

READER_DIMENSIONS = 512
"""Dimensions of the line reader's vectors (``chunk_embeddings.reader_vectors``)."""

HALF_DTYPE = np.dtype("<f2")
"""How float16 matrices were stored before the int8 form (PostgreSQL's unit vectors, both
backends' reader vectors): such rows are still read."""

_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\]")
_HEADER_AT = re.compile(HEADER.pattern.removeprefix("^"))  # HEADER, matched at a given position


class ChunkLine(NamedTuple):
    """One line (message, or part of one) of a stored chunk (a named tuple: search builds
    ~300 per query).

    Attributes:
        position: its place among the chunk's lines (0-based).
        message_id: the stored message it came from (a session message id, or the
            platform id of an imported message), when known.
        author_id: its author's id, when known.
        speaker: the author's display name from the line's header (``None``: a bare role).
        text: what was said, without the header.
        stamp: the time in the line's header, ``YYYY-MM-DD HH:MM`` (UTC), when it has one
            (:attr:`at` parses it).
        raw: the line as stored in the chunk (header included).
    """

    position: int
    message_id: Any
    author_id: str | None
    speaker: str | None
    text: str
    stamp: str | None
    raw: str

    @property
    def at(self) -> datetime | None:
        """The header's time as an aware UTC datetime (minute precision), or ``None``."""
        return _parse_stamp(self.stamp)


def chunk_lines(content: str, location: Mapping[str, Any]) -> list[ChunkLine] | None:
    """The lines of a chunk from its line records, or ``None`` when it has none.

    >>> c = "[2026-01-19 10:00] **Alice (User)**: 天気は？\\n[2026-01-19 10:01] **Bob (User)**: 晴れ"
    >>> [(x.speaker, x.text) for x in chunk_lines(c, {"lines": [[0, 41, "a", 1], [42, 79, "b", 2]]})]
    [('Alice', '天気は？'), ('Bob', '晴れ')]
    """
    spans = line_spans(location, content)
    if spans is None:
        return None
    return [chunk_line(content, i, span) for i, span in enumerate(spans)]


def chunk_line(content: str, position: int, span: LineSpan) -> ChunkLine:
    """The line of ``content`` that ``span`` (its line record number ``position``) covers."""
    raw = content[span.start : span.end]
    head = HEADER.match(raw)
    if head:
        speaker = speaker_of(head.group("label"))
        text = raw[head.end() :].strip()
        stamp: str | None = raw[1:17]  # the header starts with [YYYY-MM-DD HH:MM]
    else:
        speaker = None
        text = raw.strip()
        found = _STAMP.match(raw)
        stamp = found.group(1) if found else None
    return ChunkLine(position, span.message_id, span.author_id, speaker, text, stamp, raw)


def line_speaker(content: str, span: LineSpan) -> tuple[str | None, int]:
    """The speaker named in the header of the line ``span`` covers (``None``: no header, or a
    bare role) and where the line's text starts, without copying the line: the unit scorer
    reads ~300 lines per search and builds :class:`ChunkLine` for the few it returns."""
    head = _HEADER_AT.match(content, span.start, span.end)
    if head is None:
        return None, span.start
    return speaker_of(head.group("label")), head.end()


def _parse_stamp(t: str | None) -> datetime | None:
    """``YYYY-MM-DD HH:MM`` as UTC (sliced, not strptime: every search reads ~300 lines)."""
    if t is None:
        return None
    try:
        return datetime(int(t[0:4]), int(t[5:7]), int(t[8:10]), int(t[11:13]), int(t[14:16]), tzinfo=UTC)
    except ValueError:
        return None


def line_lexical_source(line: ChunkLine) -> str:
    """The text a unit's search tokens come from: its speaker and what was said."""
    return f"{line.speaker or ''}\n{line.text}"


def line_embedding_source(line: ChunkLine) -> str:
    """One line as the embedder reads it: ``speaker: text`` (as ``chunk_embedding_text``)."""
    return f"{line.speaker}: {line.text}" if line.speaker else line.text


def unit_embedding_texts(lines: Sequence[ChunkLine], *, context: int = UNIT_CONTEXT) -> list[str]:
    """The text each unit's vector is computed from: the line with ``context`` neighbours on
    each side (within the chunk), one ``speaker: text`` line each.

    >>> ls = [ChunkLine(i, i, None, s, t, None, "") for i, (s, t) in enumerate([("A", "hi"), ("B", "yo"), ("A", "ok")])]
    >>> unit_embedding_texts(ls)
    ['A: hi\\nB: yo', 'A: hi\\nB: yo\\nA: ok', 'B: yo\\nA: ok']
    """
    rendered = [line_embedding_source(x) for x in lines]
    return ["\n".join(rendered[max(0, i - context) : i + context + 1]) for i in range(len(rendered))]


def unit_lexical_of(content: str, location: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The search tokens of each line of a chunk (space-joined, the current tokenizer), or
    ``None`` when the chunk has no line records: what ``knowledge_chunks.unit_lexical`` holds."""
    lines = chunk_lines(content, location)
    if lines is None:
        return None
    return tuple(lexical_text(tokenize_for_search(line_lexical_source(x))) for x in lines)


def check_unit_lexical(value: object, *, what: str = "unit_lexical") -> tuple[str, ...] | None:
    """``None`` or a tuple of strings without NUL (one per line).

    Raises:
        InvalidInput: anything else.
    """
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"{what} must be a sequence of strings (one per line) or None, got {type(value).__name__}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or "\x00" in item:
            raise InvalidInput(f"{what} must hold strings without NUL, got {item!r}")
        out.append(item)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ChunkUnits:
    """What search reads of one chunk's units (``SearchStore.fetch_units``).

    Attributes:
        lexical: the search tokens of each line (``None``: not built yet).
        vectors: the unit vectors of the model asked for, ``(lines, dimensions)`` float32
            (``None``: not embedded yet).
        reader: the line reader's vectors of each line, ``(lines, READER_DIMENSIONS)`` float32,
            stored with the ``vectors`` of the model asked for (``None``: not computed yet, or
            no model asked).
    """

    lexical: tuple[str, ...] | None
    vectors: npt.NDArray[np.float32] | None
    reader: npt.NDArray[np.float32] | None = None


def encode_reader_vectors(matrix: npt.NDArray[np.float32] | None, *, multiple: int = 1) -> bytes | None:
    """``chunk_embeddings.reader_vectors`` as stored on either backend: int8 with a scale per line
    (:mod:`omoide.stores.unit_codec`), padded to ``multiple`` bytes."""
    return encode_matrix(matrix, multiple=multiple)


def decode_reader_vectors(data: bytes | None) -> npt.NDArray[np.float32] | None:
    """Stored ``reader_vectors`` as a float32 ``(lines, READER_DIMENSIONS)`` matrix, or ``None``
    (rows written before the int8 form: float16)."""
    return decode_matrix(data, READER_DIMENSIONS, legacy=HALF_DTYPE)


@dataclass(frozen=True, slots=True)
class UnitLexicalRow:
    """Units built for a chunk written before they existed (``omoide reindex --units``):
    written only while the chunk's content is still ``content``."""

    chunk_id: int  # a ChunkId
    content: str
    unit_lexical: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CompactedPage:
    """One page of :meth:`~omoide.stores.knowledge.KnowledgeStore.compact_line_vectors`.

    Attributes:
        after_id: the ``after_id`` of the next page (``None``: nothing in an older form is left
            after the page's start).
        rewritten: stored vectors whose line vectors were rewritten in the int8 form.
        last_chunk_id: the highest chunk id with a stored vector (0: none), for progress.
    """

    after_id: int | None
    rewritten: int
    last_chunk_id: int


__all__ = [
    "HALF_DTYPE",
    "READER_DIMENSIONS",
    "UNIT_CONTEXT",
    "ChunkLine",
    "ChunkUnits",
    "CompactedPage",
    "UnitLexicalRow",
    "check_unit_lexical",
    "chunk_line",
    "chunk_lines",
    "decode_reader_vectors",
    "encode_reader_vectors",
    "line_embedding_source",
    "line_lexical_source",
    "line_speaker",
    "unit_embedding_texts",
    "unit_lexical_of",
]
