"""A rule-based sentence splitter for Japanese, English and chat text mixing both.

Rules, applied line by line (a line break always ends a sentence: chat messages
use them as sentence breaks):

* Full-width terminators ``。 ！ ？ ．`` end a sentence wherever they stand, together
  with any closing brackets or quotes after them (``」 』 ） "``) — except inside an
  open ``「…」``/``『…』``/``（…）``, or when a closing bracket is followed by hiragana
  (``「行こう。」と言った`` is one sentence).
* ASCII ``! ?`` end a sentence when followed by a space, a Japanese character or the end.
* ``.`` and ``…`` end a sentence when followed by a space, a Japanese character or the
  end, unless the word before is a known abbreviation (``Mr.``, ``e.g.``) or a single
  capital letter (an initial), or the next word starts with a lower-case letter.

Sentences are returned stripped, in order, with their original characters.
"""

from __future__ import annotations

import re

from omoide.text._normalize import HAS_JA

_BOUNDARY = re.compile(r"([。｡！？．]+[!?！？]*|[!?]+|\.{1,3}|…+)([」』）)\]】\"'”’]*)")
_OPENERS = "「『（"
_CLOSERS = "」』）"
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "etc", "e.g", "i.e", "eg", "ie",
        "no", "vol", "fig", "approx", "inc", "ltd", "co", "jan", "feb", "mar", "apr", "jun",
        "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mt", "ave", "dept", "est", "u.s",
    }
)  # fmt: skip
_LAST_WORD = re.compile(r"([\w.]+)$")


def _is_abbreviation(before: str) -> bool:
    m = _LAST_WORD.search(before)
    if m is None:
        return False
    word = m.group(1)
    if len(word) == 1 and word.isupper():
        return True  # an initial: "J. K. Rowling"
    return word.lower().rstrip(".") in _ABBREVIATIONS


def _ends_sentence(line: str, start: int, m: re.Match[str]) -> bool:
    term, close = m.group(1), m.group(2)
    after = line[m.end() :]
    nxt = after[:1]
    segment = line[start : m.end()]
    depth = sum(segment.count(c) for c in _OPENERS) - sum(segment.count(c) for c in _CLOSERS)
    if depth > 0:
        return False
    if any(c in _CLOSERS for c in close) and nxt and "\u3041" <= nxt <= "\u309f":
        return False
    if term[0] in "。｡！？．":
        return True
    at_gap = not nxt or nxt.isspace() or bool(HAS_JA.match(nxt))
    if term[0] in "!?":
        return at_gap
    if not at_gap:
        return False  # "3.5", "example.com"
    following = after.lstrip()[:1]
    if following.islower():
        return False  # "e.g. this", "approx. ten"
    return not (term == "." and _is_abbreviation(line[start : m.start()]))


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (Japanese, English or mixed).

    >>> split_sentences("今日は晴れ。明日は雨？ Dr. Smith arrived at 3.30 p.m. today! OK")
    ['今日は晴れ。', '明日は雨？', 'Dr. Smith arrived at 3.30 p.m. today!', 'OK']
    """
    out: list[str] = []
    for line in text.splitlines():
        start = 0
        for m in _BOUNDARY.finditer(line):
            if m.start() < start:
                continue
            if _ends_sentence(line, start, m):
                piece = line[start : m.end()].strip()
                if piece:
                    out.append(piece)
                start = m.end()
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


__all__ = ["split_sentences"]
