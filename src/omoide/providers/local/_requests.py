"""Explicit memory requests the offline extractive model acts on with the memory tools.

Without an LLM nothing understands "please remember …", so the extractive model reads the
plain forms itself (Japanese and English) when the memory tools are offered:

* **remember**: 「犬の名前はポチだと覚えて」, 「…って覚えておいて」, 「…を記憶して」,
  「覚えておいて: …」; "remember that …", "please remember …", "don't forget (that) …",
  "can you remember that …?", "keep in mind that …". The fact is what is left.
* **forget**: 「犬の名前を忘れて」, 「…のことは忘れてください」; "forget that …",
  "please forget about …".

A question *about* remembering is neither: "Do you remember my dog's name?",
「ポチのこと覚えてる？」, 「覚えていますか？」.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

RequestKind = Literal["remember", "forget"]

_END = r"[\s。．.！!♪〜~ー]*$"
_JA_POLITE = r"(?:ください|下さい|くれる|くれない|ね|よ|な|ほしい|欲しい|もらえる|もらえますか)?"
_JA_REMEMBER_AFTER = re.compile(
    r"^(?P<fact>.+?)\s*(?:ということ|ってこと|ってことを|ということを|と|って|こと|ことを|を)?\s*"
    r"(?:覚えて(?:おいて|おいてね|おいてください|おいてほしい|おいて欲しい|て)?|覚えといて|おぼえて(?:おいて)?|"
    r"記憶して(?:おいて)?|メモして(?:おいて)?)" + _JA_POLITE + _END
)
_JA_REMEMBER_BEFORE = re.compile(
    r"^(?:これを|次のことを|以下を)?\s*(?:覚えて(?:おいて)?|覚えといて|記憶して(?:おいて)?|メモして(?:おいて)?)"
    + _JA_POLITE
    + r"\s*[、,：:。]\s*(?P<fact>.+?)"
    + _END
)
_JA_FORGET = re.compile(
    r"^(?P<fact>.+?)\s*(?:ということ|ってこと|のことは|のことを|のこと|ことは|ことを|って|とは|は|を)?\s*"
    r"(?:忘れて|わすれて|記憶から消して|削除して)(?:おいて|いい|ください|下さい|ね|ほしい|欲しい)*" + _END
)
_EN_REMEMBER = re.compile(
    r"^(?:(?:ok(?:ay)?|hey|so|and|also|oh)[,!]?\s+)?(?:please\s+)?"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?remember|i\s+want\s+you\s+to\s+remember|"
    r"remember|don'?t\s+forget|do\s+not\s+forget|never\s+forget|keep\s+in\s+mind|note)"
    r"(?:\s*,?\s*please)?(?:\s+that|\s*[:：,])?\s+(?P<fact>.+?)[\s.!?]*$",
    re.IGNORECASE,
)
_EN_FORGET = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|also|oh)[,!]?\s+)?(?:please\s+)?(?:(?:can|could|would)\s+you\s+(?:please\s+)?)?"
    r"forget(?:\s+that|\s+about|\s+what\s+i\s+said\s+about)?\s+(?P<fact>.+?)[\s.!?]*$",
    re.IGNORECASE,
)
_EN_RECOLLECTION = re.compile(r"^(?:please\s+)?remember\s+(?:when|how|what|who|where|why|the\s+time)\b", re.I)
""""Remember when we went to Kyoto" recalls a shared memory; it asks nothing to be kept."""
_EN_ASKING = re.compile(
    r"^(?:do|did|don'?t|does|can|could|would)\s+you\s+(?:still\s+)?(?:remember|recall|know)\b(?!\s+that\b)", re.I
)
_POLITE_REQUEST = re.compile(r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:remember|forget))\b", re.I)
_FACT_TRAILING = re.compile(r"(?:だ|だよ|だから|なので|です|ですよ)$")


@dataclass(frozen=True, slots=True)
class MemoryRequest:
    """An explicit request: what to do and the fact it is about."""

    kind: RequestKind
    fact: str


def _clean(fact: str) -> str:
    fact = fact.strip().strip("「」『』\"“”'‘’ 　").strip()
    fact = re.sub(r"[\s、,。.！!]+$", "", fact)
    return _FACT_TRAILING.sub("", fact).strip() if not fact.isascii() else fact


def read_request(text: str) -> MemoryRequest | None:
    """The explicit remember/forget request in ``text`` (one message), or ``None``.

    >>> read_request("犬の名前はポチだと覚えて")
    MemoryRequest(kind='remember', fact='犬の名前はポチ')
    >>> read_request("Remember that my dog is called Pochi.")
    MemoryRequest(kind='remember', fact='my dog is called Pochi')
    >>> read_request("Do you remember my dog's name?") is None
    True
    """
    line = " ".join(text.split())
    if not line or len(line) > 500:
        return None
    question = line.rstrip("\"'”」』） )").endswith(("?", "？"))
    if line.isascii() or not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", line):
        if _EN_ASKING.match(line) or _EN_RECOLLECTION.match(line) or (question and not _POLITE_REQUEST.match(line)):
            return None
        if re.match(r"^(?:please\s+)?(?:don'?t|do\s+not|never)\s+forget\b", line, re.I):
            m = _EN_REMEMBER.match(line)
            return MemoryRequest("remember", _clean(m.group("fact"))) if m else None
        for kind, pattern in (("forget", _EN_FORGET), ("remember", _EN_REMEMBER)):
            m = pattern.match(line)
            if m and _clean(m.group("fact")):
                return MemoryRequest(kind, _clean(m.group("fact")))  # type: ignore[arg-type]
        return None
    if question or re.search(r"覚えて(?:る|い(?:る|ます)|ます)[かの]?", line):
        return None  # 「覚えてる？」「覚えていますか」: asking, not telling
    for kind, pattern in (
        ("remember", _JA_REMEMBER_BEFORE),
        ("remember", _JA_REMEMBER_AFTER),
        ("forget", _JA_FORGET),
    ):
        m = pattern.match(line)
        if m and _clean(m.group("fact")):
            return MemoryRequest(kind, _clean(m.group("fact")))  # type: ignore[arg-type]
    return None


__all__ = ["MemoryRequest", "read_request"]
