"""How :class:`~omoide.providers.local.extractive.ExtractiveChatModel` reads a prompt.

The conventions are documented on ``ExtractiveChatModel``; this module implements them:
evidence blocks (``[#n] …``), the question, the summarise instruction, the text to
summarise and the lines of it worth summarising (:func:`summary_lines`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from omoide.models import Message, TextBlock, ToolResultBlock
from omoide.text import is_japanese

Mode = Literal["answer", "summarise"]

EVIDENCE_MARKER = re.compile(r"^[ \t]*\[#(\d+)\][ \t]*", re.MULTILINE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_META = re.compile(r"^(\([^()\n]{1,80}\)|（[^（）\n]{1,80}）|【[^【】\n]{1,80}】|\[[^\[\]\n]{1,80}\])\s*")
_QUESTION_LABEL = re.compile(
    r"^[ \t]*(?P<label>question|q|質問|問い|問)[ \t]*[:：][ \t]*(?P<q>.+)$", re.IGNORECASE | re.MULTILINE
)
_SUMMARISE = re.compile(
    r"\bsummari[sz](?:e|es|ed|ing)\b|\brecap\b|\btl;?dr\b"
    r"|\b(?:write|give|produce|create|make|update|generate)\b[^.\n]{0,40}\bsummary\b"
    r"|要約(?:し|して|する|せよ|を(?:作|書|生成|更新|出力))|まとめ(?:て|よ|る|なさい|を(?:作|書|生成|更新|出力))"
    r"|サマリー?を(?:作|書|生成|更新|出力)|概要を(?:作|書|まとめ)",
    re.IGNORECASE,
)
_HEADING = re.compile(
    r"^\s*(?:#+\s*)?(?:evidence|context|sources?|根拠|証拠|資料|参考|コンテキスト)\s*[:：]?\s*$", re.I
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One evidence block: ``[#number] (meta) text``."""

    number: int
    text: str
    meta: str | None = None

    @property
    def citation(self) -> str:
        return f"[#{self.number}]"


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of text to summarise when the prompt has no evidence blocks."""

    text: str
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """What the extractive model was asked."""

    mode: Mode
    question: str
    evidence: tuple[Evidence, ...]
    passages: tuple[Passage, ...]
    japanese: bool


def message_text(message: Message) -> str:
    """Text blocks and tool results of ``message``, joined by blank lines."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            parts.append(block.content)
    return "\n\n".join(p for p in parts if p)


def split_evidence(text: str) -> tuple[list[Evidence], str]:
    """The evidence blocks in ``text`` and the text with the blocks removed.

    A block starts at a line beginning with ``[#n]`` and runs to the next such line or
    to the first blank line. A leading ``(…)``, ``（…）``, ``【…】`` or ``[…]`` of at most
    80 characters is the block's metadata (date, speaker, channel), shown with quotes.
    """
    blocks: list[Evidence] = []
    rest: list[str] = []
    pos = 0
    for m in EVIDENCE_MARKER.finditer(text):
        if m.start() < pos:
            continue
        rest.append(text[pos : m.start()])
        nxt = EVIDENCE_MARKER.search(text, m.end())
        end = nxt.start() if nxt else len(text)
        blank = _BLANK_LINE.search(text, m.end(), end)
        if blank:
            end = blank.start()
        body = text[m.end() : end].strip()
        meta: str | None = None
        meta_match = _META.match(body)
        if meta_match and meta_match.end() < len(body):
            meta, body = meta_match.group(1), body[meta_match.end() :].strip()
        if body:
            blocks.append(Evidence(int(m.group(1)), body, meta))
        pos = end
    rest.append(text[pos:])
    return blocks, "".join(rest)


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _BLANK_LINE.split(text) if p.strip() and not _HEADING.match(p)]


def find_question(instruction: str) -> str:
    """The question in the non-evidence text of the last user message.

    A line labelled ``Question:`` / ``Q:`` / ``質問:`` / ``問い:`` wins (the last one);
    otherwise the last paragraph ending in ``?`` or ``？``; otherwise the last paragraph.
    """
    labelled = list(_QUESTION_LABEL.finditer(instruction))
    if labelled:
        return labelled[-1].group("q").strip()
    paragraphs = _paragraphs(instruction)
    for p in reversed(paragraphs):
        if p.rstrip().endswith(("?", "？")):
            return p
    return paragraphs[-1] if paragraphs else ""


def is_summarise_request(system: str, instruction: str) -> bool:
    """Whether the system prompt or the user's instruction asks for a summary."""
    if _QUESTION_LABEL.search(instruction):
        return False
    return bool(_SUMMARISE.search(system) or _SUMMARISE.search(instruction))


_DATA_START = re.compile(
    r"^\s*(?:\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|#{1,6}\s|[-*•・]\s|[（(]抽出モード|\(extractive mode)"
)


def _is_instruction(paragraph: str) -> bool:
    """Whether a paragraph of a summarise request is the request itself, not text to summarise.

    It asks for a summary and is not data: a paragraph of transcript lines, bullets or
    under a heading is summarised even when someone in it said 「まとめて」 or "recap".
    """
    return bool(_SUMMARISE.search(paragraph)) and not _DATA_START.match(paragraph)


OWN_LABELS = ("（抽出モード", "(extractive mode")
"""Answers this model wrote earlier start with these; they are never quoted again."""


def parse_request(messages: Sequence[Message], system: str | None) -> Request:
    """Read the request the extractive model answers (see ``ExtractiveChatModel``)."""
    system_text = system or ""
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    user_text = message_text(messages[last_user]) if last_user is not None else ""
    system_evidence, system_rest = split_evidence(system_text)
    user_evidence, instruction = split_evidence(user_text)
    evidence = tuple(system_evidence + user_evidence)
    summarise = is_summarise_request(system_rest, instruction)
    question = "" if summarise else find_question(instruction)
    passages: tuple[Passage, ...] = ()
    if not question and not summarise and evidence:
        summarise = True  # evidence with nothing asked: summarise it
    earlier = messages[:last_user] if last_user is not None else messages
    conversation = tuple(
        Passage(message_text(m), m.author_name or (None if m.role == "user" else "assistant"))
        for m in earlier
        if message_text(m).strip() and not message_text(m).startswith(OWN_LABELS)
    )
    if summarise and not evidence:
        own = [p for p in _paragraphs(instruction) if not _is_instruction(p)]
        passages = tuple(Passage(p) for p in own) if own else conversation
    elif not evidence:
        passages = conversation  # a question in a plain chat: the conversation so far is the evidence
    sample = question or instruction or " ".join(e.text for e in evidence[:5]) or " ".join(p.text for p in passages[:5])
    labelled = list(_QUESTION_LABEL.finditer(instruction)) if question else []
    japanese = (
        not labelled[-1].group("label").isascii()  # the prompt's own language: 質問: or Question:
        if labelled
        else is_japanese(sample[:2000])
    )
    return Request(
        mode="summarise" if summarise else "answer",
        question=question,
        evidence=evidence,
        passages=passages,
        japanese=japanese,
    )


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


__all__ = [
    "EVIDENCE_MARKER",
    "OWN_LABELS",
    "SUMMARY_HEADERS",
    "Evidence",
    "Passage",
    "Request",
    "find_question",
    "parse_request",
    "split_evidence",
    "summary_lines",
]
