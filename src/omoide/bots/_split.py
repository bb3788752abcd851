"""Split a long reply into messages a chat platform accepts (Discord: 2,000 characters).

:func:`split_message` packs whole lines into each piece. Where one line is too long it
breaks between sentences (``。！？`` or ``.!?`` before a space), then between words,
and only as a last resort inside a word — so a URL is never cut unless it alone is
longer than the limit. A fenced code block (```` ``` ````) stays in one piece when it
fits; a longer one is split between its lines and each piece is closed and reopened
with the same fence (and language), so every piece renders as code.

Lengths are counted in UTF-16 code units, as Discord and Slack count them (an emoji
outside the Basic Multilingual Plane counts twice).
"""

from __future__ import annotations

import re
from collections.abc import Callable

DISCORD_LIMIT = 2000
"""Characters in one Discord message."""

_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])(?=\s)")
_WORD_END = re.compile(r"(?<=\s)")
_FENCE = re.compile(r"^\s*(```+|~~~+)")
_OPENING = re.compile(r"^\s*(```+|~~~+)[\w+#.-]*\s*$")


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (what Discord's limit counts)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def _hard_cut(text: str, limit: int, length: Callable[[str], int]) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    size = 0
    for char in text:
        width = length(char)
        if current and size + width > limit:
            out.append("".join(current))
            current, size = [], 0
        current.append(char)
        size += width
    if current:
        out.append("".join(current))
    return out


def _pack(atoms: list[str], limit: int, length: Callable[[str], int], joiner: str = "") -> list[str]:
    """Greedily join atoms (each at most ``limit`` long) into pieces at most ``limit`` long."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    glue = length(joiner)
    for atom in atoms:
        width = length(atom)
        if current and size + glue + width > limit:
            out.append(joiner.join(current))
            current, size = [], 0
        size += width if not current else glue + width
        current.append(atom)
    if current:
        out.append(joiner.join(current))
    return out


def _split_line(line: str, limit: int, length: Callable[[str], int]) -> list[str]:
    """One over-long line: between sentences, then words, then characters."""
    atoms: list[str] = []
    for sentence in (s for s in _SENTENCE_END.split(line) if s):
        if length(sentence) <= limit:
            atoms.append(sentence)
            continue
        for word in (w for w in _WORD_END.split(sentence) if w):
            atoms.extend([word] if length(word) <= limit else _hard_cut(word, limit, length))
    return [p.strip() for p in _pack(atoms, limit, length) if p.strip()]


def _units(text: str) -> list[list[str]]:
    """Lines, with each fenced code block as one unit (its lines, fences included)."""
    units: list[list[str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            units.append([lines[i]])
            i += 1
            continue
        fence = match.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)), None)
        if end is None:  # an unclosed fence: the rest is code
            units.append(lines[i:])
            break
        units.append(lines[i : end + 1])
        i = end + 1
    return units


def _split_code(block: list[str], limit: int, length: Callable[[str], int]) -> list[str]:
    """A fenced block too long for one piece: split between its lines, each piece fenced again."""
    first = _OPENING.match(block[0])
    fence = _FENCE.match(block[0])
    closing = fence.group(1) if fence else "```"
    if first is not None:  # "```lang": reopen each piece with the same language
        opening, body = block[0].strip(), block[1:]
    else:  # text after the fence on its line is content, not a language
        opening, body = closing, [block[0].strip()[len(closing) :], *block[1:]]
    if len(block) > 1 and body and body[-1].strip() == closing:
        body = body[:-1]
    elif len(block) > 1 and body and body[-1].strip().startswith(closing):
        body[-1] = body[-1].strip()[len(closing) :]  # "```text": keep the text
    room = limit - length(opening) - length(closing) - 2
    if room < 1:  # a limit too small for fences: plain lines
        return [p for line in block for p in _split_line(line, limit, length)]
    lines: list[str] = []
    for line in body:
        lines.extend([line] if length(line) <= room else _hard_cut(line, room, length))
    return [f"{opening}\n{piece}\n{closing}" for piece in _pack(lines, room, length, "\n")]


def split_message(text: str, limit: int = DISCORD_LIMIT, *, length: Callable[[str], int] = utf16_length) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` (see the module docstring); no empty pieces.

    Args:
        text: the reply.
        limit: the platform's limit per message (Discord 2,000; Slack's text limit is larger).
        length: how the platform counts (default: UTF-16 code units).

    Raises:
        ValueError: ``limit`` is less than 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    text = text.strip("\n")
    if length(text) <= limit:
        return [text] if text.strip() else []
    pieces: list[str] = []
    for unit in _units(text):
        joined = "\n".join(unit)
        if length(joined) <= limit:
            pieces.append(joined)
        elif len(unit) > 1 or _FENCE.match(unit[0]):
            pieces.extend(_split_code(unit, limit, length))
        else:
            pieces.extend(_split_line(joined, limit, length))
    packed = _pack(pieces, limit, length, "\n")
    return [p.strip("\n") for p in packed if p.strip()]


__all__ = ["DISCORD_LIMIT", "split_message", "utf16_length"]
