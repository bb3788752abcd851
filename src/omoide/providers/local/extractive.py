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

import math
from collections.abc import AsyncIterator, Sequence

import numpy as np

from omoide.errors import InvalidInput
from omoide.models import Message, TextBlock, ToolUseBlock
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
from omoide.providers.local._language import CHAT_FILLERS, asks, content_tokens, is_question, substance
from omoide.providers.local._prompt import Request, parse_request, split_evidence, summary_lines
from omoide.providers.local._requests import read_request
from omoide.providers.local._scoring import Candidate, answer_sentences, mmr, prefer_answers, score
from omoide.providers.local._tool_rounds import (
    is_forget_request,
    last_text_turn,
    payload_message,
    text_of,
    tool_call,
    tool_results,
    without_tool_rounds,
)
from omoide.providers.local.hashing import HashingEmbedder
from omoide.providers.tokens import get_token_counter
from omoide.text import is_japanese, split_sentences
from omoide.text.chat_lines import split_chat_lines

LABEL_JA = "（抽出モード: LLM なし）"
LABEL_EN = "(extractive mode: no LLM)"
MIN_SUMMARY_CONTENT_TOKENS = 3
INFO_SATURATION = 12
QUOTE_RATIO = 0.75
SUMMARY_RATIO = 1 / 3
SUMMARY_MIN_SENTENCES = 2


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
            request = parse_request(without_tool_rounds(messages), system)
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
        asked_at = last_text_turn(messages)
        if asked_at is None:
            return None
        said = text_of(messages[asked_at])
        ja = is_japanese(said)
        label = LABEL_JA if ja else LABEL_EN
        request = read_request(said)
        done = tool_results(messages[asked_at + 1 :])
        if not done:  # the first round: call a tool, or answer as usual
            if request is not None and request.kind == "remember" and "remember" in offered:
                return tool_call("remember", {"content": request.fact})
            if request is not None and request.kind == "forget" and {"recall", "delete_memory"} <= offered:
                return tool_call("recall", {"query": request.fact, "limit": 3})
            if request is None and "recall" in offered and asks(said) and not split_evidence(said)[0]:
                return tool_call("recall", {"query": said, "limit": 5})
            return None
        name, args, result, error = done[-1]
        if error:
            failed = "記憶の操作に失敗しました:" if ja else "The memory tool failed:"
            return label, [failed, f"- {payload_message(result)}"]
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
                    return tool_call("delete_memory", {"memory_id": hits[0]["id"]})
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
        scores, lexical = await score(self.embedder, question, memories)
        scores = prefer_answers(question, memories, scores, lexical)
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
        asked = substance(request.question)
        candidates = [
            Candidate(s, 0, evidence=ev, speaker=who)
            for ev in request.evidence
            for who, said in split_chat_lines(ev.text)
            for s in answer_sentences(said, asked)
        ]
        from_conversation = not candidates
        if from_conversation:
            said = [
                Candidate(s, i, speaker=p.speaker)
                for i, p in enumerate(request.passages)
                if not is_forget_request(p.text)  # "forget X" is no evidence that X holds
                for s in answer_sentences(p.text, asked)
            ]
            # a chat repeats itself: quote each sentence once, and prefer what was stated over what was asked
            unique = list({c.text: c for c in reversed(said)}.values())[::-1]
            statements = [c for c in unique if not is_question(c.text)]
            candidates = statements or unique
        if not candidates:
            return [
                "根拠となる記録が見つからないため、回答できません。"
                if ja
                else "No evidence was found for this question, so there is nothing to quote."
            ]
        if not request.question.strip():
            return await self._summarise(request, budget)
        scores, lexical = await score(self.embedder, request.question, [c.scored_text for c in candidates])
        scores = prefer_answers(request.question, [c.text for c in candidates], scores, lexical)
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

    # ------------------------------------------------------------------ summarising

    async def _summarise(self, request: Request, budget: int) -> list[str]:
        ja = request.japanese
        candidates: list[Candidate] = []
        if request.evidence:
            for ev in request.evidence:
                candidates.extend(
                    Candidate(s, len(candidates), evidence=ev, speaker=who)
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
                            candidates.append(Candidate(sentence, len(candidates), speaker=who or passage.speaker))
        if not candidates:
            return ["要約する内容がありません。" if ja else "There is nothing to summarise."]
        info = [len(set(content_tokens(c.text)) - CHAT_FILLERS) for c in candidates]
        limit = min(self.max_summary_sentences, max(SUMMARY_MIN_SENTENCES, math.ceil(len(candidates) * SUMMARY_RATIO)))
        keep = [
            i for i, c in enumerate(candidates) if info[i] >= MIN_SUMMARY_CONTENT_TOKENS and not is_question(c.text)
        ]
        if len(keep) < limit:  # too little substance: top up with the most informative of the rest
            rest = sorted(set(range(len(candidates))) - set(keep), key=lambda i: (-info[i], i))
            keep = sorted(keep + rest[: limit - len(keep)])
        pool = [candidates[i] for i in keep]
        vectors = await self.embedder.embed_documents([c.text for c in pool])
        prior = np.array([min(1.0, info[i] / INFO_SATURATION) for i in keep], dtype=np.float64)
        header = "要点（原文からの抜粋）:" if ja else "Key points (quoted from the source):"
        left = budget - self._counter.count(header) - 1
        ranked = mmr(np.stack(vectors), len(pool), prior=prior)
        chosen: list[Candidate] = []
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


def _quote(text: str, ja: bool) -> str:
    return f"- 「{text}」" if ja else f"- “{text}”"


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


__all__ = ["LABEL_EN", "LABEL_JA", "ExtractiveChatModel", "summary_lines"]
