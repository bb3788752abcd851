"""The lines of a knowledge chunk: ``[2026-01-19 10:00] **Alice (User)**: text``.

Archived sessions and imported exports write chunks as one line per message (continuation
lines indented), headed by the time and the author in bold (``omoide.knowledge.chunking``,
``omoide.knowledge.importing``). :func:`split_chat_lines` gives back ``(speaker, text)``
pairs, so code that reads chunks — the lexical index rebuild, the extractive model's
quotes — works on what was said, not on the formatting.
"""

from __future__ import annotations

import re

HEADER = re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] \*\*(?P<label>.*?)\*\*(?: \(\d+/\d+\))?: ?", re.MULTILINE)
"""A chunk line's header: time, bold author label (with its role), part number of a long message."""

_BARE_ROLES = {"User", "Assistant"}
_ROLE_SUFFIXES = ("(User)", "(Assistant)")


def speaker_of(label: str) -> str | None:
    """The author's name in a header label (``Alice (User)`` → ``Alice``), ``None`` for a bare role."""
    if label in _BARE_ROLES:
        return None
    for suffix in _ROLE_SUFFIXES:  # a trailing role label; no regex: every search reads ~300
        if label.endswith(suffix):
            label = label[: -len(suffix)]
            break
    return label.strip() or None


def split_chat_lines(text: str) -> list[tuple[str | None, str]]:
    """``(speaker, text)`` per message of a chunk; text without a header is one ``(None, text)``.

    >>> split_chat_lines("[2026-01-19 10:00] **Alice (User)**: 天気は？\\n  続き\\n[2026-01-19 10:01] **Assistant**: 晴れ")
    [('Alice', '天気は？\\n  続き'), (None, '晴れ')]
    """
    heads = list(HEADER.finditer(text))
    if not heads:
        return [(None, text)] if text.strip() else []
    out: list[tuple[str | None, str]] = []
    before = text[: heads[0].start()].strip()
    if before:
        out.append((None, before))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end() : end].rstrip()
        if body.strip():
            out.append((speaker_of(head.group("label")), body))
    return out


def chunk_lexical_text(content: str) -> str:
    """The text of a chunk that its lexical tokens come from: author names and message
    text, without times and role labels.

    >>> chunk_lexical_text("[2026-01-19 10:00] **Alice (User)**: 今日の天気は？\\n[2026-01-19 10:01] **Assistant**: 晴れ")
    'Alice\\n今日の天気は？\\n\\n晴れ'
    """

    return "\n".join(f"{speaker or ''}\n{said}" for speaker, said in split_chat_lines(content))


def chunk_embedding_text(content: str) -> str:
    """The text of a chunk that its vector is computed from: one ``speaker: text`` line per
    message, without the times and the bold role labels (their digits and markup take a
    large share of a short chunk's tokens and tell a sentence model nothing).

    >>> chunk_embedding_text("[2026-01-19 10:00] **Alice (User)**: 今日の天気は？\n[2026-01-19 10:01] **Assistant**: 晴れ")
    'Alice: 今日の天気は？\n晴れ'
    """
    return "\n".join(f"{speaker}: {said}" if speaker else said for speaker, said in split_chat_lines(content))


__all__ = ["HEADER", "chunk_embedding_text", "chunk_lexical_text", "speaker_of", "split_chat_lines"]
