"""The English and Japanese words and patterns the extractive model reads text with.

Which tokens carry content (:func:`content_tokens`, :func:`substance`), which sentences ask
(:func:`is_question`, :func:`asks`), and what an answer to each kind of question tends to
contain (:func:`answer_cues`).
"""

from __future__ import annotations

import re

from omoide.providers.local.hashing import ENGLISH_STOPWORDS
from omoide.text import tokenize_for_search
from omoide.text._normalize import HIRAGANA_ONLY
from omoide.text.tokenize import is_synonym_token


def matches(query_token: str, tokens: set[str]) -> bool:
    """Exact match, or a prefix match between Latin words of 4+ letters (``paint`` ~ ``painted``)."""
    if query_token in tokens:
        return True
    if len(query_token) < 4 or not query_token.isascii():
        return False
    return any(len(t) >= 4 and t.isascii() and (t.startswith(query_token) or query_token.startswith(t)) for t in tokens)


CHAT_FILLERS = frozenset(
    {
        "hey", "hi", "hello", "wow", "oh", "yeah", "yes", "yep", "ok", "okay", "thank", "thanks", "cool",
        "awesome", "nice", "lol", "haha", "really", "totally", "definitely", "sure", "glad", "well", "um",
        "hmm", "anyway", "bye", "amazing", "sound", "sounds", "love", "lot", "super", "pretty",
        "こんにちは", "こんばんは", "よろしく", "宜しく", "お願い", "御願い", "願う", "ありがとう", "有り難う",
        "はい", "うん", "そう", "良い", "いい", "凄い", "すごい", "本当", "ほんと", "確か", "分かる", "思う",
    }
)  # fmt: skip
"""Chat words that carry no content; a summary sentence needs content beyond them."""


_CLOSERS = " \t\"'”’」』）)】]"


def is_question(text: str) -> bool:
    return text.rstrip(_CLOSERS).endswith(("?", "？"))


_TIME_CUES = (
    r"\d{1,2}\s*[:：]\s*\d{2}|\d{1,2}/\d{1,2}|\d{4}-\d{2}-\d{2}|\d+\s*(?:月|日|時|年)|[月火水木金土日]曜"
    r"|[(（][月火水木金土日][)）]|今日|明日|昨日|明後日|今週|来週|先週|今月|来月|先月|今年|来年|午前|午後|夕方|朝|夜"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:today|tomorrow|yesterday|tonight|noon|midnight)\b"
    r"|\b(?:next|last|this) (?:week|month|year)\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)"
    r"|\b(?:january|february|march|april|june|july|august|september|october|november|december)\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)\.? \d{1,2}\b|\b(?:in|on|at|by|until) \d"
)
_QUESTION_TYPES: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    # (type, what in the question asks for it, what in a sentence answers it)
    (
        "amount",
        re.compile(
            r"いくら|何円|何人|何名|何個|何件|何回|いくつ|どのくらい|どれくらい|どれぐらい|予算|費用|値段|料金|金額|人数"
            r"|\bhow (?:much|many|long|big|large|often)\b|\bcost\b|\bprice\b|\bbudget\b|\bfee\b",
            re.I,
        ),
        re.compile(
            r"\d[\d,.]*\s*(?:円|万|千|ドル|人|名|個|件|回|%|％|GB|MB|KB|ms|秒|分|時間|日間|週間|か月|ヶ月|年間)"
            r"|[¥$€£]\s?\d|\b\d[\d,.]*\s*(?:yen|dollars?|euros?|people|persons?|percent|times|minutes?|hours?|days?)\b",
            re.I,
        ),
    ),
    (
        "why",
        re.compile(r"なぜ|何故|なんで|どうして|原因|理由|\bwhy\b|\breasons?\b|\bcause[sd]?\b", re.I),
        re.compile(
            r"ので|ため|原因|理由|せい|おかげ|から[、。,！!]|からです|からだ|から$|だって"
            r"|\bbecause\b|\bdue to\b|\bcaused?\b|\breasons?\b|\bso that\b|\bas a result\b|\btherefore\b"
            r"|\bthat's why\b|\bsince\b|\bowing to\b",
            re.I,
        ),
    ),
    (
        "when",
        re.compile(
            r"いつ|何時|何日|何曜|何月|日時|日程|時間|時期|\bwhen\b|\bwhat (?:time|date|day)\b|\bwhich (?:day|date)\b",
            re.I,
        ),
        re.compile(_TIME_CUES, re.I),
    ),
    (
        "where",
        re.compile(r"どこ|何処|場所|会場|\bwhere\b|\bwhich (?:place|venue|room|city)\b|\bwhat (?:place|venue)\b", re.I),
        re.compile(
            r"会場|場所|駅|ビル|[0-9]+\s*(?:F|階)\b|店|区|市|県|リージョン|ホール|ルーム|スペース|オフィス|カフェ"
            r"|\bvenue\b|\broom\b|\bstation\b|\bbuilding\b|\bhall\b|\bcaf[eé]\b|\boffice\b|\bfloor\b"
            r"|\b(?:at|in) (?:the )?[A-Z][\w-]+",
        ),
    ),
    (
        "who",
        re.compile(r"誰|だれ|どなた|担当|\bwho(?:m|se)?\b", re.I),
        re.compile(
            r"担当|私が|僕が|俺が|わたしが|がやります|がやる|が作|が書|さんが|くんが|ちゃんが"
            r"|\bI(?:'ll| will| am|'m)\b|\bresponsible\b|\bown(?:s|er)?\b|\bin charge\b|\b(?:made|wrote|built) by\b",
        ),
    ),
    (
        "how",
        re.compile(r"どうやって|どのように|どうやり|どう(?:直|し|す|や|解決|対応)|方法|やり方|\bhow\b", re.I),
        re.compile(
            r"使って|使う|使い|導入|切り替え|置き換え|により|によって|ことで|方法|手順|で(?:直|解決|対応|修正|いき)"
            r"|\bby\b|\busing\b|\buse[sd]?\b|\bwith\b|\bswitch(?:ed)?\b|\breplac|\bvia\b|\binstead\b",
            re.I,
        ),
    ),
)
"""Question types, in order (the first that matches wins): the words that ask for one, and the
cues that a sentence answering it tends to carry (a cause, a time, a place, a person, an amount, a method)."""


