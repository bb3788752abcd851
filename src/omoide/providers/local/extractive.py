"""The offline "no LLM" chat model: answers by quoting evidence, summarises by extraction.

omoide's default :class:`~omoide.providers.base.ChatModel` when no LLM is configured.
It never invents text: every line of its output after the label is a sentence copied
from its input, with the evidence's citation marker (``stop_reason`` is ``end_turn``, or
``max_tokens`` when not even one sentence fits).

Memory tools: when ``remember`` / ``recall`` / ``delete_memory`` are offered, an explicit
request in the last user message — 「犬の名前はポチだと覚えて」, "Remember that my dog is
called Pochi", 「…を忘れて」, "Forget that …" (see ``_requests``) — becomes a tool call
(``stop_reason`` ``tool_use``) and, once the result is back, a short confirmation quoting the
fact. A question in a chat (no evidence blocks) first calls ``recall`` and is answered from
the remembered facts that share a word with it, else from the conversation as usual. No
other tool is ever called, and memory tool rounds are never quoted as conversation.

Input conventions (prompt builders rely on these):

* **Evidence blocks.** Anywhere in the system prompt or in the last user message
  (text blocks and tool results), a line starting with ``[#n]`` opens evidence block
  ``n``. The block runs to the next ``[#m]`` line or to the first blank line, so
  separate the evidence from the rest of the prompt with a blank line and do not put
  blank lines inside a block. A leading ``(…)``, ``（…）``, ``【…】`` or ``[…]`` of at
  most 80 characters is the block's metadata (date, speaker) and is shown with quotes::

      [#1] (2023-05-08 · Caroline) I went to the LGBTQ support group yesterday.
      [#2] (2023-05-09 · Melanie) 昨日は公園で絵を描いた。

* **Summarise or answer.** A request is a summarise request when the system prompt or
  the last user message (outside the evidence) asks for one: ``summarise``/``summarize``,
  ``recap``, ``TL;DR``, "write/give/update … summary", ``要約して``, ``まとめて``,
  ``サマリーを作成`` and similar verb forms (the bare noun "summary" is *not* enough, so
  a question prompt may mention "the channel summary"). A labelled question line
  (``Question:``, ``Q:``, ``質問:``, ``問い:``) always means *answer*.
* **The question** is the last labelled question line of the last user message, else
  its last paragraph ending in ``?``/``？``, else its last paragraph (evidence removed).
  Evidence with no question at all is summarised.
* **What is summarised**: the evidence blocks if there are any; else the paragraphs of
  the last user message that are not the instruction (a paragraph of transcript lines,
  bullets or under a heading is data even when someone in it says 「まとめて」); else the
  earlier messages of the conversation (each prefixed with its ``author_name`` when set).
  The system prompt is never summarised, only searched for evidence and the instruction.
  Summary prompts' markdown headings, placeholders such as ``（なし）`` and earlier
  summaries' labels and headers are skipped; earlier summaries' bullets and quotes are
  unwrapped and ``[time] speaker: text`` / ``speaker: 「…」`` lines give the speaker
  (:func:`summary_lines`), so a merge of summaries quotes sentences, never quotes of quotes.

Answering: evidence blocks are split into sentences (a short lead-in that names what is
asked — "原因わかりました。", "Found the cause." — is joined to the sentence after it); each
sentence, prefixed with its block's metadata, is scored by ``0.5 × cosine`` (question vs
sentence embeddings from the embedder, min-max scaled over the candidates) ``+ 0.5 ×`` the
IDF-weighted share of the question's content tokens it contains (question words such as
"why"/誰 do not count; Latin words of 4+ letters also match by prefix: ``paint`` ~
``painted``). The score then prefers a sentence that *answers* over one that restates the
question: questions are ranked 30 % lower, a sentence whose content words are nearly all
the question's own (an echo) 25 % lower, and when the question asks for something with a
telling form — a cause (なぜ/原因/理由/why), a time (いつ/何時/when), a place (どこ/場所/where),
a person (誰/who), an amount (いくら/何人/how much/many), a means (どうやって/how) — a
sentence on the question's topic gains a bonus for each cue of it (ので/ため/because/due to,
dates and times, venues, "I'll", numbers with units, "by"/"using"/で直す…; at most two)
and one without any cue is ranked 30 % lower. The best sentence and any others within
75 % of its score (at most ``max_quotes``) are quoted, best first. When no sentence shares
a token with the question the answer says so and quotes the closest sentences anyway.

Summarising: sentences with at least 3 content tokens (search tokens minus stopwords and
chat fillers such as "thanks", "wow", "よろしく") that are not questions form the pool
(topped up with the most informative others when too few). Each is embedded; maximal
marginal relevance (λ = 0.7) picks salient, non-redundant ones, relevance being the mean
of the cosine to the pool's centroid and an informativeness prior (content tokens / 12,
capped at 1). It takes a third of the sentences — at least 2, at most
``max_summary_sentences`` — while they fit the ``max_tokens`` budget, and prints them in
their original order.

Output starts with a label in the request's language — ``（抽出モード: LLM なし）`` for
Japanese, ``(extractive mode: no LLM)`` otherwise — then one quoted sentence per line.
The request's language is the prompt's when the question is labelled (``質問:`` Japanese,
``Question:`` English), else that of the question (or the text summarised).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.base import (
    ChatResponse,
    Embedder,
    StopReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    TokenCounter,
    ToolSpec,
    Usage,
)
from omoide.providers.local._prompt import OWN_LABELS, Evidence, Request, parse_request, split_evidence
from omoide.providers.local._requests import read_request
from omoide.providers.local.hashing import ENGLISH_STOPWORDS, HashingEmbedder
from omoide.providers.tokens import get_token_counter
from omoide.text import is_japanese, split_sentences, tokenize_for_search
from omoide.text._normalize import HIRAGANA_ONLY
from omoide.text.chat_lines import split_chat_lines

LABEL_JA = "（抽出モード: LLM なし）"
LABEL_EN = "(extractive mode: no LLM)"
MIN_SUMMARY_CONTENT_TOKENS = 3
INFO_SATURATION = 12
QUESTION_PENALTY = 0.7
ECHO_PENALTY = 0.75
ECHO_NOVELTY = 0.25
CUE_BONUS = 0.35
MAX_CUES = 2
CUE_BASE_WEIGHT = 0.5
CUE_MISS_PENALTY = 0.7
LEAD_IN_MAX_TOKENS = 2
MMR_LAMBDA = 0.7
QUOTE_RATIO = 0.75
SUMMARY_RATIO = 1 / 3
SUMMARY_MIN_SENTENCES = 2


@dataclass(frozen=True, slots=True)
class _Candidate:
    text: str
    position: int
    evidence: Evidence | None = None
    speaker: str | None = None

    @property
    def scored_text(self) -> str:
        """The sentence with its speaker and evidence metadata (date, participants), as matched
        against a question ("What did Kenji say about …")."""
        meta = self.evidence.meta if self.evidence is not None and self.evidence.meta else ""
        return " ".join(p for p in (meta, self.speaker or "", self.text) if p)

    def render(self, japanese: bool) -> str:
        quoted = f"「{self.text}」" if japanese else f"“{self.text}”"
        parts = ["-"]
        if self.evidence is not None and self.evidence.meta:
            parts.append(self.evidence.meta)
        if self.speaker:
            parts.append(f"{self.speaker}:")
        parts.append(quoted)
        if self.evidence is not None:
            parts.append(self.evidence.citation)
        return " ".join(parts)


def _matches(query_token: str, tokens: set[str]) -> bool:
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


SUMMARY_HEADERS = ("要点（原文からの抜粋）:", "Key points (quoted from the source):")
_MD_HEADING = re.compile(r"^#{1,6}(?:\s|$)")
_PAREN_ONLY = re.compile(r"^(?:\([^()]*\)|（[^（）]*）)$")
_BULLET = re.compile(r"^(?:[-*•・]|\d{1,3}[.)])\s+")
_QUOTED = re.compile(r"^(?:「(?P<ja>.*)」|“(?P<en>.*)”)(?:\s*\[#\d+\])*$")
_SPEAKER_QUOTE = re.compile(r"^(?P<who>[^「“:：\n]{1,80})[:：]\s*(?P<said>「.*」|“.*”)(?:\s*\[#\d+\])*$")
_TRANSCRIPT_LINE = re.compile(
    r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?\]\s*(?P<who>[^:：\n]{1,80}?)[:：]\s*(?P<said>.*)$"
)


def summary_lines(text: str) -> list[tuple[str | None, str]]:
    """``(speaker, text)`` of each line worth summarising in a summarise prompt's text.

    A summary prompt carries more than conversation: markdown headings (``## 新しい短期要約``),
    parenthesised placeholders (``（なし）``, ``(summary of the earlier part)``), and earlier
    summaries — this model's own output, with its label, header, bullets and quote marks.
    Headings, placeholders, labels and headers are dropped; bullets and quotes are unwrapped
    (however deeply nested) and a ``speaker: 「…」`` or ``[time] speaker: …`` line gives its
    speaker, so a merge of summaries reads the sentences themselves and quotes them once.
    """
    out: list[tuple[str | None, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _MD_HEADING.match(line) or _PAREN_ONLY.match(line):
            continue
        if line.startswith(OWN_LABELS) or line in SUMMARY_HEADERS:
            continue
        speaker: str | None = None
        while True:
            if m := _BULLET.match(line):
                line = line[m.end() :].strip()
            elif m := _QUOTED.match(line):
                line = (m.group("ja") if m.group("ja") is not None else m.group("en")).strip()
            elif (m := _SPEAKER_QUOTE.match(line)) or (m := _TRANSCRIPT_LINE.match(line)):
                speaker, line = m.group("who").strip(), m.group("said").strip()
            else:
                break
        if line and not _PAREN_ONLY.match(line):
            out.append((speaker, line))
    return out


_CLOSERS = " \t\"'”’」』）)】]"


def _is_question(text: str) -> bool:
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


def _content_tokens(text: str) -> list[str]:
    return [
        t
        for t in tokenize_for_search(text)
        if t not in ENGLISH_STOPWORDS and t not in QUESTION_WORDS and not HIRAGANA_ONLY.fullmatch(t)
    ]


def _substance(text: str) -> set[str]:
    """The content words of ``text`` without chat fillers and light verbs."""
    return set(_content_tokens(text)) - CHAT_FILLERS - LIGHT_VERBS


def _answer_sentences(text: str, asked: set[str]) -> list[str]:
    """The sentences of one message, a short lead-in joined to the sentence after it.

    A lead-in is not a question, has at most ``LEAD_IN_MAX_TOKENS`` content words and
    names something the question asks about (``asked``: its content words), as
    "原因わかりました。" does for "…の原因は？" or "The reason is simple." for "What was the
    reason …?": what it announces is in the next sentence, so the two are quoted together.
    """
    out: list[str] = []
    pending = ""
    for sentence in split_sentences(text):
        if pending:
            sep = "" if pending.endswith(("。", "！", "？", "：", "…")) else " "
            sentence, pending = f"{pending}{sep}{sentence}", ""
        content = _substance(sentence)
        lead_in = 0 < len(content) <= LEAD_IN_MAX_TOKENS and any(_matches(t, asked) for t in content)
        if lead_in and not _is_question(sentence):
            pending = sentence
            continue
        out.append(sentence)
    if pending:
        out.append(pending)
    return out


def _prefer_answers(
    question: str, texts: Sequence[str], scores: Sequence[float], lexical: Sequence[float]
) -> list[float]:
    """Scores adjusted so that a sentence that *answers* beats one that restates the question.

    * a question (ends in ``?``/``？``, closing quotes aside) is ranked ``QUESTION_PENALTY`` lower;
    * an echo — a sentence whose content words are nearly all the question's own (fewer
      ``ECHO_NOVELTY`` or less of them new, e.g. "the nightly backup failed again" for "why did
      the nightly backup fail?") — is ranked ``ECHO_PENALTY`` lower;
    * when the question asks for something with a telling form (a cause for why, a time or
      date for when, a place for where, a person for who, a number with a unit for how
      much/many, a means for how), a sentence that shares a content word with the question
      gains ``CUE_BONUS`` for each different cue in it (at most ``MAX_CUES``; scaled by
      ``CUE_BASE_WEIGHT`` + its lexical overlap, at most 1), and a sentence with no cue (or a
      question) is ranked ``CUE_MISS_PENALTY`` lower.
    """
    cues = answer_cues(question)
    asked = _substance(question)
    out: list[float] = []
    for text, score, overlap in zip(texts, scores, lexical, strict=True):
        asks = _is_question(text)
        if asks:
            score *= QUESTION_PENALTY
        content = _substance(text)
        if asked and content:
            new = [t for t in content if not _matches(t, asked)]
            if len(new) / len(content) <= ECHO_NOVELTY:
                score *= ECHO_PENALTY
        if asks and cues is not None:
            score *= CUE_MISS_PENALTY  # a question carries no answer, whatever words it has
        elif cues is not None:
            found = {m.group(0).lower() for m in cues.finditer(text)}
            if found and overlap > 0:  # a cue counts when the sentence shares a word with the question
                score += CUE_BONUS * min(len(found), MAX_CUES) * min(1.0, CUE_BASE_WEIGHT + overlap)
            else:
                score *= CUE_MISS_PENALTY
        out.append(score)
    return out


class ExtractiveChatModel:
    """A :class:`~omoide.providers.base.ChatModel` that quotes instead of generating.

    See the module docstring for how it reads prompts. ``provider`` is ``"extractive"``
    and ``model_id`` ``"extractive-v1"``.

    Args:
        embedder: embeds sentences for scoring and MMR (default: a
            :class:`~omoide.providers.local.hashing.HashingEmbedder`).
        max_quotes: most sentences quoted in an answer (default 3).
        max_summary_sentences: most sentences in a summary (default 10).
    """

    provider = "extractive"
    model_id = "extractive-v1"

    def __init__(
        self, embedder: Embedder | None = None, *, max_quotes: int = 3, max_summary_sentences: int = 10
    ) -> None:
        if max_quotes < 1 or max_summary_sentences < 1:
            raise InvalidInput("max_quotes and max_summary_sentences must be at least 1")
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        self.max_quotes = max_quotes
        self.max_summary_sentences = max_summary_sentences
        self._counter = get_token_counter()

    def __repr__(self) -> str:
        return f"ExtractiveChatModel(embedder={self.embedder!r})"

    # ------------------------------------------------------------------ public API

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int = 2048,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> ChatResponse:
        """Answer or summarise by extraction (``temperature``, ``top_p`` and ``tools`` are ignored).

        Raises:
            InvalidInput: no messages, or ``max_tokens`` below 1.
        """
        if not messages:
            raise InvalidInput("ExtractiveChatModel.complete needs at least one message")
        if max_tokens < 1:
            raise InvalidInput(f"max_tokens must be at least 1, got {max_tokens}")
        usage_in = self._counter.count_messages(messages, system=system, tools=tools)
        offered = {t.name for t in tools}
        step = await self._memory_step(messages, system, offered, max_tokens) if offered else None
        if isinstance(step, ToolUseBlock):
            return ChatResponse(
                content=(step,), stop_reason="tool_use", usage=Usage(input_tokens=usage_in), model=self.model_id
            )
        if step is not None:
            label, lines = step
        else:
            request = parse_request(_without_tool_rounds(messages), system)
            label = LABEL_JA if request.japanese else LABEL_EN
            budget = max_tokens - self._counter.count(label) - 1
            if request.mode == "summarise":
                lines = await self._summarise(request, budget)
            else:
                lines = await self._answer(request, budget)
        text, stop = self._fit([label, *lines], max_tokens)
        return ChatResponse(
            content=(TextBlock(text),),
            stop_reason=stop,
            usage=Usage(input_tokens=usage_in, output_tokens=self._counter.count(text)),
            model=self.model_id,
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int = 2048,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The same answer as :meth:`complete`, one line per ``TextDelta``, then ``StreamDone``."""
        response = await self.complete(
            messages, system=system, tools=tools, max_tokens=max_tokens, temperature=temperature, top_p=top_p
        )
        lines = response.text.split("\n") if response.text else []
        for i, line in enumerate(lines):
            yield TextDelta(line + ("\n" if i < len(lines) - 1 else ""))
        yield StreamDone(response)

    # ------------------------------------------------------------------ memory tools

    async def _memory_step(
        self, messages: Sequence[Message], system: str | None, offered: set[str], max_tokens: int
    ) -> ToolUseBlock | tuple[str, list[str]] | None:
        """Act on an explicit memory request with the offered memory tools (see ``_requests``).

        Returns the next tool call, the answer's label and lines, or ``None`` when the turn
        is not about memories (then the model answers as usual).
        """
        asked_at = _last_text_turn(messages)
        if asked_at is None:
            return None
        said = _text_of(messages[asked_at])
        ja = is_japanese(said)
        label = LABEL_JA if ja else LABEL_EN
        request = read_request(said)
        done = _tool_results(messages[asked_at + 1 :])
        if not done:  # the first round: call a tool, or answer as usual
            if request is not None and request.kind == "remember" and "remember" in offered:
                return _call("remember", {"content": request.fact})
            if request is not None and request.kind == "forget" and {"recall", "delete_memory"} <= offered:
                return _call("recall", {"query": request.fact, "limit": 3})
            if request is None and "recall" in offered and _asks(said) and not split_evidence(said)[0]:
                return _call("recall", {"query": said, "limit": 5})
            return None
        name, args, result, error = done[-1]
        if error:
            failed = "記憶の操作に失敗しました:" if ja else "The memory tool failed:"
            return label, [failed, f"- {_payload_message(result)}"]
        if name == "remember":
            saved = result if isinstance(result, dict) else {}
            head = "覚えました（以前の記憶を更新）:" if ja and saved.get("updated") else "覚えました:"
            if not ja:
                head = "I've updated what I remembered:" if saved.get("updated") else "I'll remember that:"
            return label, [head, _quote(str(saved.get("content") or args.get("content", "")), ja)]
        if name == "delete_memory":
            gone = next((r for n, _a, r, _e in done if n == "recall" and isinstance(r, list) and r), [])
            content = str(gone[0].get("content", "")) if gone and isinstance(gone[0], dict) else ""
            head = "忘れました:" if ja else "Forgotten:"
            return label, [head, _quote(content, ja)] if content else [head]
        if name == "recall":
            hits = [h for h in result if isinstance(h, dict) and h.get("content")] if isinstance(result, list) else []
            if request is not None and request.kind == "forget":
                if hits and "delete_memory" in offered and isinstance(hits[0].get("id"), int):
                    return _call("delete_memory", {"memory_id": hits[0]["id"]})
                return label, [
                    f"「{request.fact}」に当たる記憶は見つかりませんでした。"
                    if ja
                    else f"I found nothing remembered about “{request.fact}”."
                ]
            lines = await self._recalled(said, [str(h["content"]) for h in hits], ja)
            if lines:
                return label, lines
            return None  # nothing remembered answers it: answer from the conversation
        return None

    async def _recalled(self, question: str, memories: list[str], ja: bool) -> list[str]:
        """Quote the remembered facts that answer ``question`` (those sharing a word with it)."""
        if not memories:
            return []
        scores, lexical = await self._score(question, memories)
        scores = _prefer_answers(question, memories, scores, lexical)
        order = [i for i in sorted(range(len(memories)), key=lambda i: (-scores[i], i)) if lexical[i] > 0]
        if not order:
            return []
        best = scores[order[0]]
        chosen = [i for i in order if scores[i] >= QUOTE_RATIO * best][: self.max_quotes]
        head = "覚えていること:" if ja else "From what you asked me to remember:"
        return [head, *(_quote(memories[i], ja) for i in chosen)]

    # ------------------------------------------------------------------ answering

    async def _answer(self, request: Request, budget: int) -> list[str]:
        ja = request.japanese
        asked = _substance(request.question)
        candidates = [
            _Candidate(s, 0, evidence=ev, speaker=who)
            for ev in request.evidence
            for who, said in split_chat_lines(ev.text)
            for s in _answer_sentences(said, asked)
        ]
        from_conversation = not candidates
        if from_conversation:
            said = [
                _Candidate(s, i, speaker=p.speaker)
                for i, p in enumerate(request.passages)
                if not _is_forget_request(p.text)  # "forget X" is no evidence that X holds
                for s in _answer_sentences(p.text, asked)
            ]
            # a chat repeats itself: quote each sentence once, and prefer what was stated over what was asked
            unique = list({c.text: c for c in reversed(said)}.values())[::-1]
            statements = [c for c in unique if not _is_question(c.text)]
            candidates = statements or unique
        if not candidates:
            return [
                "根拠となる記録が見つからないため、回答できません。"
                if ja
                else "No evidence was found for this question, so there is nothing to quote."
            ]
        if not request.question.strip():
            return await self._summarise(request, budget)
        scores, lexical = await self._score(request.question, [c.scored_text for c in candidates])
        scores = _prefer_answers(request.question, [c.text for c in candidates], scores, lexical)
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
        best = scores[order[0]]
        chosen = [i for i in order if scores[i] >= QUOTE_RATIO * best][: self.max_quotes]
        if from_conversation and lexical[order[0]] > 0:
            header = "これまでの会話から該当する発言:" if ja else "From our conversation so far:"
        elif from_conversation:
            header = (
                "会話に直接の答えは見つかりませんでした。最も近い発言:"
                if ja
                else "Nothing in our conversation answers this directly; the closest things said:"
            )
        elif lexical[order[0]] > 0:
            header = "根拠から該当する記述:" if ja else "From the evidence:"
        else:
            header = (
                "根拠に直接の答えは見つかりませんでした。最も近い記述:"
                if ja
                else "The evidence has no direct answer; the closest passages:"
            )
        return [header, *(candidates[i].render(ja) for i in chosen)]

    async def _score(self, question: str, texts: list[str]) -> tuple[list[float], list[float]]:
        """Score each text against the question: ``(combined scores, lexical shares)``."""
        query_vec = await self.embedder.embed_query(question)
        sentence_vecs = await self.embedder.embed_documents(texts)
        cos = np.array([float(v @ query_vec) for v in sentence_vecs], dtype=np.float64)
        spread = float(cos.max() - cos.min())
        cos_scaled = (cos - cos.min()) / spread if spread > 1e-9 else np.ones_like(cos)

        query_tokens = set(_content_tokens(question))
        matched = [{q for q in query_tokens if _matches(q, set(_content_tokens(t)))} for t in texts]
        df: Counter[str] = Counter(q for m in matched for q in m)
        n = len(texts)
        idf = {q: math.log(1.0 + (n + 1) / (df[q] + 0.5)) for q in query_tokens}
        total = sum(idf.values()) or 1.0
        lexical = [sum(idf[q] for q in m) / total for m in matched]
        scores = [0.5 * float(c) + 0.5 * lex for c, lex in zip(cos_scaled, lexical, strict=True)]
        return scores, lexical

    # ------------------------------------------------------------------ summarising

    async def _summarise(self, request: Request, budget: int) -> list[str]:
        ja = request.japanese
        candidates: list[_Candidate] = []
        if request.evidence:
            for ev in request.evidence:
                candidates.extend(
                    _Candidate(s, len(candidates), evidence=ev, speaker=who)
                    for who, said in split_chat_lines(ev.text)
                    for s in split_sentences(said)
                )
        else:
            seen: set[str] = set()
            for passage in request.passages:
                for who, said in summary_lines(passage.text):
                    for sentence in split_sentences(said):
                        if sentence not in seen:  # a merge sees earlier summaries' sentences again
                            seen.add(sentence)
                            candidates.append(_Candidate(sentence, len(candidates), speaker=who or passage.speaker))
        if not candidates:
            return ["要約する内容がありません。" if ja else "There is nothing to summarise."]
        info = [len(set(_content_tokens(c.text)) - CHAT_FILLERS) for c in candidates]
        limit = min(self.max_summary_sentences, max(SUMMARY_MIN_SENTENCES, math.ceil(len(candidates) * SUMMARY_RATIO)))
        keep = [
            i for i, c in enumerate(candidates) if info[i] >= MIN_SUMMARY_CONTENT_TOKENS and not _is_question(c.text)
        ]
        if len(keep) < limit:  # too little substance: top up with the most informative of the rest
            rest = sorted(set(range(len(candidates))) - set(keep), key=lambda i: (-info[i], i))
            keep = sorted(keep + rest[: limit - len(keep)])
        pool = [candidates[i] for i in keep]
        vectors = await self.embedder.embed_documents([c.text for c in pool])
        prior = np.array([min(1.0, info[i] / INFO_SATURATION) for i in keep], dtype=np.float64)
        header = "要点（原文からの抜粋）:" if ja else "Key points (quoted from the source):"
        left = budget - self._counter.count(header) - 1
        ranked = _mmr(np.stack(vectors), len(pool), prior=prior)
        chosen: list[_Candidate] = []
        for i in ranked:
            if len(chosen) >= limit:
                break
            cost = self._counter.count(pool[i].render(ja)) + 1
            if cost <= left:
                chosen.append(pool[i])
                left -= cost
        if not chosen:  # nothing fits: return the most salient sentence, _fit cuts it at the budget
            chosen.append(pool[ranked[0]])
        chosen.sort(key=lambda c: c.position)
        return [header, *(c.render(ja) for c in chosen)]

    # ------------------------------------------------------------------ budget

    def _fit(self, lines: list[str], max_tokens: int) -> tuple[str, StopReason]:
        """Keep whole lines while the text fits ``max_tokens``; cut the first line only if nothing else fits."""
        kept: list[str] = []
        for line in lines:
            candidate = "\n".join([*kept, line])
            if self._counter.count(candidate) <= max_tokens:
                kept.append(line)
            elif len(kept) >= 2:
                continue  # skip a quote that does not fit; a shorter later one may
            else:
                break
        if len(kept) >= 3 or (len(kept) == len(lines)):
            return "\n".join(kept), "end_turn"
        # not even the label, a header and one quote fit: cut the text at the budget
        return _truncate(self._counter, "\n".join(lines), max_tokens), "max_tokens"


def _text_of(message: Message) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()


def _last_text_turn(messages: Sequence[Message]) -> int | None:
    """Index of the last user message with text (tool results after it are this turn's rounds)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and _text_of(m):
            return i
        if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content):
            return None
    return None


MEMORY_TOOL_NAMES = frozenset({"remember", "recall", "list_memories", "delete_memory"})


def _without_tool_rounds(messages: Sequence[Message]) -> list[Message]:
    """The conversation as the extractive model reads it: memory tool rounds are bookkeeping.

    When the turn ends in memory tool results, it is read as of the user's question (the
    results were already used, or did not answer it); tool calls and results before the
    last message are left out. Other tool results in the last message stay (evidence).
    """
    asked_at = _last_text_turn(messages)
    if asked_at is not None and asked_at < len(messages) - 1:
        rounds = _tool_results(messages[asked_at + 1 :])
        if rounds and all(name in MEMORY_TOOL_NAMES for name, *_ in rounds):
            messages = messages[: asked_at + 1]
    kept: list[Message] = []
    for i, m in enumerate(messages):
        if i < len(messages) - 1 and any(isinstance(b, (ToolUseBlock, ToolResultBlock)) for b in m.content):
            text = tuple(b for b in m.content if isinstance(b, TextBlock) and b.text.strip())
            if not text:
                continue
            m = dataclasses.replace(m, content=text)
        kept.append(m)
    return kept


def _tool_results(messages: Sequence[Message]) -> list[tuple[str, dict[str, Any], Any, bool]]:
    """``(tool name, arguments, parsed result, is_error)`` of the tool rounds in ``messages``, in order."""
    calls: dict[str, ToolUseBlock] = {}
    out: list[tuple[str, dict[str, Any], Any, bool]] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                calls[b.id] = b
            elif isinstance(b, ToolResultBlock) and b.tool_use_id in calls:
                call = calls[b.tool_use_id]
                try:
                    parsed: Any = json.loads(b.content)
                except ValueError:
                    parsed = b.content
                out.append((call.name, dict(call.input), parsed, b.is_error))
    return out


def _payload_message(result: Any) -> str:
    if isinstance(result, dict):
        return str(result.get("message") or result.get("error") or result)
    return str(result)


def _call(name: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(f"toolu_extractive_{uuid.uuid4().hex[:16]}", name, arguments)


def _quote(text: str, ja: bool) -> str:
    return f"- 「{text}」" if ja else f"- “{text}”"


_ASKS_EN = re.compile(r"^(?:what|who|whom|whose|when|where|which|why|how)\b", re.IGNORECASE)
_ASKS_JA = re.compile(r"(?:何|なに|なん|誰|だれ|いつ|どこ|どれ|どの|なぜ|どうして|いくつ|いくら)")
_ASKS_JA_END = re.compile(r"(?:か|の|かな|っけ|は)[。\s]*$")


def _is_forget_request(text: str) -> bool:
    found = read_request(text)
    return found is not None and found.kind == "forget"


def _asks(text: str) -> bool:
    """Whether a message asks something: a question mark, an English question word first, or
    a Japanese question word with a questioning ending (「犬の名前は何だっけ」)."""
    said = text.strip()
    if _is_question(said) or _ASKS_EN.match(said):
        return True
    return bool(_ASKS_JA.search(said) and _ASKS_JA_END.search(said))


def _truncate(counter: TokenCounter, text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` (on a character boundary) with at most ``max_tokens`` tokens."""
    count = counter.count
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def _mmr(
    vectors: npt.NDArray[np.float32], k: int, *, prior: npt.NDArray[np.float64], lam: float = MMR_LAMBDA
) -> list[int]:
    """Indices chosen by maximal marginal relevance.

    Relevance is the mean of the cosine to the centroid of ``vectors`` (min-max scaled)
    and ``prior`` (an informativeness score in [0, 1]).
    """
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    cos = vectors @ (centroid / norm) if norm > 0 else np.zeros(len(vectors), dtype=np.float32)
    spread = float(cos.max() - cos.min())
    scaled = (cos - cos.min()) / spread if spread > 1e-9 else np.ones_like(cos)
    relevance = 0.5 * scaled + 0.5 * prior
    similarity = vectors @ vectors.T
    chosen: list[int] = []
    remaining = list(range(len(vectors)))
    while remaining and len(chosen) < k:
        if chosen:
            redundancy = similarity[np.ix_(remaining, chosen)].max(axis=1)
        else:
            redundancy = np.zeros(len(remaining), dtype=np.float32)
        scores = lam * relevance[remaining] - (1.0 - lam) * redundancy
        best = remaining[int(np.argmax(scores))]
        chosen.append(best)
        remaining.remove(best)
    return chosen


__all__ = ["LABEL_EN", "LABEL_JA", "ExtractiveChatModel"]
