"""Text normalisation and script classes shared by the tokeniser and the sentence splitter.

Everything lexical in omoide starts from :func:`normalize`: Unicode NFKC (full-width
``ＡＢＣ１２３`` → ``ABC123``, half-width ``ｶﾀｶﾅ`` → ``カタカナ``), then lower case.
Japanese text is then cut into *runs* of Japanese characters (kanji, hiragana,
katakana and the iteration marks) and everything else, so that a Japanese
analyser only ever sees Japanese and the word regex only ever sees the rest.
"""

from __future__ import annotations

import re
import unicodedata

# Kanji (CJK unified ideographs, extension A and the supplementary planes, compatibility
# ideographs), hiragana, katakana (without the middle dot ・ U+30FB, which is punctuation),
# katakana phonetic extensions and the marks 々 〆 〇.
JA_CHARS = (
    "\u3005-\u3007"
    "\u3041-\u309f"
    "\u30a1-\u30fa\u30fc-\u30ff"
    "\u31f0-\u31ff"
    "\u3400-\u4dbf"
    "\u4e00-\u9fff"
    "\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
HIRAGANA = "\u3041-\u309f"

JA_RUN = re.compile(f"[{JA_CHARS}]+")
"""A maximal run of Japanese characters."""

HIRAGANA_ONLY = re.compile(f"[{HIRAGANA}ー]+")
"""Matches a string made of hiragana only (use with ``fullmatch``)."""

HAS_KANA = re.compile("[\u3041-\u309f\u30a1-\u30fa]")
HAS_JA = re.compile(f"[{JA_CHARS}]")

# A word outside Japanese runs: letters and digits (not "_"), joined by inner dots or
# apostrophes so that "3.11", "e.g" and "don't" stay one token.
_WORD_CHAR = f"[^\\W_{JA_CHARS}]"
WORD = re.compile(f"{_WORD_CHAR}+(?:['.]{_WORD_CHAR}+)*")


def normalize(text: str) -> str:
    """NFKC-normalise and lower-case ``text``; typographic apostrophes become ``'``."""
    return unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")


def is_japanese(text: str) -> bool:
    """Whether ``text`` reads as Japanese: it has kana, or more kanji than Latin letters.

    Used to pick the language of generated labels; chat text mixing a few English
    words into Japanese still counts as Japanese.
    """
    if HAS_KANA.search(text):
        return True
    ja = len(JA_RUN.findall(text))
    if not ja:
        return False
    latin = len(re.findall(r"[A-Za-z]+", text))
    return ja >= latin


__all__ = ["HAS_JA", "HAS_KANA", "HIRAGANA_ONLY", "JA_CHARS", "JA_RUN", "WORD", "is_japanese", "normalize"]