def answer_cues(question: str) -> re.Pattern[str] | None:
    """The cues of an answer to ``question``'s type (``None``: a what/which question with no telling cue)."""
    for _name, asks, cues in _QUESTION_TYPES:
        if asks.search(question):
            return cues
    return None


QUESTION_WORDS = frozenset(
    {"whi", "why", "what", "when", "where", "who", "whom", "whose", "which", "how", "誰", "何", "何故", "何処", "如何"}
)
"""Search tokens of the words that ask (stemmed: "why" → "whi"): what a question shares with a
sentence through them is not content."""

LIGHT_VERBS = frozenset(
    {
        "為る",
        "居る",
        "出来る",
        "成る",
        "有る",
        "在る",
        "遣る",
        "致す",
        "下さる",
        "貰う",
        "呉れる",
        "置く",
        "仕舞う",
        "分かる",
    }
)
"""Japanese verbs that carry grammar more than content (する, いる, できる, なる, ある, …)."""


def content_tokens(text: str) -> list[str]:
    """The search tokens of ``text`` without stop words, question words, hiragana-only tokens and
    synonym-group tokens (a light verb's group would match every sentence that uses it)."""
    return [
        t
        for t in tokenize_for_search(text)
        if t not in ENGLISH_STOPWORDS
        and t not in QUESTION_WORDS
        and not HIRAGANA_ONLY.fullmatch(t)
        and not is_synonym_token(t)
    ]


def substance(text: str) -> set[str]:
    """The content words of ``text`` without chat fillers and light verbs."""
    return set(content_tokens(text)) - CHAT_FILLERS - LIGHT_VERBS


_ASKS_EN = re.compile(r"^(?:what|who|whom|whose|when|where|which|why|how)\b", re.IGNORECASE)
_ASKS_JA = re.compile(r"(?:何|なに|なん|誰|だれ|いつ|どこ|どれ|どの|なぜ|どうして|いくつ|いくら)")
_ASKS_JA_END = re.compile(r"(?:か|の|かな|っけ|は)[。\s]*$")


def asks(text: str) -> bool:
    """Whether a message asks something: a question mark, an English question word first, or
    a Japanese question word with a questioning ending (「犬の名前は何だっけ」)."""
    said = text.strip()
    if is_question(said) or _ASKS_EN.match(said):
        return True
    return bool(_ASKS_JA.search(said) and _ASKS_JA_END.search(said))


__all__ = [
    "CHAT_FILLERS",
    "LIGHT_VERBS",
    "QUESTION_WORDS",
    "answer_cues",
    "asks",
    "content_tokens",
    "is_question",
    "matches",
    "substance",
]
